#!/usr/bin/env bash
# Descriptors taken only when they are what they claim (issue 28): a
# hostile caller hands the REGISTER ioctl, 1000 times, the descriptor of a
# file on a FUSE file system that never answers FLUSH (hang_fs), mounted
# where its /proc link reads "/memfd:..." (as a FUSE mount at /memfd:x in
# a user namespace would). The daemon knows a memfd by the kernel's answer
# (fdinfo's mnt_id: the internal shmem mount), so it takes none of them:
# its descriptors stay bounded, and the mount serves another user
# meanwhile. Before, each such REGISTER took the descriptor, and closing
# it waited for the FLUSH: 8 closer threads stuck, then every further one
# left open.
#
#   test_fs_fdtake.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fdtake
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
  echo "# needs root, the user nobody and setpriv"
  exit 77
fi
hang=/memfd:s3r-fdtake-$$ hpid='' fpid=''
cleanup() {
  local rc=$?
  set +e
  # the hanging FLUSHes end with hang_fs's connection
  [ -n "$hpid" ] && kill -KILL "$hpid" 2>/dev/null
  umount -l "$hang" 2>/dev/null
  [ -n "$fpid" ] && { kill -KILL "$fpid"; wait "$fpid"; } 2>/dev/null
  [ -n "$hpid" ] && wait "$hpid" 2>/dev/null
  rmdir "$hang" 2>/dev/null
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
chmod 755 "$tmp"

# ---- flood: 1000 REGISTERs of a file on a FUSE mount that hangs ----
case_flood() {
aws_ s3 mb "s3://$bucket" >/dev/null
echo "readable by all" >"$tmp/pub"
aws_ s3 cp "$tmp/pub" "s3://$bucket/pub" >/dev/null
fs_mount "$bucket" "$mnt" "$log" -o allow_other -o rdma.transport=off
pid=$FS_PID

mkdir "$hang"
"$BIN/hang_fs" "$hang" >"$tmp/hang.out" 2>&1 &
hpid=$!
check "hang_fs mounted" wait_for 10 0.1 grep -q ready "$tmp/hang.out"

fds0=$(ls "/proc/$pid/fd" | wc -l)
"$BIN/fd_flood" "$mnt/pub" "$hang/f" 1000 >"$tmp/flood.out" 2>&1 &
fpid=$!
check "the 1000 REGISTERs answered" wait_for 300 0.2 grep -q done "$tmp/flood.out"
sed 's/^/# /' "$tmp/flood.out"
fds1=$(ls "/proc/$pid/fd" | wc -l)
echo "# the daemon's descriptors: $fds0 before, $fds1 after the 1000 REGISTERs"
check "the file's /proc link reads /memfd:..." grep -q "^link /memfd:" "$tmp/flood.out"
check "none of them was accepted" grep -qx "ok 0" "$tmp/flood.out"
check "each refused as not a memfd (EINVAL)" grep -qx "EINVAL 1000" "$tmp/flood.out"
check "the daemon's descriptors bounded (at most 32 more: the closing bound)" \
  test "$fds1" -le $((fds0 + 32))
check_eq "the mount serves another user meanwhile" \
  "$(timeout 30 setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$mnt/pub")" \
  "readable by all"
check "the daemon still answers stat" bash -c "timeout 10 stat '$mnt/pub' >/dev/null"
}
run_case flood case_flood

summary
