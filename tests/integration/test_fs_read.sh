#!/usr/bin/env bash
# The read-only filesystem on a real mount of RGW, checked against the bucket
# through a second client (awscli): listings, contents 0 B .. 1 GiB, random
# preads, parallel readers, a 5000-entry directory, special and unshowable
# keys, changes behind the mount's back, stats.
#
#   test_fs_read.sh BUILD_BIN_DIR
#
# In cases (run_case, tests/lib/test.sh), each uploading only the data it
# needs (need_*): S3R_ONLY=REGEX runs the cases whose names match, e.g.
# S3R_ONLY='^listings$' tests/integration/with_rgw.sh \
#   tests/integration/test_fs_read.sh build/bin
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsr local
seed=${S3R_TEST_SEED:-$RANDOM}
sizes=(0 1 4095 4096 4097 1048575 1048576 1048577 10000000 $((128 * 1048576 + 12345)))
d128=size-$((128 * 1048576 + 12345))

# ---- the data, each uploaded once, by the first case that needs it ----
need_sizes() {
  [ -z "${have_sizes:-}" ] || return 0; have_sizes=1
  for s in "${sizes[@]}"; do
    gen "size-$s" "$s" >"$tmp/local/size-$s"
    "$CLI" --parallel 8 put "$tmp/local/size-$s" "$bucket/sizes/size-$s"
  done
}
need_big() {
  [ -z "${have_big:-}" ] || return 0; have_big=1
  gen 1g $((1024 * 1048576)) >"$tmp/local/1g"
  "$CLI" --parallel 8 put "$tmp/local/1g" "$bucket/big/1g.bin"
}
need_tree() {
  [ -z "${have_tree:-}" ] || return 0; have_tree=1
  local k long
  for k in "tree/a/b/c/deep.txt" "tree/a/one.txt" "tree/two.txt" \
           "sp/with space.txt" "sp/plus+sign.txt" "sp/unicodé ✓ 日本.txt" \
           "sp/percent%20x.txt" "sp/tilde~*'()!\$,;=:@.txt"; do
    printf '%s' "$k" | aws_ s3 cp - "s3://$bucket/$k" >/dev/null
  done
  # a "dir/" marker (mkdir by another tool) and an empty one
  aws_ s3api put-object --bucket "$bucket" --key marked/ >/dev/null
  printf 'x' | aws_ s3 cp - "s3://$bucket/marked/inside.txt" >/dev/null
  aws_ s3api put-object --bucket "$bucket" --key emptydir/ >/dev/null
  # keys FUSE cannot show
  long=$(printf 'L%.0s' $(seq 1 300))
  for k in "bad//double.txt" "bad/./dot.txt" "bad/../dotdot.txt" "bad/$long" \
           "clash" "clash/child.txt"; do
    printf 'x' | aws_ s3 cp - "s3://$bucket/$k" >/dev/null
  done
}
need_many() {
  [ -z "${have_many:-}" ] || return 0; have_many=1
  "$CLI" --parallel 32 fill "$bucket/many/f" 5000 10
}

"$CLI" mb "$bucket"
# (read.idle_fetch below the 128 MiB files: their random reads stay the
# density model's alone; the idle fetch has its own files below)
fs_mount "$bucket" "$mnt" "$log" -o cache.attr_ttl=1,cache.dir_ttl=1,read.idle_fetch=64M

