#!/usr/bin/env bash
# Faults during writes on a real mount of RGW: the durability contract
# (close() and fsync() return only once the object is complete on the
# server, or return EIO; a failed upload keeps its staged data and is
# retried; nothing written is dropped; aborted multipart uploads are cleaned
# up), checked against the bucket through a second client (awscli).
#
#   a) RGW frozen (SIGSTOP) from 15 MiB into a 40 MiB write until close()
#      and the upload the release then tries have both failed: close() is
#      EIO within a bounded time, no partial object is ever visible, the
#      background retry (write.retry_interval) uploads the complete object
#      once RGW is back, no multipart upload is left
#   b) RGW frozen for 2 s during a 40 MiB write: close() succeeds and the
#      object is complete as soon as it returns
#   c) the daemon killed (SIGKILL) 30 MiB into a 60 MiB write: no object;
#      the next mount (same cache.dir), which works, keeps the file in
#      unsaved/ and its multipart upload, the only copy of the parts the
#      server acknowledged, never aborted but named in the MANIFEST line
#   d) fsync() of a small file with RGW frozen: EIO; the file still reaches
#      the server once RGW is back
# (run in the order a, b, d, c: the kill comes last)
#
# "RGW stopped" is the real radosgw of tests/servers/rgw.sh frozen with
# SIGSTOP (its pid from $S3R_RGW_DIR/run/radosgw.pid): the kernel still
# accepts connections, nothing is answered.  Every freeze is undone by
# SIGCONT right after its scenario, first thing in the EXIT trap, and by a
# watchdog in its own session should this script itself be killed.  Other
# users of the same RGW stall while it is frozen (about 20 s in a), 2 s in
# b), 6 s in d)); the whole script takes about 50 s.
#
#   test_fs_faults.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsf cache cache-kill
MiB=1048576
FREEZE_MAX=120 # seconds: the watchdog thaws RGW after this, whatever happens
WRITER=$here/fault_writer.py

# ---- the radosgw to freeze ----
rgw_pid=$(cat "${S3R_RGW_DIR:-/tmp/s3rdmafs-rgw}/run/radosgw.pid" 2>/dev/null || true)
if ! [[ $rgw_pid =~ ^[0-9]+$ ]] ||
   [[ "$(tr '\0' ' ' </proc/"$rgw_pid"/cmdline 2>/dev/null)" != 'radosgw '* ]]; then
  echo "no radosgw of tests/servers/rgw.sh found (pid file: '${rgw_pid}')" >&2
  exit 1
fi
rgw_state() { awk '{print $3}' /proc/"$rgw_pid"/stat 2>/dev/null; }
wpid=

thaw() {
  kill -CONT "$rgw_pid" 2>/dev/null || true
  rm -f "$tmp/frozen"
}

# freeze: SIGSTOP radosgw, with a watchdog (own session, so a kill of this
# script's process group spares it) that sends SIGCONT after FREEZE_MAX
# seconds unless thaw removed the flag file first.
freeze() {
  echo "$rgw_pid" >"$tmp/frozen"
  # shellcheck disable=SC2016  # expanded by the watchdog's bash
  setsid bash -c 'for _ in $(seq 1 "$3"); do sleep 1; [ -e "$1" ] || exit 0; done
    tr "\0" " " </proc/"$2"/cmdline | grep -q "^radosgw " && kill -CONT "$2"
    rm -f "$1"' _ "$tmp/frozen" "$rgw_pid" "$FREEZE_MAX" </dev/null >/dev/null 2>&1 &
  kill -STOP "$rgw_pid"
}

