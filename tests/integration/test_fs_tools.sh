#!/usr/bin/env bash
# Standard tools and large files on a real mount of RGW, every result checked
# on the bucket through a second client (awscli, and s3rdma-cli for the 2 GiB
# object): a tree of 500 files copied in with cp -r, tar -x and rsync -a
# (twice: the second run transfers nothing), a 2 GiB streamed write, an
# overwrite in the middle of a 64 MiB object, appends, the rename of a
# 100-file directory, editors that write a temporary file and rename it, and
# rm -r of everything.
#
#   test_fs_tools.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fst model dl cache
model=$tmp/model # what the mount should hold, on local disk
dl=$tmp/dl       # downloads through the second client
umask 022
MiB=1048576
guard_s=300 # seconds an operation on the mount may take
fspid='' mopts=()

# ---- helpers (and test.sh's key_md5, keys, eq, in_range) ----
# shellcheck source=tests/lib/write.sh
. "$here/../lib/write.sh"
# want_keys PREFIX DIR: the keys a copy of local DIR at PREFIX should make:
# PREFIX/, a dir/ marker for each directory, each file
want_keys() {
  { echo "$1/"
    (cd "$2" && find . -mindepth 1 -type d -printf "$1/%P/\n" && find . -type f -printf "$1/%P\n")
  } | LC_ALL=C sort
}
# show_diff WHAT DIFF-OUTPUT: the first lines missing and the first extra
show_diff() {
  echo "# $1: $(grep -c '^<' <<<"$2") lines only wanted, $(grep -c '^>' <<<"$2") only got"
  { grep '^<' <<<"$2" | head -n 8; grep '^>' <<<"$2" | head -n 8; } | sed 's/^/#   /'
}
# same_keys PREFIX DIR: the bucket holds exactly want_keys PREFIX DIR
same_keys() {
  local d
  d=$(diff <(want_keys "$1" "$2") <(keys "$1/")) && return 0
  show_diff "keys under $1/ (< wanted, > in the bucket)" "$d"
  return 1
}
# same_tree PREFIX DIR: every object under PREFIX/, downloaded with awscli,
# equals the file in DIR (dir/ markers left out)
same_tree() {
  rm -rf "$dl/t"
  aws_ s3 cp --recursive --quiet --exclude '*/' "s3://$bucket/$1/" "$dl/t" || return 1
  diff -r -x empty "$2" "$dl/t" | head -n 20 | sed 's/^/# /'
  local rc=${PIPESTATUS[0]}
  rm -rf "$dl/t"
  return "$rc"
}
# attrs DIR [owner]: a line per file (path mode size [uid:gid mtime]) and
# per directory (path mode), as stat shows them
attrs() {
  local f='%n %a %s' d='%n %a'
  [ "${2:-}" = owner ] && f='%n %a %s %u:%g %Y' && d='%n %a %u:%g'
  (cd "$1" && find . -mindepth 1 -type f -print0 | LC_ALL=C sort -z | xargs -0 stat -c "$f" &&
    find . -mindepth 1 -type d -print0 | LC_ALL=C sort -z | xargs -0 stat -c "$d")
}
same_attrs() { # DIR-A DIR-B [owner]
  local d
  d=$(diff <(attrs "$1" "${3:-}") <(attrs "$2" "${3:-}")) && return 0
  show_diff "stat (< $1, > $2)" "$d"
  return 1
}
timed() { # NAME CMD...: run CMD, print how long it took
  local t0=$SECONDS rc=0
  "${@:2}" || rc=$?
  echo "# $1: $((SECONDS - t0)) s"
  return "$rc"
}

# ---- the local tree: 500 files in 10 x 5 directories, 0 B .. 6 MiB, some
# 0600, 0755, owned by 1234:5678, mtimes with nanoseconds; one empty
# directory ----
python3 - "$model/tree" <<'EOF'
import os, sys
root = sys.argv[1]
block = os.urandom(1 << 20) * 7
n = 0
for d in range(10):
    for s in range(5):
        dd = os.path.join(root, "d%d" % d, "s%d" % s)
        os.makedirs(dd)
        for f in range(10):
            size = 6 * (1 << 20) + 3 if n == 1 else (n * 7919) % 100000
            name = "f %d.txt" % f if f == 9 else "f%d.bin" % f
            p = os.path.join(dd, name)
            off = (n * 4099) % (1 << 20)
            with open(p, "wb") as fh:
                fh.write(block[off:off + size])
            os.chmod(p, 0o600 if n % 7 == 0 else 0o755 if n % 11 == 0 else 0o644)
            if n % 13 == 0:
                os.chown(p, 1234, 5678)
            t = 1500000000 * 10**9 + n * 3600 * 10**9 + (n * 123456789) % 10**9
            os.utime(p, ns=(t, t))
            n += 1
