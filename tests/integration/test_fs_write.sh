#!/usr/bin/env bash
# The write path on a real mount of RGW, one operation at a time, every
# result checked on the bucket through a second client (awscli): content by
# md5, sizes, the s3fs-style metadata headers (x-amz-meta-mode|uid|gid|mtime).
# New files (one PUT, streamed multipart), visibility at close/fsync only,
# overwrites and appends of existing objects, O_EXCL/O_TRUNC/O_APPEND,
# truncate, unlink (also of open files), mkdir/rmdir, rename (files, open
# files, over a file, directories, past write.rename_dir_max), symlinks,
# chmod/chown/utimens, statfs, a remount, and s3fs reading our files and we
# reading its files.
#
#   test_fs_write.sh BUILD_BIN_DIR
#
# In cases (run_case, tests/lib/test.sh); a case that uses another's files
# runs that one first (need_case): S3R_ONLY='^remount$' runs dirs,
# rename, symlinks, meta, small and existing, then remount.
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsw s3fs model cache
smnt=$tmp/s3fs
model=$tmp/model # what each file should hold, kept on local disk
export PEER_STATE_DIR=$tmp/peers # peer_mount_s3fs, peer_umount: tests/lib/peers.sh
trap fs_cleanup_s3fs EXIT
umask 022
me=$(id -u):$(id -g)
MiB=1048576
guard_s=60 # seconds an operation on the mount may take
fspid='' mopts=()

# ---- helpers (and test.sh's key_absent, key_md5, keys, eq, in_range) ----
# shellcheck source=tests/lib/write.sh
. "$here/../lib/write.sh"
# wcheck NAME CMD...: check, with CMD under guard
wcheck() { local name=$1; shift; check "$name" guard "$@"; }
# both REL PYTHON: run PYTHON (p = the path) on $model/REL, then on the mount
both() {
  python3 -c "import os, sys; p = sys.argv[1]
$2" "$model/$1" && python3 -c "import os, sys; p = sys.argv[1]
$2" "$mnt/$1"
}

# ---- objects written by another client, before the mount ----
"$CLI" mb "$bucket"
gen 1 3000000 >"$model/rw.bin"
printf 'old line\n' >"$model/append.txt"
printf 'a much longer old content\n' >"$model/long.txt"
printf 'old content' >"$model/trunc.txt"
printf 'existing' >"$model/excl.txt"
printf 'doomed' >"$model/unlink-open.txt"
printf 'path truncate me' >"$model/ptrunc.txt"
for f in rw.bin append.txt long.txt trunc.txt excl.txt unlink-open.txt ptrunc.txt; do
  "$CLI" put "$model/$f" "$bucket/$f" >/dev/null
done
printf 'typed\n' >"$model/typed.txt"
aws_ s3api put-object --bucket "$bucket" --key typed.txt --body "$model/typed.txt" \
  --content-type text/x-typed --metadata color=blue >/dev/null
mkdir -p "$model/implicit"
cp "$model/excl.txt" "$model/implicit/inside.txt"
"$CLI" put "$model/implicit/inside.txt" "$bucket/implicit/inside.txt" >/dev/null

mount_fs -o cache.dir="$tmp/cache" -o write.part_size=5M -o write.rename_dir_max=20

# ---- a small new file: one PUT at close, with s3fs metadata ----
case_small() {
  t0=$(date +%s)
  wcheck "small file: write" eval 'printf hello >"$mnt/small.txt"'
  t1=$(date +%s)
  printf hello >"$model/small.txt"
  head_of small.txt
  check "small file: on the server when close returns" eq size "$H_SIZE" 5
  check "small file: content" eq md5 "$(key_md5 small.txt)" "$(md5 "$model/small.txt")"
  check "small file: one PUT (ETag is the MD5)" eq etag "$H_ETAG" "$(md5 "$model/small.txt")"
  check "small file: x-amz-meta-mode 33188 (0100644)" eq mode "$H_MODE" 33188
  check "small file: x-amz-meta-uid/gid" eq uid:gid "$H_UID:$H_GID" "$me"
  check "small file: x-amz-meta-mtime is the write's time" in_range "$H_MTIME" $((t0 - 2)) $((t1 + 2))
  check "small file: read back through the mount" eq content "$(cat "$mnt/small.txt")" hello
  check "small file: stat through the mount" eq stat "$(stat -c '%s %a %u:%g' "$mnt/small.txt")" "5 644 $me"
  wcheck "mtime the same before and after a read (editors compare it)" python3 -c '
import os, sys
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(b"x")
a = os.stat(p).st_mtime_ns
fd = os.open(p, os.O_RDONLY)
os.read(fd, 100)
os.close(fd)
b = os.stat(p).st_mtime_ns
assert a == b, "mtime %d, after a read %d" % (a, b)' "$mnt/mtime.txt"
  printf x >"$model/mtime.txt"
  wcheck "empty file (touch): object of size 0" eval 'touch "$mnt/empty.txt"'
  touch "$model/empty.txt"
  head_of empty.txt
  check "empty file: size 0, mode 33188" eq size,mode "$H_SIZE $H_MODE" "0 33188"
  wcheck "name with space, plus and non-ASCII" eval 'printf x >"$mnt/sp ace+ü.txt"'
  printf x >"$model/sp ace+ü.txt"
  head_of "sp ace+ü.txt"
  check "name with space, plus and non-ASCII: on the server" eq size "$H_SIZE" 1
}

