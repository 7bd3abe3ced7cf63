#!/usr/bin/env bash
# Crashes lose nothing: what close() reported as failed (EIO, data kept)
# survives the daemon's SIGKILL and reaches the server through the next
# mount with the same cache.dir, or is kept in <cache.dir>/unsaved with a
# MANIFEST line; nothing not confirmed on the server is ever deleted.
#
# The network path to S3 is cut by killing a TCP relay (tcp_relay.py)
# between the mount and RGW: requests fail at once, close() returns EIO
# after the retries. awscli checks go to RGW directly.
#
#   a) a new file, close() EIO, its times set to the nanosecond
#      (utimensat), SIGKILL, relay back, remount: the next mount uploads
#      it (If-None-Match) with those times, nothing is left in cache.dir
#   b) an existing 24 MiB object changed in the middle (only the blocks
#      around the change fetched), close() EIO, SIGKILL, remount: the next
#      mount reads the rest of exactly that version (If-Match) and uploads
#      the whole file (multipart): the object is the expected bytes; b2)
#      the same for an object of one part (a PUT with If-Match)
#   c) as a), but the object is replaced on the server before the remount:
#      the server's version stays, ours is kept in unsaved/ with the key
#      and the reason in MANIFEST
#   d) SIGKILL while a file is open half written (never closed): no object
#      (no partial object is made visible), the bytes are kept in unsaved/
#   e) two mounts sharing cache.dir both unmount with an upload failing:
#      each file kept under its own name in unsaved/, two MANIFEST lines
#   f) recovery runs in the background: with its upload held by the relay
#      (tcp_relay.py --hold: the request does not reach RGW until a gate
#      file exists), the mountpoint answers ls and stat; unmounted then,
#      the file is left as it was and the next mount uploads it, after
#      which that mount shows the new size at once (attributes dropped)
#   g) a user writes the same key while recovery's PUT is held: the PUT's
#      condition (If-None-Match) fails, the user's version stays, ours is
#      kept in unsaved/
#   h) a new key looked up (not found, remembered) while recovery's PUT is
#      held: once uploaded, the mount finds it at once
#   i) rm of a file while recovery's completion of its upload is held: the
#      rm waits for it, then its DELETE lands last: the name is gone
#
# Recovery runs in the background: after a remount, wait_recovered waits
# for its summary line before looking at the server.
#
# Each lettered part is a case (S3R_ONLY='^c$' runs c alone): each makes
# its own objects and mounts, and leaves a dead mount's directory at most,
# which the next case's first mount recovers as any mount would.
#
#   test_fs_crash.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" crash mnt2 cache
MiB=1048576
cache=$tmp/cache
relay_port
wpid=

