#!/usr/bin/env bash
# Data integrity of the write path on a real mount of RGW: fs_exerciser.py's
# random operations (writes and pwrites with holes, truncates, renames and
# unlinks, of open files too, reads and sizes checked against a model; files
# of several 5 MiB parts) with fixed seeds and one random seed; then a
# remount (empty cache directory) where every file must read back as the
# exerciser left it, and a second client (awscli): each object's size and
# md5, nothing else in the bucket, no multipart upload left behind.
#
#   test_fs_exerciser.sh BUILD_BIN_DIR
#
# S3R_TEST_SEED=N  the random run's seed (every run prints its seed and a
#                  replay command; the random seed is also in the test name)
# S3R_FSX_OPS=N    operations of the random run (default 1200)
# S3R_FSX_ARGS=... more fs_exerciser.py options for every run (say
#                  "--weights listdir=0" to look past a listing bug)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsx cache cache2 md5

part=5M
exerciser=$here/fs_exerciser.py
export PYTHONDONTWRITEBYTECODE=1

mount_rw() { # [cache dir]: mount, the daemon's pid in $fspid
  fs_mount "$bucket" "$mnt" "$log" -o write.part_size="$part" \
    -o cache.dir="${1:-$tmp/cache}"
  fspid=$FS_PID
}

# daemon_stuck: an operation hangs in the daemon: show its threads (with gdb
# when there is one), kill it (fs_kill: ends the hung request) and mount
# again
daemon_stuck() {
  echo "# the daemon (pid $fspid) does not answer; its threads:"
  if command -v gdb >/dev/null 2>&1; then
    timeout 60 gdb -p "$fspid" -batch -ex 'thread apply all bt' 2>/dev/null |
      grep -E '^(Thread|#)' | sed 's/^/#   /' || true
  fi
  echo "# the daemon's log:"
  tail -n 30 "$log" | sed 's/^/#   /'
  fs_kill "$mnt" || true
  fs_umount "$mnt" || true
  mount_rw
}