# ---- a new file streamed: nothing on the server before close or fsync ----
case_streamed() {
  gen 2 $((12 * MiB)) >"$model/seq.bin"
  wcheck "streamed file: write 12 MiB" eval 'cat "$model/seq.bin" >"$mnt/seq.bin"'
  head_of seq.bin
  check "streamed file: size on the server" eq size "$H_SIZE" $((12 * MiB))
  check "streamed file: content" same_as_model seq.bin
  check "streamed file: multipart in 5 MiB parts (ETag ...-3)" eq etag-suffix "${H_ETAG##*-}" 3
  check "streamed file: read back through the mount" eq md5 "$(md5 "$mnt/seq.bin")" "$(md5 "$model/seq.bin")"

  # (held by a process of its own that never forks: every close of any
  # descriptor of the file, a child's inherited copy included, is a flush,
  # and a flush uploads)
  coproc W { exec python3 -u -c "$writer_py"; }
  gen 3 $((7 * MiB + 5)) >"$model/fsync.bin"
  check "open fd: open for writing" w_do open "$mnt/fsync.bin"
  check "open fd: write 7 MiB" w_do write "$model/fsync.bin"
  check "open fd: no object before close or fsync" key_absent fsync.bin
  check "open fd: fsync" w_do fsync
  check "open fd: object complete when fsync returns" same_as_model fsync.bin
  cp "$model/fsync.bin" "$tmp/fsync.bin"
  printf 'written after fsync' >"$tmp/after"
  cat "$tmp/after" >>"$model/fsync.bin"
  check "open fd: write after fsync" w_do write "$tmp/after"
  check "open fd: the server keeps the fsync'ed version until close" \
    eq md5 "$(key_md5 fsync.bin)" "$(md5 "$tmp/fsync.bin")"
  check "open fd: close" w_do close
  check "open fd: after close the object has both writes" same_as_model fsync.bin
  w_do quit || true
}

