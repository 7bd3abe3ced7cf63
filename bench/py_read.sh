#!/usr/bin/env bash
# Workload py_read: the Python module against what Python does without it,
# on one object (default 1 GiB) through s3rdma-gateway with the mount's
# rdma.transport=cma, in one run, tools alternating, every mount fresh and
# caches dropped before each run; medians reported (bench/py_read.py does
# each read):
#   read_into  s3rdmafs.File.pread into registered memory (64 MiB calls)
#   readinto   the builtin file's readinto into a NumPy array
#   fromfile   numpy.fromfile
# and a checkpoint of the same size (16 float32 tensors, safetensors):
#   load_st    s3rdmafs.load_safetensors
#   load_ref   the file read whole, then a NumPy array per tensor
# Reported: MB/s, the Python process's CPU s/GiB, the daemon's, and the
# ratios read_into/readinto and load_st/load_ref. The goal (issue 31):
# read_into >= 1.5x readinto's MB/s at <= 0.5x its CPU (process + daemon).
#
#   bench/py_read.sh [--size MiB] [--reps N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

size_mib=1024 reps=3
while [ $# -gt 0 ]; do
  case $1 in
    --size) size_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    py_read) shift ;;
    *) echo "usage: $0 [--size MiB] [--reps N]" >&2; exit 2 ;;
  esac
done

bench_setup
bench_gateway_setup py_read "$size_mib" # tmp, mnt, bucket, key, bytes
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
export PYTHONPATH=$BENCH_TOP/build/python

mount_ours() {
  # shellcheck disable=SC2153 # (S3R_GW_ENDPOINT: bench_gateway_setup)
  bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" \
    -o "endpoint=$S3R_GW_ENDPOINT,rdma.transport=cma"
}
# the checkpoint: 16 tensors of size/16 bytes, written once through a mount
mount_ours
"$PY" - "$mnt/py_read.safetensors" "$size_mib" <<'PYEOF'
import sys, numpy, s3rdmafs
n = int(sys.argv[2]) * (1 << 20) // 16 // 4
rng = numpy.random.default_rng(1)
s3rdmafs.save_safetensors({"t%02d" % i: rng.standard_normal(n, dtype=numpy.float32)
                           for i in range(16)}, sys.argv[1])
PYEOF
bench_umount_ours "$mnt"

# run_once TOOL: a fresh mount, caches dropped, the read timed; sets r_mbs,
# r_cpu (the Python process's CPU s/GiB), r_dcpu (the daemon's)
run_once() {
  local path=$mnt/$key out d0 d1 mode=$1
  case $1 in load_st|load_ref) path=$mnt/py_read.safetensors ;; esac
  mount_ours
  drop_caches
  d0=$(proc_cpu_s "$ours_pid")
  out=$("$PY" "$here/py_read.py" "$mode" "$path")
  d1=$(proc_cpu_s "$ours_pid")
  if [ "$1" = read_into ] && ! grep -q '^s3.rdma_bytes [1-9]' "$mnt/.s3rdmafs-stats"; then
    echo "py_read: the cma mount moved no bytes by rdma" >&2
    exit 1
  fi
  bench_umount_ours "$mnt"
  read -r secs cpu n <<<"$out"
  r_mbs=$(awk -v b="$n" -v s="$secs" 'BEGIN { printf "%.1f", b / 1e6 / s }')
  r_cpu=$(awk -v b="$n" -v c="$cpu" 'BEGIN { printf "%.3f", c / (b / 1073741824) }')
  r_dcpu=$(awk -v b="$n" -v x="$d0" -v y="$d1" 'BEGIN { printf "%.3f", (y - x) / (b / 1073741824) }')
}

tools=(read_into readinto fromfile load_st load_ref)
declare -A mbs cpu dcpu
for ((i = 1; i <= reps; i++)); do
  for t in "${tools[@]}"; do
    run_once "$t"
    echo "py_read: rep $i $t $r_mbs MB/s, python $r_cpu CPU s/GiB, daemon $r_dcpu" >&2
    mbs[$t]="${mbs[$t]:-} $r_mbs" cpu[$t]="${cpu[$t]:-} $r_cpu" dcpu[$t]="${dcpu[$t]:-} $r_dcpu"
  done
done

printf '\n%-8s %-10s %8s %17s %17s\n' py_read tool MB/s "python CPU s/GiB" "daemon CPU s/GiB"
declare -A m_mbs m_cpu
for t in "${tools[@]}"; do
  # shellcheck disable=SC2086
  m_mbs[$t]=$(median ${mbs[$t]})
  # shellcheck disable=SC2086
  m_cpu[$t]=$(awk -v a="$(median ${cpu[$t]})" -v b="$(median ${dcpu[$t]})" 'BEGIN { printf "%.3f", a + b }')
  # shellcheck disable=SC2086
  printf '%-8s %-10s %8s %17s %17s\n' "" "$t" "${m_mbs[$t]}" "$(median ${cpu[$t]})" "$(median ${dcpu[$t]})"
  bench_line py_read "$t" "${m_mbs[$t]}" MB/s "$reps"
  bench_line py_read_cpu "$t" "${m_cpu[$t]}" cpu_s_per_GiB "$reps"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "RATIO workload=py_read read_into/readinto speed=$(ratio "${m_mbs[read_into]}" "${m_mbs[readinto]}") cpu=$(ratio "${m_cpu[read_into]}" "${m_cpu[readinto]}")"
echo "RATIO workload=py_read load_st/load_ref speed=$(ratio "${m_mbs[load_st]}" "${m_mbs[load_ref]}") cpu=$(ratio "${m_cpu[load_st]}" "${m_cpu[load_ref]}")"
