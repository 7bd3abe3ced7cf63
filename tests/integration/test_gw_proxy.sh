#!/usr/bin/env bash
# s3rdma-gateway as a plain S3 proxy in front of RGW: awscli and curl
# through it (buckets, small and 40 MiB objects, multipart, ranges, list,
# head, copy, delete, bad keys), its stats, a daemonised start that says
# whether it listens, a clean stop.
# Usage: test_gw_proxy.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$here/../lib/test.sh" # and tests/lib/gw.sh: gw_start, gw_stop, ...
tmp=$(mktemp -d /tmp/s3r-gwproxy.XXXXXX)
bucket=s3r-gwproxy-$$-$((RANDOM % 10000))
trap gw_cleanup EXIT

# awscli through the gateway; a small multipart threshold for "s3 cp"
cat >"$tmp/aws.cfg" <<CFG
[default]
s3 =
  multipart_threshold = 5MB
  multipart_chunksize = 5MB
CFG
gaws() { AWS_CONFIG_FILE=$tmp/aws.cfg gw_aws "$@"; }
same() { [ "$(md5 "$1")" = "$(md5 "$2")" ]; }
listed() { # the keys in the bucket through the gateway, on one line
  gaws s3api list-objects-v2 --bucket "$bucket" --query 'Contents[].Key' \
    --output text | tr '\t' '\n' | sort | tr '\n' ' '
}

gw_start "$tmp/gw" --log-level info --threads 4 --max-conns 32

# ---- objects: buckets, objects, multipart, ranges, list, head, copy,
# ---- delete ----
case_objects() {
head -c 1000 /dev/urandom >"$tmp/small"
head -c $((40 << 20)) /dev/urandom >"$tmp/big"
head -c $((20 << 20)) /dev/urandom >"$tmp/mp"

check "create bucket" gaws s3 mb "s3://$bucket"
check "list buckets" eval 'grep -q " $bucket\$" <<<"$(gaws s3 ls)"'
check "put small" gaws s3 cp "$tmp/small" "s3://$bucket/small" --quiet
check "get small" gaws s3 cp "s3://$bucket/small" "$tmp/small.out" --quiet
check "small round trip" same "$tmp/small" "$tmp/small.out"
check "put 40 MiB (one PUT)" gaws s3api put-object --bucket "$bucket" --key big --body "$tmp/big" --output text
check "get 40 MiB" gaws s3api get-object --bucket "$bucket" --key big "$tmp/big.out" --output text
check "40 MiB round trip" same "$tmp/big" "$tmp/big.out"
check "multipart upload of 20 MiB" gaws s3 cp "$tmp/mp" "s3://$bucket/mp" --quiet
etag=$(gaws s3api head-object --bucket "$bucket" --key mp --query ETag --output text)
check "it was multipart (ETag $etag)" bash -c "[[ '$etag' == *-4* ]]"
check "get the multipart object" gaws s3 cp "s3://$bucket/mp" "$tmp/mp.out" --quiet
check "multipart round trip" same "$tmp/mp" "$tmp/mp.out"

gaws s3api get-object --bucket "$bucket" --key big --range bytes=1000-5095 "$tmp/range.out" --output text >/dev/null
dd if="$tmp/big" of="$tmp/range.want" bs=1 skip=1000 count=4096 status=none
check "ranged get" same "$tmp/range.want" "$tmp/range.out"
check "list objects" eq keys "$(listed)" "big mp small "
len=$(gaws s3api head-object --bucket "$bucket" --key big --query ContentLength --output text)
check "head object: ContentLength" test "$len" = $((40 << 20))
hl=$(gw_curl -I "$GW_ENDPOINT/$bucket/big" | tr -d '\r' | awk -F': ' 'tolower($1) == "content-length" { print $2 }')
check "HEAD keeps Content-Length (curl)" test "$hl" = $((40 << 20))
check "curl GET (SigV4)" gw_curl -f -o "$tmp/small.curl" "$GW_ENDPOINT/$bucket/small"
check "curl GET round trip" same "$tmp/small" "$tmp/small.curl"
check "copy object" gaws s3 cp "s3://$bucket/small" "s3://$bucket/copy" --quiet
check "get the copy" gaws s3 cp "s3://$bucket/copy" "$tmp/copy.out" --quiet
check "copy round trip" same "$tmp/small" "$tmp/copy.out"
check "delete object" gaws s3 rm "s3://$bucket/copy" --quiet
check "deleted object is gone" \
  eval '! gaws s3api head-object --bucket "$bucket" --key copy >/dev/null 2>&1'
check "delete objects (POST ?delete)" gaws s3api delete-objects --bucket "$bucket" --delete 'Objects=[{Key=mp}]' --output text
check "missing key: 404 through the gateway" test "$(gw_curl -o /dev/null -w '%{http_code}' "$GW_ENDPOINT/$bucket/nope")" = 404
}
run_case objects case_objects

# ---- refused: requests refused ----
case_refused() {
need_case objects
check "wrong secret key: refused" eval 'grep -q SignatureDoesNotMatch <<<"$(
  AWS_SECRET_ACCESS_KEY=wrong AWS_CONFIG_FILE=/dev/null gw_aws s3 ls "s3://$bucket" 2>&1)"'
check "wrong secret key: 403 (curl)" test "$(AWS_SECRET_ACCESS_KEY=wrong gw_curl -o /dev/null -w '%{http_code}' "$GW_ENDPOINT/$bucket/small")" = 403
check "anonymous: 403" test "$(curl -s -o /dev/null -w '%{http_code}' "$GW_ENDPOINT/$bucket/small")" = 403
}
run_case refused case_refused

# ---- stats: what the two cases above moved and refused ----
case_stats() {
need_case refused
gw_stats >"$tmp/stats"
cat "$tmp/stats"
check "stats: bytes in >= 60 MiB" test "$(gw_stat http_bytes_in)" -ge $((60 << 20))
check "stats: bytes out >= 60 MiB" test "$(gw_stat http_bytes_out)" -ge $((60 << 20))
check "stats: auth failures counted" test "$(gw_stat auth_failures)" -ge 3
check "no upstream errors" test "$(gw_stat upstream_errors)" = 0

check "empty the bucket" gaws s3 rb "s3://$bucket" --force
}
run_case stats case_stats

# ---- daemon: daemonised (no -f): the starting process stays until the
# ---- daemon listens, exits 0 then, and 1 when it cannot listen (here: the
# ---- port is taken) ----
case_daemon() {
daemon_gw() { # LISTEN: start a daemonised gateway; its exit status
  local drc=0
  timeout 30 "$BIN/s3rdma-gateway" --listen "$1" --upstream "$S3R_ENDPOINT" \
    --pidfile "$tmp/d.pid" 2>"$tmp/d.err" || drc=$?
  echo "$drc"
}
check "daemonised on a taken port: the starting process exits 1" \
  test "$(daemon_gw "127.0.0.1:${GW_ENDPOINT##*:}")" = 1
check "  ... saying so" grep -q "failed to start" "$tmp/d.err"
check "daemonised on a free port: exits 0" test "$(daemon_gw 127.0.0.1:0)" = 0
dpid=$(cat "$tmp/d.pid" 2>/dev/null || echo 0)
check "  ... the daemon runs (its pid file written before)" kill -0 "$dpid"
kill -TERM "$dpid" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
check "  ... and stops on SIGTERM" bash -c "! kill -0 $dpid 2>/dev/null"
}
run_case daemon case_daemon

check "gateway stops cleanly" gw_stop
check "stats printed at exit" grep -q "http_bytes_out" "$gw_log"
summary
