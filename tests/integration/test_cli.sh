#!/usr/bin/env bash
# s3rdma-cli against RGW, checked with a second client (awscli):
# multipart put with parts in flight, parallel ranged get, ls, head, cp, rm.
set -euo pipefail
cli=$1
tmp=$(mktemp -d)
bucket=s3r-cli-$$-$RANDOM
aws_() { "${S3R_AWS:-/usr/bin/aws}" --endpoint-url "$S3R_ENDPOINT" "$@"; }
cleanup() {
  aws_ s3 rb "s3://$bucket" --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok - $name"
  else fail=$((fail + 1)); echo "not ok - $name"; fi
}

"$cli" mb "$bucket"
head -c $((37 * 1024 * 1024 + 4321)) /dev/urandom >"$tmp/src"
want=$(md5sum <"$tmp/src" | cut -d' ' -f1)

"$cli" --part-size 5M --parallel 4 put "$tmp/src" "$bucket/dir/big file+1"
got=$(aws_ s3 cp "s3://$bucket/dir/big file+1" - | md5sum | cut -d' ' -f1)
check "multipart put matches via awscli" test "$got" = "$want"
etag=$(aws_ s3api head-object --bucket "$bucket" --key "dir/big file+1" \
  --query ETag --output text)
etag=${etag//\"/}
check "multipart put made 8 parts (ETag $etag)" test "${etag##*-}" = 8

aws_ s3 cp "$tmp/src" "s3://$bucket/from-aws.bin" >/dev/null
"$cli" --part-size 1M --parallel 16 get "$bucket/from-aws.bin" "$tmp/out"
check "parallel get to file" test "$(md5sum <"$tmp/out" | cut -d' ' -f1)" = "$want"
got=$("$cli" --part-size 3M --parallel 5 get "$bucket/from-aws.bin" - | md5sum | cut -d' ' -f1)
check "parallel get to a pipe, in order" test "$got" = "$want"

printf 'small' >"$tmp/small"
"$cli" put "$tmp/small" "$bucket/small"
check "small put" test "$(aws_ s3 cp "s3://$bucket/small" -)" = small
check "head size" grep -qx 'size 5' <("$cli" head "$bucket/small")
"$cli" cp "$bucket/small" "$bucket/dir/copy"
check "ls shows prefix and objects" grep -q 'PRE dir/' <("$cli" ls "$bucket/")
check "ls -r lists the copy" grep -q ' dir/copy$' <("$cli" -r ls "$bucket/")
"$cli" rm "$bucket/small" "$bucket/dir/copy"
check "rm removed" test -z "$(aws_ s3 ls "s3://$bucket/small" || true)"
check "missing key fails" bash -c "! '$cli' head '$bucket/nope' 2>$tmp/err"
check "missing key says so" grep -q 'No such file' "$tmp/err"
check "bad secret fails with EACCES" bash -c \
  "! AWS_SECRET_ACCESS_KEY=wrong '$cli' ls 2>$tmp/err2 && grep -q 'Permission denied' $tmp/err2"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
