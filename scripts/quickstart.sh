#!/usr/bin/env bash
# README command 1: install everything, build, start a local S3 server (Ceph
# RGW on 127.0.0.1) and put a demo bucket in it with a few files.
# (Mounting the bucket at ./mnt arrives with the FUSE daemon.)
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
$cli get demo/data/random-64m.bin "$tmp/back.bin"
cmp "$tmp/random-64m.bin" "$tmp/back.bin"

echo
echo "Bucket 'demo' on $S3R_ENDPOINT:"
$cli -r ls demo/
cat <<EOM

The local S3 server is running. Try:
  eval "\$(tests/servers/rgw.sh env)"
  build/bin/s3rdma-cli ls demo/
  build/bin/s3rdma-cli get demo/hello.txt -
Stop it with:
  tests/servers/rgw.sh stop
EOM
