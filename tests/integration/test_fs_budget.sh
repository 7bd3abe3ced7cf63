#!/usr/bin/env bash
# The round-trip budget per operation (docs/paths.md, "Round
# trips"), held by counting the requests each one sends (the stats file's
# s3.request_seconds{op=...}.count, every exchange the server answered)
# and the most sent at once (s3.max_inflight_seen: requests of one round
# go together), each on a fresh mount:
#   - the mount's first connections made at mount (4 HEADs of the bucket,
#     s3.warm_requests, in no request count), so that a cold lookup's
#     round makes none;
#   - a cold lookup: one round (GET the name's first bytes (its metadata
#     from the GET's headers), HEAD its marker, LIST below it (its first
#     64 names, kept as its page when they are all), and with
#     cache.burst_ttl set the directory's first page, all at once); a
#     page then answers files with their GET alone (their s3fs metadata
#     and first bytes), subdirectories with their marker's HEAD and their
#     own page at once, and absent names with their whole round; a
#     directory ls listed answers with none;
#   - a small file cold: its lookup's GET brought all of it, so its open
#     and read send nothing more; a larger one's read sends its GET; a
#     file replaced after its lookup's GET and opened later than that GET
#     is fresh (100 ms) reads the new object;
#   - open and first read of a file whose attributes a lookup or listing
#     gave: one GET, no HEAD; and when the object changed since, the new
#     bytes (the first GET's If-Match fails, the open's question is asked
#     then);
#   - create, write and close of a small new file (one descriptor) in a
#     listed directory: one PUT; through a shell's redirect, two PUTs
#     (the second conditional on the first's ETag, no HEAD);
#   - ls -l of 1000 names under a directory marker: one LIST, no HEAD;
#   - mkdir: one PUT; rm: one DELETE;
#   - a directory longer than one page: a cold lookup lists it once, then
#     asks for the name only;
#   - far from the server (the fault proxy holding each answer 20 ms): the
#     round trip measured (s3.round_trip_us), and a sequential reader's
#     window grown past read.readahead_max to fill it.
#
#   test_fs_budget.sh BUILD_BIN_DIR          (under with_rgw.sh)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsbudget local

# requests of one kind so far (0 before the first)
nreq() { local v; v=$(stat_of "s3.request_seconds{op=$1,phase=total}.count"); echo "${v:-0}"; }
# counts: "get put head list delete" requests so far (PUTs of directories'
# times, stored on their markers in the background after a change in them,
# left out: fs.dir_times_stored, none on an operation's path; read while
# none is on the wire, and none landed between the reads)
counts() {
  local i s1 d1 line d2 s2
  for ((i = 0; i < 200; i++)); do
    s1=$(stat_of fs.dir_times_storing) d1=$(stat_of fs.dir_times_stored)
    line="$(nreq get) $(($(nreq put) - d1)) $(nreq head) $(nreq list) $(nreq delete)"
    d2=$(stat_of fs.dir_times_stored) s2=$(stat_of fs.dir_times_storing)
    [ "$s1$s2" = 00 ] && [ "$d1" = "$d2" ] && break
    sleep 0.05
  done
  echo "$line"
}
# spent NAME WANT BEFORE: the requests since BEFORE (counts) are WANT
# ("get put head list delete")
spent() {
  local -a was now
  read -ra was <<<"$3"
  read -ra now <<<"$(counts)"
  local got="$((now[0] - was[0])) $((now[1] - was[1])) $((now[2] - was[2]))"
  got+=" $((now[3] - was[3])) $((now[4] - was[4]))"
  check "$1: get put head list delete = $2" eq "$1" "$got" "$2"
}
# (cache.burst_ttl, off by default: a cold lookup's page of its directory,
# long enough that no count depends on the time a step takes; no RDMA
# transport: with the default, a mount's first PUT to a server without
# RDMA carries a token the server ignores, and is sent again: two
# exchanges, whichever operation makes it)
mount_fresh() {
  fs_umount "$mnt" >/dev/null 2>&1 || true
  fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache",cache.burst_ttl=30 \
    -o rdma.transport=off
}