os.makedirs(os.path.join(root, "d0", "empty"))
EOF
"$CLI" mb "$bucket"
mount_fs -o cache.dir="$tmp/cache" -o write.part_size=5M

# ---- cp: cp -r ----
case_cp() {
check "cp -r of 500 files" timed "cp -r" guard cp -r "$model/tree" "$mnt/cp"
check "cp -r: exactly the keys of the tree" same_keys cp "$model/tree"
check "cp -r: every object's content" same_tree cp "$model/tree"
check "cp -r: sizes and modes through the mount" same_attrs "$model/tree" "$mnt/cp"
}
run_case cp case_cp

# ---- tar: tar -x ----
case_tar() {
tar -cf "$tmp/tree.tar" -C "$model/tree" .
check "tar -x of 500 files" timed "tar -x" guard eval 'mkdir "$mnt/tar" && tar -xf "$tmp/tree.tar" -C "$mnt/tar"'
check "tar -x: exactly the keys of the tree" same_keys tar "$model/tree"
check "tar -x: every object's content" same_tree tar "$model/tree"
check "tar -x: modes, owners, mtimes through the mount" same_attrs "$model/tree" "$mnt/tar" owner
head_of "tar/d0/s0/f0.bin" # n = 0: 0600, 1234:5678, mtime 1500000000
check "tar -x: metadata on the server" eq mode,uid,gid,mtime \
  "$H_MODE $H_UID $H_GID $H_MTIME" "33152 1234 5678 1500000000"
head_of "tar/d1/s0/f1.bin" # n = 51: 0644, root
check "tar -x: metadata on the server (2)" eq mode,uid,gid,mtime \
  "$H_MODE $H_UID $H_GID $H_MTIME" "33188 0 0 $((1500000000 + 51 * 3600))"
}
run_case tar case_tar

# ---- rsync: rsync -a, twice ----
case_rsync() {
if ! command -v rsync >/dev/null; then
  check "rsync installed (scripts/setup.sh)" false
else
  check "rsync -a of 500 files" timed "rsync -a" guard eval \
    'rsync -a --stats "$model/tree/" "$mnt/rs/" >"$tmp/rsync1"'
  check "rsync -a: 500 files transferred" \
    eq transferred "$(grep 'regular files transferred' "$tmp/rsync1")" "Number of regular files transferred: 500"
  check "rsync -a: exactly the keys of the tree (no temporary file left)" same_keys rs "$model/tree"
  check "rsync -a: every object's content" same_tree rs "$model/tree"
  check "rsync -a: modes, owners, mtimes through the mount" same_attrs "$model/tree" "$mnt/rs" owner
  head_of "rs/d3/s3/f 9.txt" # n = 189: 0600, root
  check "rsync -a: metadata on the server" eq mode,uid,gid,mtime \
    "$H_MODE $H_UID $H_GID $H_MTIME" "33152 0 0 $((1500000000 + 189 * 3600))"
  check "rsync -a again" timed "rsync -a again" guard eval \
    'rsync -a --stats -i "$model/tree/" "$mnt/rs/" >"$tmp/rsync2"'
  check "rsync -a again: nothing transferred" \
    eq transferred "$(grep 'regular files transferred' "$tmp/rsync2")" "Number of regular files transferred: 0"
  echo "# rsync -a again: $(grep -c '^[<>ch.*]' "$tmp/rsync2" || true) items changed"
  grep '^[<>ch.*]' "$tmp/rsync2" | head -n 5 | sed 's/^/#   /' || true
  check "rsync -a again: keys unchanged" same_keys rs "$model/tree"
fi
}
run_case rsync case_rsync