# ---- existing objects: random writes, appends, O_TRUNC, O_EXCL ----
case_existing() {
  need_case small
  wcheck "random writes in an existing object (r+)" both rw.bin '
with open(p, "r+b") as f:
    f.seek(1234567); f.write(b"W" * 1000)
    f.seek(2999990); f.write(b"past the old end")
    f.seek(10); f.write(b"near the start")'
  check "random writes: object on the server" same_as_model rw.bin
  head_of rw.bin
  check "random writes: the object gets mode metadata" eq mode "$H_MODE" 33188
  check "random writes: read back through the mount" eq md5 "$(md5 "$mnt/rw.bin")" "$(md5 "$model/rw.bin")"

  wcheck "O_APPEND: writes go to the end, whatever the offset" both append.txt '
fd = os.open(p, os.O_WRONLY | os.O_APPEND)
os.lseek(fd, 0, os.SEEK_SET); os.write(fd, b"appended\n")
os.lseek(fd, 2, os.SEEK_SET); os.write(fd, b"again\n")
os.close(fd)'
  check "O_APPEND: object on the server" same_as_model append.txt
  printf 'more\n' >>"$model/small.txt"
  wcheck "echo >>: append to our own file" eval 'printf "more\n" >>"$mnt/small.txt"'
  check "echo >>: object on the server" same_as_model small.txt

  cat "$mnt/long.txt" >/dev/null # (in the kernel's cache now)
  printf 'short' >"$model/long.txt"
  wcheck "O_TRUNC with new data over a longer object" eval 'printf short >"$mnt/long.txt"'
  check "O_TRUNC with new data: object on the server" same_as_model long.txt
  check "O_TRUNC with new data: read back through the mount" eq content "$(cat "$mnt/long.txt")" short
  wcheck "O_TRUNC alone (: >)" eval ': >"$mnt/trunc.txt"'
  head_of trunc.txt
  check "O_TRUNC alone: empty object" eq size "$H_SIZE" 0

  # what other tools stored on an object survives rewriting it through us
  type_and_color() {
    aws_ s3api head-object --bucket "$bucket" --key typed.txt \
      --query '[ContentType, Metadata.color]' --output text
  }
  printf 'more\n' >>"$model/typed.txt"
  wcheck "append to an object with a content type and metadata" eval \
    'printf "more\n" >>"$mnt/typed.txt"'
  check "append: object on the server" same_as_model typed.txt
  check "append: Content-Type and x-amz-meta-color kept" eq type,color \
    "$(type_and_color | tr '\t' ' ')" "text/x-typed blue"
  wcheck "chmod of that object" chmod 640 "$mnt/typed.txt"
  check "chmod: Content-Type and x-amz-meta-color kept" eq type,color \
    "$(type_and_color | tr '\t' ' ')" "text/x-typed blue"
  printf 'new\n' >"$model/typed.txt"
  wcheck "O_TRUNC rewrite of that object" eval 'printf "new\n" >"$mnt/typed.txt"'
  check "O_TRUNC rewrite: Content-Type and x-amz-meta-color kept" eq type,color \
    "$(type_and_color | tr '\t' ' ')" "text/x-typed blue"

  wcheck "O_CREAT|O_EXCL on an existing object: EEXIST" python3 -c '
import errno, os, sys
for p in sys.argv[1:]:
    try:
        os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError as e:
        if e.errno != errno.EEXIST: raise
    else:
        sys.exit(p + ": opened")' "$mnt/excl.txt" "$mnt/small.txt"
  check "O_CREAT|O_EXCL: the existing object untouched" same_as_model excl.txt
  wcheck "O_CREAT|O_EXCL mode 0640 on a new name" python3 -c '
import os, sys
os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640))' "$mnt/excl-new.txt"
  touch "$model/excl-new.txt"
  head_of excl-new.txt
  check "O_CREAT|O_EXCL new: empty object, mode 33184 (0100640)" eq size,mode "$H_SIZE $H_MODE" "0 33184"
}

# ---- truncate ----
case_truncate() {
  printf 'hello world' >"$model/t.txt"
  wcheck "truncate: a new file" eval 'printf "hello world" >"$mnt/t.txt"'
  truncate -s 100000 "$model/t.txt"
  wcheck "truncate -s: grow" truncate -s 100000 "$mnt/t.txt"
  check "truncate -s grow: zeros on the server" same_as_model t.txt
  truncate -s 4 "$model/t.txt"
  wcheck "truncate -s: shrink" truncate -s 4 "$mnt/t.txt"
  check "truncate -s shrink: object on the server" same_as_model t.txt
  wcheck "ftruncate on an open file, then a write past the end" both t.txt '
fd = os.open(p, os.O_RDWR)
os.ftruncate(fd, 2); os.pwrite(fd, b"x", 10)
os.close(fd)'
  check "ftruncate: object on the server" same_as_model t.txt
  wcheck "truncate(2) by path, not open" both ptrunc.txt 'os.truncate(p, 4)'
  check "truncate(2) by path: object on the server when it returns" same_as_model ptrunc.txt
}

