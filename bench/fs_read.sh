#!/usr/bin/env bash
# Workloads fs_read and fs_ls, our mount against its peers on the same RGW in
# the same run, tools alternating (A B C ... A B C ...), caches dropped and
# every filesystem freshly mounted before each cold run; medians reported.
#
#   fs_read: cold sequential read of one object (default 1 GiB) with dd:
#            s3rdmafs, s3fs, rclone mount (cache off), single-stream curl,
#            4-way parallel ranged curl
#   fs_ls:   `ls -l` of a 2000-entry directory on a fresh mount: s3rdmafs,
#            s3fs, rclone
#
#   bench/fs_read.sh [--size MiB] [--reps N] [--entries N] [fs_read] [fs_ls]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # and the peer tools: tests/lib/peers.sh

size_mib=1024 reps=3 entries=2000 work=()
while [ $# -gt 0 ]; do
  case $1 in
    --size) size_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    fs_read|fs_ls) work+=("$1"); shift ;;
    *) echo "usage: $0 [--size MiB] [--reps N] [--entries N] [fs_read] [fs_ls]" >&2; exit 2 ;;
  esac
done
[ ${#work[@]} -gt 0 ] || work=(fs_read fs_ls)

bench_setup
peer_install >&2
mnt=$(mktemp -d /tmp/s3r-bench-mnt.XXXXXX)
cleanup() {
  bench_umount_ours "$mnt" 2>/dev/null
  peer_umount "$mnt" 2>/dev/null || true
  rmdir "$mnt" 2>/dev/null || true
  rm -f "$mnt.log"
  bench_teardown
}
trap cleanup EXIT

bench_read_object fs_read "$size_mib" # bucket, key, bytes
if [ "$("$CLI" -r ls "$bucket/ls$entries/" | wc -l)" -ne "$entries" ]; then
  echo "fs_ls: creating $entries objects" >&2
  "$CLI" --parallel 32 fill "$bucket/ls$entries/f" "$entries" 4096
fi

mount_tool() { bench_mount_tool "$1" "$bucket" "$mnt" "$mnt.log"; }
umount_tool() { bench_umount_tool "$1" "$mnt"; }

# seconds taken by a command
timed() {
  local t0 t1
  t0=$(now)
  "$@" >/dev/null
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

read_once() { # tool -> MB/s
  local tool=$1 t
  case $tool in
    curl) drop_caches; t=$(timed peer_curl_get "$bucket/$key" /dev/null) ;;
    curl4) drop_caches; t=$(timed peer_curl_get_parallel 4 "$bucket/$key" "$bytes" /dev/null) ;;
    *)
      mount_tool "$tool"
      drop_caches
      t=$(timed dd if="$mnt/$key" of=/dev/null bs=1M status=none)
      umount_tool "$tool" ;;
  esac
  awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.1f", b / 1e6 / t }'
}

ls_once() { # tool -> seconds
  local tool=$1 t
  mount_tool "$tool"
  drop_caches
  t=$(timed ls -l "$mnt/ls$entries")
  [ "$(ls "$mnt/ls$entries" | wc -l)" -eq "$entries" ] || { echo "fs_ls: $tool listed the wrong count" >&2; exit 1; }
  umount_tool "$tool"
  echo "$t"
}

declare -A res
for w in "${work[@]}"; do
  case $w in
    fs_read) tools=(s3rdmafs s3fs rclone curl curl4) ;;
    fs_ls) tools=(s3rdmafs s3fs rclone) ;;
  esac
  for ((i = 1; i <= reps; i++)); do
    for tool in "${tools[@]}"; do
      if [ "$w" = fs_read ]; then v=$(read_once "$tool"); u="MB/s"; else v=$(ls_once "$tool"); u="s"; fi
      echo "$w: rep $i $tool $v $u" >&2
      res[$w.$tool]="${res[$w.$tool]:-} $v"
    done
  done
  printf '\n%-12s %-10s %10s\n' "$w" tool "median"
  for tool in "${tools[@]}"; do
    # shellcheck disable=SC2086
    m=$(median ${res[$w.$tool]})
    res[$w.$tool.m]=$m
    if [ "$w" = fs_read ]; then u=MB/s; else u=s; fi
    printf '%-12s %-10s %10s %s\n' "" "$tool" "$m" "$u"
    bench_line "$w" "$tool" "$m" "$u" "$reps"
  done
  if [ "$w" = fs_read ]; then
    for peer in curl4 curl s3fs rclone; do
      ratio_line fs_read s3rdmafs "$peer" "${res[fs_read.s3rdmafs.m]}" "${res[fs_read.$peer.m]}"
    done
  else
    for peer in s3fs rclone; do # time ratio: below 1 is faster
      ratio_line fs_ls s3rdmafs "$peer" "${res[fs_ls.s3rdmafs.m]}" "${res[fs_ls.$peer.m]}"
    done
  fi
done