# ---- listings ----
case_listings() {
  need_tree
  need_sizes
  # what should be visible: every key with no unshowable component
  aws_ s3api list-objects-v2 --bucket "$bucket" --query 'Contents[].Key' \
    --output json | python3 -c '
import json, sys
for k in json.load(sys.stdin):
    parts = k.split("/")
    if k.endswith("/"):
        parts = parts[:-1]
    if any(p in ("", ".", "..") or len(p.encode()) > 255 for p in parts):
        continue
    if k == "clash":  # a file hidden by the directory of the same name
        continue
    if not k.endswith("/"):
        print(k)' | sort >"$tmp/want-files"
  (cd "$mnt" && find . -type f | sed 's|^\./||' | sort) >"$tmp/got-files"
  check "find lists exactly the bucket's showable objects" \
    diff -u "$tmp/want-files" "$tmp/got-files"
  check "ls -lR works over the whole tree" bash -c "ls -lR '$mnt' >/dev/null"
  check "implicit directory" test -d "$mnt/tree/a/b/c"
  check "dir/ marker directory" test -f "$mnt/marked/inside.txt"
  check "empty marker directory" test -d "$mnt/emptydir"
  check "marker not shown as a file" bash -c "[ -z \"\$(ls -A '$mnt/emptydir')\" ]"
  check "clash shows the directory" test -d "$mnt/clash"
  check "unshowable keys logged" grep -q "is not shown" "$log"
  check "no entry named '' '.' '..' twice" bash -c \
    "[ \"\$(ls -a '$mnt/bad' | sort | uniq -d)\" = '' ]"
  check "sizes match the listing" bash -c "
    for s in ${sizes[*]}; do [ \$(stat -c %s '$mnt/sizes/size-'\$s) = \$s ] || exit 1; done"
}

