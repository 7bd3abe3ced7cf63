#!/usr/bin/env bash
# Install every Debian package the project needs (idempotent, quiet when
# everything is present) and build into build/ (and build-asan/ with --asan).
#
#   scripts/setup.sh [--asan] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

asan=0 build=1
for a in "$@"; do
  case $a in
    --asan) asan=1 ;;
    --no-build) build=0 ;;
    *) echo "usage: $0 [--asan] [--no-build]" >&2; exit 2 ;;
  esac
done

PKGS=(
  # build
  build-essential cmake pkg-config
  libcurl4-openssl-dev libexpat1-dev libssl-dev libjansson-dev
  libfuse3-dev fuse3 libcmocka-dev libmicrohttpd-dev
  # tests: a real S3 server (Ceph RGW) and a second S3 client
  ceph-mon ceph-osd radosgw ceph-common awscli curl python3 openssl
  # tests: the tools the write tests drive, and s3fs for metadata interop
  rsync vim s3fs
)

missing=()
for p in "${PKGS[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "$build" -eq 1 ] || exit 0

werror=OFF
[ "${CI:-}" = true ] && werror=ON
jobs=$(nproc)

configure_and_build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DS3R_WERROR=$werror "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" -- --no-print-directory >/dev/null ||
    cmake --build "$dir" -j 1 -- --no-print-directory
}

configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
[ "$asan" -eq 0 ] || configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DS3R_SANITIZE=ON
echo "setup: built into build/$([ "$asan" -eq 1 ] && echo ' and build-asan/')" >&2
