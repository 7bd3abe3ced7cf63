#!/usr/bin/env bash
# Run every test suite: setup (packages + build, plus the ASan/UBSan build
# and the libFuzzer targets), then ctest in the sanitizer build and in the
# normal build, unit and integration tests alike (integration tests bring up
# a local RGW), then the fuzz smoke tests (label fuzz, half a minute). The
# long suites labelled "once" (tests/integration/CMakeLists.txt says which
# and why) run in the sanitizer build only.
# Exits non-zero on any failure; ends with ctest's summary.
#
#   scripts/test.sh            everything
#   scripts/test.sh -L unit    extra arguments go to ctest (e.g. -R s3_ops);
#                              the fuzz tests run only where they select
#                              some (-L fuzz: just them; -R unit.x: none);
#                              a -LE joins the release build's -LE once
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

scripts/setup.sh --asan --fuzz || exit 1

# one RGW for both runs; stopped at the end whatever happens
export S3R_RGW_KEEP=1
trap 'tests/servers/rgw.sh stop >/dev/null 2>&1 || true' EXIT

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# digest DIR: the failed checks of DIR's last ctest run with a few lines
# after each (a failed test with none: its last lines), so that a log kept
# only by its head and tail still names them
digest() {
  local dir=$1/Testing/Temporary
  [ -f "$dir/LastTestsFailed.log" ] && [ -f "$dir/LastTest.log" ] || return 0
  echo "== what failed in $1 =="
  awk -F: 'FNR == NR { failed[$2] = 1; next }
    /^[0-9]+\/[0-9]+ Testing: / { split($0, w, " "); t = w[3]; m = 0; k = 0; next }
    !(t in failed) { next }
    /^<end of output>$/ {
      if (!m) { print "-- " t " (its last lines)"
                for (i = k - 10; i < k; i++) if (i >= 0) print b[i % 10] }
      t = ""; next }
    { b[k++ % 10] = $0 }
    /^not ok |^# stopped by set -e|ERROR: AddressSanitizer|runtime error:/ {
      if (!m) print "-- " t; m = 1; n = 4 }
    n > 0 { print; n-- }' "$dir/LastTestsFailed.log" "$dir/LastTest.log" |
    head -n 80
}

rc=0
echo "== ctest (ASan + UBSan build) =="
(cd build-asan && ctest --output-on-failure "$@") || rc=1
# the release build leaves out label once; ctest excludes only what every
# -LE given matches, so a -LE of the caller's goes into the same regex
exclude='^once$' rel=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    -LE | --label-exclude) exclude+="|(${args[i + 1]:-})"; i=$((i + 1)) ;;
    *) rel+=("${args[i]}") ;;
  esac
done
echo "== ctest (release build; label once ran in the sanitizer build only) =="
(cd build && ctest --output-on-failure -LE "$exclude" ${rel[@]+"${rel[@]}"}) || rc=1
# the fuzz tests selected by the arguments as well as by their label; each
# fuzzes in one process for a fixed time: as many at once as there are cores
nfuzz=$(cd build-fuzz && ctest -N -L fuzz "$@" | sed -n 's/^Total Tests: //p')
if [ "${nfuzz:-0}" -gt 0 ]; then
  echo "== ctest (fuzz smoke) =="
  (cd build-fuzz && ctest --output-on-failure -j "$(nproc)" -L fuzz "$@") || rc=1
fi
if [ "$rc" -ne 0 ]; then
  for d in build-asan build build-fuzz; do digest "$d"; done
fi
exit $rc
