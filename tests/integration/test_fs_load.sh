#!/usr/bin/env bash
# Load on a mount of RGW (load_driver.py): 64 reader and 16 writer
# processes for a bounded time, twice (a fixed seed, then a random one,
# printed; a fresh mount each): readers of read-only files (separate and shared, every byte
# checked), of files one writer rewrites or patches (close-to-open checked
# whenever no writer overlapped the read), of files several processes
# overwrite in place or append to; writers of each kind. Then the final
# content of every written file against the writers' journals, again after
# a remount with an empty cache directory (from the server).
#
# Checks: no wrong byte, no error (zero blocks handed by the kernel to a
# reader racing an O_TRUNC rewrite, and pages torn by a racing write, are
# counted, not failed: load_driver.py says why); no operation waits forever (each one's
# start is watched: pending for --hang-s (120) s, or 20 s (--stall-s) with
# no operation completed while some were pending, is a hang: stacks and the
# daemon's threads are printed); the longest wait per operation and the
# operations per 5 s window (min, median) are reported, never judged.
#
# Memory: each run has a fresh daemon, whose peak RSS (VmHWM, and VmRSS
# sampled every second) must stay under cache.size + write.max_memory +
# OVERHEAD; mounted with cache.size=256M and write.max_memory=128M so that
# the bound means something. OVERHEAD is 128 MiB, from what was measured
# (smaps of the daemon at its largest, 30 s runs on 2 cores: peak RSS
# 391-398 MiB; at rest after mounting 11 MiB):
#   - the binary, its libraries, libcurl's connections, thread stacks,
#     FUSE's request buffers (a write fills up to max_write, 1 MiB, of its
#     thread's), reply buffers of reads of files being written and of
#     reads that bypass the page cache: about 60 MiB (10 MiB of mappings
#     of the binary and libraries, 50 MiB anonymous);
#   - a single PUT maps its whole staging file (up to a part, 5 MiB here)
#     outside write.max_memory: staging mappings were 25-95 MiB resident,
#     parts included;
#   - glibc's malloc keeping freed buffers in per-thread arenas that
#     never shrink: the daemon pins the mmap threshold at 128 KiB
#     (mallopt), so big buffers are mmap'ed and given back when freed;
#     without that, arenas grew to 150 MiB in 30 s and 171 MiB in 120 s
#     (peak 546 MiB), growing with time.
# The RSS check is skipped (and says so) when the daemon is built with
# AddressSanitizer, whose shadow memory and quarantine make RSS meaningless.
#
#   test_fs_load.sh BUILD_BIN_DIR
#
# S3R_TEST_SEED=N      the second run's seed (default: random, printed)
# S3R_LOAD_SECONDS=N   seconds of load per run (default 30)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsload cache cache2
export PYTHONDONTWRITEBYTECODE=1

driver=$here/load_driver.py
MiB=1048576
cache_mib=256 wmem_mib=128 overhead_mib=128
bound=$(((cache_mib + wmem_mib + overhead_mib) * MiB))
secs=${S3R_LOAD_SECONDS:-30}
seed=${S3R_TEST_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
r_files=8 r_blocks=10240 # 8 x 40 MiB read-only: more than the cache holds

"$CLI" mb "$bucket"
for i in $(seq 0 $((r_files - 1))); do
  python3 "$driver" gen $((1 + i)) "$r_blocks" |
    "$CLI" --parallel 8 put - "$bucket/ro/$(printf 'r%02d' "$i")" >/dev/null
done
mount_it() { # a fresh daemon for each run: its peak RSS is that run's
  fs_mount "$bucket" "$mnt" "$log" -o cache.size=${cache_mib}M \
    -o write.max_memory=${wmem_mib}M -o write.part_size=5M -o cache.dir="$tmp/cache"
  fspid=$FS_PID
  echo "# the daemon at rest: $(awk '/^VmRSS/ {print $2, $3}' "/proc/$fspid/status")"
}
# AddressSanitizer: linked in (the binary names its runtime's entry point,
# or the running daemon maps libasan)
asan=false
if grep -qa __asan_init "$FS"; then asan=true; fi

# load NAME SEED: one run on a fresh mount; its report in $tmp/NAME.json
load() {
  local name=$1 rc=0
  echo "# $name: seed $2; replay: S3R_TEST_SEED=$2 $0 $BIN"
  mkdir -p "$tmp/$name"
  python3 "$driver" run "$mnt" "$tmp/$name" --prefix "$name" --seed "$2" \
    --duration "$secs" --daemon-pid "$fspid" --report "$tmp/$name.json" \
    --r-files "$r_files" --r-blocks "$r_blocks" || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "# $name: a hang: the daemon is killed (which frees its waiters)"
    tail -n 20 "$log" | sed 's/^/#   log: /'
    fs_kill "$mnt"
  fi
  return "$rc"
}
# rss_ok NAME: the run's peak RSS under the bound
rss_ok() {
  local got
  got=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(max(r["vmhwm"], r["rss_max"]))' "$tmp/$1.json") || return 1
  echo "# $1: daemon peak RSS $((got / MiB)) MiB; bound $((bound / MiB)) MiB" \
    "(cache.size $cache_mib + write.max_memory $wmem_mib + overhead $overhead_mib)"
  [ "$got" -le "$bound" ]
}

# ---- fixed, random: a run of load each (seed 1, then $seed) ----
run_load() {
  local run=$1 s=1
  [ "$run" = fixed ] || s=$seed
  mount_it
  if ! $asan && grep -q libasan "/proc/$fspid/maps"; then asan=true; fi
  check "load, $run seed $s: no wrong byte, no error, no hang, final content right" load "$run" "$s"
  if [ ! -s "$tmp/$run.json" ]; then
    check "$run: a report" false
  elif $asan; then
    echo "# $run: the RSS bound is not checked: the daemon is built with AddressSanitizer"
  else
    check "$run: the daemon's RSS stayed under cache.size + write.max_memory + overhead" rss_ok "$run"
  fi
  fs_umount "$mnt" || true
  check "$run: no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"
}
case_fixed() { run_load fixed; }
run_case fixed case_fixed
case_random() { run_load random; }
run_case random case_random

# ---- remount: from the server, a remount with an empty cache directory ----
case_remount() {
[ -s "$tmp/random/model.json" ] || need_case fixed
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache2"
for run in fixed random; do
  if [ -s "$tmp/$run/model.json" ]; then
    check "remount: $run: every written file as the journals say" \
      python3 "$driver" verify "$tmp/$run" "$mnt"
  fi
done
fs_umount "$mnt"
}
run_case remount case_remount

summary
