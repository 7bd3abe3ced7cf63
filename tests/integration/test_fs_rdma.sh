#!/usr/bin/env bash
# The RDMA data plane on one host: a mount through s3rdma-gateway (in front
# of RGW) with rdma.transport=cma moves file bytes by cross-memory attach,
# with (near) zero HTTP body bytes, in both directions: a small file (one
# PUT), a streamed multipart file, an overwrite in the middle of an object
# (base fetch + UploadPartCopy), cold reads after a remount. Then the
# fallbacks: RGW directly (it ignores tokens) and a gateway that declines
# every token (501): both still give the right bytes. Then time: a server
# slower than the client's low-speed window, a token left in doubt and
# retried (its memory held, then given back), a token attempt that could
# not connect (nothing held), a client killed mid-PUT (its PUT not stored
# later). (Tampered tokens at the gateway, deadlines:
# test_gw_token.sh.) Exit 77 (skipped) where cma cannot run.
#
#   test_fs_rdma.sh BUILD_BIN_DIR          (under with_rgw.sh)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsrdma local
trap 'rc=$?; set +e; gw_stop; (exit $rc); fs_cleanup' EXIT

le() { [ "$2" -le "$3" ] || { echo "# $1: $2 > $3"; return 1; }; }
# write_read WHAT KEY WNOTE RNOTE: through the mount, the small file written
# as KEY (on the server then), the big one read
write_read() {
  check "$1: a new file$3" cp "$tmp/local/small" "$mnt/$2"
  check "$1: it is on the server" eq "md5 $2" "$(key_md5 "$2")" "$(md5 "$tmp/local/small")"
  check "$1: reads$4" eq "md5 big" "$(md5 "$mnt/big")" "$(md5 "$tmp/local/big")"
}

"$CLI" mb "$bucket"
head -c 3000 /dev/urandom >"$tmp/local/small"
head -c $((40 * 1048576 + 77)) /dev/urandom >"$tmp/local/big"
head -c $((24 * 1048576)) /dev/urandom >"$tmp/local/base"
"$CLI" --parallel 8 put "$tmp/local/base" "$bucket/base.bin"

# ---- cma: through the gateway with cma ----
case_cma() {
gw_start "$tmp/gw"
if ! fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"; then
  if grep -q 'rdma.transport cma' "$log"; then echo "skip: cma cannot run here"; exit 77; fi
  exit 1
fi
check "cma: the transport is up" eq transport "$(stat_of rdma.transport)" cma
check "cma: a small file (one PUT)" cp "$tmp/local/small" "$mnt/small"
check "cma: ... its bytes moved by rdma" eq "rdma bytes" "$(stat_of s3.rdma_bytes)" 3000
check "cma: a 40 MiB file (streamed multipart)" cp "$tmp/local/big" "$mnt/big"
# overwrite 1 MiB in the middle of base.bin: fetches the edges, copies the rest
cp "$tmp/local/base" "$tmp/local/base.new"
head -c 1048576 /dev/urandom >"$tmp/local/patch"
dd if="$tmp/local/patch" of="$tmp/local/base.new" bs=1M seek=10 conv=notrunc status=none
check "cma: overwrite in the middle" dd if="$tmp/local/patch" of="$mnt/base.bin" \
  bs=1M seek=10 conv=notrunc status=none
for f in small big; do
  check "cma: $f on the server" eq "md5 $f" "$(aws_ s3 cp "s3://$bucket/$f" - | md5sum | cut -d' ' -f1)" \
    "$(md5 "$tmp/local/$f")"
done
check "cma: base.bin on the server" eq "md5 base.bin" \
  "$(aws_ s3 cp "s3://$bucket/base.bin" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/base.new")"
put_rdma=$(stat_of s3.rdma_bytes)
fs_umount "$mnt"

fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
for f in small big; do
  check "cma: cold read of $f" eq "md5 $f" "$(md5 "$mnt/$f")" "$(md5 "$tmp/local/$f")"
done
check "cma: cold read of base.bin" eq "md5 base.bin" "$(md5 "$mnt/base.bin")" "$(md5 "$tmp/local/base.new")"
check "cma: random preads" python3 "$here/pread_check.py" "$mnt/big" "$tmp/local/big" 200 "$RANDOM"
file_bytes=$((3000 + 40 * 1048576 + 77 + 24 * 1048576))
rdma=$(stat_of s3.rdma_bytes) http_in=$(stat_of s3.bytes_received) http_out=$(stat_of s3.bytes_sent)
echo "# read mount: rdma_bytes $rdma, HTTP bodies received $http_in, sent $http_out; write mount: rdma_bytes $put_rdma"
check "cma: every byte read came by rdma" le "file bytes" "$file_bytes" "$rdma"
# what is left in HTTP bodies is XML (listings): under 1% of the data
check "cma: (near) zero HTTP body bytes" le "HTTP bytes" $((http_in + http_out)) $((file_bytes / 100))
check "cma: writes moved by rdma" le "written bytes" $((3000 + 40 * 1048576 + 77)) "$put_rdma"
check "cma: no token declined, ignored or retired" eq "declined+ignored+retired" \
  "$(($(stat_of s3.rdma_declined) + $(stat_of s3.rdma_ignored) + $(stat_of rdma.retired_chunks)))" 0
check "gateway: bytes moved by rdma both ways" bash -c \
  "[ $(gw_stat rdma_bytes_get) -ge $file_bytes ] && [ $(gw_stat rdma_bytes_put) -gt 0 ]"
fs_umount "$mnt"

gw_stop
}
run_case cma case_cma

