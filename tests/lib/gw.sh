# shellcheck shell=bash
# Helpers for the tests that run s3rdma-gateway (sourced; tests/lib/test.sh
# does): scripts/gateway.sh with the test's own state directory and a
# free_port (tests/lib/relay.sh: below the ephemeral range, so that a
# gateway killed can start again on it); awscli and curl as clients of the
# gateway.
# Needs: $BIN (build/bin), RGW's S3R_ENDPOINT and keys in the environment;
# gw_aws: tests/lib/aws.sh sourced (test.sh does).
# (variables set for, and read from, the sourcing script)
# shellcheck disable=SC2154

GW_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/gateway.sh
# (free_port: sourced alone too, by tests/integration/with_gateway.sh)
# shellcheck source=tests/lib/relay.sh
declare -F free_port >/dev/null || . "$(dirname "${BASH_SOURCE[0]}")/relay.sh"
GW_ENDPOINT='' gw_log=''

# gw_start DIR [gateway flags...]: start it with its pid, port and log in
# DIR; sets GW_ENDPOINT and gw_log (DIR/log).
gw_start() {
  export S3R_GW_DIR=$1 S3R_GATEWAY=$BIN/s3rdma-gateway
  shift
  gw_log=$S3R_GW_DIR/log
  "$GW_SH" start --port "$(free_port)" -- "$@" || return 1
  GW_ENDPOINT=$("$GW_SH" env) && GW_ENDPOINT=${GW_ENDPOINT#S3R_GW_ENDPOINT=}
}

# gw_aws ARG...: awscli as a client of the gateway (bounded: 120 s), with
# the keys and config of the caller's environment (AWS_SECRET_ACCESS_KEY,
# AWS_CONFIG_FILE: set them in front of the call), no credentials file
gw_aws() {
  AWS_SHARED_CREDENTIALS_FILE=/dev/null timeout 120 "${AWS[@]}" \
    --endpoint-url "$GW_ENDPOINT" "$@"
}
# gw_curl ARG...: curl with SigV4 (curl's own signer) as a client of the
# gateway, signing with $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY
gw_curl() {
  timeout 60 curl -s --aws-sigv4 "aws:amz:${AWS_DEFAULT_REGION:-us-east-1}:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
}

gw_stats() { "$GW_SH" stats; }
gw_stat() { gw_stats | awk -v k="$1" '$1 == k { print $2 }'; }

# gw_log_on_failure RC [LINES]: after a failure (RC, or a failed check in
# $fail) the last LINES (60) of the gateway's log
gw_log_on_failure() {
  if [ "$1" -ne 0 ] || [ "${fail:-0}" -ne 0 ]; then
    echo "--- the gateway's log (exit $1)"; tail -n "${2:-60}" "$gw_log" 2>/dev/null
  fi
}
# gw_cleanup: the EXIT trap of a gateway suite using $tmp (and $bucket, when
# set): the log after a failure, the bucket dropped, the gateway stopped,
# $tmp removed
gw_cleanup() {
  local rc=$?
  set +e
  gw_log_on_failure "$rc"
  [ -z "${bucket:-}" ] || aws_ s3 rb "s3://$bucket" --force >/dev/null 2>&1
  gw_stop
  rm -rf "$tmp"
}

# gw_fs_cleanup: the EXIT trap of a suite with a gateway and mounts: the
# gateway's log after a failure, the gateway stopped, then fs_cleanup (with
# the suite's exit status)
gw_fs_cleanup() {
  local rc=$?
  set +e
  gw_log_on_failure "$rc" 40
  gw_stop
  (exit "$rc")
  fs_cleanup
}

# gw_stop: SIGTERM, bounded wait; succeeds when it exited 0 and its log
# holds no sanitizer report (shown when there is one).
gw_stop() {
  local rc=0 re='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
  [ -n "${S3R_GW_DIR:-}" ] || return 0
  "$GW_SH" stop || rc=1
  if [ -n "$gw_log" ] && grep -qE "$re" "$gw_log" 2>/dev/null; then
    echo "# a sanitizer report in the gateway's log ($gw_log):"
    grep -E -A 40 -m 1 "$re" "$gw_log" | sed 's/^/#   /'
    rc=1
  fi
  return "$rc"
}
