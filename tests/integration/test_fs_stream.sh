#!/usr/bin/env bash
# Streamed writes (write.stream=true, fs/write/fsx_wb_stream.c) on a real mount
# of RGW, part size 5 MiB: a new or emptied file written in order goes to
# the server from the mount's part buffers, with nothing written to its
# staging file; anything else moves it to the staging path without losing
# a byte or sending a part twice. Each file's object is compared with the
# bytes its writer (stream_work.py) says it holds.
#
#   a) in order, 3.5 parts: streamed whole (write.stream_bytes), no move
#      (write.unstreams), 4 parts sent, the staging file never grows (the
#      mount's staging.bytes stays 0)
#   b) a seek back after one, two and nine parts: one move each, the parts
#      already on the server copied there (write.parts_copied), not sent
#      again (write.parts_sent counts each part once)
#   c) a truncate into the second part after two were sent, then more
#   d) a second descriptor writing into the first part mid-stream
#   e) reads mid-stream: through the writing descriptor (the kernel's
#      cache or the daemon), and with O_DIRECT of the part being written
#      (the daemon answers from its buffer: no move)
#   f) fsync after 2.5 parts: the object holds those bytes at once; the
#      writer goes on, still streaming (the committed object is its base)
#   g) O_TRUNC over an existing object: streams, and the object is
#      replaced at the close
#   h) SIGKILL with two files open half written (never closed): the next
#      mount writes the buffers back into the staging files (pool
#      recovery) and keeps them in unsaved/: the small one (under a part)
#      whole; the larger one's last part and a MANIFEST line saying the
#      bytes only its unfinished upload held read as zeros, that upload
#      kept (never aborted: their only copy) and named there; twice: the
#      buffers' file in write.pool_dir (named by pool.at), then in
#      cache.dir; either is gone once recovered
#   i) j) close() fails (the path to S3 cut) after three parts reached the
#      server, then SIGKILL (i) or unmount (j): the next mount finishes
#      the same upload, sending only what the server lacked
#   k) fsync fails after 2.5 parts, the path comes back, the writer goes
#      on: the object is every byte (the last part's buffer was kept)
# Without the stream path a) and e) see stream_bytes 0; without the move
# the objects of b) to d) differ; without pool recovery h)'s files are
# empty.
#
#   test_fs_stream.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" stream cache ctl
MiB=1048576
PART=$((5 * MiB))
WORK=$here/stream_work.py
FS_ARGS+=(-o "cache.dir=$tmp/cache" -o write.stream=true -o write.part_size=5M
  -o write.max_memory=64M -o log.level=info)

aws_ s3 mb "s3://$bucket" >/dev/null
fs_mount "$bucket" "$mnt" "$log"

# work NAME PATTERN [ARG]: stream_work.py writes $mnt/NAME, ref in $tmp
work() {
  python3 "$WORK" "$2" "$mnt/$1" "$tmp/$1.ref" "$PART" "${3:-}"
}
same() { eq "$1" "$(key_md5 "$1")" "$(md5 "$tmp/$1.ref")"; }
delta() { echo $(($(stat_of "$1") - $2)); }

# (i, j and k go through a TCP relay, tests/lib/relay.sh)
relay_port
trap 'relay_down; fs_cleanup' EXIT
ropts=(-o "endpoint=http://127.0.0.1:$rport" -o s3.retry.max_attempts=2
  -o s3.retry.budget_ms=2000 -o s3.connect_timeout_ms=1000
  -o write.retry_interval=3600 -o rdma.transport=off)
parts_acked() { # three parts sent and none on the wire (1 until then)
  local sent wire
  sent=$(stat_of write.parts_sent) wire=$(stat_of write.pool_on_wire)
  [ "${sent:-0}" -ge 3 ] 2>/dev/null && [ "${wire:-1}" = 0 ] && return 0
  return 1
}
parts_two() {
  local sent wire
  sent=$(stat_of write.parts_sent) wire=$(stat_of write.pool_on_wire)
  [ "${sent:-0}" -ge 2 ] 2>/dev/null && [ "${wire:-1}" = 0 ] && return 0
  return 1
}
fail_close() { # NAME: written (3.5 parts) and closed with the relay down
  mkdir -p "$tmp/ctl/$1"
  python3 "$WORK" hold "$mnt/$1" "$tmp/$1.ref" "$PART" "3:$tmp/ctl/$1" &
  wpid=$!
  wait_for 120 0.1 test -e "$tmp/ctl/$1/written" || return 1
  check "$1: three parts on the server before the cut" wait_for 60 0.1 parts_acked
  relay_down
  touch "$tmp/ctl/$1/go"
  wait "$wpid" || true
}

