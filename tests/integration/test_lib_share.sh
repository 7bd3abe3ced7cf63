#!/usr/bin/env bash
# libs3rdmafs inside real applications (issue 36), on a real mount, with
# share_check.c doing the reading:
#   - fork: a process reads through its bounce buffer, then forks 4
#     children, each reading its own 48 MiB file with read_direct into
#     plain memory, 1 MiB at a time, byte for byte against a local copy
#     (before: the children shared the parent's bounce buffer, and read
#     each other's bytes);
#   - threads: 24 threads on one registered buffer, each reading its own
#     file (more files than a buffer held handles for): no EBADF, every
#     byte right;
#   - a FUSE file system that lies (liar_fs: calls itself s3rdmafs,
#     answers REGISTER without taking the buffer and READ with a MiB more
#     than asked): mounted by root, the count is not believed (EIO, no
#     byte past the caller's memory); mounted as another user (nobody),
#     it is never asked at all (EACCES: no buffer handed over), except by
#     nobody itself (its own mount: EIO again).
# The interleavings these cannot force (a fork during REGISTER, a handle
# given up under a running READ, a daemon's cap) are test_lib_direct's.
#
#   test_lib_share.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" share local local/fork local/threads
SC=$BIN/share_check
MiB=1048576
lpid='' npid=''
cleanup() {
  local rc=$?
  set +e
  for d in "$tmp/liar_root" "$tmp/liar_nobody"; do umount -l "$d" 2>/dev/null; done
  [ -n "$lpid" ] && { kill "$lpid"; wait "$lpid"; } 2>/dev/null
  [ -n "$npid" ] && { kill "$npid"; wait "$npid"; } 2>/dev/null
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
"$CLI" mb "$bucket"

# ---- share: forked children and threads sharing what the library set up ----
case_share() {
for i in 0 1 2 3; do
  gen "fork$i" $((48 * MiB)) >"$tmp/local/fork/f$i"
  "$CLI" --parallel 4 put "$tmp/local/fork/f$i" "$bucket/fork/f$i" >/dev/null
done
for i in $(seq 0 23); do
  gen "thr$i" $((3 * MiB + 4099 * i)) >"$tmp/local/threads/f$i"
  "$CLI" put "$tmp/local/threads/f$i" "$bucket/threads/f$i" >/dev/null
done

fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off
check "fork: 4 children, 48 MiB each, every byte right" \
  "$SC" fork "$mnt/fork" "$tmp/local/fork" 4
check "threads: 24 on one registered buffer, no EBADF, every byte right" \
  "$SC" threads "$mnt/threads" "$tmp/local/threads" 24
fs_umount "$mnt"
}
run_case share case_share

# ---- liar: a file system that lies ----
case_liar() {
chmod 755 "$tmp"
mkdir "$tmp/liar_root" "$tmp/liar_nobody"
"$BIN/liar_fs" "$tmp/liar_root" >"$tmp/liar_root.out" 2>&1 &
lpid=$!
check "liar_fs mounted by root" wait_for 10 0.1 grep -q ready "$tmp/liar_root.out"
check "root's liar: the count past the request not believed (EIO)" \
  "$SC" liar "$tmp/liar_root/f" 5
check "... it was asked (READ)" grep -q "ioctl READ" "$tmp/liar_root.out"

# another user's mount: nobody, with CAP_SYS_ADMIN only to mount without
# fusermount3 (whose allow_other needs user_allow_other in fuse.conf);
# the kernel records its uid as the mount's owner all the same
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+sys_admin \
  --ambient-caps=+sys_admin "$BIN/liar_fs" "$tmp/liar_nobody" \
  >"$tmp/liar_nobody.out" 2>&1 &
npid=$!
check "liar_fs mounted by nobody" wait_for 10 0.1 grep -q ready "$tmp/liar_nobody.out"
check "... its owner is nobody (user_id=$(id -u nobody))" \
  grep -q " $tmp/liar_nobody .*user_id=$(id -u nobody)," /proc/self/mountinfo
check "nobody's liar: no buffer handed over (EACCES)" \
  "$SC" liar "$tmp/liar_nobody/f" 13
check "... it was never asked to REGISTER" \
  bash -c "! grep -q REGISTER '$tmp/liar_nobody.out'"
# to nobody it is its own mount: trusted with a buffer, its count is not
check "nobody on its own liar: trusted, the count past the request not believed (EIO)" \
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$SC" liar "$tmp/liar_nobody/f" 5
check "... asked this time (REGISTER)" grep -q REGISTER "$tmp/liar_nobody.out"
}
run_case liar case_liar

summary
