#!/usr/bin/env bash
# Bounded staging on a real mount of RGW: the staging files in cache.dir
# may take write.staging_max (64 MiB here) and no more; df on the mount
# shows that limit as the size and what is left as available.
#
#   a) write.staging_wait=2s: file A (40 MiB) is written and held open, so
#      its staging file stays. df shows 64 MiB, then about 24 MiB free.
#      File B (40 MiB) gets ENOSPC after about 24 MiB, file C at its first
#      write; the daemon logs one line for both. df shows nothing free.
#      Closing B uploads exactly the bytes it acknowledged (nothing written
#      before the refusal is lost), C an empty file, A all of it; once they
#      are closed the space is free again (df) and a 50 MiB file D writes
#      and uploads whole.
#   b) write.staging_wait=120s: with A (40 MiB) held open, a writer of B
#      (40 MiB) waits at the limit (df: nothing free, B not done); closing
#      A frees the space and B completes with no error and every byte.
#   c) (root only) cache.dir on a 96 MiB tmpfs: by default the limit is
#      half of its free space (df shows that); with write.staging_max=1G
#      df shows what the tmpfs can still take, and a 120 MiB writer gets
#      ENOSPC with one log line while the tmpfs still has its margin (1%)
#      free, rather than filling it; its bytes up to there are uploaded.
# The stats file's staging.* lines follow: the limit and the bytes staged
# (a), the writes refused (a: B and C, after waiting; b: none) and the
# writes that waited (a: B and C; b: B2, waiting while it waits).
# Without the limit B and C would write everything, the tmpfs would fill
# up, and df would show the 1 PiB of old: every scenario fails.
#
#   test_fs_staging.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" stg cache
log=$tmp/fs-a.log
MiB=1048576
LIMIT=$((64 * MiB))
WRITER=$here/fault_writer.py
declare -A wpid=()
small=

