#!/usr/bin/env bash
# s3rdma-gateway's token paths over cma (gw_token_probe) in front of RGW.
# Usage: test_gw_token.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/fs_lib.sh
. "$here/fs_lib.sh"
# shellcheck source=tests/integration/gw_lib.sh
. "$here/gw_lib.sh"

tmp=$(mktemp -d /tmp/s3r-gwtok.XXXXXX)
cleanup() {
  local rc=$?
  set +e
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- the gateway's log (exit $rc)"; tail -n 60 "$tmp/gw.log"
  fi
  gw_stop
  rm -rf "$tmp"
}
trap cleanup EXIT

gw_start "$tmp/gw.log" --log-level info --chunk-size 262144

set +e
S3R_ENDPOINT=$GW_ENDPOINT timeout 300 "$BIN/gw_token_probe" | tee "$tmp/probe.out"
prc=${PIPESTATUS[0]}
set -e
if [ "$prc" = 77 ]; then echo "skip: cma not available"; exit 77; fi
check "gw_token_probe passed" test "$prc" = 0
check "stats: token GETs counted" test "$(gw_stat token_gets)" -ge 3
check "stats: token PUTs counted" test "$(gw_stat token_puts)" -ge 2
check "stats: rdma bytes counted" test "$(gw_stat rdma_bytes_get)" -gt 3000000
check "stats: refusals counted" test "$(gw_stat refused)" -ge 5
check "refusals logged with kind and reason" grep -q "token cma GET .* refused: " "$tmp/gw.log"
check "no token in the log" bash -c "! grep -q 's3r1:cma:' '$tmp/gw.log'"
check "gateway stops cleanly" gw_stop
check "stats printed at exit" grep -q "rdma_bytes_put" "$tmp/gw.log"
summary
