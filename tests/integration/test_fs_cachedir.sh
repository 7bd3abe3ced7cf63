#!/usr/bin/env bash
# A cache.dir no one else controls (issue 27), hostile: the mount runs as
# root; the other user is nobody (setpriv).
#
#   a) cache.dir owned by another user: refused, naming the directory, its
#      owner, its mode and the fix
#   b) a 0777 cache.dir (not sticky): refused
#   c) a cache.dir under a directory another user may write: refused
#   d) a shared cache.dir (sticky, writable by all, as /tmp): the mount
#      keeps its files in its own s3rdmafs-0, mode 0700
#   e) ... which another user made first: refused
#   f) a dead mount's staging file replaced by a symlink to a file of the
#      victim's: recovery never reads or writes through it (the victim's
#      bytes are not uploaded, the file not changed)
#   g) a dead mount's record replaced by one of another user's naming a
#      key of their choice: nothing uploaded to that key
#   h) a dead mount's staging file replaced by another user's (its record
#      ours): not uploaded
#
#   test_fs_cachedir.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" cachedir
if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null || [ "$(id -u)" -ne 0 ]; then
  echo "# needs root, the user nobody and setpriv"
  exit 77
fi
trap 'fs_abort_uploads; fs_cleanup' EXIT
chmod 755 "$tmp" # (nobody reaches what is below)

# s3rdmafs run by hand for the refusals: exit status, and what it said
refused() { # NAME TEXT CACHE_DIR: the mount refuses, saying TEXT
  local rc=0
  timeout 60 "$FS" "$bucket" "$mnt" -f -o cache.mlock=false,rdma.transport=off \
    -o "cache.dir=$3" >/dev/null 2>"$tmp/err" || rc=$?
  check "$1: refused (exit $rc, not stopped by the timeout)" test "$rc" -ne 0 -a "$rc" -ne 124
  check "$1: says so" grep -qF -- "$2" "$tmp/err"
  check "$1: not mounted" bash -c "! grep -qs ' $mnt ' /proc/mounts"
  sed 's/^/# /' "$tmp/err"
}
fault_proxy_start
opts=(-o "endpoint=$PROXY" -o s3.retry.max_attempts=2 -o s3.retry.budget_ms=2000
      -o write.retry_interval=3600 -o rdma.transport=off)
# a dead mount under CACHE whose upload of KEY (TEXT) failed: its staging
# file's path in $sf
dead_file() {
  fs_mount "$bucket" "$mnt" "$tmp/fs-$2.log" "${opts[@]}" -o "cache.dir=$1"
  admin "set?internal=1&classes=put" >/dev/null
  admin resume >/dev/null
  # (the close's EIO: python sees it, a shell redirection does not)
  if python3 -c 'import sys; f = open(sys.argv[1], "w"); f.write(sys.argv[2]); f.close()' \
      "$mnt/$2" "$3" 2>/dev/null; then
    echo "# $2: close() did not fail"
    return 1
  fi
  admin pause >/dev/null
  admin "set?internal=0&classes=" >/dev/null
  fs_kill "$mnt"
  fs_umount "$mnt"
  sf=$(grep -l "^key $(printf %s "$2" | od -An -tx1 | tr -d ' \n')$" \
    "$1"/mount-*/ino-*.rec)
  sf=${sf%%$'\n'*} sf=${sf%.rec} # (the first)
  [ -n "$sf" ] && [ -f "$sf" ]
}
# remount CACHE, its recovery waited for; unmounted again
recover() {
  fs_mount "$bucket" "$mnt" "$tmp/fs-$2.log" "${opts[@]}" -o "cache.dir=$1"
  wait_recovered "$tmp/fs-$2.log" || echo "# no recovery summary"
  fs_umount "$mnt"
}

aws_ s3 mb "s3://$bucket" >/dev/null

case_a() {
echo "# a) another user's cache.dir"
mkdir -m 700 "$tmp/theirs"
chown nobody "$tmp/theirs"
refused "a" "cache.dir $tmp/theirs: owned by uid $(id -u nobody) with mode 0700, another user's" "$tmp/theirs"
check "a: ... and names the fix" grep -qF "must belong to you (uid 0) or root and be writable by no one else" "$tmp/err"
check_eq "a: nothing made in it" "$(find "$tmp/theirs" -mindepth 1 | wc -l)" 0
}
run_case a case_a