# ---- noreply: a server that answers a served PUT without x-amz-rdma-reply ----
case_noreply() {
# (some do): the reply's ETag, the MD5 of the bytes, shows they are ours;
# nothing is sent twice and tokens go on
gw_start "$tmp/gw" --test-put-no-reply
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
head -c $((12 * 1048576 + 5)) /dev/urandom >"$tmp/local/mid"
check "no PUT reply: a 12 MiB file (parts)" cp "$tmp/local/mid" "$mnt/mid"
check "no PUT reply: a small file (one PUT)" cp "$tmp/local/small" "$mnt/small4"
for f in mid small4; do
  src=$f; [ "$f" = small4 ] && src=small
  check "no PUT reply: $f on the server" eq "md5 $f" "$(key_md5 "$f")" "$(md5 "$tmp/local/$src")"
done
check "no PUT reply: each PUT known by its ETag" in_range "$(stat_of s3.rdma_put_etag)" 2 1000
check "no PUT reply: none resent or taken as ignored" eq "resent+ignored" \
  "$(($(stat_of s3.rdma_resent) + $(stat_of s3.rdma_ignored)))" 0
check "no PUT reply: tokens go on" eq active "$(stat_of rdma.active)" 1
check "no PUT reply: the bytes moved by rdma" le "written bytes" \
  $((12 * 1048576 + 5 + 3000)) "$(gw_stat rdma_bytes_put)"
fs_umount "$mnt"
gw_stop
}
run_case noreply case_noreply

# ---- direct: fallback: RGW directly ignores the token ----
case_direct() {
need_case cma
replaced0=$(grep -c 'replaced by this file' "$log" || true)
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=cma
write_read direct small2 "" ""
# the ignored token's PUT stored an empty body in the new file's place: the
# resend replaces exactly that, not seen as another writer's object
check "direct: the resent PUT replaced its own empty object" \
  eq "other-writer notices" "$(grep -c 'replaced by this file' "$log" || true)" "$replaced0"
check "direct: the server was seen to ignore tokens" bash -c "[ $(stat_of s3.rdma_ignored) -ge 1 ]"
check "direct: tokens then stopped" eq active "$(stat_of rdma.active)" 0
check "direct: one log line about it" eq "log lines" "$(grep -c 'ignores x-amz-rdma-token' "$log")" 1
fs_umount "$mnt"
}
run_case direct case_direct

# ---- declined: fallback: a gateway that declines every token (501) ----
case_declined() {
need_case cma
gw_start "$tmp/gw" --serve none
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
write_read declined small3 " (resent over HTTP)" " (bytes in the body)"
check "declined: counted" bash -c "[ $(stat_of s3.rdma_declined) -ge 2 ] && [ $(stat_of s3.rdma_resent) -ge 1 ]"
check "declined: no rdma bytes" eq rdma_bytes "$(stat_of s3.rdma_bytes)" 0
fs_umount "$mnt"
}
run_case declined case_declined

# ---- explicit: an explicit transport that cannot run here fails the mount clearly ----
case_explicit() {
need_case cma
rc=0
if [ -d /sys/class/infiniband ]; then
  echo "# an RDMA device is present: the dc and rc refusals are not checked"
else
  for kind in dc rc; do
    rc=0
    timeout 60 "$FS" "$bucket" "$mnt" -f -o "rdma.transport=$kind" >"$tmp/$kind.log" 2>&1 || rc=$?
    check "rdma.transport=$kind without a device: mount refused" eq rc "$rc" 1
    check "  ... with one line naming the transport" \
      bash -c "[ \"\$(grep -c 'rdma.transport $kind: no RDMA device' '$tmp/$kind.log')\" = 1 ]"
    check "  ... and nothing mounted" bash -c "! mountpoint -q '$mnt'"
  done
fi
rc=0
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=auto
check "rdma.transport=auto: mounts" eq "md5 small" "$(md5 "$mnt/small")" "$(md5 "$tmp/local/small")"
fs_umount "$mnt"
}
run_case explicit case_explicit

