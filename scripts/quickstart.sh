#!/usr/bin/env bash
# README command 1: install everything, build, start a local S3 server (Ceph
# RGW on 127.0.0.1), put a demo bucket in it with a few files, and mount the
# bucket at ./mnt with s3rdmafs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
tests/servers/rgw.sh start
eval "$(tests/servers/rgw.sh env)"
cli=build/bin/s3rdma-cli

$cli mb demo 2>/dev/null || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "hello from s3rdmafs" >"$tmp/hello.txt"
head -c $((64 * 1024 * 1024)) /dev/urandom >"$tmp/random-64m.bin"
$cli put "$tmp/hello.txt" demo/hello.txt
$cli put "$tmp/random-64m.bin" demo/data/random-64m.bin
$cli --parallel 16 fill demo/data/small- 100 1024

mkdir -p mnt
if mountpoint -q mnt; then fusermount3 -u mnt; fi
build/bin/s3rdmafs demo mnt
cmp "$tmp/random-64m.bin" mnt/data/random-64m.bin

echo
echo "Bucket 'demo' on $S3R_ENDPOINT is mounted at ./mnt:"
ls -l mnt mnt/data | head -12
cat <<EOM

Try:
  cat mnt/hello.txt
  ls -l mnt/data | wc -l
  build/bin/s3rdmafs stats mnt        # requests, bytes, cache hits, readahead
Unmount and stop the server with:
  fusermount3 -u mnt
  tests/servers/rgw.sh stop
EOM
