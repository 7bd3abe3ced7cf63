#!/usr/bin/env bash
# POSIX details a careful program notices (issue 34), posix_check.py
# doing the calls on a real mount:
#   - names too long: a component over 255 bytes, or a key over S3's
#     1,024 bytes, gets ENAMETOOLONG from create, open, mkdir, mkfifo,
#     mknod, symlink, rename, truncate, chmod, chown and stat, and nothing
#     is sent to the server for them (counted); a key of exactly 1,024
#     bytes is made;
#   - an open file unlinked, or renamed over: fstat says nlink 0 (after a
#     chmod of it too), its size and bytes stay;
#   - a directory's link count: 2 and its subdirectories (mkdir, rmdir,
#     a subdirectory renamed between parents; a file does not count); a
#     directory made here on a stale listing's word still finds what
#     another client made in it;
#   - a directory's mtime and ctime move when a name in it is made
#     (file, directory, fifo, symlink), removed or renamed (both parents);
#   - device nodes (block, character) keep their type and numbers, stored
#     as s3fs keeps the type (x-amz-meta-mode) and in x-amz-meta-rdev,
#     shown so by a new mount;
#   - link(2): EOPNOTSUPP.
#
#   test_fs_posix.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsposix

"$CLI" mb "$bucket"
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
out=$(python3 "$here/posix_check.py" "$mnt" 2>&1) || true
echo "$out"
check "every POSIX detail holds" bash -c "! grep -q '^not ok' <<<\"\$1\"" _ "$out"
# the device nodes as stored (x-amz-meta-mode with the type, -rdev) and
# as a new mount shows them
check "a block device stored with its type and number" \
  eq meta "$("$CLI" head "$bucket/posix/dev-block" | grep -E '^meta (mode|rdev)=' | tr '\n' ' ')" \
  "meta mode=$((0060640)) meta rdev=$((8 * 256 + 3)) "
# a directory made here after a stale "no such name" (a listing of its
# parent, kept cache.dir_ttl): what another client made in it meanwhile is
# still found (its snapshot names only)
check "hidden: absent from a listing of the root" bash -c "! ls '$mnt' | grep -qx hidden"
printf x >"$tmp/x"
"$CLI" put "$tmp/x" "$bucket/hidden/x" >/dev/null
check "hidden: mkdir on that listing's word" mkdir "$mnt/hidden"
check "... the name another client made in it meanwhile is found" \
  eq "hidden/x" "$(cat "$mnt/hidden/x" 2>&1)" x
check "... and listed" eq ls "$(find "$mnt/hidden" -mindepth 1 -printf '%P ')" "x "
fs_umount "$mnt"
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
check "... shown so by a new mount" eq stat "$(stat -c '%F %t:%T' "$mnt/posix/dev-block")" \
  "block special file 8:3"
# (404s are lookups' answers; anything else would be a refused request)
errors=$(awk '$1 ~ /^s3\.errors\./ && $1 != "s3.errors.notfound" { n += $2 }
  END { print n + 0 }' "$mnt/.s3rdmafs-stats")
check "the long names sent nothing the server refused (s3.errors.* 0)" \
  eq s3.errors "$errors" 0
grep '^s3.errors' "$mnt/.s3rdmafs-stats" | awk '$2 != 0 { print "# " $0 }'
summary
