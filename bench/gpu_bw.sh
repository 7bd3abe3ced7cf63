#!/usr/bin/env bash
# Workload gpu_bw: s3rdmafs_gpu_read from a warm page cache against the
# driver's host-to-device copy from pinned memory (cuMemcpyHtoD), same run,
# as a ratio (issue 15's goal: at least 0.8x on a real GPU). bench/gpu_bw.c
# reads the object through the mount in CHUNK MiB reads into one device
# buffer (one warm-up pass first: the daemon's cache warm), then copies as
# many bytes from pinned memory into the same buffer, REPS times.
#
# The driver is libcuda.so.1, or the file $S3RDMAFS_CUDA_LIB names; without
# either, the tests' stand-in (build/tests/gpu-sim/libcuda.so.1), with its
# copies' delay off (FAKECUDA_DELAY_US=0: each copy a memcpy, as its
# cuMemcpyHtoD is). gpu_bw tells the stand-in by its marker symbol, and
# then every figure is SIMULATED: tool names end in -simulated and the
# table says so. The mount has no data plane (rdma.transport=off): every
# GPU read is staged through the ring (GPUDirect needs rc/dc).
#
#   bench/gpu_bw.sh [--size MiB] [--reps N] [--chunk MiB]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

size_mib=512 reps=3 chunk=64
usage() { echo "usage: $0 [--size MiB] [--reps N] [--chunk MiB]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --size) [ $# -ge 2 ] || usage; size_mib=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
    --chunk) [ $# -ge 2 ] || usage; chunk=$2; shift 2 ;;
    gpu_bw) shift ;;
    *) usage ;;
  esac
done
for v in "$size_mib" "$reps" "$chunk"; do case $v in '' | *[!0-9]* | 0) usage ;; esac; done

bench_setup
BW=$BENCH_TOP/build/bin/gpu_bw
[ -x "$BW" ] || { echo "gpu_bw: $BW is missing (build first)" >&2; exit 1; }
if [ -z "${S3RDMAFS_CUDA_LIB:-}" ] && [[ "$(ldconfig -p 2>/dev/null)" != *'libcuda.so.1 '* ]]; then
  S3RDMAFS_CUDA_LIB=$BENCH_TOP/build/tests/gpu-sim/libcuda.so.1
  [ -f "$S3RDMAFS_CUDA_LIB" ] || { echo "gpu_bw: no CUDA driver, and no stand-in at $S3RDMAFS_CUDA_LIB (build first)" >&2; exit 1; }
  echo "gpu_bw: no CUDA driver here: the stand-in ($S3RDMAFS_CUDA_LIB); every figure is SIMULATED" >&2
  export FAKECUDA_DELAY_US=${FAKECUDA_DELAY_US:-0}
fi
export S3RDMAFS_CUDA_LIB

tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-gpu_bw.XXXXXX")
mnt=$tmp/mnt
mkdir -p "$mnt"
cleanup() { bench_release gpu_bw "$mnt" "$tmp"; bench_teardown; }
trap cleanup EXIT
bench_read_object gpu_bw "$size_mib" # bucket, key, bytes
bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o rdma.transport=off

set +e
out=$("$BW" "$mnt/$key" "$chunk" "$reps")
rc=$?
set -e
[ "$rc" -ne 77 ] || { echo "$out" >&2; echo "gpu_bw: skipped" >&2; exit 0; }
[ "$rc" -eq 0 ] || { echo "$out" >&2; echo "gpu_bw: failed" >&2; exit 1; }
driver=$(printf '%s\n' "$out" | sed -n '1s/^driver=\([a-z]*\) .*/\1/p')
suffix=
[ "$driver" = real ] || suffix=-simulated
gr=() hd=()
while read -r _ rep b gs hs; do
  b=${b#bytes=} gs=${gs#gpu_read_s=} hs=${hs#htod_s=}
  [ "$b" = "$bytes" ] || { echo "gpu_bw: rep ${rep#rep=} read $b bytes, not $bytes" >&2; exit 1; }
  g=$(awk -v b="$b" -v s="$gs" 'BEGIN { printf "%.2f", b / 1e9 / s }')
  h=$(awk -v b="$b" -v s="$hs" 'BEGIN { printf "%.2f", b / 1e9 / s }')
  echo "gpu_bw: ${rep} gpu_read $g GB/s, cuMemcpyHtoD $h GB/s ($driver driver)" >&2
  gr+=("$g") hd+=("$h")
done < <(printf '%s\n' "$out" | grep '^driver=')
[ "${#gr[@]}" -eq "$reps" ] || { echo "gpu_bw: $reps reps expected, got ${#gr[@]}" >&2; exit 1; }
m_gr=$(median "${gr[@]}") m_hd=$(median "${hd[@]}")

printf '\n%-8s %-32s %8s\n' gpu_bw "tool ($driver driver)" GB/s
printf '%-8s %-32s %8s\n' "" "s3rdmafs-gpu_read$suffix" "$m_gr" "" "cuMemcpyHtoD$suffix" "$m_hd"
bench_line gpu_bw "s3rdmafs-gpu_read$suffix" "$m_gr" GB/s "$reps"
bench_line gpu_bw "cuMemcpyHtoD$suffix" "$m_hd" GB/s "$reps"
ratio_line gpu_bw "s3rdmafs-gpu_read$suffix" "cuMemcpyHtoD$suffix" "$m_gr" "$m_hd"
bench_umount_ours "$mnt"
