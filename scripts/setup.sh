#!/usr/bin/env bash
# Install every Debian package the project needs (idempotent, quiet when
# everything is present) and build into build/ (and build-asan/ with --asan,
# and the libFuzzer targets into build-fuzz/ with clang with --fuzz).
#
#   scripts/setup.sh [--asan] [--fuzz] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

asan=0 fuzz=0 build=1
for a in "$@"; do
  case $a in
    --asan) asan=1 ;;
    --fuzz) fuzz=1 ;;
    --no-build) build=0 ;;
    *) echo "usage: $0 [--asan] [--fuzz] [--no-build]" >&2; exit 2 ;;
  esac
done

PKGS=(
  # build
  build-essential cmake pkg-config
  libcurl4-openssl-dev libexpat1-dev libssl-dev libjansson-dev
  libfuse3-dev fuse3 libcmocka-dev libmicrohttpd-dev
  # rdma: the verbs transports (rdma-core's libibverbs)
  libibverbs-dev
  # fuzzing (tests/fuzz): clang and its libFuzzer/sanitizer runtimes
  clang libclang-rt-14-dev
  # tests: a real S3 server (Ceph RGW) and a second S3 client
  ceph-mon ceph-osd radosgw ceph-common awscli curl python3 openssl
  # tests: the tools the write tests drive, and s3fs for metadata interop
  rsync vim s3fs
  # tests: Prometheus's own parser for the metrics (test_metrics)
  python3-prometheus-client
  # the Python module (python/) and its tests (tests/python), torch's
  # DataLoader (forked workers) and tensors among them
  python3-dev python3-numpy python3-pytest python3-torch
  # tests/rdma-vm: a QEMU guest (TCG) with soft-RoCE, Debian's kernel
  # unpacked into a busybox initramfs, perftest as the RC reference
  qemu-system-x86 busybox-static cpio kmod xz-utils iproute2
  rdma-core ibverbs-utils rdmacm-utils perftest librdmacm-dev
  # packages (scripts/package.sh, tests/package): man pages from markdown,
  # the Debian build, its checker, and a Debian 12 root to install into
  go-md2man debhelper dpkg-dev fakeroot lintian debootstrap man-db systemd
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

configure_and_build() { # dir, target ("" for all), extra cmake args...
  local dir=$1 target=${2:+--target $2}; shift 2
  cmake -S . -B "$dir" -DS3R_WERROR=$werror "$@" >/dev/null
  # shellcheck disable=SC2086 # $target is empty or two words
  cmake --build "$dir" -j "$jobs" $target -- --no-print-directory >/dev/null ||
    cmake --build "$dir" -j 1 $target -- --no-print-directory
}

configure_and_build build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# (the sanitizer build is a test build: the failpoints are compiled in)
[ "$asan" -eq 0 ] || configure_and_build build-asan "" -DCMAKE_BUILD_TYPE=Debug -DS3R_SANITIZE=ON \
  -DS3R_FAILPOINTS=ON
# the fuzz targets only (fuzz_all), with clang (libFuzzer; a build
# directory's compiler is fixed when it is first configured); never -Werror
# there: clang warns where gcc does not, and the gcc builds enforce it
[ "$fuzz" -eq 0 ] ||
  CC=clang configure_and_build build-fuzz fuzz_all -DCMAKE_BUILD_TYPE=Debug \
    -DS3R_FUZZ=ON -DS3R_WERROR=OFF
built=build/
[ "$asan" -eq 0 ] || built+=", build-asan/"
[ "$fuzz" -eq 0 ] || built+=", build-fuzz/ (fuzz targets)"
echo "setup: built into $built" >&2