# ---- stream: a 2 GiB streamed write ----
case_stream() {
size=$((2048 * MiB))
want=$(gen 2g "$size" | md5sum | cut -d' ' -f1)
check "2 GiB: mkdir" guard mkdir "$mnt/big"
check "2 GiB: streamed write (dd bs=1M)" timed "2 GiB write" guard eval \
  'gen 2g "$size" | dd of="$mnt/big/2g.bin" bs=1M iflag=fullblock status=none'
[ -r "/proc/$fspid/status" ] && echo "# daemon peak RSS: $(awk '/VmHWM/ {print $2, $3}' "/proc/$fspid/status")"
head_of big/2g.bin
check "2 GiB: size on the server when close returns" eq size "$H_SIZE" "$size"
check "2 GiB: multipart, 410 parts of 5 MiB" eq etag-suffix "${H_ETAG##*-}" 410
check "2 GiB: mode metadata" eq mode "$H_MODE" 33188
t0=$SECONDS
got=$("$CLI" --parallel 8 get "$bucket/big/2g.bin" - | md5sum | cut -d' ' -f1) || true
echo "# 2 GiB read back with s3rdma-cli: $((SECONDS - t0)) s"
check "2 GiB: md5 through s3rdma-cli" eq md5 "$got" "$want"
check "2 GiB: size through the mount" eq size "$(stat -c %s "$mnt/big/2g.bin")" "$size"
check "2 GiB: rm" guard rm "$mnt/big/2g.bin"
check "2 GiB: object gone" eq keys "$(keys big/)" big/
}
run_case stream case_stream

# ---- overwrite: in the middle of a 64 MiB object ----
case_overwrite() {
gen 64m $((64 * MiB)) >"$model/mid.bin"
aws_ s3 cp --quiet "$model/mid.bin" "s3://$bucket/mid.bin" \
  --metadata mode=33256,uid=4242,gid=4343,mtime=1600000000
gen patch $((3 * MiB + 123)) >"$tmp/patch"
dd if="$tmp/patch" of="$model/mid.bin" bs=1M seek=$((30 * MiB + 7)) oflag=seek_bytes \
  conv=notrunc status=none
t0=$(date +%s)
check "64 MiB: dd conv=notrunc of 3 MiB at 30 MiB + 7" timed "64 MiB middle overwrite" \
  guard dd if="$tmp/patch" of="$mnt/mid.bin" bs=1M seek=$((30 * MiB + 7)) oflag=seek_bytes \
  conv=notrunc status=none
t1=$(date +%s)
check "64 MiB: the whole object on the server" same_as_model mid.bin
head_of mid.bin
check "64 MiB: mode, owner kept" eq mode,uid,gid "$H_MODE $H_UID $H_GID" "33256 4242 4343"
check "64 MiB: mtime is the write's" in_range "$H_MTIME" $((t0 - 2)) $((t1 + 2))
check "64 MiB: read back through the mount" eq md5 "$(md5 "$mnt/mid.bin")" "$(md5 "$model/mid.bin")"
}
run_case overwrite case_overwrite

# ---- appends: >> ----
case_appends() {
gen app $((10 * MiB + 1)) >"$model/app.bin"
"$CLI" put "$model/app.bin" "$bucket/app.bin" >/dev/null
gen tail $((3 * MiB + 1)) >"$tmp/tail"
cat "$tmp/tail" >>"$model/app.bin"
check "append 3 MiB to a 10 MiB object (cat >>)" timed "append" guard eval 'cat "$tmp/tail" >>"$mnt/app.bin"'
check "append: the whole object on the server" same_as_model app.bin
check "append: read back through the mount" eq md5 "$(md5 "$mnt/app.bin")" "$(md5 "$model/app.bin")"
for i in 1 2 3; do echo "line $i" >>"$model/log.txt"; done
check "echo >> three times to a new file" guard eval \
  'echo "line 1" >>"$mnt/log.txt" && echo "line 2" >>"$mnt/log.txt" && echo "line 3" >>"$mnt/log.txt"'
check "echo >>: object on the server" same_as_model log.txt
}
run_case appends case_appends