# ---- unlink ----
case_unlink() {
  need_case truncate
  wcheck "unlink" rm "$mnt/t.txt"
  rm "$model/t.txt"
  check "unlink: object gone" key_absent t.txt
  check "unlink: name gone from the mount" test ! -e "$mnt/t.txt"
  wcheck "unlink of an open existing file: the fd keeps its data" python3 -c '
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR)
os.unlink(p)
assert not os.path.exists(p), "name still there"
assert os.pread(fd, 100, 0) == b"doomed", os.pread(fd, 100, 0)
os.pwrite(fd, b" and more", 6)
assert os.pread(fd, 100, 0) == b"doomed and more", os.pread(fd, 100, 0)
os.close(fd)' "$mnt/unlink-open.txt"
  check "unlink of an open existing file: no object after close" key_absent unlink-open.txt
  rm "$model/unlink-open.txt"
  # open for reading only: the unlink keeps the data for the reader (a
  # write-back state opened under the rename lock, which is never taken twice)
  printf 'read on' >"$model/unlink-ro.txt"
  "$CLI" put "$model/unlink-ro.txt" "$bucket/unlink-ro.txt" >/dev/null
  wcheck "unlink of a file open for reading: the fd keeps its data" python3 -c '
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDONLY)
os.unlink(p)
assert not os.path.exists(p), "name still there"
assert os.pread(fd, 100, 0) == b"read on", os.pread(fd, 100, 0)
os.close(fd)' "$mnt/unlink-ro.txt"
  check "unlink of a file open for reading: no object" key_absent unlink-ro.txt
  rm "$model/unlink-ro.txt"
  wcheck "unlink of an open new file: the fd keeps its data" python3 -c '
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * 100000)
os.unlink(p)
os.write(fd, b"y" * 100)
assert os.pread(fd, 200000, 0) == b"x" * 100000 + b"y" * 100
os.close(fd)' "$mnt/unlink-new.txt"
  check "unlink of an open new file: no object after close" key_absent unlink-new.txt
  printf 'the new one' >"$model/reuse.txt"
  wcheck "unlinked open file, new file of the same name: the old fd's close leaves it" python3 -c '
import os, sys
p = sys.argv[1]
with open(p, "wb") as f: f.write(b"the old one")
fd = os.open(p, os.O_RDWR)
os.unlink(p)
with open(p, "wb") as f: f.write(b"the new one")
os.pwrite(fd, b"OLD", 0)
os.close(fd)' "$mnt/reuse.txt"
  check "unlinked open file, new file of the same name: the new content stays" same_as_model reuse.txt
}

# ---- mkdir, rmdir ----
case_dirs() {
  t0=$(date +%s)
  wcheck "mkdir" mkdir "$mnt/d"
  t1=$(date +%s)
  head_of d/
  check "mkdir: dir/ marker of size 0" eq size "$H_SIZE" 0
  check "mkdir: marker mode 16877 (040755)" eq mode "$H_MODE" 16877
  check "mkdir: marker uid/gid" eq uid:gid "$H_UID:$H_GID" "$me"
  check "mkdir: marker mtime" in_range "$H_MTIME" $((t0 - 2)) $((t1 + 2))
  check "mkdir: a directory through the mount" eq stat "$(stat -c '%F %a' "$mnt/d")" "directory 755"
  wcheck "mkdir of an existing directory: EEXIST" python3 -c '
import errno, os, sys
try: os.mkdir(sys.argv[1])
except FileExistsError: pass
else: sys.exit("created twice")' "$mnt/d"
  wcheck "mkdir -m 700" mkdir -m 700 "$mnt/d700"
  head_of d700/
  check "mkdir -m 700: marker mode 16832 (040700)" eq mode "$H_MODE" 16832
  wcheck "mkdir -p a/b/c" mkdir -p "$mnt/a/b/c"
  check "mkdir -p: a marker for each level" eq keys "$(keys a/ | tr '\n' ' ')" "a/ a/b/ a/b/c/ "
  wcheck "rmdir" rmdir "$mnt/d700"
  check "rmdir: marker gone" key_absent d700/
  check "rmdir: gone from the mount" test ! -e "$mnt/d700"
  wcheck "a file in a new directory" eval 'printf x >"$mnt/d/f"'
  mkdir -p "$model/d"
  printf x >"$model/d/f"
  wcheck "rmdir of a directory holding a file: ENOTEMPTY" python3 -c '
import errno, os, sys
for p in sys.argv[1:]:
    try: os.rmdir(p)
    except OSError as e:
        if e.errno != errno.ENOTEMPTY: raise
    else: sys.exit(p + ": removed")' "$mnt/d" "$mnt/implicit"
  check "rmdir ENOTEMPTY: everything still there" eq keys "$(keys d/ | tr '\n' ' ')" "d/ d/f "
}