# ---- a) in order ----
case_a() {
echo "# a) in order, 3.5 parts"
sb0=$(stat_of write.stream_bytes) un0=$(stat_of write.unstreams)
ps0=$(stat_of write.parts_sent)
check "a: written" work a.bin seq 3
check "a: the object is the bytes" same a.bin
check_eq "a: every byte streamed" "$(delta write.stream_bytes "$sb0")" \
  $((3 * PART + PART / 2))
check_eq "a: no move to staging" "$(delta write.unstreams "$un0")" 0
check_eq "a: 4 parts sent" "$(delta write.parts_sent "$ps0")" 4
mkdir -p "$tmp/ctl/ha"
python3 "$WORK" hold "$mnt/ha.bin" "$tmp/ha.bin.ref" "$PART" "3:$tmp/ctl/ha" &
hpid=$!
check "a: held open, written" wait_for 120 0.1 test -e "$tmp/ctl/ha/written"
check_eq "a: nothing staged on disk while it is open" "$(stat_of staging.bytes)" 0
touch "$tmp/ctl/ha/go"
wait "$hpid" || true
check_eq "a: and closed, the object is the bytes" "$(cat "$tmp/ctl/ha/result")" 0
check "a: held: the object is the bytes" same ha.bin
}
run_case a case_a

# ---- b) seek back ----
case_b() {
for n in 1 2 9; do
  echo "# b) a seek back after $n part(s)"
  un0=$(stat_of write.unstreams) pc0=$(stat_of write.parts_copied)
  ps0=$(stat_of write.parts_sent)
  check "b$n: written" work "b$n.bin" seekback "$n"
  check "b$n: the object is the bytes" same "b$n.bin"
  check "b$n: read back through the mount" cmp -s "$tmp/b$n.bin.ref" "$mnt/b$n.bin"
  check_eq "b$n: one move" "$(delta write.unstreams "$un0")" 1
  # the first part is sent again (the header is in it); the rest of those
  # the server had are copied there
  check_eq "b$n: parts copied on the server" \
    "$(delta write.parts_copied "$pc0")" $((n - 1))
  # n parts while streaming, the last 3 MiB + tail and part 1 at commit
  check_eq "b$n: parts sent (each once, part 1 twice)" \
    "$(delta write.parts_sent "$ps0")" $((n + 2))
done
check "b: no upload left open" test -z "$(fs_uploads)"
}
run_case b case_b

# ---- c) d) e) ----
case_c() {
echo "# c) truncate, d) a second writer, e) a read mid-stream"
check "c: written" work c.bin trunc
check "c: the object is the bytes" same c.bin
check "d: written" work d.bin second
check "d: the object is the bytes" same d.bin
un0=$(stat_of write.unstreams)
check "e: written (and read back equal)" work e.bin readback
check "e: the object is the bytes" same e.bin
check_eq "e: no move to staging" "$(delta write.unstreams "$un0")" 0
}
run_case c case_c

# ---- f) fsync in the middle ----
case_f() {
echo "# f) fsync after 2.5 parts"
un0=$(stat_of write.unstreams) sb0=$(stat_of write.stream_bytes)
python3 "$WORK" fsync "$mnt/f.bin" "$tmp/f.bin.ref" "$PART" "$tmp/ctl" &
fpid=$!
synced() { [ -e "$tmp/ctl/synced" ] || { kill -0 "$fpid" 2>/dev/null || return 2; return 1; }; }
check "f: fsync returned" wait_for 120 0.1 synced
check_eq "f: the object holds the bytes so far" "$(key_md5 f.bin)" \
  "$(md5 "$tmp/f.bin.ref.synced")"
touch "$tmp/ctl/go"
check "f: written" wait "$fpid"
check "f: the object is the bytes" same f.bin
check_eq "f: no move to staging" "$(delta write.unstreams "$un0")" 0
check_eq "f: every byte streamed" "$(delta write.stream_bytes "$sb0")" \
  $((3 * PART + PART / 2))
}
run_case f case_f

