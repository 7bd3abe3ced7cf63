#!/usr/bin/env bash
# scripts/gpu-check.sh in CI, simulated (the stand-in driver), so that the
# command a GPU machine runs cannot rot: from this build with FUSE, then
# from the bundle scripts/gpu-bundle.sh makes (its size said, at most
# 64 MiB), with FUSE and as where FUSE is absent. Each run must end with
# every case passed, and its table is printed. Cases (S3R_ONLY=RE, as in
# every suite): build, bundle, bundle-nofuse.
#
#   test_gpu_check.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-gpu-check-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 ran=0
run() { # NAME CASE, then gpu-check.sh and its arguments
  local name=$1 out rc=0
  shift
  if [ -n "${S3R_ONLY:-}" ] && ! [[ $1 =~ $S3R_ONLY ]]; then
    echo "# case $1: left out (S3R_ONLY='$S3R_ONLY')"
    return 0
  fi
  ran=$((ran + 1))
  shift
  out=$("$@" 2>&1) || rc=$?
  printf '%s\n' "$out" | sed -n '/^== gpu-check/,$p'
  if [ "$rc" = 0 ] && [[ $out == *'| ok '* ]]; then
    echo "ok - $name"
  else
    printf '%s\n' "$out" | tail -30
    echo "not ok - $name (exit $rc)"
    fails=$((fails + 1))
  fi
}
S3R_BUILD=$build run "from the build, with FUSE" build \
  "$top/scripts/gpu-check.sh" --simulated --size 256 --reps 2
if S3R_BUILD=$build "$top/scripts/gpu-bundle.sh" "$tmp/b.tar.gz"; then
  echo "ok - the bundle made"
  tar -C "$tmp" -xzf "$tmp/b.tar.gz"
  run "from the bundle, with FUSE" bundle \
    "$tmp/s3rdmafs-gpu-check/scripts/gpu-check.sh" --simulated --size 256 --reps 2
  run "from the bundle, no FUSE" bundle-nofuse \
    "$tmp/s3rdmafs-gpu-check/scripts/gpu-check.sh" --simulated --no-fuse --size 256 --reps 2
else
  echo "not ok - the bundle made"
  fails=$((fails + 1))
fi
[ "$ran" -gt 0 ] || { echo "not ok - S3R_ONLY='$S3R_ONLY' names no case"; exit 1; }
[ "$fails" = 0 ]