# ---- rename ----
case_rename() {
  need_case dirs
  printf 'to be renamed' >"$model/ren2.txt"
  wcheck "rename: a file to write" eval 'printf "to be renamed" >"$mnt/ren1.txt"'
  wcheck "rename: chmod 600 first" chmod 600 "$mnt/ren1.txt"
  wcheck "rename a file" mv "$mnt/ren1.txt" "$mnt/ren2.txt"
  check "rename: old name gone" key_absent ren1.txt
  check "rename: new name has the content" same_as_model ren2.txt
  head_of ren2.txt
  check "rename: metadata kept (mode 33152)" eq mode "$H_MODE" 33152
  mv "$model/ren2.txt" "$model/d/ren3.txt"
  wcheck "rename into another directory" mv "$mnt/ren2.txt" "$mnt/d/ren3.txt"
  check "rename into another directory: object moved" same_as_model d/ren3.txt
  check "rename into another directory: old key gone" key_absent ren2.txt

  printf 'new content' >"$model/over.txt"
  wcheck "rename over an existing file: the two files" eval \
    'printf "old content, longer" >"$mnt/over.txt" && printf "new content" >"$mnt/over-src.txt"'
  wcheck "rename over an existing file" mv "$mnt/over-src.txt" "$mnt/over.txt"
  check "rename over: the target has the new content" same_as_model over.txt
  check "rename over: the source key gone" key_absent over-src.txt
  check "rename over: read through the mount" eq content "$(cat "$mnt/over.txt")" "new content"

  printf 'part one, part two' >"$model/open-renamed.txt"
  wcheck "rename of a file open for writing, then close" python3 -c '
import os, sys
a, b = sys.argv[1:]
fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"part one, ")
os.rename(a, b)
os.write(fd, b"part two")
os.close(fd)' "$mnt/open-new.txt" "$mnt/open-renamed.txt"
  check "rename of an open file: the object under the new name" same_as_model open-renamed.txt
  check "rename of an open file: nothing under the old name" key_absent open-new.txt

  mkdir -p "$model/rd/sub"
  printf 'a' >"$model/rd/a"
  printf 'b' >"$model/rd/sub/b"
  wcheck "rename a directory: the tree" eval \
    'mkdir -p "$mnt/rd/sub" && printf a >"$mnt/rd/a" && printf b >"$mnt/rd/sub/b"'
  wcheck "rename a directory" mv "$mnt/rd" "$mnt/rd2"
  mv "$model/rd" "$model/rd2"
  check "rename a directory: every key moved" eq keys "$(keys rd2/ | tr '\n' ' ')" "rd2/ rd2/a rd2/sub/ rd2/sub/b "
  check "rename a directory: nothing left under the old name" eq keys "$(keys rd/)" ""
  check "rename a directory: content" same_as_model rd2/sub/b
  check "rename a directory: seen through the mount" eq content "$(cat "$mnt/rd2/sub/b")" b

  # past write.rename_dir_max (20 here): EXDEV, so mv copies then deletes
  mkdir -p "$model/big"
  for i in $(seq -w 1 25); do printf 'file %s' "$i" >"$model/big/f$i"; done
  wcheck "rename_dir_max: a directory of 25 files" cp -r "$model/big" "$mnt/big"
  wcheck "rename of a directory of 25 > write.rename_dir_max objects: EXDEV" python3 -c '
import errno, os, sys
try: os.rename(sys.argv[1], sys.argv[2])
except OSError as e:
    if e.errno != errno.EXDEV: raise
else: sys.exit("renamed")' "$mnt/big" "$mnt/big2"
  check "rename_dir_max: a log line names write.rename_dir_max" grep -q 'write.rename_dir_max' "$log"
  check "rename_dir_max: nothing moved" eq keys "$(keys big | grep -c '^big/f')/$(keys big2/ | wc -l)" 25/0
  wcheck "rename_dir_max: mv still moves it (copy + delete)" mv "$mnt/big" "$mnt/big2"
  mv "$model/big" "$model/big2"
  check "rename_dir_max: mv: every file under the new name" eq files "$(keys big2/ | grep -c '^big2/f')" 25
  check "rename_dir_max: mv: nothing under the old name" eq keys "$(keys big/)" ""
  check "rename_dir_max: mv: content" same_as_model big2/f17
}