"$CLI" mb "$bucket"
: >"$tmp/local/empty"
"$CLI" put "$tmp/local/empty" "$bucket/d/"
for i in 1 2 3 4 5 6 7; do
  head -c 4096 /dev/urandom >"$tmp/local/f$i"
  "$CLI" put "$tmp/local/f$i" "$bucket/d/f$i"
done
"$CLI" put "$tmp/local/empty" "$bucket/many/"
"$CLI" put "$tmp/local/empty" "$bucket/w/"
"$CLI" put "$tmp/local/f1" "$bucket/w/old"
"$CLI" --parallel 32 fill "$bucket/many/k" 1000 16 >/dev/null
"$CLI" --parallel 32 fill "$bucket/big/k" 1001 16 >/dev/null
head -c 102400 /dev/urandom >"$tmp/local/big"
"$CLI" put "$tmp/local/empty" "$bucket/e/"
"$CLI" put "$tmp/local/big" "$bucket/e/big"
"$CLI" put "$tmp/local/f2" "$bucket/e/f2"
for k in p/ p/q/; do "$CLI" put "$tmp/local/empty" "$bucket/$k"; done
"$CLI" put "$tmp/local/f3" "$bucket/p/q/f3"

# conns: the daemon's TCP connections to the S3 endpoint, established now
port=${S3R_ENDPOINT##*:}
port=${port%%/*}
conns() {
  ss -Htnp state established "( dport = :$port )" | grep -c "pid=$FS_PID," || true
}

# ---- lookups: cold and listed ----
case_lookups() {
mount_fresh
bef=$(counts)
warmed() { [ "$(stat_of s3.warm_requests)" = 4 ]; }
check "warm: 4 connections made at mount (s3.warm_requests)" \
  wait_for 10 0.1 warmed
# (fs_mount asks no request: the 4 connections are the warmers' alone)
check "  ... and held, ready: $(conns) established" test "$(conns)" -ge 4
check "  ... counted in no request count" eq "counts" "$(counts)" "$bef"
check "  ... nor in s3.attempts" eq "s3.attempts" "$(stat_of s3.attempts)" \
  "$(stat_of s3.requests)"
c0=$(conns)
check "cold: stat d/f1" stat "$mnt/d/f1" >/dev/null
check "  ... its round made no connection: $(conns) established" \
  test "$(conns)" -le "$c0"
# two lookups, one round each: d cold (a GET, a HEAD of its marker, a LIST
# below it that brings its names, a LIST of the root's page, sent
# together), f1 from d's page (its GET alone)
spent "cold lookups of d and d/f1 (one round each)" "2 0 1 2 0" "$bef"
check "  ... sent at once: s3.max_inflight_seen $(stat_of s3.max_inflight_seen)" \
  test "$(stat_of s3.max_inflight_seen)" -ge 4
# a path three names down: p from the root's page (the lookup of d made
# it), q from p's page (each its marker's HEAD and its own page at once),
# f3 from q's page (its GET)
bef=$(counts)
check "cold: cat p/q/f3" eq "md5 f3" "$(md5 "$mnt/p/q/f3")" "$(md5 "$tmp/local/f3")"
spent "a path three names down, cold: three rounds, no HEAD or LIST of a file's name" \
  "1 0 2 2 0" "$bef"
bef=$(counts)
check "paged: d/nosuch absent" test ! -e "$mnt/d/nosuch"
# (absent from the page: asked, as another client may have made it since;
# trusted only while this mount makes names there: see the creates)
spent "an absent name a cold lookup's page does not show: asked (no page again)" "1 0 1 1 0" "$bef"
bef=$(counts)
check "listed: stat d/f2" stat "$mnt/d/f2" >/dev/null
spent "a file a lookup's page showed: its metadata (and bytes), its GET alone" "1 0 0 0 0" "$bef"
bef=$(counts)
check "ls d" ls "$mnt/d" >/dev/null
check "listed by ls: stat d/f6" stat "$mnt/d/f6" >/dev/null
spent "ls (one LIST), then a lookup answered by its listing" "0 0 0 1 0" "$bef"
}
run_case lookups case_lookups

# ---- open: open and read ----
case_open() {
need_case lookups # (its mount, d and p listed)
check "stat d/f3" stat "$mnt/d/f3" >/dev/null
bef=$(counts)
check "known: cat d/f3" eq "md5 f3" "$(md5 "$mnt/d/f3")" "$(md5 "$tmp/local/f3")"
spent "open and first read of a file looked up: one GET" "1 0 0 0 0" "$bef"
bef=$(counts)
check "listed: cat d/f7" eq "md5 f7" "$(md5 "$mnt/d/f7")" "$(md5 "$tmp/local/f7")"
spent "lookup, open and first read of a file ls listed: one GET" "1 0 0 0 0" "$bef"
check "  ... counted as opens on known attributes" test "$(stat_of fs.opens_known)" -ge 2
# the object replaced (longer) between the listing and the open: the new
# bytes, all of them (the kernel's size from the listing is dropped)
head -c 9000 /dev/urandom >"$tmp/local/f4new"
"$CLI" put "$tmp/local/f4new" "$bucket/d/f4"
check "changed since listed: cat d/f4 reads the new object" \
  eq "md5 f4" "$(md5 "$mnt/d/f4")" "$(md5 "$tmp/local/f4new")"
check "  ... asked when its first GET found it changed" \
  test "$(stat_of fs.opens_reverified)" -ge 1
check "  ... and stat says its new size" eq size "$(stat -c %s "$mnt/d/f4")" 9000
# ... shorter
head -c 100 /dev/urandom >"$tmp/local/f5new"
"$CLI" put "$tmp/local/f5new" "$bucket/d/f5"
check "changed since listed (shorter): cat d/f5 reads the new object" \
  eq "md5 f5" "$(md5 "$mnt/d/f5")" "$(md5 "$tmp/local/f5new")"
check "no operation failed" eq fs.errors "$(stat_of fs.errors)" 0
}
run_case open case_open

# ---- create: create, mkdir, rm ----
case_create() {
need_case lookups # (its mount, d and p listed)
check "ls w" ls "$mnt/w" >/dev/null
bef=$(counts)
for i in 1 2 3 4 5; do
  check "create: w/new$i written and closed (one descriptor)" \
    python3 -c 'import sys; f = open(sys.argv[1], "w"); f.write("hello"); f.close()' "$mnt/w/new$i"
done
# in a directory ls listed: their lookups answered by it, a PUT at each close
spent "creates in a listed directory: one PUT each" "0 5 0 0 0" "$bef"
check "  ... on the server" eq new1 "$(key_md5 w/new1)" "$(printf hello | md5sum | cut -d' ' -f1)"
# a shell's redirect (open, dup2, close, then the write): the empty file's
# PUT at the first close, the bytes' at the last, conditional on the ETag
# of the object this mount just stored (no HEAD before it)
bef=$(counts)
check "redirect: echo hi > w/redir" bash -c 'echo hi >"$1"' _ "$mnt/w/redir"
spent "a shell's redirect: a PUT at each close, no HEAD" "0 2 0 0 0" "$bef"
check "  ... on the server" eq redir "$(key_md5 w/redir)" "$(echo hi | md5sum | cut -d' ' -f1)"
# ... and where another client replaced the object between the two closes:
# the second PUT's condition fails, the object is asked for, and the last
# close wins
printf theirs >"$tmp/local/theirs"
bef=$(counts)
check "replaced between two closes: the last close wins" python3 -c '
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.close(os.dup(fd))  # a close: the empty file stored
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
os.write(fd, b"mine")
os.close(fd)' "$mnt/w/redir2" "$CLI" put "$tmp/local/theirs" "$bucket/w/redir2"
check "  ... on the server: ours" eq redir2 "$(key_md5 w/redir2)" "$(printf mine | md5sum | cut -d' ' -f1)"
# (the empty file's PUT, the second PUT refused by its If-Match (412), the
# HEAD that asks what is there, the PUT conditional on that; the CLI's PUT
# goes to RGW itself)
spent "  ... the second PUT was conditional: refused, asked, sent again" "0 3 1 0 0" "$bef"
bef=$(counts)
check "w/old is found (a HEAD for its metadata: the page said file)" stat "$mnt/w/old" >/dev/null
spent "a file ls listed: no request" "0 0 0 0 0" "$bef"
}
run_case create case_create

# ---- ls: ls -l of 1000 names ----
case_ls() {
mount_fresh
check "stat many" stat "$mnt/many" >/dev/null
bef=$(counts)
nfiles=$(ls -l "$mnt/many" | awk '/^-/ { n++ } END { print n + 0 }')
check "ls -l many: 1000 files" eq files "$nfiles" 1000
# its 1000 names after its marker: one page (the marker would make 1001)
spent "ls -l of 1000 names: one LIST page, no HEAD per name" "0 0 0 1 0" "$bef"
}
run_case ls case_ls

# ---- paged: a directory longer than one page ----
case_paged() {
mount_fresh
bef=$(counts)
check "big: stat big/k00000" stat "$mnt/big/k00000" >/dev/null
spent "cold lookups of big and big/k00000" "2 0 2 4 0" "$bef"
bef=$(counts)
check "big: stat big/k00001" stat "$mnt/big/k00001" >/dev/null
spent "a second cold lookup in it asks for the name only" "1 0 1 1 0" "$bef"
}
run_case paged case_paged

# ---- peek: a cold lookup's GET ----
case_peek() {
mount_fresh
bef=$(counts)
check "cold: cat d/f1" eq "md5 f1" "$(md5 "$mnt/d/f1")" "$(md5 "$tmp/local/f1")"
spent "cold lookups of d and d/f1 (f1's GET has all 4 KiB), open, read: nothing more" \
  "2 0 1 2 0" "$bef"
check "  ... kept whole (fs.lookup_whole)" eq fs.lookup_whole "$(stat_of fs.lookup_whole)" 1
bef=$(counts)
check "cold: cat e/big (100 KiB, past read.lookup_bytes)" \
  eq "md5 big" "$(md5 "$mnt/e/big")" "$(md5 "$tmp/local/big")"
# (e from the root's page: its marker's HEAD and its own page, at once;
# big from e's page: its GET of 64 KiB; then the read)
spent "lookups of e and e/big, then the read's GET" "2 0 1 1 0" "$bef"
# replaced after the lookup's GET, opened after it is fresh: the new bytes
mount_fresh
w0=$(stat_of fs.lookup_whole)
check "cold: stat e/f2" stat "$mnt/e/f2" >/dev/null
check "  ... its lookup's GET had all of it" eq fs.lookup_whole "$(stat_of fs.lookup_whole)" $((w0 + 1))
"$CLI" put "$tmp/local/f5" "$bucket/e/f2" >/dev/null
sleep 0.3
check "replaced after a cold lookup, opened later: cat e/f2 reads the new object" \
  eq "md5 e/f2" "$(md5 "$mnt/e/f2")" "$(md5 "$tmp/local/f5")"
check "no operation failed" eq fs.errors "$(stat_of fs.errors)" 0
}
run_case peek case_peek

# ---- far: the round trip measured, the readahead sized
case_far() {
# from it ----
# (read.readahead_max 1 MiB: a window that fills a 20 ms round trip only by
# growing past it)
fault_proxy_start --delay-ms 20 # PROXY: every answer held 20 ms
head -c $((24 << 20)) /dev/urandom >"$tmp/local/seq"
"$CLI" put "$tmp/local/seq" "$bucket/seq" >/dev/null
fs_umount "$mnt" >/dev/null 2>&1 || true
S3R_FS_ENDPOINT='' fs_mount "$bucket" "$mnt" "$log" -o endpoint="$PROXY" \
  -o cache.dir="$tmp/cache",read.readahead_min=64K,read.readahead_max=1M
check "far: cat seq (24 MiB, every answer 20 ms late)" \
  eq "md5 seq" "$(md5 "$mnt/seq")" "$(md5 "$tmp/local/seq")"
rtt=$(stat_of s3.round_trip_us)
check "far: the round trip measured, at least the proxy's 20 ms (s3.round_trip_us $rtt)" \
  test "$rtt" -ge 20000
peak=$(stat_of readahead.window_peak)
check "far: the readahead window grew past read.readahead_max to fill it (readahead.window_peak $peak)" \
  test "$peak" -gt $((1 << 20))
}
run_case far case_far

summary