cleanup() {
  local rc=$?
  set +e
  for n in "${!wpid[@]}"; do
    { kill -KILL "${wpid[$n]}"; wait "${wpid[$n]}"; } 2>/dev/null
  done
  if [ -n "$small" ]; then # the tmpfs of c), once the mount using it is gone
    fs_umount "$mnt"
    umount "$small" || umount -l "$small"
  fi
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- helpers ----
# start_writer NAME SIZE SEED [fault_writer options]: writes $mnt/NAME.bin
start_writer() {
  local name=$1 size=$2 seed=$3; shift 3
  mkdir -p "$tmp/ctl-$name"
  python3 "$WRITER" "$mnt/$name.bin" "$size" "$seed" "$tmp/ctl-$name" \
    --pause-max 300 "$@" >"$tmp/ctl-$name/out" 2>&1 &
  wpid[$name]=$!
}
res() { sed -n "s/^$2=//p" "$tmp/ctl-$1/result" 2>/dev/null | tail -n 1; }
done_() { grep -qs '^done=1' "$tmp/ctl-$1/result" || ! kill -0 "${wpid[$1]}" 2>/dev/null; }
report() { echo "# $1: $(tr '\n' ' ' <"$tmp/ctl-$1/result" 2>/dev/null)"; }
# wait_at NAME SECONDS: the writer is paused before its close
at_close() { [ -e "$tmp/ctl-$1/at-close" ] && return 0; done_ "$1" && return 2; return 1; }
wait_at() { wait_for "$2" 0.05 at_close "$1"; }
# finish NAME SECONDS: let it close (if paused) and wait for it to end
finish() {
  touch "$tmp/ctl-$1/go-close"
  wait_for "$2" 0.05 done_ "$1" || return 1
  wait "${wpid[$1]}" 2>/dev/null || true
  unset "wpid[$1]"
}
# df_ FIELD: size or avail of the mount, bytes
df_() { df -B1 --output="$1" "$mnt" | tail -n 1 | tr -d ' '; }
# wait_avail BYTES SECONDS: df shows at least BYTES free (space freed)
wait_avail() {
  local t0=$SECONDS
  for _ in $(seq 1 $(($2 * 10))); do
    [ "$(df_ avail)" -ge "$1" ] && return 0
    [ $((SECONDS - t0)) -ge "$2" ] && break
    sleep 0.1
  done
  echo "# df avail: $(df_ avail), want >= $1"
  return 1
}
# same_object NAME: the object holds exactly what the writer acknowledged
same_object() {
  local ref=$tmp/ctl-$1/ref got
  got=$(aws_ s3 cp "s3://$bucket/$1.bin" - 2>/dev/null | md5sum | cut -d' ' -f1)
  [ "$got" = "$(md5 "$ref")" ] || { echo "# $1: object md5 $got, written $(md5 "$ref") ($(stat -c %s "$ref") bytes)"; return 1; }
}
# stops_at_enospc SCENARIO NAME SIZE SEED GETS WROTE LO HI: a writer of NAME
# (SIZE bytes) stops, open, with ENOSPC (check "GETS") after LO..HI MiB
# (check "WROTE (LO..HI MiB)")
stops_at_enospc() {
  local s=$1 name=$2
  start_writer "$name" "$3" "$4" --pause-before-close
  check "$s: $name stops and stays open" wait_at "$name" 60
  report "$name"
  check_eq "$s: $5" "$(res "$name" write_err)" "28(ENOSPC)"
  check "$s: $6 ($7..$8 MiB)" in_range "$(res "$name" written)" $(($7 * MiB)) $(($8 * MiB))
}
refusals() { grep -c "${2:-staging full}" "$1" || true; }
stats_() { grep '^staging\.' "$mnt/.s3rdmafs-stats" | tr '\n' ' '; }
# tmpfs_avail: bytes free on the tmpfs of c)
tmpfs_avail() { df -B1 --output=avail "$small" | tail -n 1 | tr -d ' '; }

"$CLI" mb "$bucket"
# write.stream=false: these writers are sequential, and a streamed file
# takes no staging space (test_fs_stream); the limit is the staging path's
opts=(-o write.staging_max=64M -o cache.dir="$tmp/cache" -o write.part_size=5M
      -o write.stream=false)

# ---- a) ENOSPC after the wait, one log line, nothing lost, space back ----
case_a() {
echo "# a) write.staging_max=64M, write.staging_wait=2s"
fs_mount "$bucket" "$mnt" "$log" "${opts[@]}" -o write.staging_wait=2
check_eq "a: df shows the limit as the size" "$(df_ size)" "$LIMIT"
check_eq "a: df shows it all available" "$(df_ avail)" "$LIMIT"
check_eq "a: stats: staging.limit" "$(stat_of staging.limit)" "$LIMIT"
check_eq "a: stats: nothing staged yet" "$(stat_of staging.bytes)" 0
start_writer A $((40 * MiB)) 1 --pause-before-close
check "a: A writes 40 MiB and stays open" wait_at A 60
check_eq "a: A's writes all succeed" "$(res A write_err)" 0
avail=$(df_ avail)
echo "# a: df avail with A open: $avail"
check "a: df shows about 24 MiB left (23..24 MiB)" in_range "$avail" $((23 * MiB)) $((24 * MiB))
echo "# a: stats with A open: $(stats_)"
check "a: stats: staging.bytes is A's 40 MiB (40..41 MiB)" \
  in_range "$(stat_of staging.bytes)" $((40 * MiB)) $((41 * MiB))
check_eq "a: stats: no write waited yet" "$(stat_of staging.waits)" 0
stops_at_enospc a B $((40 * MiB)) 2 "B gets ENOSPC at the limit" "B wrote what was left" 20 24
start_writer C $((8 * MiB)) 3 --pause-before-close
check "a: C stops and stays open" wait_at C 60
report C
check_eq "a: C gets ENOSPC at once" "$(res C write_err)" "28(ENOSPC)"
check_eq "a: C wrote nothing" "$(res C written)" 0
check "a: df shows less than 1 MiB left" test "$(df_ avail)" -lt "$MiB"
check_eq "a: one log line for every refusal" "$(refusals "$log")" 1
echo "# a: stats with A, B and C open: $(stats_)"
check_eq "a: stats: B and C refused with ENOSPC" "$(stat_of staging.enospc)" 2
check_eq "a: stats: B and C waited first" "$(stat_of staging.waits)" 2
check_eq "a: stats: nobody waits now" "$(stat_of staging.waiting)" 0
check "a: stats: staging.bytes at the limit (63..65 MiB)" \
  in_range "$(stat_of staging.bytes)" $((63 * MiB)) $((65 * MiB))
{ grep 'staging full' "$log" || true; } | sed 's/^/# log: /'
check "a: B closes" finish B 120
check_eq "a: B's close succeeds" "$(res B close_err)" 0
check "a: B's object is every byte acknowledged before ENOSPC" same_object B
check "a: C closes" finish C 120
check_eq "a: C's close succeeds" "$(res C close_err)" 0
check "a: A closes" finish A 120
check_eq "a: A's close succeeds" "$(res A close_err)" 0
check "a: A's object is complete" same_object A
check "a: once closed and uploaded the space is free again (df, 20 s)" \
  wait_avail $((LIMIT - MiB)) 20
check "a: stats: staging.bytes back under 1 MiB" test "$(stat_of staging.bytes)" -lt "$MiB"
start_writer D $((50 * MiB)) 4
check "a: D (50 MiB) is written" finish D 120
report D
check_eq "a: D's writes all succeed" "$(res D write_err)" 0
check_eq "a: D's close succeeds" "$(res D close_err)" 0
check "a: D's object is complete" same_object D
check_eq "a: still one log line" "$(refusals "$log")" 1
check_eq "a: stats: still two refusals" "$(stat_of staging.enospc)" 2
check "a: clean unmount" fs_umount "$mnt"
echo "# a: in cache.dir after unmount: $(find "$tmp/cache" -type f | wc -l) files, $(du -sk "$tmp/cache" | cut -f1) KiB"
}
run_case a case_a

# ---- b) a waiting writer goes on when another file's close frees space ----
case_b() {
echo "# b) write.staging_max=64M, write.staging_wait=120s"
log=$tmp/fs-b.log
fs_mount "$bucket" "$mnt" "$log" "${opts[@]}" -o write.staging_wait=120
start_writer A2 $((40 * MiB)) 5 --pause-before-close
check "b: A2 writes 40 MiB and stays open" wait_at A2 60
start_writer B2 $((40 * MiB)) 6
waiting=no
for _ in $(seq 1 600); do # bounded: 60 s for B2 to reach the limit
  if done_ B2; then break; fi
  if [ "$(df_ avail)" -lt "$MiB" ]; then waiting=yes; break; fi
  sleep 0.1
done
echo "# b: df avail $(df_ avail) with A2 open and B2 running"
check_eq "b: B2 reaches the limit and is not done" "$waiting" yes
sleep 1
check "b: B2 still waits (no error, not done)" bash -c "! grep -qs '^write_err=' '$tmp/ctl-B2/result'"
echo "# b: stats while B2 waits: $(stats_)"
check_eq "b: stats: one write waiting" "$(stat_of staging.waiting)" 1
check "b: stats: it counts as a write that waited" test "$(stat_of staging.waits)" -ge 1
check "b: A2 closes" finish A2 120
check_eq "b: A2's close succeeds" "$(res A2 close_err)" 0
check "b: B2 then completes" finish B2 120
report B2
check_eq "b: B2's writes all succeed" "$(res B2 write_err)" 0
check_eq "b: B2 wrote every byte" "$(res B2 written)" $((40 * MiB))
check_eq "b: B2's close succeeds" "$(res B2 close_err)" 0
check "b: A2's object is complete" same_object A2
check "b: B2's object is complete" same_object B2
check_eq "b: nothing refused, nothing logged" "$(refusals "$log")" 0
echo "# b: stats at the end: $(stats_)"
check_eq "b: stats: nothing refused" "$(stat_of staging.enospc)" 0
check_eq "b: stats: nobody waits now" "$(stat_of staging.waiting)" 0
check "b: stats: B2 waited" test "$(stat_of staging.waits)" -ge 1
check "b: clean unmount" fs_umount "$mnt"
}
run_case b case_b

# ---- c) cache.dir on a small filesystem ----
case_c() {
if [ "$(id -u)" -ne 0 ]; then
  echo "# c) skipped: mounting a tmpfs needs root"
else
  echo "# c) cache.dir on a 96 MiB tmpfs"
  small=$tmp/small
  mkdir -p "$small"
  mount -t tmpfs -o size=96m,mode=0700 s3r-staging-test "$small"
  copts=(-o cache.dir="$small" -o write.part_size=5M -o write.staging_wait=1
         -o write.stream=false)
  log=$tmp/fs-c1.log
  fs_mount "$bucket" "$mnt" "$log" "${copts[@]}"
  half=$(($(tmpfs_avail) / 2))
  echo "# c: df size $(df_ size), half the tmpfs's free space $half"
  check "c: by default the limit is half the free space (df, within 1 MiB)" \
    in_range "$(df_ size)" $((half - MiB)) $((half + MiB))
  check "c: clean unmount" fs_umount "$mnt"
  log=$tmp/fs-c2.log
  fs_mount "$bucket" "$mnt" "$log" "${copts[@]}" -o write.staging_max=1G
  size=$(df_ size)
  echo "# c: write.staging_max=1G: df size $size, tmpfs free $(tmpfs_avail)"
  check "c: df shows what the filesystem can take (90..96 MiB), not 1G" \
    in_range "$size" $((90 * MiB)) $((96 * MiB))
  stops_at_enospc c E $((120 * MiB)) 7 "E gets ENOSPC" "E wrote what the filesystem could take" 80 96
  echo "# c: tmpfs free when E stopped: $(tmpfs_avail)"
  check "c: the filesystem keeps its margin free (>= 900 KiB)" \
    test "$(tmpfs_avail)" -ge $((900 * 1024))
  check_eq "c: one log line, naming the filesystem" \
    "$(refusals "$log" 'filesystem is nearly full')" 1
  { grep 'nearly full' "$log" || true; } | sed 's/^/# log: /'
  check "c: E closes" finish E 120
  check_eq "c: E's close succeeds" "$(res E close_err)" 0
  check "c: E's object is every byte acknowledged" same_object E
  check "c: the space is back once E is closed (df, 20 s)" \
    wait_avail $((90 * MiB)) 20
  check "c: clean unmount" fs_umount "$mnt"
  umount "$small" && small=
fi
}
run_case c case_c

summary