# ---- symlinks ----
case_symlinks() {
  need_case rename
  wcheck "symlink" ln -s some/target.txt "$mnt/lnk"
  head_of lnk
  check "symlink: object body is the target" eq body "$(aws_ s3 cp "s3://$bucket/lnk" -)" some/target.txt
  check "symlink: size is the target's length" eq size "$H_SIZE" 15
  check "symlink: mode 41471 (0120777)" eq mode "$H_MODE" 41471
  check "symlink: readlink" eq readlink "$(readlink "$mnt/lnk")" some/target.txt
  check "symlink: a symbolic link through the mount" eq type "$(stat -c %F "$mnt/lnk")" "symbolic link"
  wcheck "symlink to a file in the mount" ln -s over.txt "$mnt/lnk2"
  check "symlink followed" eq content "$(cat "$mnt/lnk2")" "new content"
  wcheck "symlink: rm" rm "$mnt/lnk2"
  check "symlink: rm: object gone" key_absent lnk2
}

# ---- chmod, chown, utimens ----
case_meta() {
  need_case dirs
  printf 'metadata test' >"$model/meta.txt"
  wcheck "meta: a file" eval 'printf "metadata test" >"$mnt/meta.txt"'
  wcheck "chmod 600" chmod 600 "$mnt/meta.txt"
  head_of meta.txt
  check "chmod: x-amz-meta-mode 33152 (0100600)" eq mode "$H_MODE" 33152
  wcheck "chown 1234:5678" chown 1234:5678 "$mnt/meta.txt"
  wcheck "touch -d @1600000000" touch -d @1600000000 "$mnt/meta.txt"
  head_of meta.txt
  check "chown: x-amz-meta-uid/gid" eq uid:gid "$H_UID:$H_GID" 1234:5678
  check "chown, touch: mode kept" eq mode "$H_MODE" 33152
  check "touch -d: x-amz-meta-mtime" eq mtime "$H_MTIME" 1600000000
  check "chmod, chown, touch: content kept" same_as_model meta.txt
  check "chmod, chown, touch: stat through the mount" \
    eq stat "$(stat -c '%a %u:%g %Y' "$mnt/meta.txt")" "600 1234:5678 1600000000"
  wcheck "chmod 700 on a directory" chmod 700 "$mnt/d"
  head_of d/
  check "chmod on a directory: marker mode 16832" eq mode "$H_MODE" 16832
  wcheck "touch -d on a directory" touch -d @1500000000 "$mnt/d"
  head_of d/
  check "touch -d on a directory: marker mtime" eq mtime "$H_MTIME" 1500000000
  printf 'x' >"$model/meta-w.txt"
  wcheck "write after touch -d: mtime moves on" eval \
    'touch -d @1600000000 "$mnt/meta-w.txt" && printf x >"$mnt/meta-w.txt"'
  head_of meta-w.txt
  check "write after touch -d: x-amz-meta-mtime is now" in_range "$H_MTIME" $(($(date +%s) - 30)) $(($(date +%s) + 2))
}

# ---- the kernel's pages and our own writes ----
case_kpages() {
  gen 47 $((16 * MiB)) >"$model/kpages.bin"
  wcheck "kernel pages: a 16 MiB file" cp "$model/kpages.bin" "$mnt/kpages.bin"
  wcheck "kernel pages: a write of ours does not drop a reader's pages, nor its upload" \
    python3 "$here/kernel_pages.py" "$mnt/kpages.bin" "$mnt/.s3rdmafs-stats"
  head -c 4096 /dev/zero | tr '\0' k |
    dd of="$model/kpages.bin" bs=4096 seek=2 conv=notrunc status=none
  check "kernel pages: the object" eq md5 "$(key_md5 kpages.bin)" "$(md5 "$model/kpages.bin")"
  gen 53 $((64 * MiB)) >"$model/kdense.bin"
  # uploaded past the mount: the kernel holds none of its pages
  "$CLI" --parallel 8 put "$model/kdense.bin" "$bucket/kdense.bin" >/dev/null
  k0=$(stat_of read.kstore_bytes)
  check "kernel pages: a dense reader alone first (blocks handed to the kernel)" \
    python3 "$here/dense_check.py" "$mnt/kdense.bin" "$model/kdense.bin" "${S3R_TEST_SEED:-$RANDOM}"
  # (dense blocks, or the file fetched with the capacity a lone reader
  # leaves idle, read.idle_fetch: both go to the kernel the same way)
  check "kernel pages: the reader's blocks were handed to the kernel" \
    bash -c "[ $(stat_of read.kstore_bytes) -gt $k0 ]"
  check "kernel pages: dense readers and a writer, then the file as written" \
    python3 "$here/dense_write_race.py" "$mnt/kdense.bin" "$model/kdense.bin" 8 "${S3R_TEST_SEED:-$RANDOM}"
}

