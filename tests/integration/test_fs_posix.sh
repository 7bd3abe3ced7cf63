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
#     they are stored on its marker in the background soon after
#     (fs.dir_times_stored; no request on the operation's path), so a new
#     mount shows them; an implicit directory gets no marker made for it;
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
marker_mtime() { "$CLI" head "$bucket/$1" | sed -n 's/^meta mtime=\([0-9]*\).*/\1/p'; }
stored() { [ "$(marker_mtime posix/times/)" = "$times_mtime" ]; }

# ---- details: posix_check.py's calls; the directory times stored ----
case_details() {
out=$(python3 "$here/posix_check.py" "$mnt" 2>&1) || true
echo "$out"
check "every POSIX detail holds" bash -c "! grep -q '^not ok' <<<\"\$1\"" _ "$out"
# the directory times moved above, stored on the marker in the background
times_mtime=$(stat -c %Y "$mnt/posix/times")
check "directory times: stored on the marker soon after (mtime $times_mtime)" \
  wait_for 20 0.2 stored
check "  ... counted (fs.dir_times_stored $(stat_of fs.dir_times_stored))" \
  test "$(stat_of fs.dir_times_stored)" -ge 1
# the device nodes as stored (x-amz-meta-mode with the type, -rdev)
check "a block device stored with its type and number" \
  eq meta "$("$CLI" head "$bucket/posix/dev-block" | grep -E '^meta (mode|rdev)=' | tr '\n' ' ')" \
  "meta mode=$((0060640)) meta rdev=$((8 * 256 + 3)) "
}
run_case details case_details

# ---- implicit: an implicit directory (keys below it, no marker): none
# ---- made for it ----
case_implicit() {
need_case details
printf x >"$tmp/x"
"$CLI" put "$tmp/x" "$bucket/implicit/x" >/dev/null
check "implicit: a file made in it" touch "$mnt/implicit/y"
check "implicit: its mtime moves while the mount runs" \
  test "$(stat -c %Y "$mnt/implicit")" -gt 0
# (a change after it elsewhere, stored: implicit's turn came before)
check "a later change in posix/times" touch "$mnt/posix/times/late"
times_mtime=$(stat -c %Y "$mnt/posix/times")
check "  ... stored (mtime $times_mtime)" wait_for 20 0.2 stored
check "implicit: no marker made for it" bash -c "! \"\$1\" head \"\$2/implicit/\" >/dev/null 2>&1" \
  _ "$CLI" "$bucket"
}
run_case implicit case_implicit

# ---- hidden: a directory made here after a stale "no such name" (a
# ---- listing of its parent, kept cache.dir_ttl): what another client made
# ---- in it meanwhile is still found (its snapshot names only) ----
case_hidden() {
check "hidden: absent from a listing of the root" bash -c "! ls '$mnt' | grep -qx hidden"
printf x >"$tmp/x"
"$CLI" put "$tmp/x" "$bucket/hidden/x" >/dev/null
check "hidden: mkdir on that listing's word" mkdir "$mnt/hidden"
check "... the name another client made in it meanwhile is found" \
  eq "hidden/x" "$(cat "$mnt/hidden/x" 2>&1)" x
check "... and listed" eq ls "$(find "$mnt/hidden" -mindepth 1 -printf '%P ')" "x "
}
run_case hidden case_hidden

# ---- gone: a directory changed, then removed before its times were
# ---- stored: its marker is not made again (the store finds no name;
# ---- rmdir waits out one on its way) ----
case_gone() {
need_case details
check "removed: a change in gone/, then rmdir of it at once" \
  bash -c 'mkdir "$1/gone" && : >"$1/gone/f" && rm "$1/gone/f" && rmdir "$1/gone"' _ "$mnt"
check "  ... a later change elsewhere stored (gone/'s turn came before it)" \
  touch "$mnt/posix/times/after-gone"
times_mtime=$(stat -c %Y "$mnt/posix/times")
check "  ... (stored: mtime $times_mtime)" wait_for 20 0.2 stored
check "  ... gone/ has no marker again" bash -c "! \"\$1\" head \"\$2/gone/\" >/dev/null 2>&1" \
  _ "$CLI" "$bucket"
}
run_case gone case_gone

# ---- kept: a directory's mtime set after a change in it (cp -a, tar):
# ---- the set one is stored and kept, not the change's ----
case_kept() {
check "set: a change in kept/, then its mtime set" bash -c \
  'mkdir "$1/kept" && : >"$1/kept/f" && touch -m -d @1600000000 "$1/kept"' _ "$mnt"
kept_set() { [ "$(marker_mtime kept/)" = 1600000000 ]; }
sleep 2 # (the change's store was due 1 s after it)
check "  ... the set mtime on its marker, not the change's" kept_set
}
run_case kept case_kept

# ---- renamed: a directory renamed about when a store of a directory
# ---- below it is due: no marker comes back under the old name (the
# ---- interleaving that would make one is forced in unit
# ---- test_fsx_dirtimes: a store under way holds the rename off) ----
case_renamed() {
"$CLI" --parallel 32 fill "$bucket/mv-a/k" 300 16 >/dev/null
check "renamed: a change in mv-a/c, then mv-a (300 names) renamed" \
  bash -c 'mkdir -p "$1/mv-a/c" && : >"$1/mv-a/c/f" && sleep 0.6 && mv "$1/mv-a" "$1/mv-b"' _ "$mnt"
sleep 3
check "  ... nothing left under the old name" \
  eq "mv-a/" "$("$CLI" ls "$bucket/mv-a/" 2>/dev/null | wc -l)" 0
check "  ... mv-b/c/f there" test -e "$mnt/mv-b/c/f"
}
run_case renamed case_renamed

# ---- remount: a burst of changes, then the unmount at once: stored
# ---- before it ends; what a new mount shows ----
case_remount() {
need_case details
for i in 1 2 3; do : >"$mnt/posix/times/burst$i"; done
times_mtime=$(stat -c %Y "$mnt/posix/times")
fs_umount "$mnt"
check "directory times: the ones waiting stored at unmount" stored
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
check "... shown so by a new mount" eq stat "$(stat -c '%F %t:%T' "$mnt/posix/dev-block")" \
  "block special file 8:3"
check "directory times: shown by a new mount" \
  eq mtime "$(stat -c %Y "$mnt/posix/times")" "$times_mtime"
# (404s are lookups' answers; anything else would be a refused request)
errors=$(awk '$1 ~ /^s3\.errors\./ && $1 != "s3.errors.notfound" { n += $2 }
  END { print n + 0 }' "$mnt/.s3rdmafs-stats")
check "the long names sent nothing the server refused (s3.errors.* 0)" \
  eq s3.errors "$errors" 0
grep '^s3.errors' "$mnt/.s3rdmafs-stats" | awk '$2 != 0 { print "# " $0 }'
}
run_case remount case_remount

summary
