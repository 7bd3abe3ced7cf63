#!/usr/bin/env bash
# Memory that follows use (issue 33), on a real mount of RGW:
#   - idle: a mount with the defaults holds at most 64 MiB resident and
#     64 MiB locked (/proc/PID/status), nothing of its cache backed;
#   - at work: a 2 GiB cold sequential read leaves it at most cache.size +
#     write.max_memory + 64 MiB (docs/ARCHITECTURE.md, "Memory");
#   - idle again (cache.idle_release=1): the cache's segments and the part
#     buffers given back, the resident set back near where it started;
#   - pressure (the mem.pressure failpoint, sanitizer build: fired once,
#     at the watcher's first round with some of the cache backed): backed
#     segments given back, counted, said, reads going on; a part buffer
#     whose blocks cannot be had (pool.reserve): the writer stages;
#   - in a memory cgroup of 512 MiB (v2, else v1): the daemon and the
#     workload inside it, the defaults cut to the target (half of it), a
#     1 GiB write and a 2 GiB read byte-exact, and no OOM kill.
# The bounds on the resident set need a build without sanitizers (their
# shadow memory and quarantine are not the daemon's): the sanitizer build
# prints the figures and leaves the bounds out.
#
#   test_fs_memory.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsmem cache

MiB=$((1 << 20))
stream() { gen s3r-memory "$1"; } # BYTES: the same bytes every time
store() { stream "$(($1 * MiB))" >"$2"; } # MIB FILE: FILE written
same() { cmp <(stream "$(($1 * MiB))") "$2"; } # MIB FILE: FILE holds them
vm_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
sanitized=0
if _fs_sanitized; then sanitized=1; fi
bound() { # NAME VALUE MAX: VALUE <= MAX (said only, under sanitizers)
  if [ "$sanitized" = 1 ]; then
    echo "# $1: $2 (bound $3 not checked: a sanitizer build)"
  else
    check "$1: $2 <= $3" test "$2" -le "$3"
  fi
}

aws_ s3 mb "s3://$bucket" >/dev/null

# ---- idle: the defaults, nothing read ----
case_idle() {
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache",cache.idle_release=1
pid=$FS_PID
rss=$(vm_kb "$pid" VmRSS) lck=$(vm_kb "$pid" VmLck)
echo "# idle mount: VmRSS $rss kB, VmLck $lck kB"
bound "idle: resident kB" "$rss" $((64 * 1024))
bound "idle: locked kB" "$lck" $((64 * 1024))
check "idle: no cache segment backed" test "$(stat_of cache.backed_bytes)" = 0
check "idle: the stats say resident bytes" test "$(stat_of mem.resident_bytes)" -gt 0
}
run_case idle case_idle

# ---- work: 2 GiB written, then read cold ----
case_work() {
need_case idle # (its mount)
check "write: 2 GiB stored" store 2048 "$mnt/big"
fs_umount "$mnt"
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache",cache.idle_release=1
pid=$FS_PID
size=$(stat_of cache.chunks_total) chunk=$(stat_of cache.chunk_size)
cache_kb=$((size * chunk / 1024))
check "read: 2 GiB cold, byte-exact" same 2048 "$mnt/big"
rss=$(vm_kb "$pid" VmRSS) hwm=$(vm_kb "$pid" VmHWM)
echo "# after the read: VmRSS $rss kB (peak $hwm kB), cache $cache_kb kB," \
  "backed $(($(stat_of cache.backed_bytes) / 1024)) kB"
bound "read: peak resident kB" "$hwm" $((cache_kb + 256 * 1024 + 64 * 1024))
backed=$(stat_of cache.backed_bytes)
check "read: the cache grew" test "$backed" -gt 0
check "write: 64 MiB through the part buffers" store 64 "$mnt/small"
check "write: part buffers taken" test "$(stat_of write.pool_slots_ready)" -gt 0
left=$backed slots=1
for _ in $(seq 1 100); do # bounded: 10 s (idle 1 s, the watcher every 1 s)
  left=$(stat_of cache.backed_bytes) slots=$(stat_of write.pool_slots_ready)
  [ "$left" = 0 ] && [ "$slots" = 0 ] && break
  sleep 0.1
done
rss2=$(vm_kb "$pid" VmRSS)
echo "# idle again: backed $left bytes, VmRSS $rss2 kB," \
  "$(stat_of cache.segments_released) segments released"
check "idle again: every segment given back" test "$left" = 0
check "idle again: every part buffer given back" test "$slots" = 0
check "idle again: ... counted" test "$(stat_of write.pool_slots_released)" -ge 1
check "idle again: counted" test "$(stat_of cache.segments_released)" -ge 1
bound "idle again: resident kB" "$rss2" $((64 * 1024))
check "idle again: the file still reads byte-exact" \
  same 2048 "$mnt/big"
fs_umount "$mnt"
}
run_case work case_work

