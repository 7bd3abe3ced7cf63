#!/usr/bin/env bash
# Interop under size: s3rdmafs and s3fs mount the same bucket at once.
#   - a 150 MiB file written through s3rdmafs (a multipart upload) reads
#     back through s3fs with the same md5; chmod and touch -d through
#     s3rdmafs are seen by s3fs (x-amz-meta-mode|uid|gid|mtime);
#   - a 120 MiB file written through s3fs (its multipart upload) reads back
#     through s3rdmafs, with s3fs's chmod and touch -d;
#   - 3 MiB overwritten in the middle of s3fs's multipart object through
#     s3rdmafs (parts fetched at the edges, the rest copied on the server)
#     read back through s3fs; s3fs appends to s3rdmafs's file, read back
#     through s3rdmafs;
#   - both mounts show each file with the same size, mode, owner and mtime.
# Both objects are checked to be multipart on the server (ETag "...-N").
# s3fs comes with scripts/setup.sh; installed here when missing (root).
#
#   test_fs_interop.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsi s3fs cache model
smnt=$tmp/s3fs
export PEER_STATE_DIR=$tmp/peers # peer_mount_s3fs, peer_umount: tests/lib/peers.sh
trap fs_cleanup_s3fs EXIT
umask 022
MiB=1048576
model=$tmp/model

if ! command -v s3fs >/dev/null; then
  echo "# s3fs missing: apt-get install s3fs"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends s3fs >/dev/null ||
    { echo "not ok - s3fs installed (scripts/setup.sh)"; exit 1; }
fi

etag_of() { # KEY
  aws_ s3api head-object --bucket "$bucket" --key "$1" --query ETag --output text | tr -d '"'
}
multipart() { # KEY: its ETag has a part count
  local e
  e=$(etag_of "$1")
  echo "# $1: ETag $e"
  [[ $e =~ -[0-9]+$ ]]
}
# same_stat NAME: size, mode, owner and mtime alike through both mounts
same_stat() {
  eq "$1 through s3fs (< ours)" "$(stat -c '%s %a %u:%g %Y' "$smnt/$1")" \
    "$(stat -c '%s %a %u:%g %Y' "$mnt/$1")"
}
t0=$SECONDS

"$CLI" mb "$bucket"
# short TTLs: each mount sees what the other wrote within a second
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache" \
  -o cache.attr_ttl=1,cache.dir_ttl=1,cache.negative_ttl=1
check "s3fs mounts the bucket too" peer_mount_s3fs "$bucket" "$smnt" stat_cache_expire=1
check "both mounted at once" bash -c "grep -q ' $mnt ' /proc/mounts && grep -q ' $smnt ' /proc/mounts"

# ---- ours: written through s3rdmafs, read through s3fs ----
case_ours() {
gen ours $((150 * MiB + 12345)) >"$model/ours.bin"
check "s3rdmafs: write 150 MiB" cp "$model/ours.bin" "$mnt/ours.bin"
check "s3rdmafs: a multipart upload" multipart ours.bin
check "s3rdmafs: chmod 640, touch -d" eval \
  'chmod 640 "$mnt/ours.bin" && touch -d @1600000000 "$mnt/ours.bin"'
sleep 1.2 # (s3fs's stat cache)
check "s3fs reads it back (md5)" eq md5 "$(md5 "$smnt/ours.bin")" "$(md5 "$model/ours.bin")"
check "s3fs sees its size, mode, mtime" eq stat "$(stat -c '%s %a %Y' "$smnt/ours.bin")" \
  "$((150 * MiB + 12345)) 640 1600000000"
check "size, mode, owner, mtime alike through both" same_stat ours.bin
}
run_case ours case_ours

# ---- theirs: written through s3fs, read through s3rdmafs ----
case_theirs() {
gen theirs $((120 * MiB + 777)) >"$model/theirs.bin"
check "s3fs: write 120 MiB" cp "$model/theirs.bin" "$smnt/theirs.bin"
check "s3fs: a multipart upload" multipart theirs.bin
check "s3fs: chmod 604, touch -d" eval \
  'chmod 604 "$smnt/theirs.bin" && touch -d @1500000000 "$smnt/theirs.bin"'
sleep 1.2 # (our attribute cache)
check "s3rdmafs reads it back (md5)" eq md5 "$(md5 "$mnt/theirs.bin")" "$(md5 "$model/theirs.bin")"
check "s3rdmafs sees its size, mode, mtime" eq stat "$(stat -c '%s %a %Y' "$mnt/theirs.bin")" \
  "$((120 * MiB + 777)) 604 1500000000"
check "size, mode, owner, mtime alike through both" same_stat theirs.bin
}
run_case theirs case_theirs

# ---- changed: in place by the other one ----
case_changed() {
need_case ours # (ours.bin, appended to)
need_case theirs # (theirs.bin, changed)
gen patch $((3 * MiB + 5)) >"$tmp/patch"
dd if="$tmp/patch" of="$model/theirs.bin" bs=1M seek=$((50 * MiB + 7)) oflag=seek_bytes \
  conv=notrunc status=none
check "s3rdmafs: overwrite 3 MiB in the middle of s3fs's object" \
  dd if="$tmp/patch" of="$mnt/theirs.bin" bs=1M seek=$((50 * MiB + 7)) oflag=seek_bytes \
  conv=notrunc status=none
check "  ... a multipart upload again" multipart theirs.bin
sleep 1.2
check "s3fs reads the changed object (md5)" eq md5 "$(md5 "$smnt/theirs.bin")" "$(md5 "$model/theirs.bin")"
check "  ... mode and owner kept" eq mode,owner "$(stat -c '%a %u:%g' "$smnt/theirs.bin")" \
  "604 $(stat -c '%u:%g' "$mnt/theirs.bin")"
gen tail $((2 * MiB + 3)) >"$tmp/tail"
cat "$tmp/tail" >>"$model/ours.bin"
check "s3fs: append 2 MiB to s3rdmafs's object" eval 'cat "$tmp/tail" >>"$smnt/ours.bin"'
sleep 1.2
check "s3rdmafs reads the appended object (md5)" eq md5 "$(md5 "$mnt/ours.bin")" "$(md5 "$model/ours.bin")"
check "size, mode, owner alike through both" eq stat \
  "$(stat -c '%s %a %u:%g' "$smnt/ours.bin")" "$(stat -c '%s %a %u:%g' "$mnt/ours.bin")"
}
run_case changed case_changed

# (end of the cases)

check "s3fs unmounts" peer_umount "$smnt"
check "no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"
fs_umount "$mnt"
echo "# $((SECONDS - t0)) s"
summary