# exercise PREFIX SEED [args]: one run on its own names in the mount's root;
# on success its final model (MD5 SIZE NAME; "- - NAME": must not exist) is
# left in $tmp/md5/PREFIX. A run its watchdog finds hung in an operation (or
# past $run_limit seconds) waits in a FUSE request: daemon_stuck ends it.
run_limit=300
exercise() {
  local prefix=$1 seed=$2; shift 2
  local out=$tmp/run-$prefix.log pid rc=0 i stuck=false
  local -a more=()
  read -ra more <<<"${S3R_FSX_ARGS:-}"
  is_mounted "$mnt" || { echo "# $mnt is not mounted"; return 1; }
  python3 "$exerciser" "$mnt" --seed "$seed" --prefix "$prefix" \
    --part-size "$part" --op-timeout 90 --dump-md5 "$tmp/md5/$prefix" "$@" \
    "${more[@]}" >"$out" 2>&1 &
  pid=$!
  for ((i = 0; i < run_limit * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    if grep -q 'did not finish in' "$out"; then
      stuck=true
      break
    fi
    sleep 0.2
  done
  if ! $stuck && kill -0 "$pid" 2>/dev/null; then
    echo "# $prefix: still running after $run_limit s: stopped"
    kill "$pid" 2>/dev/null || true
    sleep 5
    kill -0 "$pid" 2>/dev/null && stuck=true
  fi
  if $stuck; then daemon_stuck; fi
  wait "$pid" || rc=$?
  cat "$out"
  return "$rc"
}
# key_is KEY SIZE MD5: HEAD's size and the content's md5 (GET by awscli)
key_is() {
  local size md5
  size=$(aws_ s3api head-object --bucket "$bucket" --key "$1" \
    --query ContentLength --output text 2>&1) || true
  md5=$(key_md5 "$1" 2>/dev/null)
  [ "$size $md5" = "$2 $3" ] || {
    echo "# '$1': size $size, md5 $md5; expected $2, $3"; return 1; }
}
# ours: the lines of stdin that begin with the prefix of a run that passed
# (a failed run may leave anything behind: it has failed already)
ours() {
  local f
  local -a pre=()
  for f in "$tmp"/md5/*; do [ -e "$f" ] && pre+=("${f##*/}"); done
  python3 -c '
import sys
pre = tuple(sys.argv[1:])
for line in sys.stdin:
    if pre and line.startswith(pre):
        print(line, end="")' "${pre[@]}"
}
# no_uploads_left: no multipart upload (neither completed nor aborted) for
# the files of the runs that passed; every upload left is shown
no_uploads_left() {
  local out
  out=$(fs_uploads "") || { echo "# listing the uploads failed: $out"; return 1; }
  [ -z "$out" ] && return 0
  printf '%s\n' "$out" | sed 's/^/# upload left: /'
  [ -z "$(ours <<<"$out")" ]
}

"$CLI" mb "$bucket"
mount_rw

seed=${S3R_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
# ---- s1, s2, s3, rnd: a run of the exerciser each, on one mount ----
case_s1() {
check "exerciser seed 1: 6 files up to 16M" \
  exercise s1- 1 --ops 1500 --files 6 --max-size 16M
}
run_case s1 case_s1
case_s2() {
check "exerciser seed 2: two fds a file, unlink and rename of open files" \
  exercise s2- 2 --ops 1200 --files 4 --max-size 12M --fds-per-file 2 \
  --unlink-open
}
run_case s2 case_s2
case_s3() {
check "exerciser seed 3: small files and writes" \
  exercise s3- 3 --ops 1500 --files 8 --max-size 256K --max-write 64K
}
run_case s3 case_s3
case_rnd() {
check "exerciser random seed $seed" \
  exercise rnd- "$seed" --ops "${S3R_FSX_OPS:-1200}" --files 6 --max-size 16M \
  --fds-per-file 2 --unlink-open
}
run_case rnd case_rnd

# ---- after: what the runs left, after the unmount, through a remount
# ---- and a second client (the smallest run first when none ran) ----
case_after() {
ls "$tmp"/md5/* >/dev/null 2>&1 || need_case s3
check "no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"
# what the runs left (a run that failed left no model: not checked below)
cat "$tmp"/md5/* 2>/dev/null | sort -k3 >"$tmp/all.md5" || true
awk '$1 != "-"' "$tmp/all.md5" >"$tmp/files.md5"
echo "# $(wc -l <"$tmp/files.md5") files left," \
  "$(grep -c '^- ' "$tmp/all.md5" || true) names removed"

fs_umount "$mnt"
if [ "$fail" -ne 0 ]; then
  echo "--- the daemon's log (first mount)"
  tail -n 60 "$log"
fi
check "no multipart upload left after unmounting" no_uploads_left

# ---- a remount with an empty cache directory ----
mount_rw "$tmp/cache2"
check "remount: every file as the exerciser left it, removed names absent" \
  python3 "$exerciser" --check-md5 "$tmp/all.md5" "$mnt"
fs_umount "$mnt"

# ---- a second client ----
aws_ s3api list-objects-v2 --bucket "$bucket" --query 'Contents[].Key' \
  --output json | python3 -c '
import json, sys
for k in json.load(sys.stdin) or []:
    print(k)' | sort >"$tmp/keys" || true
cut -d' ' -f3- "$tmp/files.md5" | sort >"$tmp/want-keys"
ours <"$tmp/keys" >"$tmp/our-keys"
check "awscli: the bucket holds exactly the files left" \
  diff -u "$tmp/want-keys" "$tmp/our-keys"
while read -r md5 size name <&3; do
  if [ "$md5" = - ]; then
    check "awscli: no object '$name'" key_absent "$name"
  else
    check "awscli: '$name' has $size bytes, md5 $md5" \
      key_is "$name" "$size" "$md5"
  fi
done 3<"$tmp/all.md5"
}
run_case after case_after

summary
