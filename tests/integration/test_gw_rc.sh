#!/usr/bin/env bash
# s3rdma-gateway's RC connect step (POST /.s3rdma-rc/connect and
# /disconnect, elbencho's dialect) on a host without an RDMA device, in
# front of RGW: SigV4 required; malformed, missing or repeated token or
# PSN, a body, a query: 400; another method: 405 (Allow: POST); another
# path under /.s3rdma-rc/: 404; a well-formed connect: 501 (rc not
# served here); disconnect: 204; no x-amz-rdma-* header on any refusal;
# rc object tokens declined (reply 501); counted; and afterwards the
# gateway still serves plain S3 and cma tokens (gw_token_probe).
# Options: --rdma-dc-access-key (dc's DCT key, the device shared with rc)
# refuses a value that is not a 32-bit number, one line naming the flag,
# exit 2; the suite's gateway runs with a good one.
# The success path needs a device: tests/rdma-vm/ (soft-RoCE).
# Usage: test_gw_rc.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$here/../lib/test.sh" # and tests/lib/gw.sh: gw_start, gw_stop, ...
tmp=$(mktemp -d /tmp/s3r-gwrc.XXXXXX)
bucket=s3r-gwrc-$$-$((RANDOM % 10000))
trap gw_cleanup EXIT

# the gateway run by hand, for the option refusals: exit status and stderr
gw_refused() { # name, text the one line must hold, then gateway flags
  local name=$1 text=$2 rc=0; shift 2
  timeout 20 "$BIN/s3rdma-gateway" -f --listen 127.0.0.1:0 \
    --upstream "$S3R_ENDPOINT" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  check "$name: exit 2" eq exit "$rc" 2
  check "$name: one line" eq lines "$(wc -l <"$tmp/err")" 1
  check "$name: says '$text'" grep -qF -- "$text" "$tmp/err"
  sed 's/^/# /' "$tmp/err"
}
# ---- flags: a bad --rdma-dc-access-key: exit 2, one line ----
case_flags() {
for v in zz 0x1ffffffff '' 0x -1 4294967296 0x0x1 ' 1'; do
  gw_refused "--rdma-dc-access-key '$v'" "--rdma-dc-access-key: '$v'" \
    --rdma-dc-access-key "$v"
done
gw_refused "--rdma-dc-access-key without a value" \
  "--rdma-dc-access-key needs a value" --rdma-dc-access-key
}
run_case flags case_flags

gw_start "$tmp/gw" --log-level info --threads 4 --rdma-dc-access-key 0x12345678
check "--rdma-dc-access-key 0x12345678: started" grep -q "listening on" "$gw_log"

qp=01$(printf '%086d' 0)   # a QP token: transport RC, the rest 0 (88 hex)
sess=$(printf '%032x' 7)
rc_url=$GW_ENDPOINT/.s3rdma-rc

# rc METHOD PATH CURL-ARG...: the status, and the answer's headers in
# $tmp/h (lowercase names)
rc() {
  local m=$1 p=$2
  shift 2
  gw_curl -X "$m" -o /dev/null -D "$tmp/h.raw" -w '%{http_code}' "$@" \
    "$rc_url$p" || true
  tr -d '\r' <"$tmp/h.raw" | tr 'A-Z' 'a-z' >"$tmp/h"
}
no_rdma_headers() { ! grep -q '^x-amz-rdma-' "$tmp/h"; }

# ---- connect: /.s3rdma-rc/connect and /disconnect, well and badly formed ----
case_connect() {
check "well-formed connect, no device: 501" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: abcdef')" 501
check "  ... no x-amz-rdma-* headers" no_rdma_headers
check "  ... the reason logged" grep -q "rc connect refused 501: rc not served" "$gw_log"
check "token of 87 digits: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: ${qp%?}" -H 'x-amz-rdma-psn: 1')" 400
check "  ... no x-amz-rdma-* headers" no_rdma_headers
check "token with a trailing ':': 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp:" -H 'x-amz-rdma-psn: 1')" 400
check "token not hex: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: zz${qp#??}" -H 'x-amz-rdma-psn: 1')" 400
check "token naming DC (transport 0): 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: 00${qp#??}" -H 'x-amz-rdma-psn: 1')" 400
check "token missing: 400" eq status "$(rc POST /connect -H 'x-amz-rdma-psn: 1')" 400
check "PSN missing: 400" eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp")" 400
check "  ... the reason logged" grep -q "rc connect refused 400: x-amz-rdma-psn is missing" "$gw_log"
check "PSN 0: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 0')" 400
check "PSN of 7 digits: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1234567')" 400
check "PSN not hex: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: -1')" 400
check "token twice: 400 (SigV4 refuses the repeated name)" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1')" 400
check "a body: 400" \
  eq status "$(rc POST /connect -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1' --data-binary x -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')" 400
check "  ... no x-amz-rdma-* headers" no_rdma_headers
check "a query: 400" \
  eq status "$(rc POST '/connect?x=1' -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1')" 400
