#!/usr/bin/env bash
# Workload fs_rdma: cold sequential read of one object (default 1 GiB), and
# a write of a new file of the same size (rows TOOL-write), with
# dd through s3rdma-gateway in front of RGW, the mount with
# rdma.transport=cma (file bytes by cross-memory attach) against the same
# mount with rdma.transport=off (file bytes in HTTP bodies through the same
# gateway), and, for reference, the mount on RGW directly (off). Tools
# alternate (A B C A B C ...), every mount is fresh and caches are dropped
# before each run; medians reported.
#
# Reported per tool: MB/s; the daemon's own CPU seconds per GiB read (user +
# system of every thread, /proc/PID/stat before and after the dd; the dd
# process is not counted), and of that the user-space part (our code: the
# system part is mostly the kernel's copy of each byte into the reader's
# page cache when we answer a FUSE read, the same whatever the transport);
# and the gateway's CPU seconds per GiB (it does the copying for cma, in
# its helper processes: counted with it).
# Ratios cma/off; the goal (issue 5) is daemon CPU per GiB with cma at most
# a quarter of off's.
#
#   bench/fs_rdma.sh [--size MiB] [--reps N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

size_mib=1024 reps=3
while [ $# -gt 0 ]; do
  case $1 in
    --size) size_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    fs_rdma) shift ;;
    *) echo "usage: $0 [--size MiB] [--reps N]" >&2; exit 2 ;;
  esac
done

bench_setup
bench_gateway_setup fs_rdma "$size_mib" # tmp, mnt, GW, gw_pid; the object

mount_ours() { # endpoint transport
  bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o "endpoint=$1,rdma.transport=$2"
}

# run_once TOOL PREP CMD POST: a fresh mount for TOOL, PREP, then CMD timed
# with the daemon's and the gateway's CPU around it, then POST and the
# unmount. Sets r_mbs, r_cpu (daemon CPU s/GiB), r_ucpu (its user part),
# r_gcpu (the gateway's).
run_once() {
  local t0 t1 c0 c1 u0 u1 g0 g1
  # shellcheck disable=SC2153 # (S3R_GW_ENDPOINT: bench_gateway_setup)
  case $1 in
    cma) mount_ours "$S3R_GW_ENDPOINT" cma ;;
    off) mount_ours "$S3R_GW_ENDPOINT" off ;;
    direct) mount_ours "$S3R_ENDPOINT" off ;;
  esac
  "$2"
  c0=$(proc_cpu_s "$ours_pid") u0=$(proc_user_cpu_s "$ours_pid") g0=$(proc_tree_cpu_s "$gw_pid")
  t0=$(now)
  "$3"
  t1=$(now)
  c1=$(proc_cpu_s "$ours_pid") u1=$(proc_user_cpu_s "$ours_pid") g1=$(proc_tree_cpu_s "$gw_pid")
  if [ "$1" = cma ] && ! grep -q '^s3.rdma_bytes [1-9]' "$mnt/.s3rdmafs-stats"; then
    echo "fs_rdma: the cma mount moved no bytes by rdma ($3)" >&2
    exit 1
  fi
  "$4"
  bench_umount_ours "$mnt"
  r_mbs=$(awk -v b="$bytes" -v a="$t0" -v c="$t1" 'BEGIN { printf "%.1f", b / 1e6 / (c - a) }')
  r_cpu=$(awk -v b="$bytes" -v x="$c0" -v y="$c1" 'BEGIN { printf "%.3f", (y - x) / (b / 1073741824) }')
  r_ucpu=$(awk -v b="$bytes" -v x="$u0" -v y="$u1" 'BEGIN { printf "%.3f", (y - x) / (b / 1073741824) }')
  r_gcpu=$(awk -v b="$bytes" -v x="$g0" -v y="$g1" 'BEGIN { printf "%.3f", (y - x) / (b / 1073741824) }')
  [ "$1" != direct ] || r_gcpu=0
}
# a cold read of the object; a write of a new file of the same size (dd
# from a source file in the page cache; dd's close returns once the
# object is complete), the object deleted after
read_dd() { dd if="$mnt/$key" of=/dev/null bs=1M status=none; }
write_prep() { cat "$src" >/dev/null; }
write_dd() { dd if="$src" of="$mnt/fs_rdma-write.bin" bs=1M status=none; }
write_post() { rm -f "$mnt/fs_rdma-write.bin"; }
read_once() { run_once "$1" drop_caches read_dd true; }
write_once() { run_once "$1" write_prep write_dd write_post; }
src=$tmp/write.src
head -c "$bytes" /dev/urandom >"$src"