# ---- g) O_TRUNC over an existing object ----
case_g() {
need_case a # (a.bin: replaced here)
echo "# g) O_TRUNC over an existing object"
sb0=$(stat_of write.stream_bytes)
old=$(key_md5 a.bin)
check "g: written" work a.bin seq 2
check "g: the object is the new bytes" same a.bin
check "g: not the old ones" test "$(key_md5 a.bin)" != "$old"
check_eq "g: streamed" "$(delta write.stream_bytes "$sb0")" $((2 * PART + PART / 2))
fs_umount "$mnt"
}
run_case g case_g

# ---- h) SIGKILL mid-stream ----
case_h() {
# Twice: the buffers' file in write.pool_dir (a directory of the test's
# own, named by pool.at), then in cache.dir (write.pool_dir "").
shm=$tmp/pooldir
mkdir -p "$shm"
for where in pool_dir cache_dir; do
echo "# h) SIGKILL with two files half written (buffers in $where)"
if [ "$where" = pool_dir ]; then pd=$shm; else pd=""; fi
fs_mount "$bucket" "$mnt" "$log" -o "write.pool_dir=$pd"
rm -rf "$tmp/ctl/go" "$tmp/ctl/h0" "$tmp/ctl/h3"
mkdir -p "$tmp/ctl/h0" "$tmp/ctl/h3"
python3 "$WORK" hold "$mnt/h0.bin" "$tmp/h0.ref" "$PART" "0:$tmp/ctl/h0" &
h0=$!
python3 "$WORK" hold "$mnt/h3.bin" "$tmp/h3.ref" "$PART" "3:$tmp/ctl/h3" &
h3=$!
held() { [ -e "$tmp/ctl/h0/written" ] && [ -e "$tmp/ctl/h3/written" ]; }
check "h: both written, held open" wait_for 120 0.1 held
pool=$(cat "$tmp"/cache/mount-*/pool.at 2>/dev/null || ls "$tmp"/cache/mount-*/pool 2>/dev/null || true)
if [ "$where" = pool_dir ]; then
  check "h: the buffers' file is in write.pool_dir" test "${pool%/*}" = "$shm" -a -f "$pool"
else
  check "h: the buffers' file is in cache.dir" test -f "${pool:-/nonexistent}" -a "${pool#"$tmp/cache/"}" != "$pool"
fi
# (its three parts acknowledged, their buffers lent again: those bytes
# are then the upload's alone)
check "h: the larger one's three parts on the server" wait_for 60 0.1 parts_acked
fs_kill "$mnt"
touch "$tmp/ctl/h0/go" "$tmp/ctl/h3/go"
wait "$h0" "$h3" 2>/dev/null || true
fs_umount "$mnt" || true
off=$(stat -c %s "$log")
nman=0
[ ! -f "$tmp/cache/unsaved/MANIFEST" ] || nman=$(wc -l <"$tmp/cache/unsaved/MANIFEST")
fs_mount "$bucket" "$mnt" "$log"
recovered() { grep -qs "earlier mounts' leftovers" < <(tail -c +"$((off + 1))" "$log"); }
wait_for 60 0.2 recovered || true
kept() { # the unsaved file whose MANIFEST line names KEY
  local name
  name=$(awk -F'\t' -v k="$1" '$5 == k {print $2}' "$tmp/cache/unsaved/MANIFEST" 2>/dev/null | tail -n 1)
  [ -n "$name" ] && echo "$tmp/cache/unsaved/$name"
}
k0=$(kept h0.bin || true) k3=$(kept h3.bin || true)
check "h: no object made visible" key_absent h0.bin
check "h: the small file kept whole" cmp -s "${k0:-/nonexistent}" "$tmp/h0.ref"
check "h: the larger one's last part kept" \
  cmp -s <(tail -c $((PART / 2)) "${k3:-/nonexistent}") <(tail -c $((PART / 2)) "$tmp/h3.ref")
check_eq "h: at its place (the whole size)" "$(stat -c %s "${k3:-/nonexistent}" 2>/dev/null)" \
  $((3 * PART + PART / 2))
check "h: its MANIFEST line says what is missing" \
  bash -c "tail -n +$((nman + 1)) '$tmp/cache/unsaved/MANIFEST' | grep -q 'h3.bin.*read as zeros'"
check "h: the dead mount's buffers are gone" test ! -e "${pool:-/nonexistent}"
# its upload holds the parts the server acknowledged, their only copy
check "h: the larger one's upload kept, named in its MANIFEST line" \
  bash -c "tail -n +$((nman + 1)) '$tmp/cache/unsaved/MANIFEST' | grep -q 'h3.bin.*kept, not aborted'"
check_eq "h: ... and on the server" "$(fs_uploads h3 | wc -l)" 1
fs_abort_uploads h3 # (what its owner, or the bucket's lifecycle rule, does)
fs_umount "$mnt"
done
}
run_case h case_h

