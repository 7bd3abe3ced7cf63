#!/usr/bin/env bash
# Run every test suite: setup (packages + build, plus the ASan/UBSan build
# and the libFuzzer targets), then ctest in the sanitizer build and in the
# normal build, unit and integration tests alike (integration tests bring up
# a local RGW), then the fuzz smoke tests (label fuzz, about a minute).
# Exits non-zero on any failure; ends with ctest's summary.
#
#   scripts/test.sh            everything
#   scripts/test.sh -L unit    extra arguments go to ctest (e.g. -R s3_ops);
#                              the fuzz tests run only where they select
#                              some (-L fuzz: just them; -R unit.x: none)
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --asan --fuzz || exit 1

# one RGW for both runs; stopped at the end whatever happens
export S3R_RGW_KEEP=1
trap 'tests/servers/rgw.sh stop >/dev/null 2>&1 || true' EXIT

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

rc=0
echo "== ctest (ASan + UBSan build) =="
(cd build-asan && ctest --output-on-failure "$@") || rc=1
echo "== ctest (release build) =="
(cd build && ctest --output-on-failure "$@") || rc=1
# the fuzz tests selected by the arguments as well as by their label
nfuzz=$(cd build-fuzz && ctest -N -L fuzz "$@" | sed -n 's/^Total Tests: //p')
if [ "${nfuzz:-0}" -gt 0 ]; then
  echo "== ctest (fuzz smoke) =="
  (cd build-fuzz && ctest --output-on-failure -L fuzz "$@") || rc=1
fi
exit $rc
