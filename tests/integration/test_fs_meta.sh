#!/usr/bin/env bash
# The rest of s3fs's metadata, both ways, s3rdmafs and s3fs on one bucket:
#   - ctime: chmod, chown, utimens and rename move it and leave the mtime; a
#     write moves both; stored as x-amz-meta-ctime and shown alike by s3fs
#     (and by a new mount of ours); s3fs's ctime and atime shown by us;
#   - atime: kept as stored (touch -a), no write on a read by default
#     (noatime); relatime stores it at the close of a read once it is not
#     newer than the mtime, strictatime at every such close;
#   - mknod: a regular file, a FIFO (which works as one), a socket and a
#     character device (rdev in x-amz-meta-rdev), each seen by s3fs with its
#     type and mode; s3fs's FIFO seen by us;
#   - directories: a marker's times as s3fs shows them, both ways;
#   - what a listing cannot say: with allow_other every name's metadata is
#     asked for before the kernel sees it (an `ls -l` then another user's
#     read of a 0600 file: refused), and mount.listing_attrs=false does the
#     same without allow_other.
#   - nanoseconds: utimensat's kept, stored as s3fs writes them
#     (SECONDS.NNNNNNNNN), read so by s3fs and by a new mount; s3fs's read
#     by us;
# The times this mount takes itself are whole seconds: the suite waits
# just over a second between changes whose times it compares.
#
#   test_fs_meta.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsm s3fs
smnt=$tmp/s3fs
export PEER_STATE_DIR=$tmp/peers
trap fs_cleanup_s3fs EXIT
umask 022

if ! command -v s3fs >/dev/null; then
  echo "# s3fs missing: apt-get install s3fs"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends s3fs >/dev/null ||
    { echo "not ok - s3fs installed (scripts/setup.sh)"; exit 1; }
fi

