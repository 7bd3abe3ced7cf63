# Helpers for the tests that run s3rdma-gateway (sourced): scripts/gateway.sh
# with the test's own state directory and a port the kernel picks (no race
# for a free port).
# Needs: $BIN (build/bin), RGW's S3R_ENDPOINT and keys in the environment.
# shellcheck shell=bash

GW_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/gateway.sh
GW_ENDPOINT='' gw_log=''

# gw_start DIR [gateway flags...]: start it with its pid, port and log in
# DIR; sets GW_ENDPOINT and gw_log (DIR/log).
gw_start() {
  export S3R_GW_DIR=$1 S3R_GATEWAY=$BIN/s3rdma-gateway
  shift
  gw_log=$S3R_GW_DIR/log
  "$GW_SH" start --port 0 -- "$@" || return 1
  GW_ENDPOINT=$("$GW_SH" env) && GW_ENDPOINT=${GW_ENDPOINT#S3R_GW_ENDPOINT=}
}

gw_stats() { "$GW_SH" stats; }
gw_stat() { gw_stats | awk -v k="$1" '$1 == k { print $2 }'; }

# gw_stop: SIGTERM, bounded wait; succeeds when it exited 0 and its log
# holds no sanitizer report (shown when there is one).
gw_stop() {
  local rc=0 re='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
  [ -n "${S3R_GW_DIR:-}" ] || return 0
  "$GW_SH" stop || rc=1
  if [ -n "$gw_log" ] && grep -qE "$re" "$gw_log" 2>/dev/null; then
    echo "# a sanitizer report in the gateway's log ($gw_log):"
    grep -E -A 40 "$re" "$gw_log" | head -n 60 | sed 's/^/#   /'
    rc=1
  fi
  return "$rc"
}
