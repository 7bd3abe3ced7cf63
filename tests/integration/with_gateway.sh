#!/usr/bin/env bash
# Run a filesystem test suite with its mounts going through s3rdma-gateway
# (in front of the local RGW) with rdma.transport=cma; awscli, the CLI and
# s3fs in the suite still talk to RGW directly (tests/lib/mount.sh's fs_mount reads
# S3R_FS_ENDPOINT and S3R_FS_OPTS). Afterwards the gateway's counters must
# show file bytes moved by cma, in both directions when the suite writes,
# and no token refused, failed midway or past its deadline.
#
#   with_gateway.sh SUITE BUILD_BIN_DIR      (under with_rgw.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=$1 bin=$(cd "$2" && pwd)
BIN=$bin
# shellcheck source=tests/lib/gw.sh
. "$here/../lib/gw.sh"
tmp=$(mktemp -d /tmp/s3r-gw.XXXXXX)
trap 'gw_stop; rm -rf "$tmp"' EXIT
gw_start "$tmp/gw"
export S3R_FS_ENDPOINT=$GW_ENDPOINT S3R_FS_OPTS=rdma.transport=cma

rc=0
"$suite" "$bin" || rc=$?

stats=$(gw_stats) || { echo "not ok - the gateway answers its stats"; exit 1; }
echo "--- the gateway's counters after the suite"
echo "$stats"
val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$stats"; }
gate=0
expect() { # name, then a condition for [ ]
  local name=$1; shift
  if [ "$@" ]; then echo "ok - gateway: $name"; else echo "not ok - gateway: $name"; gate=1; fi
}
expect "file bytes read by cma" "$(val rdma_bytes_get)" -gt 0
case $(basename "$suite") in
  *write* | *tools*) expect "file bytes written by cma" "$(val rdma_bytes_put)" -gt 0 ;;
esac
expect "no token refused" "$(val refused)" -eq 0
expect "no token transfer failed" "$(val token_failures)" -eq 0
expect "no token outlived its deadline" "$(val token_expired)" -eq 0
expect "no token declined" "$(val declined)" -eq 0
[ "$gate" -eq 0 ] || rc=1
gw_stop || { echo "not ok - gateway: exits 0, no sanitizer report"; rc=1; }
exit "$rc"