cleanup() {
  local rc=$?
  thaw # before anything else: a frozen RGW stalls everybody
  set +e # (errexit holds in traps too: "(exit $rc)" would end it here)
  if [ -n "$wpid" ]; then { kill -KILL "$wpid"; wait "$wpid"; } 2>/dev/null; fi
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    for f in "$tmp"/fs-*.log; do
      if [ ! -e "$f" ] || [ "$f" = "$log" ]; then continue; fi
      echo "--- errors and warnings in $(basename "$f")"
      grep -iE 'error|warn|fail|abort|retry' "$f" | tail -n 40 || true
    done
  fi
  if is_mounted "$mnt"; then fs_umount "$mnt" || true; fi
  fs_abort_uploads || true
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- helpers ----
# head_size KEY: the object's size, "absent" (404), or "error: ..."
head_size() {
  local out rc=0
  out=$(aws_ s3api head-object --bucket "$bucket" --key "$1" \
          --query ContentLength --output text 2>&1) || rc=$?
  if [ "$rc" -eq 0 ]; then echo "$out"
  elif grep -qE '\(404\)|Not Found' <<<"$out"; then echo absent
  else echo "error: $out" | head -n 3 | tr '\n' ' '; fi
}
# obj_md5 KEY: the object's md5, or "GET failed"
obj_md5() {
  aws_ s3 cp "s3://$bucket/$1" "$tmp/got" >/dev/null 2>&1 || { echo "GET failed"; return 0; }
  md5 "$tmp/got"
  rm -f "$tmp/got"
}
# wait_uploads_gone PREFIX SECONDS: bounded poll until no upload is listed
# (fs_uploads: nothing when there is none)
wait_uploads_gone() {
  local t0=$SECONDS u
  for _ in $(seq 1 400); do # (bounded by $2 s too)
    u=$(fs_uploads "$1") || true
    [ -z "$u" ] && { echo "# no upload under $1 after $((SECONDS - t0)) s"; return 0; }
    [ $((SECONDS - t0)) -ge "$2" ] && break
    sleep 0.5
  done
  echo "# still listed under $1 after $((SECONDS - t0)) s: $u"
  return 1
}
rgw_answers() { # bounded: RGW answers HTTP again after a thaw
  for _ in $(seq 1 30); do
    curl -s -m 2 -o /dev/null "$S3R_ENDPOINT" && return 0
    sleep 0.5
  done
  return 1
}

# start_writer NAME PATH SIZE SEED [fault_writer options]: sets ctl, wpid
start_writer() {
  local name=$1 path=$2 size=$3 seed=$4; shift 4
  ctl=$tmp/ctl-$name
  mkdir -p "$ctl"
  python3 "$WRITER" "$path" "$size" "$seed" "$ctl" "$@" >"$ctl/out" 2>&1 &
  wpid=$!
}
writer_done() { grep -qs '^done=1' "$ctl/result" || ! kill -0 "$wpid" 2>/dev/null; }
# wait_at NAME SECONDS: the writer reached pause NAME (or ended: false)
at_() { [ -e "$ctl/at-$1" ] && return 0; writer_done && return 2; return 1; }
wait_at() { wait_for "$2" 0.02 at_ "$1"; }
# wait_writer SECONDS: the writer finished in time
wait_writer() {
  wait_for "$1" 0.05 writer_done || return 1
  wait "$wpid" 2>/dev/null || true
  wpid=
}
# writer_finish SECONDS: wait for it, else kill it (after thawing RGW)
writer_finish() {
  wait_writer "$1" && return 0
  thaw
  wait_writer 30 && return 1
  echo "# writer stuck: killed"
  { kill -KILL "$wpid"; wait "$wpid"; } 2>/dev/null || true
  wpid=
  return 1
}
res() { sed -n "s/^$1=//p" "$ctl/result" 2>/dev/null | tail -n 1; }
report() { echo "# $1: $(tr '\n' ' ' <"$ctl/result" 2>/dev/null)"; }
# poll_object KEY WANT_SIZE SECONDS: bounded poll until the object appears;
# sets seen (each answer that differs from the one before, in order)
poll_object() {
  local t0=$SECONDS s
  seen=''
  for _ in $(seq 1 60); do
    s=$(head_size "$1")
    [ "$s" = "${seen##* }" ] || seen="$seen $s"
    [ "$s" = "$2" ] && return 0
    [[ $s =~ ^[0-9]+$ ]] && return 1 # an object of the wrong size
    [ $((SECONDS - t0)) -ge "$3" ] && return 1
    sleep 0.5
  done
  return 1
}
# no_partial SIZE SEEN...: nothing seen was an object of another size
no_partial() {
  local want=$1 s; shift
  for s in "$@"; do [[ $s =~ ^[0-9]+$ ]] && [ "$s" != "$want" ] && return 1; done
  return 0
}

"$CLI" mb "$bucket"
# quick faults: a request gives up after 2 s, an upload after 6 s; a failed
# upload is retried in the background every 2 s
opts=(-o write.part_size=5M -o write.retry_interval=2
      -o s3.request_timeout_ms=2000 -o s3.retry.budget_ms=6000
      -o s3.retry.max_attempts=4 -o s3.connect_timeout_ms=1000)
log=$tmp/fs-1.log
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache" "${opts[@]}"

# ---- a) long outage: RGW frozen from 15 MiB on until close() returns ----
case_a() {
# RGW stays frozen until close() has failed and so has the upload the
# kernel's release then tries: only the background retry is left to upload
# the file once RGW is back
echo "# a) RGW frozen 15 MiB into a 40 MiB write, until close() (and release) fail"
key='a-long.bin'
start_writer a "$mnt/$key" $((40 * MiB)) 1 --pause-at $((15 * MiB))
check "a: writer reaches 15 MiB" wait_at bytes 60
check_eq "a: no object visible mid-write" "$(head_size $key)" absent
errs0=$(stat_of write.commit_errors)
freeze
t0=$SECONDS
touch "$ctl/go-bytes"
check "a: writer done (close returned) within 60 s of the freeze" writer_finish 60
t1=$SECONDS
for _ in $(seq 1 150); do # the second failure (release's), at most 30 s more
  [ "$(stat_of write.commit_errors)" -ge $((${errs0:-0} + 2)) ] 2>/dev/null && break
  [ $((SECONDS - t1)) -ge 30 ] && break
  sleep 0.2
done
echo "# a: uploads failed while frozen (write.commit_errors): $(stat_of write.commit_errors) - ${errs0:-?}"
thaw
echo "# a: RGW frozen for $((SECONDS - t0)) s"
report a
check "a: RGW thawed" test "$(rgw_state)" != T
check "a: RGW answers again" rgw_answers
check_eq "a: no write fails (staged while RGW is frozen)" "$(res write_err)" 0
check_eq "a: every byte written" "$(res written)" $((40 * MiB))
check_eq "a: close() returns EIO while RGW is frozen" "$(res close_err)" "5(EIO)"
size=$(stat -c %s "$ctl/ref")
check "a: the background retry makes the object appear within 30 s" \
  poll_object $key "$size" 30
echo "# a: HEAD after the thaw saw:$seen"
# shellcheck disable=SC2086  # one word per HEAD answer
check "a: never a partial object (absent, then only the full size)" no_partial "$size" $seen
check "a: the object holds exactly what was written (md5)" \
  test "$(obj_md5 $key)" = "$(md5 "$ctl/ref")"
check "a: no multipart upload left (within 10 s)" wait_uploads_gone a- 10
}
run_case a case_a

# ---- b) short outage: RGW frozen for 2 s, inside the retry budget ----
case_b() {
echo "# b) RGW frozen for 2 s during a 40 MiB write"
key=b-short.bin
start_writer b "$mnt/$key" $((40 * MiB)) 2 --pause-at $((15 * MiB))
check "b: writer reaches 15 MiB" wait_at bytes 60
freeze
touch "$ctl/go-bytes"
sleep 2
thaw
check "b: writer done within 60 s" writer_finish 60
report b
check_eq "b: no write fails" "$(res write_err)" 0
check_eq "b: every byte written" "$(res written)" $((40 * MiB))
check_eq "b: close() succeeds" "$(res close_err)" 0
check_eq "b: complete object right after close()" "$(head_size $key)" $((40 * MiB))
check "b: the object holds exactly what was written (md5)" \
  test "$(obj_md5 $key)" = "$(md5 "$ctl/ref")"
check "b: no multipart upload left (within 10 s)" wait_uploads_gone b- 10
}
run_case b case_b

# ---- d) fsync() of a small file with RGW frozen ----
case_d() {
echo "# d) fsync() of a 100 KiB file with RGW frozen"
key='d-small.bin'
start_writer d "$mnt/$key" 102400 3 --fsync --pause-before-fsync --pause-before-close
check "d: writer reaches fsync" wait_at fsync 30
freeze
touch "$ctl/go-fsync"
check "d: fsync() returns within 60 s" wait_at close 60
thaw
check "d: RGW answers again" rgw_answers
check_eq "d: no write fails" "$(res write_err)" 0
check_eq "d: fsync() returns EIO while RGW is frozen" "$(res fsync_err)" "5(EIO)"
touch "$ctl/go-close"
check "d: writer done (close returned) within 60 s" writer_finish 60
report d
if [ "$(res close_err)" = 0 ]; then
  check_eq "d: close() after the thaw succeeds: object complete at once" \
    "$(head_size $key)" 102400
else # EIO again: the background retry must still deliver it
  check "d: close() after the thaw failed: the object appears within 30 s" \
    poll_object $key 102400 30
  echo "# d: HEAD saw:$seen"
fi
check "d: the object holds exactly what was written (md5)" \
  test "$(obj_md5 $key)" = "$(md5 "$ctl/ref")"
check "d: no multipart upload left (within 10 s)" wait_uploads_gone d- 10

check "a-c: clean unmount" fs_umount "$mnt"
echo "# a, b, d: $(grep -ciE 'error|warn' "$log" || true) errors and warnings in the daemon's log"
}
run_case d case_d

# ---- c) the daemon killed (SIGKILL) mid-write ----
case_c() {
echo "# c) SIGKILL of the daemon 30 MiB into a 60 MiB write"
kopts=(-o cache.dir="$tmp/cache-kill" "${opts[@]}")
log=$tmp/fs-2.log
fs_mount "$bucket" "$mnt" "$log" "${kopts[@]}"
fspid=$FS_PID
check "c: daemon pid known" bash -c "tr '\0' ' ' </proc/$fspid/cmdline | grep -q s3rdmafs"
key='c-killed.bin'
start_writer c "$mnt/$key" $((60 * MiB)) 4 --pause-at $((30 * MiB))
check "c: writer reaches 30 MiB" wait_at bytes 60
# parts of the first 30 MiB go up as a multipart upload: wait (bounded) for
# one with at least one part, so the kill leaks something to clean up
parts=0 up=
for _ in $(seq 1 20); do
  up=$(fs_uploads c- | awk -F'\t' 'NR == 1 {print $2}') || true
  if [ -n "$up" ]; then
    parts=$(aws_ s3api list-parts --bucket "$bucket" --key $key --upload-id "$up" \
              --query 'length(Parts)' --output text 2>/dev/null || echo 0)
    [[ $parts =~ ^[1-9] ]] && break
  fi
  sleep 0.5
done
echo "# c: at 30 MiB: upload '${up}' with ${parts} parts"
check "c: a multipart upload with parts is under way at 30 MiB" \
  bash -c "[ -n '$up' ] && [[ '$parts' =~ ^[1-9] ]]"
check_eq "c: no object visible mid-write" "$(head_size $key)" absent
# killed while the file is open half written (the writer paused at 30 MiB):
# kill after letting it go on could race with a fast close() completing
fs_kill "$mnt"
touch "$ctl/go-bytes"
check "c: the writer is released when the daemon dies" writer_finish 30
report c
fs_umount "$mnt" || true # (expects the SIGKILL's status)
check "c: dead mount removed" bash -c "! grep -qs ' $mnt ' /proc/mounts"
check_eq "c: no object at the key after SIGKILL" "$(head_size $key)" absent
leaked=$(fs_uploads c-) || true
echo "# c: uploads listed after SIGKILL: ${leaked:-none}"
check "c: the killed daemon's multipart upload is left behind (to be cleaned)" \
  eval '[ -n "$leaked" ] && [[ $leaked != error* ]]'
log=$tmp/fs-3.log
fs_mount "$bucket" "$mnt" "$log" "${kopts[@]}"
wait_recovered "$log" || true
check "c: the next mount keeps the file in unsaved/, its upload named" \
  grep -qs "$key.*kept, not aborted" "$tmp/cache-kill/unsaved/MANIFEST"
check_eq "c: ... the upload kept (the only copy of its first parts)" \
  "$(fs_uploads c- | wc -l)" 1
fs_abort_uploads c- # (what its owner, or the bucket's lifecycle rule, does)
check_eq "c: still no object at the key" "$(head_size $key)" absent
echo "# c: in the new mount: $(ls -l "$mnt" 2>&1 | tr '\n' ' ')"
echo "# c: in cache.dir after the next mount: $(find "$tmp/cache-kill" -type f | wc -l) files, $(du -sk "$tmp/cache-kill" | cut -f1) KiB"
check "c: the new mount writes" bash -c "printf 'after the kill' >'$mnt/c-after.txt'"
check_eq "c: the new mount reads it back" "$(cat "$mnt/c-after.txt" 2>&1)" "after the kill"
check_eq "c: the new file is on the server" \
  "$(aws_ s3 cp "s3://$bucket/c-after.txt" - 2>&1)" "after the kill"
check "no multipart upload left in the bucket" wait_uploads_gone "" 10
check "c: clean unmount" fs_umount "$mnt"
}
run_case c case_c

summary