TTL=(-o cache.attr_ttl=1,cache.dir_ttl=1,cache.negative_ttl=1)
mount_ours() { fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache" "${TTL[@]}" "$@"; }
times() { stat -c '%Y %Z %X' "$1"; }        # mtime ctime atime
m_of() { stat -c %Y "$1"; }
c_of() { stat -c %Z "$1"; }
a_of() { stat -c %X "$1"; }
meta() { # KEY NAME: x-amz-meta-NAME of KEY on the server
  aws_ s3api head-object --bucket "$bucket" --key "$1" --query "Metadata.$2" --output text
}
etag() { aws_ s3api head-object --bucket "$bucket" --key "$1" --query ETag --output text; }
tick() { sleep 1.1; } # the times compared are whole seconds
ns_of() { python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print(s.st_atime_ns, s.st_mtime_ns)' "$1"; }
set_ns() { python3 -c 'import os, sys; os.utime(sys.argv[1], ns=(int(sys.argv[2]), int(sys.argv[3])))' "$@"; }
atime_from() { [ "$(meta r atime)" -ge "$1" ]; } # r's stored atime >= $1
# chmod_after_read PREFIX: for 20 new files, echo > f; cat f; chmod 600 f:
# each shows 0600 on the server 2 s later (an atime store, a copy carrying
# the mode it read, must not land after the chmod's own copy)
chmod_after_read() {
  local i bad=0 d=$mnt/$1
  mkdir "$d"
  for i in $(seq 1 20); do
    echo data >"$d/f$i"
    cat "$d/f$i" >/dev/null
    chmod 600 "$d/f$i"
  done
  sleep 2
  for i in $(seq 1 20); do
    [ "$(meta "$1/f$i" mode)" = 33152 ] || bad=$((bad + 1))
  done
  eq "files not 0600 on the server" "$bad" 0
}
# rm_after_read PREFIX: for 20 new files, echo > f; cat f; rm -f f: none is
# left on the mount, nor on the server 2 s later (an atime store started at
# the reader's close must not land after the DELETE and write f back)
rm_after_read() {
  local i left=0 d=$mnt/$1
  mkdir "$d"
  for i in $(seq 1 20); do
    echo data >"$d/f$i"
    cat "$d/f$i" >/dev/null
    rm -f "$d/f$i"
    [ ! -e "$d/f$i" ] || left=$((left + 1))
  done
  sleep 2
  eq "left on the mount" "$left" 0 &&
    eq "left on the server" "$(keys "$1/f" | grep -c . || true)" 0
}
# both NAME: the same mtime, ctime, atime, mode and owner through both mounts
both() {
  sleep 1.2 # (s3fs's stat cache, our attribute cache)
  eq "$1 through s3fs (< ours)" "$(stat -c '%Y %Z %X %A %u:%g' "$smnt/$1")" \
    "$(stat -c '%Y %Z %X %A %u:%g' "$mnt/$1")"
}
t0=$SECONDS

"$CLI" mb "$bucket"
mount_ours
check "s3fs mounts the bucket too" peer_mount_s3fs "$bucket" "$smnt" stat_cache_expire=1

# ---- ctime: through s3rdmafs ----
case_ctime() {
f=$mnt/f
echo one >"$f"
read -r m0 c0 _ <<<"$(times "$f")"
check "a new file: ctime is its mtime" eq ctime "$c0" "$m0"
check "  ... stored (x-amz-meta-ctime)" eq stored "$(meta f ctime)" "$c0"
tick
chmod 600 "$f"
check "chmod: the ctime moves" test "$(c_of "$f")" -gt "$c0"
check "  ... the mtime does not" eq mtime "$(m_of "$f")" "$m0"
check "  ... shown alike by s3fs" both f
tick
c1=$(c_of "$f")
chown 1234:5678 "$f"
check "chown: the ctime moves, the mtime does not" eval \
  '[ "$(c_of "$f")" -gt "$c1" ] && [ "$(m_of "$f")" = "$m0" ]'
tick
c1=$(c_of "$f")
touch -m -d @1600000000 "$f"
check "touch -m: the mtime as set, the ctime now" eval \
  '[ "$(m_of "$f")" = 1600000000 ] && [ "$(c_of "$f")" -gt "$c1" ]'
check "  ... shown alike by s3fs" both f
tick
c1=$(c_of "$f")
echo two >>"$f"
read -r m2 c2 _ <<<"$(times "$f")"
check "a write moves the mtime and the ctime together" eval \
  '[ "$m2" -gt 1600000000 ] && [ "$c2" = "$m2" ] && [ "$c2" -gt "$c1" ]'
check "  ... stored" eval '[ "$(meta f mtime)" = "$m2" ] && [ "$(meta f ctime)" = "$c2" ]'
tick
mv "$f" "$mnt/g"
check "rename: the ctime moves, the mtime does not" eval \
  '[ "$(c_of "$mnt/g")" -gt "$c2" ] && [ "$(m_of "$mnt/g")" = "$m2" ]'
check "  ... mode and owner go with it" eq kept "$(stat -c '%a %u:%g' "$mnt/g")" "600 1234:5678"
check "  ... stored" eq stored "$(meta g ctime)" "$(c_of "$mnt/g")"
tick
c3=$(c_of "$mnt/g")
touch -a -d @1500000000 "$mnt/g"
check "touch -a: the atime as set (x-amz-meta-atime), the ctime now" eval \
  '[ "$(a_of "$mnt/g")" = 1500000000 ] && [ "$(meta g atime)" = 1500000000 ] &&
   [ "$(c_of "$mnt/g")" -gt "$c3" ] && [ "$(m_of "$mnt/g")" = "$m2" ]'
check "  ... shown alike by s3fs" both g
# nanoseconds (s3fs writes and reads SECONDS.NNNNNNNNN)
echo ns >"$mnt/ns"
set_ns "$mnt/ns" 1600000000100000000 1600000000200000000
check "utimensat: the nanoseconds kept" eq ns "$(ns_of "$mnt/ns")" "1600000000100000000 1600000000200000000"
check "  ... stored as s3fs writes them" eq stored "$(meta ns mtime) $(meta ns atime)" \
  "1600000000.200000000 1600000000.100000000"
sleep 1.2
check "  ... read so by s3fs" eq s3fs "$(ns_of "$smnt/ns")" "1600000000100000000 1600000000200000000"
want=$(stat -c '%Y %Z %X %a %u:%g' "$mnt/g")
fs_umount "$mnt"
mount_ours
check "a new mount shows the same times, mode and owner" eq stat \
  "$(stat -c '%Y %Z %X %a %u:%g' "$mnt/g")" "$want"
check "  ... and the nanoseconds" eq ns "$(ns_of "$mnt/ns")" "1600000000100000000 1600000000200000000"
sleep 1.2 # (the listing's time to live)
ls -l "$mnt" >/dev/null # a listing refreshes what a HEAD told: kept
check "  ... and after a listing" eq stat "$(stat -c '%Y %Z %X %a %u:%g' "$mnt/g")" "$want"
}
run_case ctime case_ctime

# ---- theirs: s3fs's times shown by s3rdmafs ----
case_theirs() {
echo theirs >"$smnt/t"
tick
chmod 640 "$smnt/t"
check "s3fs stores a ctime apart from the mtime" eval \
  '[ "$(meta t ctime)" -gt "$(meta t mtime)" ]'
check "s3fs's file: times, mode and owner alike through both" both t
echo theirs >"$smnt/nt"
set_ns "$smnt/nt" 1600000000300000000 1600000000400000000
sleep 1.2
check "s3fs's nanoseconds read by us" eq ns "$(ns_of "$mnt/nt")" "1600000000300000000 1600000000400000000"
}
run_case theirs case_theirs

# ---- mknod: FIFOs, sockets, devices ----
case_mknod() {
check "mkfifo" mkfifo -m 0640 "$mnt/fifo"
check "mknod of a regular file" python3 -c \
  'import os, stat, sys; os.mknod(sys.argv[1], 0o604 | stat.S_IFREG)' "$mnt/reg"
check "a socket" python3 -c \
  'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$mnt/sock"
check "mknod of a character device (as root)" mknod -m 0600 "$mnt/null" c 1 3
check "each with its type, mode and device number" eq types \
  "$(stat -c '%n %F %a %t:%T' "$mnt/fifo" "$mnt/reg" "$mnt/sock" "$mnt/null" | sed "s|$mnt/||" | tr '\n' ' ')" \
  "fifo fifo 640 0:0 reg regular empty file 604 0:0 sock socket 755 0:0 null character special file 600 1:3 "
check "  ... the device number stored (x-amz-meta-rdev)" eq rdev "$(meta null rdev)" "$((1 << 8 | 3))"
check "  ... the type in x-amz-meta-mode, as s3fs keeps it" eq mode "$(meta fifo mode)" \
  "$(printf '%d' 0010640)"
sleep 1.2
check "s3fs sees the same types and modes (it keeps no device number)" eq s3fs \
  "$(stat -c '%n %F %a' "$smnt/fifo" "$smnt/reg" "$smnt/sock" "$smnt/null" | sed "s|$smnt/||" | tr '\n' ' ')" \
  "fifo fifo 640 reg regular empty file 604 sock socket 755 null character special file 600 "
check "the FIFO works as one (the kernel's pipe)" eq fifo \
  "$(timeout 10 bash -c '(echo through >"$1" &) ; cat "$1"' _ "$mnt/fifo")" through
mkfifo "$smnt/sfifo"
sleep 1.2
check "s3fs's FIFO is one here too" eq type "$(stat -c %F "$mnt/sfifo")" fifo
check "s3fs's FIFO: times, mode and owner alike" both sfifo
}
run_case mknod case_mknod

# ---- dirs: directories ----
case_dirs() {
mkdir "$mnt/d1"
check "our directory marker: times alike through s3fs" both d1
tick
c4=$(c_of "$mnt/d1")
chmod 700 "$mnt/d1"
check "chmod of a directory moves its ctime" test "$(c_of "$mnt/d1")" -gt "$c4"
mkdir "$smnt/d2"
tick
chmod 750 "$smnt/d2"
check "s3fs's directory marker: times and mode alike here" both d2
}
run_case dirs case_dirs

# ---- atime: the policy ----
case_atime() {
echo data >"$mnt/r"
touch -a -d @1500000000 "$mnt/r"
e0=$(etag r)
cat "$mnt/r" >/dev/null
sleep 1.5
check "noatime (the default): a read writes nothing" eval \
  '[ "$(etag r)" = "$e0" ] && [ "$(meta r atime)" = 1500000000 ]'
fs_umount "$mnt"
mount_ours -o relatime
now=$(date +%s)
cat "$mnt/r" >/dev/null
check "relatime: an atime older than the mtime is stored at close" \
  wait_for 10 0.2 atime_from "$now"
a1=$(meta r atime)
check "  ... the mtime and ctime kept" eq kept "$(meta r mtime) $(meta r ctime)" \
  "$(m_of "$mnt/r") $(c_of "$mnt/r")"
e1=$(etag r)
tick
cat "$mnt/r" >/dev/null
sleep 1.5
check "relatime: a newer atime is not written again" eval \
  '[ "$(etag r)" = "$e1" ] && [ "$(meta r atime)" = "$a1" ]'
check "relatime: cat f; rm -f f leaves no f (the atime store never lands after the rm)" \
  rm_after_read rmr
check "relatime: cat f; chmod 600 f keeps 0600 (the atime store never lands after the chmod)" \
  chmod_after_read cmr
fs_umount "$mnt"
mount_ours -o strictatime
tick
cat "$mnt/r" >/dev/null
check "strictatime: every close of a read stores it" \
  wait_for 10 0.2 atime_from "$((a1 + 1))"
check "strictatime: cat f; rm -f f leaves no f" rm_after_read rms
fs_umount "$mnt"
}
run_case atime case_atime

# ---- listing: what a listing cannot say ----
case_listing() {
need_case ctime # (g, its mode shown by a listing)
echo secret >"$smnt/secret"
chmod 600 "$smnt/secret"
echo public >"$smnt/g2"
mkdir "$smnt/many"
for k in $(seq 1 120); do echo "$k" >"$smnt/many/f$k"; done
chmod 600 "$smnt"/many/f*
# (attributes trusted a minute: what ls -l gave is what the kernel checks)
mount_ours -o allow_other -o cache.attr_ttl=60,cache.dir_ttl=60
# ls -l looks the names up one by one, in the listing's order: their HEADs
# go ahead of it, many at once (fsx_ahead), each name asked once
h0=$(stat_of fs.heads) a0=$(stat_of fs.heads_ahead)
modes=$(ls -l "$mnt/many" | awk 'NR > 1 { print $1 }' | sort | uniq -c | awk '{ print $1, $2 }')
h1=$(stat_of fs.heads) a1=$(stat_of fs.heads_ahead)
check "allow_other: ls -l of 120 files shows every one 0600" eq modes "$modes" "120 -rw-------"
check "  ... most names answered by HEADs asked ahead ($((a1 - a0)))" \
  in_range "$((a1 - a0))" 100 120
check "  ... each name asked once ($((h1 - h0)) HEADs)" in_range "$((h1 - h0))" 120 130
ls -l "$mnt" >/dev/null
check "allow_other: after ls -l, a 0600 file is shown 0600" eq mode \
  "$(stat -c %a "$mnt/secret")" 600
chmod 711 "$tmp" # (the way to the mount, for that user)
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
check "  ... another user reads a 0644 file" nobody cat "$mnt/g2"
refused() { ! "$@" 2>/dev/null; }
check "  ... but may not read it" refused nobody cat "$mnt/secret"
fs_umount "$mnt"
mount_ours -o mount.listing_attrs=false
check "listing_attrs=false: ls -l shows s3fs's modes at once" eq ls \
  "$(ls -l "$mnt" | awk '$NF == "secret" || $NF == "g" { print $1, $NF }' | tr '\n' ' ')" \
  "-rw------- g -rw------- secret "
fs_umount "$mnt"
}
run_case listing case_listing

# (end of the cases)

check "s3fs unmounts" peer_umount "$smnt"
check "no errors logged" bash -c "! grep -E 'error|ERROR' '$log'"
echo "# $((SECONDS - t0)) s"
summary
