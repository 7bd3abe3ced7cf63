#!/usr/bin/env bash
# Run a command with the local RGW's endpoint and keys in the environment.
# "--stop": the fixture cleanup; stops RGW unless S3R_RGW_KEEP=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rgw=$here/../servers/rgw.sh
if [ "${1:-}" = "--stop" ]; then
  [ "${S3R_RGW_KEEP:-0}" = 1 ] && exit 0
  exec "$rgw" stop
fi
eval "$("$rgw" env)"
exec "$@"