# ---- contents ----
case_contents() {
  need_sizes
  need_big
  need_tree
  for s in "${sizes[@]}"; do
    check "md5 of $s-byte object" test "$(md5 "$mnt/sizes/size-$s")" = "$(md5 "$tmp/local/size-$s")"
  done
  check "md5 of 1 GiB object" test "$(md5 "$mnt/big/1g.bin")" = "$(md5 "$tmp/local/1g")"
  check "special-character keys read back" bash -c "
    for f in '$mnt'/sp/*; do [ \"sp/\$(basename \"\$f\")\" = \"\$(cat \"\$f\")\" ] || exit 1; done"
  check "deep file" test "$(cat "$mnt/tree/a/b/c/deep.txt")" = "tree/a/b/c/deep.txt"
  check "random preads, 128 MiB object" python3 "$here/pread_check.py" \
    "$mnt/sizes/size-$((128 * 1048576 + 12345))" "$tmp/local/size-$((128 * 1048576 + 12345))" 500 "$seed"
  check "random preads, 1 GiB object" python3 "$here/pread_check.py" \
    "$mnt/big/1g.bin" "$tmp/local/1g" 300 "$((seed + 1))"
}

# ---- dense random reads: whole blocks fetched, handed to the kernel ----
case_dense() {
  need_sizes
  "$CLI" --parallel 8 put "$tmp/local/$d128" "$bucket/dense.bin"
  g0=$(stat_of fs.get_bytes) k0=$(stat_of read.kstore_bytes) i0=$(stat_of read.idle_groups)
  check "dense random reads of 128 MiB, then in order: every byte right" \
    python3 "$here/dense_check.py" "$mnt/dense.bin" "$tmp/local/$d128" "$((seed + 2))"
  check "dense: blocks fetched whole and handed to the kernel" \
    bash -c "[ $(stat_of read.dense_blocks) -gt 0 ] && [ $(stat_of read.kstore_bytes) -gt $k0 ]"
  check "a file over read.idle_fetch: nothing fetched with idle capacity" \
    test "$(stat_of read.idle_groups)" = "$i0"
  # exact reads until the file is known dense, then a block at a time: well
  # under twice the file (a read of 256 KiB each time would be 1.0, a block
  # for every read 8)
  check "dense: fetched less than twice the file" \
    in_range "$(($(stat_of fs.get_bytes) - g0))" 1 $((2 * 128 * 1048576))
  # what the kernel holds goes at the next open when the object changed
  gen dense2 $((8 * 1048576)) >"$tmp/local/dense2"
  "$CLI" --parallel 8 put "$tmp/local/dense2" "$bucket/dense.bin"
  check "dense: the object replaced behind our back is read anew at open" \
    cmp "$mnt/dense.bin" "$tmp/local/dense2"
}

# ---- a lone random reader: its file fetched with the capacity it leaves ----
case_idle() {
  gen idle $((40 * 1048576 + 777)) >"$tmp/local/idle"
  gen idlea $((48 * 1048576)) >"$tmp/local/idlea"
  gen idleb $((48 * 1048576 + 5)) >"$tmp/local/idleb"
  for f in idle idlea idleb; do "$CLI" --parallel 8 put "$tmp/local/$f" "$bucket/$f.bin"; done
  i0=$(stat_of read.idle_groups)
  # (one read in each 2 MiB block, read.dense_block: none is fetched whole,
  # so every read of both files reaches the daemon, in turn)
  check "two files read at random in turn: every byte right" \
    python3 "$here/pair_check.py" "$mnt/idlea.bin" "$tmp/local/idlea" \
    "$mnt/idleb.bin" "$tmp/local/idleb" "$((seed + 3))"
  check "two files read at random in turn: neither read alone, nothing fetched with idle capacity" \
    test "$(stat_of read.idle_groups)" = "$i0"
  sleep 1 # (the GETs of the reads before are all answered)
  g0=$(stat_of fs.get_bytes)
  check "a lone random reader of 40 MiB, then in order: every byte right" \
    python3 "$here/dense_check.py" "$mnt/idle.bin" "$tmp/local/idle" "$((seed + 4))"
  check "a lone random reader: its file fetched with the capacity it left idle" \
    bash -c "[ $(stat_of read.idle_groups) -gt $i0 ]"
  check "a lone random reader: fetched less than twice the file" \
    in_range "$(($(stat_of fs.get_bytes) - g0))" 1 $((2 * 40 * 1048576))

  # a random reader closes and its file is unlinked at once: the groups
  # still on their way do not keep it open (an open file's object is
  # fetched whole at its unlink, to keep it for the open handles)
  gen idlec $((64 * 1048576)) >"$tmp/local/idlec"
  "$CLI" --parallel 8 put "$tmp/local/idlec" "$bucket/idlec.bin"
  b0=$(stat_of write.base_fetch_bytes) i0=$(stat_of read.idle_groups)
  check "a random reader's file unlinked right after its close" python3 -c '
import os, random, sys, time
p, stats, i0, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), 256 << 10
def stat(k):
    for line in open(stats):
        if line.startswith(k + " "):
            return int(line.split()[1])
fd = os.open(p, os.O_RDONLY)
slots = list(range(os.fstat(fd).st_size // n))
random.Random(int(sys.argv[4])).shuffle(slots)
for s in slots: # until groups are on their way for it
    os.pread(fd, n, s * n)
    if stat("read.idle_groups") > i0:
        break
r0 = stat("fs.releases")
os.close(fd)
# the kernel sends the release after close() returns: an unlink before
# it lands finds the file open (and fetches it whole to keep it)
for _ in range(1000):
    if stat("fs.releases") > r0:
        break
    time.sleep(0.01)
os.unlink(p)' "$mnt/idlec.bin" "$mnt/.s3rdmafs-stats" "$i0" "$((seed + 5))"
  check "... while groups were fetched for it with idle capacity" \
    bash -c "[ $(stat_of read.idle_groups) -gt $i0 ]"
  check "... not fetched to be kept for a handle: no open handle is left" \
    test "$(stat_of write.base_fetch_bytes)" = "$b0"
}

# ---- parallel readers ----
case_parallel() {
  need_big
  need_sizes
  want=$(md5 "$tmp/local/1g")
  pids=()
  for i in 1 2 3 4 5 6 7 8; do md5 "$mnt/big/1g.bin" >"$tmp/par-$i" & pids+=($!); done
  wait "${pids[@]}" # (a bare wait would wait for the daemon too)
  check "8 parallel readers of one file" bash -c "
    for i in 1 2 3 4 5 6 7 8; do [ \"\$(cat '$tmp/par-'\$i)\" = '$want' ] || exit 1; done"
  pids=()
  for s in "${sizes[@]:2}"; do md5 "$mnt/sizes/size-$s" >"$tmp/pard-$s" & pids+=($!); done
  wait "${pids[@]}"
  ok=true
  for s in "${sizes[@]:2}"; do
    [ "$(cat "$tmp/pard-$s")" = "$(md5 "$tmp/local/size-$s")" ] || ok=false
  done
  check "8 parallel readers of different files" $ok
}

# ---- a 5000-entry directory ----
case_many() {
  need_many
  lists0=$(stat_of fs.lists) heads0=$(stat_of fs.heads)
  check "5000 entries listed" test "$(ls "$mnt/many" | wc -l)" = 5000
  check "ls -l of 5000 entries" test "$(ls -l "$mnt/many" | grep -c '^-')" = 5000
  lists1=$(stat_of fs.lists)
  heads=$(($(stat_of fs.heads) - heads0))
  echo "# ls + ls -l of 5000 entries: $((lists1 - lists0)) LISTs"
  check "about one LIST per 1000 entries" test $((lists1 - lists0)) -le 12
  check "no HEAD per entry" test "$heads" -lt 1000
}

# ---- changes behind the mount's back, seen after the TTL ----
case_behind() {
  need_tree
  # what the mount holds first: the listings, the object to change
  ls "$mnt/tree" "$mnt/tree/a" >/dev/null
  cat "$mnt/tree/two.txt" >/dev/null
  printf 'new' | aws_ s3 cp - "s3://$bucket/tree/added.txt" >/dev/null
  printf 'changed content' | aws_ s3 cp - "s3://$bucket/tree/two.txt" >/dev/null
  aws_ s3 rm "s3://$bucket/tree/a/one.txt" >/dev/null
  sleep 2.2
  check "new object appears" test "$(cat "$mnt/tree/added.txt" 2>&1)" = new
  check "changed object re-read" test "$(cat "$mnt/tree/two.txt")" = "changed content"
  check "deleted object gone" bash -c "! ls '$mnt/tree/a' | grep -q one.txt"
  check "deleted object not openable" bash -c "! cat '$mnt/tree/a/one.txt' 2>/dev/null"
}

# ---- close-to-open: a changed object (and size) is seen at the next open,
# however long the TTLs ----
case_c2o() {
  fs_umount "$mnt"
  printf 'a' | aws_ s3 cp - "s3://$bucket/c2o.txt" >/dev/null
  fs_mount "$bucket" "$mnt" "$log" -o cache.attr_ttl=600,cache.dir_ttl=600
  check "close-to-open: first content" test "$(cat "$mnt/c2o.txt")" = a
  printf 'abcdef' | aws_ s3 cp - "s3://$bucket/c2o.txt" >/dev/null
  check "close-to-open: new size and content at the next open" \
    test "$(cat "$mnt/c2o.txt")" = abcdef
  printf 'xyz' | aws_ s3 cp - "s3://$bucket/c2o.txt" >/dev/null
  check "close-to-open: shrunk" test "$(cat "$mnt/c2o.txt")" = xyz
}

# ---- odds and ends ----
case_odds() {
  check "statfs for df" bash -c "df -h '$mnt' | grep -q '$mnt'"
  check "the stats file is read-only" bash -c "! echo x 2>/dev/null >'$mnt/.s3rdmafs-stats'"
  check "stats view" grep -q '^cache.hits ' "$mnt/.s3rdmafs-stats"
  check "s3rdmafs stats MOUNTPOINT" bash -c "'$FS' stats '$mnt' | grep -q '^s3.requests '"
  check "stats file not listed" bash -c "! ls -a '$mnt' | grep -q s3rdmafs-stats"
}

for c in listings contents dense idle parallel many behind c2o odds; do
  run_case "$c" "case_$c"
done
check "no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"

fs_umount "$mnt"
summary