# ---- i) j) the upload fails at close: the parts on the server are kept ----
case_i() {
# Through a TCP relay (tcp_relay.py) that is killed to cut the path to S3:
# requests fail at once. A 3.5-part file streams its first three parts,
# then the relay goes: close() gets EIO. i) SIGKILL, j) unmount: either
# way the next mount takes the unfinished upload up (its parts recorded
# beside the staging file) and sends only the rest. lost) SIGKILL, and the
# write buffers' file gone before the next mount (a tmpfs emptied by a
# restart): the file is kept in unsaved/, never completed with the bytes
# only the buffers held missing, and its upload is kept (not aborted: it
# alone holds the acknowledged parts), named in the MANIFEST line.
for how in kill umount lost; do
  name=$how.bin
  echo "# ${how}: close() fails after three parts, then $how"
  relay_up
  fs_mount "$bucket" "$mnt" "$tmp/fs-$how.log" "${ropts[@]}"
  fail_close "$name" # (not in a command substitution: it kills the relay)
  check_eq "$how: close() returns EIO" "$(cat "$tmp/ctl/$name/result" 2>/dev/null)" EIO
  check "$how: its parts are recorded" bash -c "ls '$tmp'/cache/mount-*/*.parts >/dev/null 2>&1"
  if [ "$how" != umount ]; then fs_kill "$mnt"; fi
  fs_umount "$mnt" || true
  check "$how: nothing on the server yet" key_absent "$name"
  if [ "$how" = lost ]; then
    pool=$(cat "$tmp"/cache/mount-*/pool.at 2>/dev/null || true)
    check "lost: the buffers' file removed" rm "${pool:-/nonexistent}"
  fi
  relay_up
  fs_mount "$bucket" "$mnt" "$tmp/fs-$how-2.log" "${ropts[@]}"
  recovered2() { grep -qs "earlier mounts' leftovers" "$tmp/fs-$how-2.log"; }
  check "$how: recovery ran" wait_for 120 0.2 recovered2
  if [ "$how" = lost ]; then
    check "lost: not completed without its buffers' bytes" key_absent "$name"
    check "lost: kept in unsaved/, saying why" \
      grep -qs "$name.*write buffers were lost" "$tmp/cache/unsaved/MANIFEST"
    # the upload alone holds the three acknowledged parts: never aborted
    check_eq "lost: its upload kept (the only copy of its first parts)" \
      "$(fs_uploads | wc -l)" 1
    check "lost: MANIFEST names the upload kept" \
      grep -qs "$name.*upload .* kept, not aborted" "$tmp/cache/unsaved/MANIFEST"
    fs_umount "$mnt"
    fs_abort_uploads
    continue
  fi
  check "$how: the object is the file" same "$name"
  check "$how: uploaded by taking its upload up" \
    grep -q "$name, left by a dead mount, is uploaded" "$tmp/fs-$how-2.log"
  check_eq "$how: no upload left open" "$(fs_uploads)" ""
  check "$how: nothing kept in unsaved/" bash -c "! grep -qs '$name' '$tmp/cache/unsaved/MANIFEST'"
  fs_umount "$mnt"
done
}
run_case i case_i

# ---- k) fsync fails, the writer goes on ----
case_k() {
echo "# k) fsync fails after 2.5 parts (the cut), then a part more"
relay_up
fs_mount "$bucket" "$mnt" "$tmp/fs-k.log" "${ropts[@]}"
mkdir -p "$tmp/ctl/k"
python3 "$WORK" fsyncfail "$mnt/k.bin" "$tmp/k.bin.ref" "$PART" "$tmp/ctl/k" &
kpid=$!
check "k: written" wait_for 120 0.1 test -e "$tmp/ctl/k/written"
check "k: two parts on the server" wait_for 60 0.1 parts_two
relay_down
touch "$tmp/ctl/k/go"
check "k: fsync answered" wait_for 120 0.1 test -e "$tmp/ctl/k/fsync"
check_eq "k: fsync returns EIO" "$(cat "$tmp/ctl/k/fsync")" EIO
relay_up
touch "$tmp/ctl/k/go2"
check "k: appended and closed" wait "$kpid"
check "k: the object is every byte" same k.bin
fs_umount "$mnt"
relay_down
}
run_case k case_k

summary
