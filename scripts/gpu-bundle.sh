#!/usr/bin/env bash
# The GPU check to bring along: a tar.gz of what scripts/gpu-check.sh needs
# on a machine where nothing can be installed (no CUDA toolkit needed to
# build: the driver is loaded at run time). Unpacked anywhere, it runs as
#   tar xzf s3rdmafs-gpu-check.tar.gz && s3rdmafs-gpu-check/scripts/gpu-check.sh
#
#   scripts/gpu-bundle.sh [OUT.tar.gz]   (default build/s3rdmafs-gpu-check.tar.gz)
#
# From the release build (build/, S3R_BUILD to change it):
#   bin/      s3rdmafs, gpu_check, gpu_bw
#   lib/      libs3rdmafs (all the Python module needs); lib/deps/ every
#             other shared library the programs need but the C library's
#             own (the machine's glibc is used: the newest symbol version
#             needed is printed), those needing a newer glibc than the rest
#             in lib/deps-newer/ (used only where the machine has no library
#             of that name); lib/gpu-sim/ the stand-in driver (--simulated)
#   python/   the module as built (for this build's Python version), its C
#             sources and libs3rdmafs/s3rdmafs.h: gpu-check.sh builds it
#             there for another python3 when a compiler and Python.h exist
#   scripts/  gpu-check.sh, gpu_check_s3.py (the check's own S3 server),
#             gpu_check_py.py
# Prints the bundle's size; fails when it is over 64 MiB.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${S3R_BUILD:-$top/build}
out=${1:-$build/s3rdmafs-gpu-check.tar.gz}
limit=$((64 * 1048576))

for f in bin/s3rdmafs bin/gpu_check bin/gpu_bw lib/libs3rdmafs.so.0 \
         tests/gpu-sim/libcuda.so.1; do
  [ -e "$build/$f" ] || { echo "gpu-bundle: $build/$f is missing (build first)" >&2; exit 1; }
done
stage=$(mktemp -d "${TMPDIR:-/tmp}/s3r-gpu-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
b=$stage/s3rdmafs-gpu-check
mkdir -p "$b/bin" "$b/lib/gpu-sim" "$b/lib/deps" "$b/lib/deps-newer" \
  "$b/python/s3rdmafs" "$b/libs3rdmafs" "$b/scripts"

cp "$build"/bin/{s3rdmafs,gpu_check,gpu_bw} "$b/bin/"
cp -L "$build/lib/libs3rdmafs.so.0" "$b/lib/"
ln -s libs3rdmafs.so.0 "$b/lib/libs3rdmafs.so"
cp -L "$build/tests/gpu-sim/libcuda.so.1" "$b/lib/gpu-sim/"
# the shared libraries needed, but glibc's (the loader, libc, libm, ...);
# those needing a glibc newer than 2.34 (Debian 12's libexpat: 2.36) apart
glibc='^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libmvec)\.so'
newest() { objdump -T "$@" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
             sort -t. -k1,1 -k2,2n -k3,3n -u | tail -1; }
ldd "$b"/bin/* 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    [[ $name =~ $glibc ]] || [ "$name" = libs3rdmafs.so.0 ] && continue
    case $(newest "$path") in
      GLIBC_2.3[5-9]* | GLIBC_2.[4-9][0-9]*) cp -L "$path" "$b/lib/deps-newer/$name" ;;
      *) cp -L "$path" "$b/lib/deps/$name" ;;
    esac
  done
if [ -d "$build/python/s3rdmafs" ]; then # (its files: no __pycache__)
  find "$build/python/s3rdmafs" -maxdepth 1 -type f \( -name '*.py' -o \
    -name '*.so' \) -exec cp -L {} "$b/python/s3rdmafs/" \;
else
  cp "$top"/python/s3rdmafs/*.py "$b/python/s3rdmafs/"
fi
cp "$top"/python/s3py_*.c "$top"/python/s3py_i.h "$b/python/"
cp "$top/libs3rdmafs/s3rdmafs.h" "$b/libs3rdmafs/"
cp "$top"/scripts/{gpu-check.sh,gpu_check_s3.py,gpu_check_py.py} "$b/scripts/"
strip --strip-unneeded "$b"/bin/* "$b"/lib/*.so* "$b"/lib/deps*/* 2>/dev/null || true

# the newest glibc symbol version needed (lib/deps-newer/ aside)
need=$(newest "$b"/bin/* "$b"/lib/*.so* "$b"/lib/deps/* "$b"/python/s3rdmafs/*.so)
newer=$(ls "$b/lib/deps-newer")
mkdir -p "$(dirname "$out")"
tar -C "$stage" -czf "$out" s3rdmafs-gpu-check
size=$(stat -c %s "$out")
echo "gpu-bundle: $out: $((size / 1024)) KiB ($(ls "$b/lib/deps" | wc -l) libraries); needs ${need:-GLIBC_?} or newer${newer:+ (else found on the machine: $(echo $newer))}"
[ "$size" -le "$limit" ] || { echo "gpu-bundle: over 64 MiB" >&2; exit 1; }
