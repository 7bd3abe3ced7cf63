#!/usr/bin/env bash
# s3rdma-gateway's token paths over cma (gw_token_probe) in front of RGW:
# served, tampered and refused, declined, a deadline (x-amz-rdma-expires)
# outside the signature refused.
# Usage: test_gw_token.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$here/../lib/test.sh" # and tests/lib/gw.sh: gw_start, gw_stop, ...
tmp=$(mktemp -d /tmp/s3r-gwtok.XXXXXX)
trap gw_cleanup EXIT

# ---- probe: gw_token_probe's refusals and transfers; another user's
# ---- tokens; the counters and the log ----
case_probe() {
gw_start "$tmp/gw" --log-level info --chunk-size 262144
set +e
S3R_ENDPOINT=$GW_ENDPOINT timeout 300 "$BIN/gw_token_probe" | tee "$tmp/probe.out"
prc=${PIPESTATUS[0]}
set -e
if [ "$prc" = 77 ]; then echo "skip: cma not available"; exit 77; fi
check "gw_token_probe passed" test "$prc" = 0
# a client of another user may not name a root process's memory, even with
# that process's own valid tokens (the peer's uid comes from its socket)
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  chmod 755 "$tmp"
  coproc victim { exec "$BIN/gw_token_probe" --victim "$tmp/victim.tok"; }
  for _ in $(seq 1 100); do [ -s "$tmp/victim.tok" ] && break; sleep 0.1; done
  chmod 644 "$tmp/victim.tok" 2>/dev/null || true
  check "another user's tokens for a root process: refused" timeout 120 \
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env S3R_ENDPOINT="$GW_ENDPOINT" "$BIN/gw_token_probe" --attack "$tmp/victim.tok"
  exec {victim[1]}>&-
  vrc=0
  wait "$victim_PID" || vrc=$?
  check "  ... the victim's memory untouched" test "$vrc" = 0
else
  echo "# no user nobody or no setpriv: the other-user check is skipped"
fi
check "stats: token GETs counted" test "$(gw_stat token_gets)" -ge 3
check "stats: token PUTs counted" test "$(gw_stat token_puts)" -ge 2
check "stats: rdma bytes counted" test "$(gw_stat rdma_bytes_get)" -gt 3000000
check "stats: refusals counted" test "$(gw_stat refused)" -ge 5
check "refusals logged with kind and reason" grep -q "token cma GET .* refused: " "$gw_log"
check "no token in the log" bash -c "! grep -q 's3r1:cma:' '$gw_log'"
check "gateway stops cleanly" gw_stop
check "stats printed at exit" grep -q "rdma_bytes_put" "$gw_log"
}
run_case probe case_probe

# ---- slow ----
# A slow server: every token waits 3 s at the gateway before a byte moves,
# while the client's low-speed window is 1 s. The client's token requests
# must not be cut by it (one transfer each, never two), a client that gives
# up or cancels must have its memory left alone and its PUT not stored
# later, and a token's deadline (x-amz-rdma-expires) must hold.
case_slow() {
gw_start "$tmp/gw2" --log-level info --test-token-delay 3000
set +e
S3R_ENDPOINT=$GW_ENDPOINT timeout 300 "$BIN/gw_token_probe" --slow | tee "$tmp/slow.out"
prc=${PIPESTATUS[0]}
set -e
check "gw_token_probe --slow passed" test "$prc" = 0
check "slow: one token GET and one token PUT served, no more" \
  test "$(gw_stat token_gets) $(gw_stat token_puts)" = "1 1"
check "slow: the GET's bytes moved once" test "$(gw_stat rdma_bytes_get)" = 300000
check "slow: clients gone noticed" test "$(gw_stat clients_gone)" -ge 3
check "slow: deadlines enforced" test "$(gw_stat token_expired)" -ge 2
check "slow: gateway stops cleanly" gw_stop
}
run_case slow case_slow

summary