cleanup() {
  local rc=$?
  set +e
  [ -n "$wpid" ] && { kill -KILL "$wpid"; wait "$wpid"; } 2>/dev/null
  relay_up >/dev/null 2>&1 # a mount still up can finish its work
  fs_umount "$tmp/mnt2" || true
  relay_down
  fs_abort_uploads
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# rdma.transport=off: RGW ignores tokens (every token PUT is resent over
# HTTP), and a token request cut off by the relay holds its memory, and
# close(), until its deadline (30 s): this test is about staging files,
# the data plane's faults are test_fs_rdma's and test_fs_chaos's
opts=(-o "endpoint=http://127.0.0.1:$rport" -o "cache.dir=$cache"
      -o write.part_size=5M -o s3.retry.max_attempts=2
      -o s3.retry.budget_ms=2000 -o s3.connect_timeout_ms=1000
      -o write.retry_interval=3600 -o rdma.transport=off)

mount_it() { # MNT LOG [ARG...]: mounted through the relay
  fs_mount "$bucket" "$1" "$2" "${opts[@]}" "${@:3}"
}
kill_daemon() { # SIGKILL on purpose; the dead mount removed
  fs_kill "$mnt"
  fs_umount "$mnt"
}
# write SRC into mnt/KEY at OFFSET (FLAGS trunc|keep) and keep it open
# (CTL, default $tmp/ctl: the writer's control directory; MNT, default $mnt)
start_writer() {
  local ctl=${5:-$tmp/ctl} m=${6:-$mnt}
  rm -rf "$ctl"
  mkdir -p "$ctl"
  python3 "$here/crash_writer.py" "$1" "$m/$2" "$3" "$4" "$ctl" &
  wpid=$!
  for _ in $(seq 1 600); do [ -e "$ctl/written" ] && return 0; sleep 0.1; done
  return 1
}
# let the writer of CTL close; its close() result
# (polled: in a command substitution, wait cannot see the writer)
finish_writer() {
  local ctl=${1:-$tmp/ctl}
  touch "$ctl/go"
  for _ in $(seq 1 1200); do [ -s "$ctl/result" ] && break; sleep 0.1; done
  cat "$ctl/result" 2>/dev/null || echo "no result"
}
obj_md5() {
  aws_ s3 cp "s3://$bucket/$1" "$tmp/got" >/dev/null 2>&1 || { echo absent; return 0; }
  md5 "$tmp/got"
  rm -f "$tmp/got"
}
# the unsaved file whose MANIFEST line names KEY: its md5 and the line
kept_md5() {
  local name
  name=$(awk -F'\t' -v k="$1" '$5 == k {print $2}' "$cache/unsaved/MANIFEST" 2>/dev/null | tail -n 1)
  [ -n "$name" ] && [ -f "$cache/unsaved/$name" ] && md5 "$cache/unsaved/$name"
}
manifest_has() { # KEY REGEX: a MANIFEST line for KEY whose reason matches
  awk -F'\t' -v k="$1" -v re="$2" '$5 == k && $6 ~ re {n++} END {exit !n}' \
    "$cache/unsaved/MANIFEST" 2>/dev/null
}
mount_dirs() { find "$cache" -maxdepth 1 -name 'mount-*' | wc -l; }
staging_files() { find "$cache" -path '*/mount-*/ino-*' ! -name '*.*' | wc -l; }
# wait (bounded) until the relay holds a request
wait_held() {
  for _ in $(seq 1 600); do grep -qs held "$tmp/relay.ready" && return 0; sleep 0.1; done
  return 1
}
quiet() { "$@" >/dev/null; }
# a dead mount's file: SRC written into KEY at OFFSET (FLAGS), close() EIO
# with the relay down, SIGKILL; the relay back (holding nothing)
dead_file() {
  mount_it "$mnt" "$tmp/fs-$2.log"
  start_writer "$1" "$2" "$3" "$4"
  relay_down
  check_eq "$2: close() returns EIO" "$(finish_writer)" EIO
  kill_daemon
  relay_up
}

aws_ s3 mb "s3://$bucket" >/dev/null
relay_up

# ---- a) new file: close() EIO, SIGKILL, the next mount uploads it ----
case_a() {
echo "# a) a new file whose upload fails, then SIGKILL"
head -c $((3 * MiB)) /dev/urandom >"$tmp/a.ref"
mount_it "$mnt" "$log"
start_writer "$tmp/a.ref" a-new.bin 0 trunc
relay_down
check_eq "a: close() returns EIO with the path to S3 cut" "$(finish_writer)" EIO
# (its metadata kept with its bytes, to the nanosecond: the record's)
python3 -c 'import os, sys
try:
    os.utime(sys.argv[1], ns=(1700000001200000000, 1700000000123456789))
except OSError:
    pass  # (EIO: stored with the bytes, kept as they are)' "$mnt/a-new.bin"
kill_daemon
check_eq "a: nothing on the server yet" "$(obj_md5 a-new.bin)" absent
relay_up
mount_it "$mnt" "$tmp/fs-a2.log"
wait_recovered "$tmp/fs-a2.log"
check_eq "a: the next mount uploaded it: the object is the file" \
  "$(obj_md5 a-new.bin)" "$(md5 "$tmp/a.ref")"
check "a: the log says so" grep -q "a-new.bin, left by a dead mount, is uploaded" "$tmp/fs-a2.log"
check_eq "a: with its mtime to the nanosecond" \
  "$(aws_ s3api head-object --bucket "$bucket" --key a-new.bin --query Metadata.mtime --output text)" \
  1700000000.123456789
check_eq "a: only the live mount's directory is left in cache.dir" "$(mount_dirs)" 1
check "a: nothing kept in unsaved/" bash -c "! ls '$cache/unsaved' 2>/dev/null | grep -q ."
kill_daemon # (the remount ends the same way: its directory is recovered next)
}
run_case a case_a

# ---- b) an existing object changed in the middle ----
case_b() {
echo "# b) 24 MiB object, 1 MiB changed at 10 MiB + 1000, close() EIO, SIGKILL"
head -c $((24 * MiB)) /dev/urandom >"$tmp/b.base"
aws_ s3 cp "$tmp/b.base" "s3://$bucket/b-big.bin" >/dev/null
head -c $MiB /dev/urandom >"$tmp/b.patch"
cp "$tmp/b.base" "$tmp/b.ref"
dd if="$tmp/b.patch" of="$tmp/b.ref" bs=1 seek=$((10 * MiB + 1000)) conv=notrunc status=none
mount_it "$mnt" "$tmp/fs-b1.log"
start_writer "$tmp/b.patch" b-big.bin $((10 * MiB + 1000)) keep
relay_down
check_eq "b: close() returns EIO" "$(finish_writer)" EIO
kill_daemon
check_eq "b: the server still has the old version" "$(obj_md5 b-big.bin)" "$(md5 "$tmp/b.base")"
relay_up
mount_it "$mnt" "$tmp/fs-b2.log"
wait_recovered "$tmp/fs-b2.log"
check_eq "b: the next mount uploaded the whole changed file" \
  "$(obj_md5 b-big.bin)" "$(md5 "$tmp/b.ref")"
check "b: nothing kept in unsaved/" bash -c "! ls '$cache/unsaved' 2>/dev/null | grep -q ."
kill_daemon
}
run_case b case_b

# ---- b2) the same for an object of one part: a conditional PUT ----
case_b2() {
echo "# b2) 2 MiB object, 100 KiB changed at 1 MiB + 7, close() EIO, SIGKILL"
head -c $((2 * MiB)) /dev/urandom >"$tmp/b2.base"
aws_ s3 cp "$tmp/b2.base" "s3://$bucket/b2-small.bin" >/dev/null
head -c 102400 /dev/urandom >"$tmp/b2.patch"
cp "$tmp/b2.base" "$tmp/b2.ref"
dd if="$tmp/b2.patch" of="$tmp/b2.ref" bs=1 seek=$((MiB + 7)) conv=notrunc status=none
mount_it "$mnt" "$tmp/fs-b21.log"
start_writer "$tmp/b2.patch" b2-small.bin $((MiB + 7)) keep
relay_down
check_eq "b2: close() returns EIO" "$(finish_writer)" EIO
kill_daemon
relay_up
mount_it "$mnt" "$tmp/fs-b22.log"
wait_recovered "$tmp/fs-b22.log"
check_eq "b2: the next mount uploaded the changed file (If-Match on the PUT)" \
  "$(obj_md5 b2-small.bin)" "$(md5 "$tmp/b2.ref")"
kill_daemon
}
run_case b2 case_b2

# ---- c) the object replaced on the server before the remount ----
case_c() {
echo "# c) our change fails, someone else's lands, SIGKILL, remount"
printf 'version one\n' >"$tmp/c.v1"
head -c $((2 * MiB)) /dev/urandom >"$tmp/c.v2"
printf 'version three, from another client\n' >"$tmp/c.v3"
aws_ s3 cp "$tmp/c.v1" "s3://$bucket/c-conflict.txt" >/dev/null
mount_it "$mnt" "$tmp/fs-c1.log"
start_writer "$tmp/c.v2" c-conflict.txt 0 trunc
relay_down
check_eq "c: close() returns EIO" "$(finish_writer)" EIO
kill_daemon
aws_ s3 cp "$tmp/c.v3" "s3://$bucket/c-conflict.txt" >/dev/null
relay_up
mount_it "$mnt" "$tmp/fs-c2.log"
wait_recovered "$tmp/fs-c2.log"
check_eq "c: the other client's version stays on the server" \
  "$(obj_md5 c-conflict.txt)" "$(md5 "$tmp/c.v3")"
check_eq "c: ours is kept in unsaved/ (MANIFEST names the key)" \
  "$(kept_md5 c-conflict.txt)" "$(md5 "$tmp/c.v2")"
check "c: the MANIFEST line says why" manifest_has c-conflict.txt "changed on the server"
check "c: one log line says where the data is" \
  grep -q "c-conflict.txt was not uploaded (the object changed on the server" "$tmp/fs-c2.log"
kill_daemon
}
run_case c case_c

# ---- d) SIGKILL mid-write: never closed ----
case_d() {
echo "# d) SIGKILL while a file is open half written"
head -c $((2 * MiB)) /dev/urandom >"$tmp/d.ref"
mount_it "$mnt" "$tmp/fs-d1.log"
start_writer "$tmp/d.ref" d-open.bin 0 trunc
fs_kill "$mnt"
finish_writer >/dev/null # (ENOTCONN) before the unmount: not busy then
fs_umount "$mnt"
mount_it "$mnt" "$tmp/fs-d2.log"
wait_recovered "$tmp/fs-d2.log"
check_eq "d: no (partial) object made visible" "$(obj_md5 d-open.bin)" absent
check_eq "d: its bytes are kept in unsaved/" "$(kept_md5 d-open.bin)" "$(md5 "$tmp/d.ref")"
check "d: the MANIFEST line says it was never closed" manifest_has d-open.bin "never closed"
fs_umount "$mnt"
}
run_case d case_d

# ---- f) recovery in the background; unmount while it is busy ----
case_f() {
echo "# f) recovery's upload held: the mount serves; unmount; the next mount"
head -c 102400 /dev/urandom >"$tmp/f.v1"
head -c 61440 /dev/urandom >"$tmp/f.patch"
cat "$tmp/f.v1" "$tmp/f.patch" >"$tmp/f.ref"
aws_ s3 cp "$tmp/f.v1" "s3://$bucket/f-held.bin" >/dev/null
dead_file "$tmp/f.patch" f-held.bin 102400 keep
gate=$tmp/f.gate
relay_up "PUT /$bucket/f-held.bin" "$gate"
log=$tmp/fs-f2.log
# (before recovery ran in its own thread, the mount's first stat waited
# for it: fs_mount gave up after 30 s)
check "f: the mountpoint answers while recovery is at work" mount_it "$mnt" "$log"
check "f: recovery's PUT reached the relay (held there)" wait_held
check "f: ls of the mountpoint answers" quiet timeout 30 ls "$mnt"
check_eq "f: stat of the file answers: the server's size" \
  "$(timeout 30 stat -c %s "$mnt/f-held.bin")" 102400
check_eq "f: the stats say recovery is running" "$(stat_of recovery.running)" 1
check "f: the log says it began, in the background" \
  grep -q "recovering 1 staging file(s) left by 1 dead mount(s)" "$log"
check "f: and that it has not ended" bash -c "! grep -q \"earlier mounts' leftovers\" '$log'"
# unmount now: the held PUT is cancelled (the relay drops it unsent)
fs_umount "$mnt"
check "f: unmounted mid-upload, the file is left for the next mount" \
  grep -q "f-held.bin, left by a dead mount, is left for the next mount (upload not finished: this mount stopped first)" "$log"
check "f: the summary says so" grep -q "0 files uploaded, 0 kept in .*, 1 left in place" "$log"
check_eq "f: the server still has the old version" "$(obj_md5 f-held.bin)" "$(md5 "$tmp/f.v1")"
check_eq "f: its staging file is where it was" "$(staging_files)" 1
check "f: nothing kept in unsaved/ for it" bash -c "! awk -F'\t' '\$5 == \"f-held.bin\"' '$cache/unsaved/MANIFEST' | grep -q ."
# the next mount, the upload held again while the mount looks at the file
relay_up "PUT /$bucket/f-held.bin" "$gate"
log=$tmp/fs-f3.log
mount_it "$mnt" "$log"
check "f: the next mount's PUT held" wait_held
check_eq "f: meanwhile the mount shows the server's size" \
  "$(stat -c %s "$mnt/f-held.bin")" 102400
touch "$gate"
wait_recovered "$log"
check_eq "f: the next mount uploaded it" "$(obj_md5 f-held.bin)" "$(md5 "$tmp/f.ref")"
check_eq "f: the mount shows the new size at once (its attributes dropped)" \
  "$(stat -c %s "$mnt/f-held.bin")" "$(stat -c %s "$tmp/f.ref")"
check_eq "f: and reads the new bytes" "$(md5 "$mnt/f-held.bin")" "$(md5 "$tmp/f.ref")"
check_eq "f: recovery.uploaded in the stats" "$(stat_of recovery.uploaded)" 1
check_eq "f: recovery.running back to 0" "$(stat_of recovery.running)" 0
check_eq "f: no staging file left" "$(staging_files)" 0
fs_umount "$mnt"
relay_up
}
run_case f case_f

# ---- g) a user's write while recovery's PUT is on its way: the user wins ----
case_g() {
echo "# g) the same key written by another client while recovery's PUT is held"
head -c 200000 /dev/urandom >"$tmp/g.ours"
printf 'written by a user meanwhile\n' >"$tmp/g.user"
dead_file "$tmp/g.ours" g-race.bin 0 trunc
relay_up "PUT /$bucket/g-race.bin" "$tmp/g.gate"
log=$tmp/fs-g2.log
mount_it "$mnt" "$log"
check "g: recovery's PUT held (after its HEAD found no object)" wait_held
aws_ s3 cp "$tmp/g.user" "s3://$bucket/g-race.bin" >/dev/null
touch "$tmp/g.gate"
wait_recovered "$log"
check_eq "g: the user's version stays on the server" "$(obj_md5 g-race.bin)" "$(md5 "$tmp/g.user")"
check_eq "g: ours is kept in unsaved/" "$(kept_md5 g-race.bin)" "$(md5 "$tmp/g.ours")"
check "g: the PUT's condition said so (MANIFEST)" manifest_has g-race.bin "upload failed: the object changed meanwhile"
check_eq "g: the mount reads the user's version" "$(md5 "$mnt/g-race.bin")" "$(md5 "$tmp/g.user")"
check_eq "g: recovery.kept in the stats" "$(stat_of recovery.kept)" 1
fs_umount "$mnt"
relay_up
}
run_case g case_g

# ---- h) a new key the mount had found missing ----
case_h() {
echo "# h) a new key looked up (not found) while recovery's PUT is held"
head -c 150000 /dev/urandom >"$tmp/h.ref"
dead_file "$tmp/h.ref" h-new.bin 0 trunc
relay_up "PUT /$bucket/h-new.bin" "$tmp/h.gate"
log=$tmp/fs-h2.log
mount_it "$mnt" "$log" -o cache.negative_ttl=600
check "h: recovery's PUT held" wait_held
check "h: not found meanwhile (and remembered: cache.negative_ttl)" \
  bash -c "! stat '$mnt/h-new.bin' >/dev/null 2>&1 && ! ls '$mnt' | grep -qx h-new.bin"
touch "$tmp/h.gate"
wait_recovered "$log"
check_eq "h: uploaded" "$(obj_md5 h-new.bin)" "$(md5 "$tmp/h.ref")"
check "h: the mount finds it at once" quiet stat "$mnt/h-new.bin"
check "h: and lists it" bash -c "ls '$mnt' | grep -qx h-new.bin"
check_eq "h: its bytes" "$(md5 "$mnt/h-new.bin")" "$(md5 "$tmp/h.ref")"
fs_umount "$mnt"
relay_up
}
run_case h case_h

# ---- i) an unlink of the name recovery is uploading: it lands after ----
case_i() {
echo "# i) rm of a 24 MiB file while recovery's completion of it is held"
head -c $((24 * MiB)) /dev/urandom >"$tmp/i.base"
aws_ s3 cp "$tmp/i.base" "s3://$bucket/i-big.bin" >/dev/null
head -c $MiB /dev/urandom >"$tmp/i.patch"
dead_file "$tmp/i.patch" i-big.bin $((3 * MiB)) keep
relay_up "POST /$bucket/i-big.bin?uploadId" "$tmp/i.gate"
log=$tmp/fs-i2.log
mount_it "$mnt" "$log"
check "i: recovery's completion held" wait_held
rm -f "$mnt/i-big.bin" &
rmpid=$!
sleep 1
# (RGW 16 does not check a completion's If-Match: without the wait, the
# DELETE would land first and the completion bring the file back)
check "i: the rm waits for recovery's upload of the name" kill -0 "$rmpid"
touch "$tmp/i.gate"
check "i: then the rm returns 0" wait "$rmpid"
wait_recovered "$log"
check "i: and the name is gone on the server (the DELETE came last)" key_absent i-big.bin
check "i: and on the mount" bash -c "! stat '$mnt/i-big.bin' 2>/dev/null"
fs_umount "$mnt"
relay_up
}
run_case i case_i

# ---- e) two mounts sharing cache.dir keep files at unmount ----
case_e() {
echo "# e) two mounts, both unmount with their uploads failing"
head -c 300000 /dev/urandom >"$tmp/e1.ref"
head -c 400000 /dev/urandom >"$tmp/e2.ref"
mount_it "$mnt" "$tmp/fs-e1.log"
mount_it "$tmp/mnt2" "$tmp/fs-e2.log"
start_writer "$tmp/e1.ref" e-1.bin 0 trunc "$tmp/ctl1" "$mnt"
start_writer "$tmp/e2.ref" e-2.bin 0 trunc "$tmp/ctl2" "$tmp/mnt2"
relay_down
for i in 1 2; do
  check_eq "e: close() of mount $i's file returns EIO" "$(finish_writer "$tmp/ctl$i")" EIO
done
# both at once (then fs_umount checks each daemon's exit)
fusermount3 -u "$mnt" & u1=$!
fusermount3 -u "$tmp/mnt2" & u2=$!
wait $u1 $u2 || true
fs_umount "$mnt"
fs_umount "$tmp/mnt2"
log=$tmp/fs-e1.log # shown should the test fail
for i in 1 2; do
  check_eq "e: mount $i's file is kept" "$(kept_md5 e-$i.bin)" "$(md5 "$tmp/e$i.ref")"
done
check_eq "e: under two names" "$(awk -F'\t' '$5 ~ /^e-/ {print $2}' "$cache/unsaved/MANIFEST" | sort -u | wc -l)" 2
check_eq "e: no mount directory left" "$(mount_dirs)" 0

relay_up
check_eq "no multipart upload left" \
  "$(aws_ s3api list-multipart-uploads --bucket "$bucket" --query 'length(Uploads || `[]`)' --output text)" 0
}
run_case e case_e

summary