case_b() {
echo "# b) a 0777 cache.dir"
mkdir "$tmp/open"
chmod 777 "$tmp/open"
refused "b" "cache.dir $tmp/open: owned by uid 0 with mode 0777, writable by others" "$tmp/open"
}
run_case b case_b

case_c() {
echo "# c) under a directory another user may write"
mkdir -m 755 "$tmp/evil"
chown nobody "$tmp/evil"
refused "c" "above it: a directory another user controls" "$tmp/evil/cache"
}
run_case c case_c

case_d() {
echo "# d) a shared cache.dir (sticky, writable by all)"
mkdir "$tmp/shared"
chmod 1777 "$tmp/shared"
fs_mount "$bucket" "$mnt" "$log" -o "cache.dir=$tmp/shared" -o rdma.transport=off
check_eq "d: its own directory, mode 0700, root's" \
  "$(stat -c '%a %u' "$tmp/shared/s3rdmafs-0" 2>/dev/null)" "700 0"
check "d: the mount's directory is inside it" \
  bash -c "ls -d '$tmp/shared/s3rdmafs-0'/mount-* >/dev/null"
check "d: nothing else in the shared directory" \
  test "$(ls -A "$tmp/shared")" = s3rdmafs-0
echo d >"$mnt/d.txt"
check_eq "d: the mount writes" "$(key_md5 d.txt)" "$(printf 'd\n' | md5sum | cut -d' ' -f1)"
fs_umount "$mnt"
}
run_case d case_d

case_e() {
echo "# e) the shared directory's s3rdmafs-0 made by another user first"
mkdir "$tmp/shared2"
chmod 1777 "$tmp/shared2"
setpriv --reuid=nobody --regid=nogroup --clear-groups mkdir -m 777 "$tmp/shared2/s3rdmafs-0"
refused "e" "made by someone else first" "$tmp/shared2"
check_eq "e: nothing written in theirs" "$(find "$tmp/shared2/s3rdmafs-0" -mindepth 1 | wc -l)" 0
}
run_case e case_e

case_f() {
echo "# f) a dead mount's staging file replaced by a symlink to the victim's file"
printf 'VICTIM SECRET\n' >"$tmp/victim"
chmod 600 "$tmp/victim"
check "f: a dead mount left f.txt" dead_file "$tmp/cf" f.txt "ours"
rm -f "$sf"
ln -s "$tmp/victim" "$sf"
recover "$tmp/cf" f2
check "f: the victim's bytes are not uploaded" key_absent f.txt
check_eq "f: the victim's file unchanged" "$(cat "$tmp/victim")" "VICTIM SECRET"
check "f: kept aside, refused" grep -q "f.txt.*staging file: .*symbolic links" "$tmp/cf/unsaved/MANIFEST"
grep -s "f.txt" "$tmp/cf/unsaved/MANIFEST" "$tmp/fs-f2.log" | sed 's/^/# /' || true
}
run_case f case_f

case_g() {
echo "# g) a dead mount's record replaced by another user's, naming their key"
check "g: a dead mount left g.txt" dead_file "$tmp/cg" g.txt "their bytes"
sed "s/^key .*/key $(printf attacker-key | od -An -tx1 | tr -d ' \n')/" "$sf.rec" >"$tmp/rec"
rm -f "$sf.rec"
cp "$tmp/rec" "$sf.rec"
chown nobody "$sf.rec"
recover "$tmp/cg" g2
check "g: nothing uploaded to their key" key_absent attacker-key
check "g: nor to ours" key_absent g.txt
}
run_case g case_g

case_h() {
echo "# h) a dead mount's staging file replaced by another user's"
check "h: a dead mount left h.txt" dead_file "$tmp/ch" h.txt "ours"
rm -f "$sf"
printf 'planted by another user\n' >"$sf"
chown nobody "$sf"
recover "$tmp/ch" h2
check "h: the planted file is not uploaded" key_absent h.txt
check "h: kept aside, refused" grep -q "h.txt.*not a plain file of this user's" "$tmp/ch/unsaved/MANIFEST"
}
run_case h case_h

summary
