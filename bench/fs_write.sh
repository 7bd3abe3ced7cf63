#!/usr/bin/env bash
# Workload fs_write: sequential write of one file of incompressible data
# (default 1 GiB), timed from the start of the write until the object is
# complete on the server with its full size (docs/benchmarks.md):
# s3rdmafs,
# s3fs, rclone mount (--vfs-cache-mode off) and `aws s3 cp`, on the same RGW
# in the same run, tools alternating (A B C D A B C D ...), every filesystem
# freshly mounted for each repetition, the object deleted between them;
# medians reported, and the ratios of s3rdmafs to each peer.
#
# The source file is generated once in a temp dir and read from the page
# cache by every tool (it is read through before each run; caches are not
# dropped). The mounts all get the same command, `dd if=SRC of=MNT/KEY bs=1M`;
# aws gets `aws s3 cp SRC s3://BUCKET/KEY`. The clock stops when a HEAD sees
# the object with its full size (peer_wait_object: at once for a tool whose
# close() or exit means complete). Also reported: CPU seconds per GiB written,
# of the daemon (mounts, /proc/PID/stat before and after, the dd process not
# counted) or of the aws process.
#
#   bench/fs_write.sh [--size MiB] [--reps N] [--timeout S] [--no-verify]
#                     [--tools "s3rdmafs s3fs rclone aws"]
#
#   --timeout S   bound on each write and on each wait for the object (600)
#   --no-verify   skip the check of the first repetition of each tool (the
#                 object read back with curl and its SHA-256 compared with the
#                 source; outside the timed part)
#
# A tool that fails (s3rdmafs before it writes: EROFS) is reported as FAILED
# with its error, and a line `FAIL workload=fs_write tool=T failed=K n=N`;
# the other tools are still measured and printed. Exit status 1 when any
# repetition failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # and the peer tools: tests/lib/peers.sh

size_mib=1024 reps=3 tmo=600 verify=1 tools=(s3rdmafs s3fs rclone aws)
usage() {
  echo "usage: $0 [--size MiB] [--reps N] [--timeout S] [--no-verify] [--tools \"s3rdmafs s3fs rclone aws\"]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --size) [ $# -ge 2 ] || usage; size_mib=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; tmo=$2; shift 2 ;;
    --no-verify) verify=0; shift ;;
    --tools) [ $# -ge 2 ] || usage; read -r -a tools <<<"$2"; shift 2 ;;
    fs_write) shift ;;
    *) usage ;;
  esac
done
for v in "$size_mib" "$reps" "$tmo"; do
  case $v in '' | *[!0-9]* | 0) usage ;; esac
done
[ ${#tools[@]} -gt 0 ] || usage
for t in "${tools[@]}"; do
  case $t in s3rdmafs | s3fs | rclone | aws) ;; *) echo "fs_write: unknown tool '$t'" >&2; usage ;; esac
done

bench_setup
peer_install >&2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-write.XXXXXX")
mnt=$tmp/mnt cache=$tmp/cache src=$tmp/src.bin
mkdir -p "$mnt" "$cache"
bucket=s3r-bench-write-$$
key=write-${size_mib}m.bin
bytes=$((size_mib * 1048576))
cleanup() {
  local rc=$?
  set +e
  bench_release fs_write "$mnt" "$tmp"
  timeout 120 bash -c '. "$1"; peer_rm_bucket "$2"' _ "$BENCH_TOP/tests/lib/peers.sh" "$bucket" 2>/dev/null ||
    echo "fs_write: could not delete bucket $bucket" >&2
  bench_teardown
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

peer_aws s3 mb "s3://$bucket" >/dev/null
echo "fs_write: generating a ${size_mib} MiB source file in $tmp" >&2
head -c "$bytes" /dev/urandom >"$src"
src_sha=
[ "$verify" -eq 0 ] || src_sha=$(sha256sum <"$src" | cut -d' ' -f1)
sync # its write-back must not land in a timed run

# the staging directory in the temp dir
mount_tool() { bench_mount_tool "$1" "$bucket" "$mnt" "$tmp/fs.log" -o "cache.dir=$cache"; }
umount_tool() { bench_umount_tool "$1" "$mnt"; }
tool_pid() {
  case $1 in
    s3rdmafs) [ -n "$ours_pid" ] && printf '%s\n' "$ours_pid" ;;
    *) peer_pid "$mnt" ;;
  esac
}

# rm_object: delete the object and any unfinished upload; fails if it is
# still there.
rm_object() {
  peer_rm_object "$bucket" "$key" 2>/dev/null || true
  ! peer_head_size "$bucket" "$key" >/dev/null 2>&1
}