# ---- slow: time: a server slower than the low-speed window ----
case_slow() {
# Every token waits 5 s at the gateway before a byte moves; the client's
# low-speed window is 2 s (-o s3.low_speed_time=2). A token request must
# not be cut by it (it used to be: each attempt aborted and sent again, the
# read or write then failing): one attempt each, every one served once.
# Then the window itself: with the gateway stopped (SIGSTOP) for 6 s, a
# request without a token (the DELETE of an unlink) is given up after 2 s
# and tried again (with the default 30 s window it would just wait).
gw_stop
head -c $((1536 * 1024 + 5)) /dev/urandom >"$tmp/local/slow"
"$CLI" put "$tmp/local/slow" "$bucket/slow.bin"
head -c 2999 /dev/urandom >"$tmp/local/slow_w"
gw_start "$tmp/gw" --test-token-delay 5000
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma,s3.low_speed_time=2"
check "slow server: a read" eq "md5 slow.bin" "$(md5 "$mnt/slow.bin")" "$(md5 "$tmp/local/slow")"
check "slow server: a write" cp "$tmp/local/slow_w" "$mnt/slow_w"
check "slow server: the write on the server" eq "md5 slow_w" \
  "$(aws_ s3 cp "s3://$bucket/slow_w" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/slow_w")"
check "slow server: no token attempt retried" eq "attempts with a token" \
  "$(stat_of s3.rdma_requests)" "$(($(stat_of rdma.get_tokens) + $(stat_of rdma.put_tokens)))"
check "slow server: every token attempt served exactly once" eq "gateway transfers" \
  "$(($(gw_stat token_gets) + $(gw_stat token_puts)))" "$(stat_of s3.rdma_requests)"
check "slow server: no memory held" eq "retired chunks+bufs" \
  "$(($(stat_of rdma.retired_chunks) + $(stat_of rdma.retired_bufs)))" 0
retries=$(stat_of s3.retries)
gw_pid=$(cat "$tmp/gw/pid")
kill -STOP "$gw_pid"
rm "$mnt/slow_w" & # a DELETE: no token
rm_pid=$!
sleep 6
kill -CONT "$gw_pid"
rm_rc=0
wait "$rm_pid" || rm_rc=$?
echo "# low-speed: s3.retries $retries before the stall, $(stat_of s3.retries) after"
check "slow server: the unlink during the stall succeeds" eq "rm exit" "$rm_rc" 0
check "slow server: a request without a token stalled past s3.low_speed_time is tried again" \
  test "$(stat_of s3.retries)" -gt "$retries"
fs_umount "$mnt"
}
run_case slow case_slow

# ---- doubt: a token left in doubt, then retried with success ----
case_doubt() {
need_case cma # (base.bin as it left it)
need_case slow
# The first token request waits 4 s at the gateway, the client's deadline
# is 2 s (-o rdma.timeout=2): that attempt ends without a reply, the
# retry succeeds. The memory of the first stays held until its deadline
# has passed, then comes back: a direct read replies with its bytes (it
# used to reply from a NULL buffer: EIO), page-cache chunks return to the
# cache (they used to be retired for good: the cache shrank).
gw_stop
gw_start "$tmp/gw" --test-token-delay 4000 --test-token-delay-count 1
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma,rdma.timeout=2"
# 16 KiB at 4 MiB, the first read of the file: random, so a direct read;
# O_DIRECT, so that the kernel does not mask an error by reading again
dd if="$tmp/local/base.new" of="$tmp/local/slice" bs=4096 skip=1024 count=4 status=none
check "doubt: a direct read after a retry" eq "md5 of 16 KiB at 4 MiB" \
  "$(dd if="$mnt/base.bin" iflag=direct bs=4096 skip=1024 count=4 status=none | md5sum | cut -d' ' -f1)" \
  "$(md5 "$tmp/local/slice")"
check "doubt: its buffer held, then given back" eq "retired/reclaimed bufs" \
  "$(stat_of rdma.retired_bufs)/$(stat_of rdma.reclaimed_bufs)" 1/1
check "doubt: the gateway saw the first attempt's client go" \
  test "$(gw_stat clients_gone)" -ge 1
fs_umount "$mnt"
gw_stop
gw_start "$tmp/gw" --test-token-delay 4000 --test-token-delay-count 1
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma,rdma.timeout=2"
check "doubt: a read through the cache after a retry" eq "md5 slow.bin" \
  "$(md5 "$mnt/slow.bin")" "$(md5 "$tmp/local/slow")"
held=$(stat_of rdma.retired_chunks)
check "doubt: its chunks held" test "$held" -ge 1
for _ in $(seq 1 100); do
  [ "$(stat_of rdma.held_chunks)" = 0 ] && break
  sleep 0.2
done
check "doubt: the chunks back in the cache once the deadline passed" eq \
  "held/reclaimed chunks" "$(stat_of rdma.held_chunks)/$(stat_of rdma.reclaimed_chunks)" "0/$held"
check "doubt: then read again from the cache" eq "md5 slow.bin" \
  "$(md5 "$mnt/slow.bin")" "$(md5 "$tmp/local/slow")"
fs_umount "$mnt"
}
run_case doubt case_doubt

