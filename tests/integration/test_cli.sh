#!/usr/bin/env bash
# s3rdma-cli against RGW, checked with a second client (awscli):
# multipart put with parts in flight, parallel ranged get, ls, head, cp, rm,
# listing and aborting multipart uploads. And that second client itself,
# the warm awscli of tests/lib/aws.sh: in use, and a call's environment,
# stdin, stdout and exit status those of aws run directly.
set -euo pipefail
cli=$1
BIN=$(cd "$(dirname "$cli")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh" # aws_, check, summary
tmp=$(mktemp -d)
bucket=s3r-cli-$$-$RANDOM
cleanup() {
  "$cli" uploads "$bucket" 2>/dev/null | while IFS=$'\t' read -r k u _; do
    "$cli" abort "$bucket" "$k" "$u" || true
  done
  aws_ s3 rb "s3://$bucket" --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"$cli" mb "$bucket"

# ---- awscli: the warm awscli (tests/lib/aws.sh) ----
case_awscli() {
check "awscli runs warm (tests/lib/aws.sh, awsd.py)" test -n "${S3R_AWSD:-}"
check "warm awscli: stdin in, stdout out" eval \
  'printf "in and out" | aws_ s3 cp - "s3://$bucket/warm" &&
   test "$(aws_ s3 cp "s3://$bucket/warm" -)" = "in and out"'
cold() { "${S3R_AWS:-/usr/bin/aws}" --endpoint-url "$S3R_ENDPOINT" "$@"; }
st() { "$@" >/dev/null 2>&1 && echo 0 || echo $?; }
check "warm awscli: a failed call's status is aws's" test \
  "$(st aws_ s3api head-object --bucket "$bucket" --key nope)" = \
  "$(st cold s3api head-object --bucket "$bucket" --key nope)"
check "warm awscli: the call's environment (a wrong key fails)" test \
  "$(AWS_SECRET_ACCESS_KEY=wrong st aws_ s3 ls "s3://$bucket")" != 0
aws_ s3 rm --quiet "s3://$bucket/warm"
}
run_case awscli case_awscli

# ---- transfer: multipart put, parallel ranged get ----
case_transfer() {
head -c $((37 * 1024 * 1024 + 4321)) /dev/urandom >"$tmp/src"
want=$(md5 "$tmp/src")

"$cli" --part-size 5M --parallel 4 put "$tmp/src" "$bucket/dir/big file+1"
got=$(key_md5 "dir/big file+1")
check "multipart put matches via awscli" test "$got" = "$want"
etag=$(aws_ s3api head-object --bucket "$bucket" --key "dir/big file+1" \
  --query ETag --output text)
etag=${etag//\"/}
check "multipart put made 8 parts (ETag $etag)" test "${etag##*-}" = 8

aws_ s3 cp "$tmp/src" "s3://$bucket/from-aws.bin" >/dev/null
"$cli" --part-size 1M --parallel 16 get "$bucket/from-aws.bin" "$tmp/out"
check "parallel get to file" test "$(md5 "$tmp/out")" = "$want"
got=$("$cli" --part-size 3M --parallel 5 get "$bucket/from-aws.bin" - | md5sum | cut -d' ' -f1)
check "parallel get to a pipe, in order" test "$got" = "$want"
}
run_case transfer case_transfer

# ---- objects: put, head, cp, ls, rm, errors ----
case_objects() {
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
}
run_case objects case_objects

# ---- uploads: multipart uploads in progress, made by awscli: list (all,
# ---- by prefix), abort ----
case_uploads() {
mpu_() { aws_ s3api create-multipart-upload --bucket "$bucket" --key "$1" \
  --query UploadId --output text; }
id1=$(mpu_ "mpu/one")
id2=$(mpu_ "mpu/two words+é")
id3=$(mpu_ "zzz/other")
"$cli" uploads "$bucket" >"$tmp/ups"
check "uploads lists three" test "$(wc -l <"$tmp/ups")" = 3
check "uploads: key, id, time" grep -qxP \
  "mpu/two words\+é\t\Q$id2\E\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ" "$tmp/ups"
check "uploads by prefix" test "$("$cli" uploads "$bucket" mpu/ | cut -f2 | sort)" = \
  "$(printf '%s\n' "$id1" "$id2" | sort)"
check "uploads, no match" test -z "$("$cli" uploads "$bucket" nope/)"
"$cli" abort "$bucket" "mpu/one" "$id1"
left=$(aws_ s3api list-multipart-uploads --bucket "$bucket" \
  --query 'Uploads[].UploadId' --output text)
check "abort removed one upload (awscli agrees)" \
  test "$(tr '\t' '\n' <<<"$left" | sort)" = "$(printf '%s\n' "$id2" "$id3" | sort)"
check "abort of an unknown upload fails" bash -c \
  "! '$cli' abort '$bucket' mpu/one '$id1' 2>$tmp/err3 && grep -q 'No such file' $tmp/err3"
"$cli" abort "$bucket" "mpu/two words+é" "$id2"
"$cli" abort "$bucket" "zzz/other" "$id3"
check "no uploads left" test -z "$("$cli" uploads "$bucket")"
check "uploads of a missing bucket fails" bash -c \
  "! '$cli' uploads s3r-no-such-bucket-x 2>/dev/null"
}
run_case uploads case_uploads

summary
