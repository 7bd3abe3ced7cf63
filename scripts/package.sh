#!/usr/bin/env bash
# Build the Debian packages into OUTDIR: s3rdmafs, s3rdma-gateway,
# libs3rdmafs0, libs3rdmafs-dev, python3-s3rdmafs (and their -dbgsym),
# then lintian them.
#
#   scripts/package.sh OUTDIR [--no-check] [--no-lintian]
#
# The sources are the work tree's files that git knows or would add
# (tracked, and untracked ones not ignored), copied into a fresh directory
# with packaging/debian as its debian/, so nothing of a local build leaks
# in. --no-check: skip the unit tests dh runs (DEB_BUILD_OPTIONS=nocheck).
# Exits non-zero when the build fails or lintian reports an error or a
# warning (the ones we accept are overridden, with reasons, in
# packaging/debian/*.lintian-overrides).
set -euo pipefail

usage() { echo "usage: $0 OUTDIR [--no-check] [--no-lintian]" >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1
shift
mkdir -p "$out"
out=$(cd "$out" && pwd) # (the caller's directory, before the cd below)
cd "$(dirname "$0")/.."
check=1 lint=1
for a in "$@"; do
  case $a in
    --no-check) check=0 ;;
    --no-lintian) lint=0 ;;
    *) usage ;;
  esac
done

version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
cmake_version=$(sed -n 's/^project(s3rdmafs VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
if [ "$version" != "$cmake_version" ]; then
  echo "package: packaging/debian/changelog says $version, CMakeLists.txt" \
       "$cmake_version: make them agree" >&2
  exit 1
fi

work=$(mktemp -d /tmp/s3rdmafs-pkg.XXXXXX)
trap 'rm -rf "$work"' EXIT
src=$work/s3rdmafs-$version
mkdir "$src"
# (safe.directory: root building a checkout that another user owns)
git -c safe.directory="$PWD" ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar -cf - --null -T - | tar -xf - -C "$src"
cp -r packaging/debian "$src/debian"

opts=${DEB_BUILD_OPTIONS:-}
[ $check -eq 1 ] || opts="$opts nocheck"
echo "package: building s3rdmafs $version in $src" >&2
(cd "$src" && DEB_BUILD_OPTIONS="$opts parallel=$(nproc)" \
   dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) || {
  tail -n 60 "$work/build.log" >&2
  echo "package: dpkg-buildpackage failed (the last 60 lines above)" >&2
  exit 1
}
changes=$(ls "$work"/s3rdmafs_"$version"_*.changes)
for f in $(sed -n '/^Files:/,/^[A-Z]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* //p' "$changes"); do
  cp "$work/$f" "$out/"
done
cp "$changes" "$out/"
ls -l "$out"

if [ $lint -eq 1 ]; then
  # errors and warnings fail (the ones we accept are overridden, each with
  # its reason); info is shown
  lintian --fail-on error,warning --display-info "$out/$(basename "$changes")"
fi