# ---- neverleft: a token attempt that never left: nothing in doubt ----
case_neverleft() {
# The gateway is gone (its port refuses connections): a write's PUT
# attempts fail to connect. Not a byte of them was sent, so no server can
# be moving the token's bytes: the memory is not held (it used to be, until
# the token's deadline, close() waiting with it). close() fails with EIO.
gw_stop
gw_start "$tmp/gw"
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma,cache.dir=$tmp/stage_refused" \
  -o s3.retry.max_attempts=2 -o write.retry_interval=3600 -o cache.negative_ttl=600
check "refused: a write while the gateway is up" cp "$tmp/local/small" "$mnt/before"
# looked up while it is up: its absence cached, a new file made after asks
# the server nothing before its PUT
check "refused: a new name looked up" bash -c "! stat '$mnt/refused' 2>/dev/null"
gw_stop
r0=$(stat_of rdma.retired_bufs) t0=$(stat_of rdma.put_tokens)
rc=$(python3 -c 'import os, sys
f = open(sys.argv[2], "wb")
f.write(open(sys.argv[1], "rb").read())
try:
    f.close()
    print(0)
except OSError as e:
    print(e.errno)' "$tmp/local/small" "$mnt/refused")
check "refused: close() fails with EIO" eq "close errno" "$rc" 5
check "refused: the PUT carried a token" test "$(stat_of rdma.put_tokens)" -gt "$t0"
check "refused: no memory in doubt" eq "retired bufs" "$(stat_of rdma.retired_bufs)" "$r0"
fs_umount "$mnt"
gw_start "$tmp/gw"
}
run_case neverleft case_neverleft

# ---- killed: a client killed mid-PUT: its PUT is not stored later ----
case_killed() {
# The gateway has read the file's bytes from the daemon and holds them 5 s
# before the last go upstream; the daemon is killed meanwhile and a newer
# version is written directly. The gateway must see its client gone and
# abandon the upstream PUT (it used to complete it, over the newer
# version). Its own cache.dir: no later mount recovers the file.
gw_stop
head -c 3000 /dev/urandom >"$tmp/local/v1"
head -c 3001 /dev/urandom >"$tmp/local/v2"
gw_start "$tmp/gw" --test-put-hold 5000
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma,cache.dir=$tmp/stage_killed"
cp "$tmp/local/v1" "$mnt/stale" 2>/dev/null &
cp_pid=$!
for _ in $(seq 1 150); do
  [ "$(gw_stat rdma_bytes_put)" -ge 3000 ] && break
  sleep 0.2
done
check "killed: the gateway has read the bytes" test "$(gw_stat rdma_bytes_put)" -ge 3000
fs_kill "$mnt"
wait "$cp_pid" || true
aws_ s3 cp "$tmp/local/v2" "s3://$bucket/stale" >/dev/null
sleep 7 # the hold is over
check "killed: the newer version stays" eq "md5 stale" \
  "$(aws_ s3 cp "s3://$bucket/stale" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/v2")"
abandoned() {
  local g a
  g=$(gw_stat clients_gone) a=$(gw_stat upstream_abandoned)
  [ "${g:-0}" -ge 1 ] && [ "${a:-0}" -ge 1 ]
}
check "killed: the gateway abandoned the upstream PUT" wait_for 30 0.2 abandoned
fs_umount "$mnt"
}
run_case killed case_killed

summary
