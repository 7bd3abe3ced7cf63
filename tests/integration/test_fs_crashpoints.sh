#!/usr/bin/env bash
# The crash matrix (issue 27): every failpoint of the write path, armed to
# kill the daemon (or fail there, then the daemon killed) in workloads that
# reach it: a new file, streamed files of exactly 3 parts and 3 parts + 1
# byte, an overwrite in the middle, an append, a rename while dirty, fsync
# then more writes, a truncate, a file emptied while its upload is under
# way; points of recovery armed in the mount after. Each case mounts again
# (twice) and checks that nothing acknowledged is lost, what failed is on
# the server or in unsaved/, no crash loop, no upload of ours left and
# another writer's untouched (crash_matrix.py says how). One line a case;
# a failure prints the command that replays it.
#
# Needs a daemon built with the failpoints (S3R_FAILPOINTS: the sanitizer
# build of scripts/setup.sh); elsewhere it is skipped (77). All the cases
# run (about a second each); should the matrix outgrow CI,
# S3R_CRASH_SAMPLE=N runs N of them (every point at least once) chosen by
# a printed seed, S3R_CRASH_SEED=S replays that sample;
# S3R_CRASH_ONLY=CASE,... (or a point's name) runs those; S3R_ONLY=RE (as
# in every suite) the cases whose name matches (wb.write:new, ...), each
# failing one printed with its replay.
#
#   test_fs_crashpoints.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" crashpts work
if ! S3R_FAILPOINTS=wb.write=error "$FS" --version >/dev/null 2>&1 ||
   S3R_FAILPOINTS=no.such.point=kill "$FS" --version >/dev/null 2>&1; then
  echo "# $FS has no failpoints (built without S3R_FAILPOINTS): skipped"
  exit 77
fi
trap 'fs_abort_uploads; fs_cleanup' EXIT
aws_ s3 mb "s3://$bucket" >/dev/null
args=(--bin "$BIN" --bucket "$bucket" --work "$tmp/work")
if [ -n "${S3R_CRASH_ONLY:-}" ]; then
  args+=(--only "$S3R_CRASH_ONLY")
elif [ -n "${S3R_ONLY:-}" ]; then
  args+=(--only-regex "$S3R_ONLY")
  cases_run=1 # (the matrix says so itself when the expression names none)
elif [ -n "${S3R_CRASH_SAMPLE:-}" ]; then
  args+=(--sample "$S3R_CRASH_SAMPLE" ${S3R_CRASH_SEED:+--seed "$S3R_CRASH_SEED"})
fi
check "the crash matrix: every case ok, every point reached" \
  python3 "$here/crash_matrix.py" "${args[@]}"
summary