# ---- statfs ----
case_statfs() {
  wcheck "df on the mount" bash -c "df -P '$mnt' | grep -q ' $mnt\$'"
  wcheck "statfs: free space reported" python3 -c '
import os, sys
s = os.statvfs(sys.argv[1])
assert s.f_bsize > 0 and s.f_blocks > 0 and s.f_bavail > 0, s' "$mnt"
}

# ---- after a remount: everything comes from the server ----
case_remount() {
  need_case dirs
  need_case symlinks
  need_case meta
  need_case existing
  fs_umount "$mnt"
  mount_fs -o cache.dir="$tmp/cache"
  check "remount: chmod, chown, mtime" \
    eq stat "$(stat -c '%a %u:%g %Y' "$mnt/meta.txt")" "600 1234:5678 1600000000"
  check "remount: directory mode and mtime" eq stat "$(stat -c '%F %a %Y' "$mnt/d")" "directory 700 1500000000"
  check "remount: symlink" eq readlink "$(readlink "$mnt/lnk")" some/target.txt
  check "remount: empty directory" test -d "$mnt/a/b/c"
  check "remount: content" eq md5 "$(md5 "$mnt/rw.bin")" "$(md5 "$model/rw.bin")"
  check "remount: the file list" eq files \
    "$(cd "$mnt" && find . -type f | sort | tr '\n' ' ')" "$(cd "$model" && find . -type f | sort | tr '\n' ' ')"
}

# ---- s3fs reads our files ----
case_s3fs() {
  need_case small
  need_case dirs
  need_case symlinks
  need_case meta
  if ! command -v s3fs >/dev/null; then
    check "s3fs installed (scripts/setup.sh)" false
  else
    check "s3fs mounts the bucket" peer_mount_s3fs "$bucket" "$smnt"
    check "s3fs sees our chmod, chown, mtime" \
      eq stat "$(stat -c '%a %u:%g %Y' "$smnt/meta.txt")" "600 1234:5678 1600000000"
    check "s3fs sees our content" eq md5 "$(md5 "$smnt/meta.txt")" "$(md5 "$model/meta.txt")"
    check "s3fs sees our new file's mode and owner" eq stat "$(stat -c '%a %u:%g' "$smnt/small.txt")" "644 $me"
    check "s3fs sees our directory" eq stat "$(stat -c '%F %a' "$smnt/d")" "directory 700"
    check "s3fs sees our symlink" eq readlink "$(readlink "$smnt/lnk")" some/target.txt

    # ---- and we read s3fs's ----
    check "s3fs writes a file, chmod 640, chown, touch -d" eval \
      'printf theirs >"$smnt/theirs.txt" && chmod 640 "$smnt/theirs.txt" &&
       chown 2345:6789 "$smnt/theirs.txt" && touch -d @1500000000 "$smnt/theirs.txt"'
    check "s3fs makes a directory and a symlink" eval \
      'mkdir -m 750 "$smnt/theirdir" && ln -s theirs.txt "$smnt/theirlink"'
    peer_umount "$smnt" || true
    fs_umount "$mnt"
    mount_fs -o cache.dir="$tmp/cache"
    check "we see s3fs's chmod, chown, mtime" \
      eq stat "$(stat -c '%a %u:%g %Y' "$mnt/theirs.txt")" "640 2345:6789 1500000000"
    check "we see s3fs's content" eq content "$(cat "$mnt/theirs.txt")" theirs
    check "we see s3fs's directory" eq stat "$(stat -c '%F %a' "$mnt/theirdir")" "directory 750"
    check "we see s3fs's symlink" eq readlink "$(readlink "$mnt/theirlink")" theirs.txt
    check "we follow s3fs's symlink" eq content "$(cat "$mnt/theirlink")" theirs
  fi
}

for c in small streamed existing truncate unlink dirs rename symlinks meta \
         kpages statfs remount s3fs; do
  run_case "$c" "case_$c"
done
wcheck "no errors logged" bash -c "! grep -E 'error|ERROR' '$log' | grep -v rename_dir_max"

fs_umount "$mnt"
summary