check "GET connect: 405" eq status "$(rc GET /connect)" 405
check "  ... Allow: POST" grep -q '^allow: post$' "$tmp/h"
check "PUT disconnect: 405" eq status "$(rc PUT /disconnect)" 405
check "DELETE connect: 405" eq status "$(rc DELETE /connect)" 405
check "another path under /.s3rdma-rc/: 404" eq status "$(rc POST /connectx)" 404
check "/.s3rdma-rc itself: 404" eq status "$(rc GET '')" 404
check "/.s3rdma-rc/connect/ (a trailing /): 404" eq status "$(rc POST /connect/)" 404
check "unsigned connect: 403" eq status "$(curl -s -o /dev/null -w '%{http_code}' \
  -X POST -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1' "$rc_url/connect")" 403
check "wrong key: 403" eq status "$(AWS_SECRET_ACCESS_KEY=wrong rc POST /connect \
  -H "x-amz-rdma-token: $qp" -H 'x-amz-rdma-psn: 1')" 403
check "disconnect of an unknown session: 204" \
  eq status "$(rc POST /disconnect -H "x-amz-rdma-session: $sess")" 204
check "  ... no x-amz-rdma-* headers" no_rdma_headers
check "disconnect without a session: 204" eq status "$(rc POST /disconnect)" 204
check "disconnect of a malformed session: 204" \
  eq status "$(rc POST /disconnect -H 'x-amz-rdma-session: ../x')" 204
check "disconnect with a body: 400" \
  eq status "$(rc POST /disconnect -H "x-amz-rdma-session: $sess" --data-binary x -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')" 400
}
run_case connect case_connect

# ---- tokens: rc object tokens without a device: declined, the bytes over
# ---- HTTP ----
rctok="rc:$sess:00007f0000001000:00001388:00001234"
case_tokens() {
check "create bucket" gw_curl -f -X PUT -o /dev/null "$GW_ENDPOINT/$bucket"
head -c 5000 /dev/urandom >"$tmp/obj"
check "plain PUT" gw_curl -f -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T "$tmp/obj" -o /dev/null "$GW_ENDPOINT/$bucket/obj"
st=$(gw_curl -o "$tmp/obj.rc" -D "$tmp/h.raw" -w '%{http_code}' \
  -H "x-amz-rdma-token: $rctok" "$GW_ENDPOINT/$bucket/obj" || true)
tr -d '\r' <"$tmp/h.raw" | tr 'A-Z' 'a-z' >"$tmp/h"
check "rc token GET, no device: 200 over HTTP" eq status "$st" 200
check "  ... x-amz-rdma-reply: 501" grep -q '^x-amz-rdma-reply: 501$' "$tmp/h"
check "  ... the bytes in the body" cmp -s "$tmp/obj" "$tmp/obj.rc"
check "rc token PUT, no device: declined, 200" eq status "$(gw_curl -X PUT \
  -o "$tmp/put.out" -D "$tmp/h.raw" -w '%{http_code}' \
  -H "x-amz-rdma-token: $rctok" "$GW_ENDPOINT/$bucket/rcput" || true)" 200
tr -d '\r' <"$tmp/h.raw" | tr 'A-Z' 'a-z' >"$tmp/h"
check "  ... x-amz-rdma-reply: 501, RDMANotSupported" \
  bash -c "grep -q '^x-amz-rdma-reply: 501\$' '$tmp/h' &&
           grep -q '<Code>RDMANotSupported</Code>' '$tmp/put.out'"
check "  ... not stored" eq status "$(gw_curl -o /dev/null -w '%{http_code}' \
  "$GW_ENDPOINT/$bucket/rcput" || true)" 404
check "no rc token in the log" bash -c "! grep -q '$rctok' '$gw_log'"
}
run_case tokens case_tokens

# ---- after: the gateway serves on: plain S3, and cma tokens ----
case_after() {
need_case tokens
check "plain GET afterwards" gw_curl -f -o "$tmp/obj.out" "$GW_ENDPOINT/$bucket/obj"
check "  ... round trip" cmp -s "$tmp/obj" "$tmp/obj.out"
set +e
S3R_ENDPOINT=$GW_ENDPOINT timeout 300 "$BIN/gw_token_probe" >"$tmp/probe.out" 2>&1
prc=$?
set -e
if [ "$prc" = 77 ]; then
  echo "# cma not available here: the cma check is skipped"
else
  check "cma tokens still served (gw_token_probe)" eq exit "$prc" 0
  [ "$prc" = 0 ] || tail -20 "$tmp/probe.out"
fi
}
run_case after case_after

# ---- stats: what connect and tokens did, counted ----
case_stats() {
need_case connect
need_case tokens
gw_stats >"$tmp/stats"
grep '^rc_' "$tmp/stats"
check "stats: connects refused counted" eq rc_connect_refused "$(gw_stat rc_connect_refused)" 14
check "stats: no connect accepted" eq rc_connects "$(gw_stat rc_connects)" 0
check "stats: disconnects counted" eq rc_disconnects "$(gw_stat rc_disconnects)" 3
check "stats: no session open" eq rc_sessions "$(gw_stat rc_sessions)" 0
check "stats: rc tokens declined" test "$(gw_stat declined)" -ge 2
check "no upstream errors" eq upstream_errors "$(gw_stat upstream_errors)" 0
gw_curl -s -o /dev/null -X DELETE "$GW_ENDPOINT/$bucket/obj" || true
gw_curl -s -o /dev/null -X DELETE "$GW_ENDPOINT/$bucket" || true
}
run_case stats case_stats

check "gateway stops cleanly" gw_stop
summary