tools=(cma off direct)
declare -A mbs cpu ucpu gcpu
for ((i = 1; i <= reps; i++)); do
  for tool in "${tools[@]}"; do
    for op in read write; do
      "${op}_once" "$tool"
      t=$tool
      [ "$op" = read ] || t=$tool-write
      echo "fs_rdma: rep $i $t $r_mbs MB/s, daemon $r_cpu CPU s/GiB (user $r_ucpu), gateway $r_gcpu" >&2
      mbs[$t]="${mbs[$t]:-} $r_mbs"
      cpu[$t]="${cpu[$t]:-} $r_cpu"
      ucpu[$t]="${ucpu[$t]:-} $r_ucpu"
      gcpu[$t]="${gcpu[$t]:-} $r_gcpu"
    done
  done
done
tools+=(cma-write off-write direct-write)

printf '\n%-10s %-8s %8s %17s %15s %18s\n' fs_rdma tool MB/s "daemon CPU s/GiB" "of which user" "gateway CPU s/GiB"
declare -A m_mbs m_cpu m_ucpu
for tool in "${tools[@]}"; do
  # shellcheck disable=SC2086
  m_mbs[$tool]=$(median ${mbs[$tool]})
  # shellcheck disable=SC2086
  m_cpu[$tool]=$(median ${cpu[$tool]})
  # shellcheck disable=SC2086
  m_ucpu[$tool]=$(median ${ucpu[$tool]})
  # shellcheck disable=SC2086
  g=$(median ${gcpu[$tool]})
  printf '%-10s %-8s %8s %17s %15s %18s\n' "" "$tool" "${m_mbs[$tool]}" "${m_cpu[$tool]}" "${m_ucpu[$tool]}" "$g"
  bench_line fs_rdma "s3rdmafs-$tool" "${m_mbs[$tool]}" MB/s "$reps"
  bench_line fs_rdma_cpu "s3rdmafs-$tool" "${m_cpu[$tool]}" cpu_s_per_GiB "$reps"
  bench_line fs_rdma_user_cpu "s3rdmafs-$tool" "${m_ucpu[$tool]}" cpu_s_per_GiB "$reps"
  bench_line fs_rdma_gateway_cpu "s3rdmafs-$tool" "$g" cpu_s_per_GiB "$reps"
done
ratio_line fs_rdma s3rdmafs-cma s3rdmafs-off "${m_mbs[cma]}" "${m_mbs[off]}"
ratio_line fs_rdma s3rdmafs-cma s3rdmafs-direct "${m_mbs[cma]}" "${m_mbs[direct]}"
# daemon CPU per GiB, cma over off: the goal is at most 0.25
ratio_line fs_rdma_cpu s3rdmafs-cma s3rdmafs-off "${m_cpu[cma]}" "${m_cpu[off]}"
ratio_line fs_rdma_user_cpu s3rdmafs-cma s3rdmafs-off "${m_ucpu[cma]}" "${m_ucpu[off]}"
# writes (issue 14: the daemon at most 0.25 CPU s per GiB written with cma)
ratio_line fs_rdma_write s3rdmafs-cma-write s3rdmafs-off-write "${m_mbs[cma-write]}" "${m_mbs[off-write]}"
ratio_line fs_rdma_write_cpu s3rdmafs-cma-write s3rdmafs-off-write "${m_cpu[cma-write]}" "${m_cpu[off-write]}"
