#!/usr/bin/env bash
# Recovery of streamed files, correct by construction (issue 27): a file
# written in one write() of whole parts is streamed (its parts go up from
# write buffers; its staging file holds nothing), its completion refused,
# close() EIO, the daemon SIGKILLed, and the next mount with the same
# cache.dir takes the upload up: checks the server's list of parts
# against the record's, completes it, and the object is the file.
#
#   a) 24 MiB (3 parts of 8 MiB), CompleteMultipartUpload answered 500;
#      a2) the same answered 403; a3) 24 MiB + 1 byte (a fourth part of
#      one byte, in a write buffer)
#   b) the record disagrees with the server (a part's ETag changed in the
#      .parts list): nothing completed, nothing aborted: the file is kept
#      in unsaved/ with its .parts, the upload stays, the MANIFEST line
#      names it; the mount serves
#   c) the upload aborted by someone else meanwhile: kept in unsaved/ with
#      the reason, the mount serves
#   d) a file whose recovery began 3 times and never ended (as if each
#      attempt killed the daemon): set aside untried, the mount serves
#   e) another writer's multipart upload of the same key, made while our
#      CreateMultipartUpload fails: it survives (nothing aborts an upload
#      it cannot prove its own; ours that a lost answer may hide is
#      counted in write.uploads_unknown)
#
# The faults come from fault_proxy.py between the mount and RGW (paused
# but when a case arms it); awscli checks go to RGW directly.
#
#   test_fs_recover.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" recover
MiB=1048576
cache=$tmp/cache
cleanup() {
  local rc=$?
  set +e
  fs_abort_uploads
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT

fault_proxy_start
opts=(-o "endpoint=$PROXY" -o "cache.dir=$cache" -o write.part_size=8M
      -o s3.retry.max_attempts=2 -o s3.retry.budget_ms=2000
      -o write.retry_interval=3600 -o rdma.transport=off)
mount_it() { fs_mount "$bucket" "$mnt" "$1" "${opts[@]}"; }
# arm KIND for CLASS: every such request fails so
arm() { admin "set?$1=1&classes=$2" >/dev/null && admin resume >/dev/null; }
disarm() { admin pause >/dev/null && admin "set?$1=0&classes=" >/dev/null; }
# write SRC into the mount's NAME in one write(); close()'s errno name
write_once() {
  python3 - "$1" "$mnt/$2" <<'EOF'
import errno, os, sys
data = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
n = os.write(fd, data)
assert n == len(data), n
try:
    os.close(fd)
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
EOF
}
obj_md5() {
  aws_ s3 cp "s3://$bucket/$1" "$tmp/got" >/dev/null 2>&1 || { echo absent; return 0; }
  md5 "$tmp/got"
  rm -f "$tmp/got"
}
manifest_has() { # KEY REGEX: a MANIFEST line for KEY whose reason matches
  local why
  why=$(awk -F'\t' -v k="$1" '$5 == k {print $6}' "$cache/unsaved/MANIFEST" 2>/dev/null)
  grep -qE "$2" <<<"$why" || { echo "# MANIFEST says for $1: ${why:-nothing}"; return 1; }
}
kept_name() { # KEY: the file in unsaved/ the last MANIFEST line for KEY names
  awk -F'\t' -v k="$1" '$5 == k {print $2}' "$cache/unsaved/MANIFEST" 2>/dev/null | tail -n 1
}
# the staging file a dead mount left for the file whose record names KEY
staging_of() {
  local rec
  rec=$(grep -l "^key $(printf %s "$1" | od -An -tx1 | tr -d ' \n')$" \
    "$cache"/mount-*/ino-*.rec 2>/dev/null)
  rec=${rec%%$'\n'*} # (the first)
  [ -n "$rec" ] && echo "${rec%.rec}"
}
serves() { timeout 10 stat "$mnt" >/dev/null && timeout 10 ls "$mnt" >/dev/null; }
# a dead mount's streamed file: SRC into KEY, its completion refused with
# KIND, close() EIO, SIGKILL; the faults off again
dead_stream() {
  mount_it "$tmp/fs-$2.log"
  arm "$3" complete
  check_eq "$2: close() returns EIO (Complete refused: $3)" "$(write_once "$1" "$2")" EIO
  disarm "$3"
  fs_kill "$mnt"
  fs_umount "$mnt"
  check_eq "$2: nothing on the server yet" "$(obj_md5 "$2")" absent
}

aws_ s3 mb "s3://$bucket" >/dev/null

# ---- a) the streamed file's upload taken up by the next mount ----
case_a() {
for c in "a 500 internal $((24 * MiB))" "a2 403 forbidden $((24 * MiB))" \
         "a3 500+1 internal $((24 * MiB + 1))"; do
  read -r name what kind size <<<"$c"
  echo "# $name) a streamed file of $size bytes, its completion refused ($what), SIGKILL"
  head -c "$size" /dev/urandom >"$tmp/$name.ref"
  dead_stream "$tmp/$name.ref" "$name.bin" "$kind"
  mount_it "$tmp/fs-$name-2.log"
  wait_recovered "$tmp/fs-$name-2.log"
  check "$name: the next mount serves" serves
  check_eq "$name: the object is the file, byte for byte" \
    "$(obj_md5 "$name.bin")" "$(md5 "$tmp/$name.ref")"
  check_eq "$name: read through the mount too" "$(md5 "$mnt/$name.bin")" "$(md5 "$tmp/$name.ref")"
  check_eq "$name: no upload left" "$(fs_uploads "$name")" ""
  fs_umount "$mnt"
done
}
run_case a case_a

# ---- b) the record and the server disagree: everything kept ----
case_b() {
echo "# b) a part's ETag in the record is not the server's"
head -c $((24 * MiB)) /dev/urandom >"$tmp/b.ref"
dead_stream "$tmp/b.ref" b.bin internal
sf=$(staging_of b.bin)
check "b: the dead mount left its staging file and .parts" test -s "$sf.parts"
# part 2's ETag (hex-encoded in the file) replaced by another's
sed -i "3,\$s/^2 .*/2 $(printf '"0123456789abcdef0123456789abcdef"' | od -An -tx1 | tr -d ' \n')/" "$sf.parts"
mount_it "$tmp/fs-b2.log"
wait_recovered "$tmp/fs-b2.log"
check "b: the next mount serves" serves
check_eq "b: nothing completed" "$(obj_md5 b.bin)" absent
check_eq "b: the upload is kept (not aborted)" "$(fs_uploads b.bin | wc -l)" 1
check "b: MANIFEST says why and names the upload" \
  manifest_has b.bin "part 2, acknowledged by the server, is listed with another ETag.*upload .* kept, not aborted"
check "b: its .parts is kept beside it in unsaved/" test -s "$cache/unsaved/$(kept_name b.bin).parts"
fs_umount "$mnt"
fs_abort_uploads
}
run_case b case_b

# ---- c) the upload gone from the server ----
case_c() {
echo "# c) the upload aborted by someone else before the remount"
head -c $((16 * MiB)) /dev/urandom >"$tmp/c.ref"
dead_stream "$tmp/c.ref" c.bin internal
fs_abort_uploads
mount_it "$tmp/fs-c2.log"
wait_recovered "$tmp/fs-c2.log"
check "c: the next mount serves" serves
check_eq "c: nothing on the server" "$(obj_md5 c.bin)" absent
check "c: kept in unsaved/, MANIFEST says the upload is gone" \
  manifest_has c.bin "its unfinished upload is gone from the server"
fs_umount "$mnt"
}
run_case c case_c

# ---- d) a recovery that never ends: set aside after 3 attempts ----
case_d() {
echo "# d) a file whose recovery began 3 times and never ended"
head -c $((16 * MiB)) /dev/urandom >"$tmp/d.ref"
dead_stream "$tmp/d.ref" d.bin internal
sf=$(staging_of d.bin)
echo 3 >"$sf.try"
mount_it "$tmp/fs-d2.log"
wait_recovered "$tmp/fs-d2.log"
check "d: the next mount serves" serves
check_eq "d: nothing completed" "$(obj_md5 d.bin)" absent
check "d: set aside untried, with the reason" \
  manifest_has d.bin "its recovery was begun 3 times and never ended"
check_eq "d: its upload is kept for it" "$(fs_uploads d.bin | wc -l)" 1
fs_umount "$mnt"
}
run_case d case_d

# ---- e) another writer's upload of the same key survives ours failing ----
case_e() {
echo "# e) a second writer's upload of the key, made while ours fails"
head -c $((16 * MiB)) /dev/urandom >"$tmp/e.ref"
other=$(aws_ s3api create-multipart-upload --bucket "$bucket" --key e.bin \
  --query UploadId --output text)
mount_it "$tmp/fs-e.log"
arm internal init # every CreateMultipartUpload of ours answered 500
check_eq "e: close() returns EIO (our upload could not begin)" \
  "$(write_once "$tmp/e.ref" e.bin)" EIO
check "e: an upload ours may have made is counted, not aborted" \
  test "$(stat_of write.uploads_unknown)" -ge 1
disarm internal
check "e: the other writer's upload survives" \
  grep -qF "$other" <<<"$(fs_uploads e.bin)"
fs_umount "$mnt"
check_eq "e: ours lands at unmount" "$(obj_md5 e.bin)" "$(md5 "$tmp/e.ref")"
check "e: the other writer's upload still survives" \
  grep -qF "$other" <<<"$(fs_uploads e.bin)"
}
run_case e case_e

summary
