#!/usr/bin/env bash
# tests/rdma-vm/rc_mount.sh BIN_DIR - the mount over rc, end to end: a
# bucket on the host's RGW (with_rgw.sh's environment), then the soft-RoCE
# guest (run.sh) running guest/rc_mount.sh against it: s3rdma-gateway
# serving rc on rxe0, a mount with rdma.transport=rc through it, files
# checked by md5, the gateway restarted and the mount reconnecting. The
# bucket is removed afterwards. Run from ctest as rdma.rc_mount.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$here/../lib/test.sh"
fs_test_setup "$1" rcmount
build=$(cd "$BIN/.." && pwd)
aws_ s3 mb "s3://$bucket" >/dev/null
S3R_RC_BUCKET=$bucket S3R_VM_TIMEOUT=${S3R_VM_TIMEOUT:-900} \
  "$here/run.sh" --build "$build" -- tests/rdma-vm/guest/rc_mount.sh