# write_once tool: one timed write. Sets r_mbs (MB/s) and r_cpu (CPU s per
# GiB), or r_err and returns 1.
write_once() {
  local tool=$1 pid='' c0='' c1='' t0 t1 t rc=0 got TIMEFORMAT='%U %S'
  r_mbs='' r_cpu='' r_err=''
  if ! rm_object; then r_err="cannot delete $bucket/$key before the run"; return 1; fi
  if [ "$tool" != aws ]; then
    if ! mount_tool "$tool"; then
      umount_tool "$tool"
      r_err="mount failed"
      return 1
    fi
    pid=$(tool_pid "$tool") || pid=
  fi
  cat "$src" >/dev/null # from the page cache, the same for every tool
  sync                  # nothing earlier left to write back during the run
  [ -z "$pid" ] || c0=$(proc_cpu_s "$pid") || c0=
  : >"$tmp/err"
  t0=$(now)
  if [ "$tool" = aws ]; then
    { time timeout -k 10 "$tmo" bash -c '. "$1"; shift; peer_aws_cp "$@"' _ "$BENCH_TOP/tests/lib/peers.sh" \
      "$src" "s3://$bucket/$key" 2>"$tmp/err"; } 2>"$tmp/cpu" || rc=$?
  else
    timeout -k 10 "$tmo" dd if="$src" of="$mnt/$key" bs=1M status=none 2>"$tmp/err" || rc=$?
  fi
  [ "$rc" -ne 0 ] || peer_wait_object "$bucket" "$key" "$bytes" "$tmo" 2>>"$tmp/err" || rc=$?
  t1=$(now)
  if [ -n "$c0" ]; then c1=$(proc_cpu_s "$pid") || c1=; fi
  [ "$tool" = aws ] || umount_tool "$tool"
  if [ "$rc" -ne 0 ]; then
    r_err=$(grep -v '^ *$' "$tmp/err" | tail -n 3 | paste -sd ' ')
    [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || r_err="timed out after $tmo s: $r_err"
    r_err=${r_err:-exit status $rc}
    peer_abort_uploads "$bucket" >/dev/null 2>&1 || true
    rm_object || true
    return 1
  fi
  t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  r_mbs=$(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.1f", b / 1e6 / t }')
  if [ "$tool" = aws ]; then
    r_cpu=$(awk -v b="$bytes" '{ printf "%.2f", ($1 + $2) / (b / 1073741824) }' "$tmp/cpu")
  elif [ -n "$c0" ] && [ -n "$c1" ]; then
    r_cpu=$(awk -v b="$bytes" -v c0="$c0" -v c1="$c1" 'BEGIN { printf "%.2f", (c1 - c0) / (b / 1073741824) }')
  fi
  if [ -n "$src_sha" ] && [ "$2" -eq 1 ]; then
    got=$(peer_curl_get "$bucket/$key" /dev/stdout | sha256sum | cut -d' ' -f1) || got=
    if [ "$got" != "$src_sha" ]; then
      r_err="object read back differs from the source (sha256 ${got:-unreadable})"
      return 1
    fi
  fi
}

declare -A res fails errs
for ((i = 1; i <= reps; i++)); do
  for tool in "${tools[@]}"; do
    if write_once "$tool" "$i"; then
      echo "fs_write: rep $i $tool $r_mbs MB/s, ${r_cpu:-?} cpu s/GiB" >&2
      res[$tool]="${res[$tool]:-} $r_mbs"
      [ -z "$r_cpu" ] || res[$tool.cpu]="${res[$tool.cpu]:-} $r_cpu"
    else
      echo "fs_write: rep $i $tool FAILED: $r_err" >&2
      fails[$tool]=$((${fails[$tool]:-0} + 1))
      errs[$tool]=$r_err
    fi
  done
done

printf '\n%-20s %-10s %10s %12s\n' "fs_write (${size_mib} MiB)" tool "MB/s" "cpu s/GiB"
any_fail=0
for tool in "${tools[@]}"; do
  f=${fails[$tool]:-0} n=$((reps - ${fails[$tool]:-0}))
  if [ "$n" -eq 0 ]; then
    printf '%-20s %-10s %10s   %s\n' "" "$tool" FAILED "(${errs[$tool]})"
  else
    # shellcheck disable=SC2086
    m=$(median ${res[$tool]})
    res[$tool.m]=$m
    c=-
    # shellcheck disable=SC2086
    [ -z "${res[$tool.cpu]:-}" ] || c=$(median ${res[$tool.cpu]})
    printf '%-20s %-10s %10s %12s' "" "$tool" "$m" "$c"
    [ "$f" -eq 0 ] || printf '   (%s of %s reps failed: %s)' "$f" "$reps" "${errs[$tool]}"
    printf '\n'
    bench_line fs_write "$tool" "$m" MB/s "$n"
    [ "$c" = - ] || bench_line fs_write "$tool" "$c" cpu_s_per_GiB "$n"
  fi
  if [ "$f" -gt 0 ]; then
    printf 'FAIL workload=fs_write tool=%s failed=%s n=%s\n' "$tool" "$f" "$reps"
    any_fail=1
  fi
done
if [ -n "${res[s3rdmafs.m]:-}" ]; then
  for peer in s3fs rclone aws; do
    [ -n "${res[$peer.m]:-}" ] || continue
    ratio_line fs_write s3rdmafs "$peer" "${res[s3rdmafs.m]}" "${res[$peer.m]}"
  done
  # the goal (issue): at least 3x s3fs and 0.8x aws s3 cp
  for g in s3fs:3 aws:0.8; do
    peer=${g%%:*} want=${g#*:}
    [ -n "${res[$peer.m]:-}" ] || continue
    awk -v a="${res[s3rdmafs.m]}" -v b="${res[$peer.m]}" -v w="$want" -v p="$peer" 'BEGIN {
      r = a / b; printf "fs_write goal: s3rdmafs/%s = %.2f, wanted >= %s: %s\n", p, r, w, (r >= w ? "met" : "NOT met") }'
  done
fi
exit "$any_fail"
