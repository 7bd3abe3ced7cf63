#!/usr/bin/env bash
# Renames hold what they move, on a real mount of RGW:
#   a) a directory rename while a file in it is open for writing: the rest
#      written and closed during the copy arrives whole under the new name
#      (the rename holds every write-back state below the directory; a
#      close waits for it), nothing stays under the old prefix; 3 rounds
#   b) a rename onto a file open for writing, closed during the copy: the
#      renamed data stays (the replaced file's write-back is held, then
#      discarded); 2 rounds
#   c) a file streaming a multipart upload renamed mid-write: after close
#      the whole file is under the new name and no multipart upload is
#      left anywhere (none completed into, or orphaned under, the old key)
#   d) a directory rename and, at once, a rename of one open file onto
#      another inside it: neither hangs (they are kept apart), no bytes
#      lost; 3 rounds
# (the objects on the server checked through awscli after a, b and c)
#
#   test_fs_rename.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" ren cache
MiB=1048576

aws_ s3 mb "s3://$bucket" >/dev/null
# siblings, so that a directory rename spends a while copying
mkdir -p "$tmp/sib"
for i in $(seq 1 60); do printf 'sibling %s\n' "$i" >"$tmp/sib/s$i.txt"; done
for r in 1 2 3; do
  aws_ s3 cp --recursive --quiet "$tmp/sib" "s3://$bucket/d$r/"
  aws_ s3 cp --recursive --quiet "$tmp/sib" "s3://$bucket/c$r/"
done
head -c $((64 * MiB)) /dev/urandom >"$tmp/big"
for r in 1 2; do aws_ s3 cp --quiet "$tmp/big" "s3://$bucket/big$r.bin"; done

fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache" -o write.part_size=5M

case_a() {
echo "# a) directory renames racing a writer in them"
for r in 1 2 3; do
  check "a: round $r" python3 "$here/rename_race.py" dir "$mnt" "$r"
  check "a: round $r: the server has the whole file under the new name" \
    test "$(aws_ s3api head-object --bucket "$bucket" --key "moved$r/aaa-open.bin" \
              --query ContentLength --output text 2>&1)" = $((6 * MiB))
  check "a: round $r: nothing left under the old prefix" \
    test -z "$(aws_ s3api list-objects-v2 --bucket "$bucket" --prefix "d$r/" \
                 --query 'Contents[].Key' --output text | grep -v None || true)"
done
}
run_case a case_a

case_b() {
echo "# b) renames onto a file open for writing"
for r in 1 2; do
  check "b: round $r" python3 "$here/rename_race.py" onto "$mnt" "$r"
  aws_ s3 cp --quiet "s3://$bucket/target$r.bin" "$tmp/got"
  check "b: round $r: the server has the renamed data" cmp -s "$tmp/got" "$tmp/big"
done
}
run_case b case_b

case_d() {
echo "# d) a directory rename and a rename inside it at once"
for r in 1 2 3; do
  check "d: round $r" python3 "$here/rename_race.py" cross "$mnt" "$r"
done
}
run_case d case_d

case_c() {
echo "# c) a streaming upload renamed mid-write"
python3 - "$mnt" "$tmp/big" <<'PY'
import os, sys
mnt, big = sys.argv[1], sys.argv[2]
data = open(big, "rb").read()
fd = os.open(os.path.join(mnt, "stream.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, data[:24 << 20])          # parts going up under stream.bin
os.rename(os.path.join(mnt, "stream.bin"), os.path.join(mnt, "streamed.bin"))
os.write(fd, data[24 << 20:])
os.close(fd)
PY
aws_ s3 cp --quiet "s3://$bucket/streamed.bin" "$tmp/got"
check "c: the whole file under the new name" cmp -s "$tmp/got" "$tmp/big"
check "c: nothing under the old name" key_absent stream.bin
check "c: no multipart upload left" eq uploads "$(fs_uploads "")" ""

check "clean unmount" fs_umount "$mnt"
}
run_case c case_c

summary