# ---- pressure: half of what is backed given back (simulated) ----
case_pressure() {
need_case work # (big, 2 GiB)
if S3R_FAILPOINTS=mem.pressure=error "$FS" --version >/dev/null 2>&1 &&
   ! S3R_FAILPOINTS=no.such.point=error "$FS" --version >/dev/null 2>&1; then
  S3R_FAILPOINTS=mem.pressure=error fs_mount "$bucket" "$mnt" "$log" \
    -o cache.dir="$tmp/cache"
  head -c $((512 * MiB)) "$mnt/big" >/dev/null
  ev=0
  for _ in $(seq 1 50); do # bounded: 5 s (the watcher runs every 1 s)
    ev=$(stat_of mem.pressure_events)
    [ "$ev" -ge 1 ] && break
    sleep 0.1
  done
  check "pressure: the event counted" test "$ev" -ge 1
  check "pressure: bytes given back" test "$(stat_of mem.pressure_released_bytes)" -gt 0
  check "pressure: said" grep -q "memory pressure (some avg10" "$log"
  check "pressure: reads go on" same 2048 "$mnt/big"
  fs_umount "$mnt"
  # a part buffer that cannot have its blocks (a full tmpfs): the writer
  # stages instead (write.pool_refused), nothing lost
  S3R_FAILPOINTS=pool.reserve=error fs_mount "$bucket" "$mnt" "$log" \
    -o cache.dir="$tmp/cache"
  check "pool full: 64 MiB written" store 64 "$mnt/full"
  check "pool full: the writer staged" test "$(stat_of write.pool_refused)" -ge 1
  fs_umount "$mnt"
  aws_ s3 cp "s3://$bucket/full" "$tmp/full" >/dev/null
  check "pool full: stored byte-exact" same 64 "$tmp/full"
  rm -f "$tmp/full"
else
  echo "# pressure: $FS has no failpoints (a build without S3R_FAILPOINTS): left out"
fi
}
run_case pressure case_pressure

# ---- cgroup: a memory cgroup of 512 MiB ----
case_cgroup() {
need_case work # (big, read inside the cgroup)
# cg_make: a child cgroup of ours with memory limited to 512 MiB (v2 where
# the memory controller is there, else v1); prints its directory
cg_make() {
  local rel base d
  rel=$(awk -F: '$1 == "0" && $2 == "" { print $3 }' /proc/self/cgroup)
  for base in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    [ -n "$rel" ] && grep -qw memory "$base$rel/cgroup.controllers" 2>/dev/null || continue
    d=$base$rel/s3r-mem-$$
    mkdir "$d" 2>/dev/null && echo $((512 * MiB)) >"$d/memory.max" 2>/dev/null &&
      { echo "$d"; return 0; }
    rmdir "$d" 2>/dev/null || true
  done
  rel=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
  base=/sys/fs/cgroup/memory
  [ -n "$rel" ] && [ -d "$base$rel" ] || rel=''
  d=$base$rel/s3r-mem-$$
  mkdir "$d" 2>/dev/null && echo $((512 * MiB)) >"$d/memory.limit_in_bytes" 2>/dev/null &&
    { echo "$d"; return 0; }
  rmdir "$d" 2>/dev/null || true
  return 1
}
cg_ooms() { # DIR: OOM kills in it
  if [ -f "$1/memory.events" ]; then
    awk '$1 == "oom_kill" { print $2 }' "$1/memory.events"
  else
    awk '$1 == "oom_kill" { print $2 }' "$1/memory.oom_control"
  fi
}
if [ "$sanitized" = 1 ]; then
  echo "# cgroup: left out in a sanitizer build (its shadow memory is not the daemon's)"
elif [ "$(id -u)" != 0 ] || ! cg="$(cg_make)"; then
  echo "# cgroup: cannot make a memory cgroup here (not root, or no memory controller): left out"
else
  cg_back() { # the test's shell out of the cgroup again, and it removed
    echo $$ >"$(dirname "$cg")/cgroup.procs" 2>/dev/null || true
    rmdir "$cg" 2>/dev/null || true
  }
  mem_cleanup() { local rc=$?; cg_back; (exit "$rc"); fs_cleanup; }
  trap mem_cleanup EXIT
  echo "# cgroup: $cg (512 MiB)"
  # the daemon and this shell (the workload's processes) inside it
  FS_EXEC=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg")
  echo $$ >"$cg/cgroup.procs"
  fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
  # shellcheck disable=SC2034 # (fs_mount's)
  FS_EXEC=()
  check "cgroup: the defaults cut to the target" \
    grep -q "memory target 256 MiB (half of 512 MiB" "$log"
  check "cgroup: 1 GiB written" store 1024 "$mnt/w1g"
  check "cgroup: 1 GiB read back byte-exact" \
    same 1024 "$mnt/w1g"
  check "cgroup: 2 GiB read byte-exact" \
    same 2048 "$mnt/big"
  echo "# cgroup: daemon VmHWM $(vm_kb "$FS_PID" VmHWM) kB," \
    "mem.target_bytes $(stat_of mem.target_bytes)"
  check "cgroup: the daemon lives" kill -0 "$FS_PID"
  check "cgroup: no OOM kill" test "$(cg_ooms "$cg")" = 0
  fs_umount "$mnt"
  cg_back
fi
}
run_case cgroup case_cgroup

summary
