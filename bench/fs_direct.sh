#!/usr/bin/env bash
# Workload fs_direct: libs3rdmafs's s3rdmafs_read_direct against read(2)
# through the same mount, one sequential pass over an object in chunks
# (bench/direct_bw.c), in one run:
#   http  RGW directly: the daemon's page cache warm (one pass first), the
#         kernel's dropped before each read(2) pass, so both go through the
#         daemon: read(2) costs FUSE's copies, read_direct one copy into
#         the caller's registered buffer
#   cma   through s3rdma-gateway with rdma.transport=cma: read(2) fills
#         the daemon's cache by rdma, read_direct has the gateway write
#         into the caller's buffer itself (each pass goes to the server)
# and writes the other way: a new file of the same size written in chunks
# by s3rdmafs_write_direct from a registered buffer against write(2), its
# close (the upload's end) timed: over HTTP write_direct saves FUSE's
# copies (its parts are copied into the write-back as write(2)'s are);
# with cma each whole part goes from the caller's buffer, read by the
# gateway itself.
# Reported: MB/s, and CPU seconds per GiB of the reader (writer), the
# daemon and (cma) the gateway; RATIO lines read_direct over read(2) and
# write_direct over write(2) for MB/s and for the CPU of the caller and
# the daemon together.
#
#   bench/fs_direct.sh [--size MiB] [--reps N] [--chunk MiB]
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
    fs_direct) shift ;;
    *) usage ;;
  esac
done
for v in "$size_mib" "$reps" "$chunk"; do case $v in '' | *[!0-9]* | 0) usage ;; esac; done

bench_setup
BW=$BENCH_TOP/build/bin/direct_bw
[ -x "$BW" ] || { echo "fs_direct: $BW is missing (build first)" >&2; exit 1; }
bench_gateway_setup fs_direct "$size_mib" # tmp, mnt, GW, gw_pid; the object

# pass ROW MODE: one direct_bw pass; sets p_mbs, p_cpu (reader + daemon
# CPU s/GiB), p_rcpu, p_dcpu, p_gcpu, p_crc
pass() {
  local out c0 c1 g0 g1 gib
  local file=$mnt/$key extra=()
  case $2 in
    read) drop_caches ;;
    write | wdirect) file=$mnt/w-$2.bin extra=("$size_mib") ;;
  esac
  c0=$(proc_cpu_s "$ours_pid") g0=$(proc_tree_cpu_s "$gw_pid")
  out=$("$BW" "$file" "$chunk" "$2" "${extra[@]}") || { echo "fs_direct: $1 $2 failed" >&2; exit 1; }
  c1=$(proc_cpu_s "$ours_pid") g1=$(proc_tree_cpu_s "$gw_pid")
  gib=$(awk -v b="$bytes" 'BEGIN { print b / 1073741824 }')
  read -r o_bytes o_seconds o_cpu o_crc < <(printf '%s\n' "$out" |
    sed -n 's/^bytes=\([^ ]*\) seconds=\([^ ]*\) cpu=\([^ ]*\) crc=\([^ ]*\)$/\1 \2 \3 \4/p')
  [ "$o_bytes" = "$bytes" ] || { echo "fs_direct: $1 $2 read $o_bytes bytes, not $bytes" >&2; exit 1; }
  p_crc=$o_crc
  p_mbs=$(awk -v b="$bytes" -v s="$o_seconds" 'BEGIN { printf "%.1f", b / 1e6 / s }')
  p_rcpu=$(awk -v c="$o_cpu" -v g="$gib" 'BEGIN { printf "%.3f", c / g }')
  p_dcpu=$(awk -v x="$c0" -v y="$c1" -v g="$gib" 'BEGIN { printf "%.3f", (y - x) / g }')
  p_gcpu=$(awk -v x="$g0" -v y="$g1" -v g="$gib" 'BEGIN { printf "%.3f", (y - x) / g }')
  [ "$1" = cma ] || p_gcpu=0
  p_cpu=$(awk -v a="$p_rcpu" -v b="$p_dcpu" 'BEGIN { printf "%.3f", a + b }')
}

declare -A mbs cpu rcpu dcpu gcpu
crc0=
for row in http cma; do
  if [ "$row" = http ]; then
    bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o rdma.transport=off
  else
    # shellcheck disable=SC2153 # (S3R_GW_ENDPOINT: bench_gateway_setup)
    bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o "endpoint=$S3R_GW_ENDPOINT,rdma.transport=cma"
  fi
  pass "$row" read >/dev/null # warm the daemon's cache (http)
  for ((i = 1; i <= reps; i++)); do
    for mode in read direct write wdirect; do
      pass "$row" "$mode"
      case $mode in read | direct)
        [ -n "$crc0" ] || crc0=$p_crc
        [ "$p_crc" = "$crc0" ] || { echo "fs_direct: $row $mode read other bytes" >&2; exit 1; } ;;
      esac
      t=$row-$mode
      echo "fs_direct: rep $i $t $p_mbs MB/s, reader $p_rcpu + daemon $p_dcpu CPU s/GiB, gateway $p_gcpu" >&2
      mbs[$t]="${mbs[$t]:-} $p_mbs" cpu[$t]="${cpu[$t]:-} $p_cpu"
      rcpu[$t]="${rcpu[$t]:-} $p_rcpu" dcpu[$t]="${dcpu[$t]:-} $p_dcpu"
      gcpu[$t]="${gcpu[$t]:-} $p_gcpu"
    done
  done
  if [ "$row" = cma ] && ! grep -q '^s3.rdma_bytes [1-9]' "$mnt/.s3rdmafs-stats"; then
    echo "fs_direct: the cma mount moved no bytes by rdma" >&2
    exit 1
  fi
  bench_umount_ours "$mnt"
done

printf '\n%-10s %-12s %8s %12s %12s %12s\n' "fs_direct" tool MB/s "reader CPU" "daemon CPU" "gateway CPU"
declare -A m_mbs m_cpu
for t in http-read http-direct cma-read cma-direct http-write http-wdirect \
  cma-write cma-wdirect; do
  # shellcheck disable=SC2086
  m_mbs[$t]=$(median ${mbs[$t]}) m_cpu[$t]=$(median ${cpu[$t]})
  # shellcheck disable=SC2086
  printf '%-10s %-12s %8s %12s %12s %12s\n' "" "$t" "${m_mbs[$t]}" "$(median ${rcpu[$t]})" \
    "$(median ${dcpu[$t]})" "$(median ${gcpu[$t]})"
  bench_line fs_direct "s3rdmafs-$t" "${m_mbs[$t]}" MB/s "$reps"
  bench_line fs_direct_cpu "s3rdmafs-$t" "${m_cpu[$t]}" cpu_s_per_GiB "$reps"
done
for row in http cma; do
  for p in direct:read wdirect:write; do
    a=${p%%:*} b=${p##*:}
    ratio_line fs_direct "s3rdmafs-$row-$a" "s3rdmafs-$row-$b" "${m_mbs[$row-$a]}" "${m_mbs[$row-$b]}"
    ratio_line fs_direct_cpu "s3rdmafs-$row-$a" "s3rdmafs-$row-$b" "${m_cpu[$row-$a]}" "${m_cpu[$row-$b]}"
  done
done