# ---- rename: a 100-file directory ----
case_rename() {
mkdir -p "$model/r100/sub"
for i in $(seq -w 1 90); do printf 'top %s\n' "$i" >"$model/r100/f$i"; done
for i in $(seq -w 1 10); do printf 'sub %s\n' "$i" >"$model/r100/sub/g$i"; done
check "100-file directory: cp -r" guard cp -r "$model/r100" "$mnt/r100"
check "100-file directory: mv" timed "rename of a 100-file directory" guard mv "$mnt/r100" "$mnt/r100b"
check "100-file directory: exactly the keys under the new name" same_keys r100b "$model/r100"
check "100-file directory: nothing under the old name" eq keys "$(keys r100/)" ""
check "100-file directory: every object's content" same_tree r100b "$model/r100"
check "100-file directory: through the mount" same_attrs "$model/r100" "$mnt/r100b"
check "100-file directory: old name gone from the mount" test ! -e "$mnt/r100"
}
run_case rename case_rename

# ---- editors: write a temporary file, fsync, rename over ----
case_editors() {
mkdir -p "$model/edit"
printf 'first version\n' >"$model/edit/doc.txt"
chmod 640 "$model/edit/doc.txt"
check "editor: the original" guard eval 'mkdir "$mnt/edit" && printf "first version\n" >"$mnt/edit/doc.txt" &&
  chmod 640 "$mnt/edit/doc.txt"'
printf 'second version, longer\n' >"$model/edit/.doc.txt.tmp"
# the temporary file held by a process of its own that never forks (every
# close of a descriptor of the file, a child's inherited copy too, flushes)
coproc W { exec python3 -u -c "$writer_py"; }
check "editor: write the temporary file" eval 'w_do open "$mnt/edit/.doc.txt.tmp" &&
  w_do write "$model/edit/.doc.txt.tmp"'
check "editor: fsync and fchmod it" eval 'w_do fsync && w_do fchmod 416' # 0640
check "editor: the temporary file complete on the server after fsync" same_as_model edit/.doc.txt.tmp
check "editor: close it" w_do close
w_do quit || true
check "editor: rename over the original" guard mv "$mnt/edit/.doc.txt.tmp" "$mnt/edit/doc.txt"
mv "$model/edit/.doc.txt.tmp" "$model/edit/doc.txt"
check "editor: the new version on the server" same_as_model edit/doc.txt
head_of edit/doc.txt
check "editor: its mode (33184)" eq mode "$H_MODE" 33184
check "editor: read through the mount" eq content "$(cat "$mnt/edit/doc.txt")" "second version, longer"
printf 'alpha beta\ngamma\n' >"$model/edit/sed.txt"
check "sed -i: the original" guard eval 'printf "alpha beta\ngamma\n" >"$mnt/edit/sed.txt"'
sed -i 's/beta/BETA/' "$model/edit/sed.txt"
check "sed -i (temporary file + rename)" guard sed -i 's/beta/BETA/' "$mnt/edit/sed.txt"
check "sed -i: the new version on the server" same_as_model edit/sed.txt
if command -v vim >/dev/null; then
  printf 'one\ntwo\n' >"$model/edit/vim.txt"
  check "vim: the original" guard eval 'printf "one\ntwo\n" >"$mnt/edit/vim.txt"'
  vim -Nu NONE -n -es -c '%s/two/TWO/' -c wq "$model/edit/vim.txt" </dev/null
  check "vim -e: edit and :wq" guard eval \
    'vim -Nu NONE -n -e -c "set verbose=1" -c "%s/two/TWO/" -c wq "$mnt/edit/vim.txt" </dev/null >"$tmp/vim.out" 2>&1'
  check "vim: no warning (such as: the file has been changed since reading it)" \
    bash -c "! grep -a WARNING '$tmp/vim.out'"
  check "vim: the new version on the server" same_as_model edit/vim.txt
else
  echo "# vim not installed: its case left out"
fi
check "editors: no temporary or backup file left" same_keys edit "$model/edit"
}
run_case editors case_editors

# ---- rm: rm -r ----
case_rm() {
need_case cp # (cp/, removed first)
check "rm -r of a 500-file tree" timed "rm -r" guard rm -r "$mnt/cp"
check "rm -r: nothing left under it" eq keys "$(keys cp/)" ""
check "rm -r of everything" guard eval \
  'set -- "$mnt"/*; [ -e "$1" ] || shift; [ $# = 0 ] || rm -r "$@"'
check "rm -r of everything: the bucket is empty" eq keys "$(keys "")" ""
check "rm -r of everything: the mount is empty" eq ls "$(ls -A "$mnt")" ""
}
run_case rm case_rm

# (end of the cases)

check "no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"
fs_umount "$mnt"
summary
