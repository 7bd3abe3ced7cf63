#!/usr/bin/env bash
# tests/rdma-vm/guest/rc_mount.sh - in the soft-RoCE guest: s3rdma-gateway
# serving rc on rxe0 in front of the host's RGW, and a mount with
# rdma.transport=rc through it; files written and read back by md5 (a
# streamed multi-part write, a cold read, random preads, an overwrite in
# the middle), the gateway's counters showing the bytes rc moved both
# ways, what registering each part cost, then the gateway restarted (its
# sessions gone) and the mount reconnecting: a file written and read back
# after the restart moves its bytes over new rc sessions. Then a mount over
# two gateways (an endpoint list): rc sessions with each, bytes moved by
# both, and, the second killed, the files still read back through the
# first.
# Run from the host by tests/rdma-vm/rc_mount.sh (ctest rdma.rc_mount).
# Needs: S3R_BUILD, S3R_ENDPOINT (the host's RGW as the guest sees it),
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3R_RC_BUCKET (made by the
# caller on the host), S3R_RDMA_DEV, S3R_GID_INDEX.
set -euo pipefail
BIN=$S3R_BUILD/bin
DEV=${S3R_RDMA_DEV:-rxe0} GIDX=${S3R_GID_INDEX:-1}
bucket=${S3R_RC_BUCKET:?}
work=$(mktemp -d /tmp/rc.XXXXXX) mnt=$work/mnt
mkdir -p "$mnt" "$work/cache"
fail=0 gw='' gw2='' fs=
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fail=1; fi; }
cleanup() {
  set +e
  fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
  # the daemon disconnects its sessions while the gateway still runs
  for _ in $(seq 1 50); do kill -0 "$fs" 2>/dev/null || break; sleep 0.2; done
  [ -z "$gw" ] || { kill "$gw"; wait "$gw"; }
  [ -z "$gw2" ] || { kill "$gw2"; wait "$gw2"; }
  echo "--- gateway log (tail)"; tail -n 25 "$work/gw.log"
  echo "--- mount log (rdma lines)"; grep -iE "rdma|rc|token|regist" "$work/fs.log" | head -n 30
}
trap cleanup EXIT

# gw_launch PORT LOG: a gateway serving rc on 127.0.0.1:PORT, its pid in
# launched once it answers (or after 20 s)
launched=''
gw_launch() {
  "$BIN/s3rdma-gateway" -f --listen "127.0.0.1:$1" --upstream "$S3R_ENDPOINT" \
    --rdma-devices "$DEV" --rdma-gid-index "$GIDX" >>"$2" 2>&1 &
  launched=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/_s3rdma/stats" && break
    sleep 0.2
  done
}
gw_start() {
  gw_launch 7490 "$work/gw.log"
  gw=$launched
  check "gateway answers$1" "curl -s --max-time 5 http://127.0.0.1:7490/_s3rdma/stats >/dev/null"
}
gw_start ""

"$BIN/s3rdmafs" -f "$bucket" "$mnt" -o endpoint=http://127.0.0.1:7490 \
  -o rdma.transport=rc,rdma.devices="$DEV",rdma.gid_index="$GIDX" \
  -o "cache.dir=$work/cache,log.level=${S3R_RC_LOG:-info}" \
  2>"$work/fs.log" &
fs=$!
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.2; done
check "mounted with rdma.transport=rc" "mountpoint -q '$mnt'"

head -c $((24 << 20)) /dev/urandom >"$work/big"      # several parts
head -c 300000 /dev/urandom >"$work/small"
# end-to-end figures (reported, never judged: the guest's emulated network
# to RGW bounds them): MB/s = 2^20 bytes a second
now() { date +%s.%N; }
mbps() { awk -v b="$1" -v a="$2" -v z="$3" 'BEGIN { printf "%.1f", b / 1048576 / (z - a) }'; }
t0=$(now)
dd if="$work/big" of="$mnt/big" bs=1M status=none   # close: the upload done
t1=$(now)
cp "$work/small" "$mnt/small"
sync
echo 3 >/proc/sys/vm/drop_caches
t2=$(now)
sum=$(md5sum <"$mnt/big" | cut -d' ' -f1)
t3=$(now)
rc_w=$(mbps $((24 << 20)) "$t0" "$t1") rc_r=$(mbps $((24 << 20)) "$t2" "$t3")
check "streamed multi-part write reads back" \
  "[ '$sum' = \"\$(md5sum <'$work/big' | cut -d' ' -f1)\" ]"
check "small file reads back" "cmp -s '$mnt/small' '$work/small'"
# random preads against the local copy
ok=1
for off in 0 4095 1048577 7340031 20000000 25165000; do
  a=$(dd if="$mnt/big" bs=1 skip="$off" count=4096 status=none | md5sum)
  b=$(dd if="$work/big" bs=1 skip="$off" count=4096 status=none | md5sum)
  [ "$a" = "$b" ] || ok=0
done
check "random preads" "[ $ok = 1 ]"
# an overwrite in the middle
head -c 100000 /dev/urandom >"$work/patch"
for f in "$mnt/big" "$work/big"; do
  dd if="$work/patch" of="$f" bs=100000 seek=5000000 oflag=seek_bytes conv=notrunc status=none
done
sync; echo 3 >/proc/sys/vm/drop_caches
check "overwrite in the middle reads back" "cmp -s '$mnt/big' '$work/big'"

stats=
gw_stats() { stats=$(curl -s --max-time 5 http://127.0.0.1:7490/_s3rdma/stats); }
val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$stats"; }
fs_stat() { awk -v k="$1" '$1 == k { print $2 }' "$mnt/.s3rdmafs-stats"; }
gw_stats
echo "--- gateway counters"; echo "$stats" | grep -E "rdma_bytes|rc_|declined|token_failures|http_bytes"
check "rc sessions connected" "[ '$(val rc_connects)' -gt 0 ]"
check "GET bytes moved by rc" "[ '$(val rdma_bytes_get)' -gt 0 ]"
# parts are read-only mappings of their staging files, registered for
# remote read only (rdx_register_src): the gateway RDMA-READs them
check "PUT bytes moved by rc" "[ '$(val rdma_bytes_put)' -gt 0 ]"
check "no token transfer failed" "[ '$(val token_failures)' -eq 0 ]"
echo "--- mount's rdma stats"; grep -E "^rdma" "$mnt/.s3rdmafs-stats" | head -30 || true
regs=$(fs_stat rdma.buf_regs) reg_us=$(fs_stat rdma.buf_reg_us)
dereg_us=$(fs_stat rdma.buf_dereg_us)
check "part buffers registered" "[ '${regs:-0}' -gt 0 ] && [ '$(fs_stat rdma.buf_reg_fails)' -eq 0 ]"
if [ "${regs:-0}" -gt 0 ]; then
  echo "registration per buffer: $((reg_us / regs)) us to register, $((dereg_us / regs)) us to deregister ($regs buffers)"
  echo "rc_reg_us_per_buf=$((reg_us / regs)) rc_dereg_us_per_buf=$((dereg_us / regs)) rc_bufs=$regs" >>"$S3R_RESULTS/rc_mount.env"
fi

# ---- the gateway restarts: every session the mount holds is gone --------
connects0=$(fs_stat rdma.rc_connects)
kill "$gw"; wait "$gw" || true; gw=
gw_start " after a restart"
echo 3 >/proc/sys/vm/drop_caches
check "after the restart: a cold read reads back" "cmp -s '$mnt/small' '$work/small'"
head -c $((9 << 20)) /dev/urandom >"$work/after"
cp "$work/after" "$mnt/after"
sync; echo 3 >/proc/sys/vm/drop_caches
check "after the restart: a new file reads back" "cmp -s '$mnt/after' '$work/after'"
check "after the restart: the big file reads back" "cmp -s '$mnt/big' '$work/big'"
gw_stats
echo "--- gateway counters after the restart"; echo "$stats" | grep -E "rdma_bytes|rc_|token_failures"
check "the mount reconnected (new sessions)" \
  "[ '$(fs_stat rdma.rc_connects)' -gt '${connects0:-0}' ] && [ '$(val rc_connects)' -gt 0 ]"
check "after the restart: GET bytes moved by rc" "[ '$(val rdma_bytes_get)' -gt 0 ]"
check "after the restart: PUT bytes moved by rc" "[ '$(val rdma_bytes_put)' -gt 0 ]"
echo "--- mount's rc stats"; grep -E "^rdma.rc_" "$mnt/.s3rdmafs-stats" || true

# ---- two gateways, one mount over both: sessions with each --------------
fusermount3 -u "$mnt"
for _ in $(seq 1 50); do kill -0 "$fs" 2>/dev/null || break; sleep 0.2; done
gw_launch 7489 "$work/gw2.log"
gw2=$launched
"$BIN/s3rdmafs" -f "$bucket" "$mnt" \
  -o 'endpoint=http://127.0.0.1:7490;http://127.0.0.1:7489' \
  -o rdma.transport=rc,rdma.devices="$DEV",rdma.gid_index="$GIDX" \
  -o cache.dir="$work/cache" 2>>"$work/fs.log" &
fs=$!
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.2; done
check "two gateways: mounted with rc over both" "mountpoint -q '$mnt'"
head -c $((24 << 20)) /dev/urandom >"$work/two"
cp "$work/two" "$mnt/two"
sync; echo 3 >/proc/sys/vm/drop_caches
check "two gateways: a new file reads back" "cmp -s '$mnt/two' '$work/two'"
s1=$(curl -s --max-time 5 http://127.0.0.1:7490/_s3rdma/stats)
s2=$(curl -s --max-time 5 http://127.0.0.1:7489/_s3rdma/stats)
v1() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' <<<"$s1"; }
v2() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' <<<"$s2"; }
m1=$(( $(v1 rdma_bytes_get) + $(v1 rdma_bytes_put) ))
m2=$(( $(v2 rdma_bytes_get) + $(v2 rdma_bytes_put) ))
echo "--- two gateways: rc_connects $(v1 rc_connects) / $(v2 rc_connects), bytes moved by rc $m1 / $m2"
check "two gateways: rc sessions with each" \
  "[ '$(v1 rc_connects)' -gt 0 ] && [ '$(v2 rc_connects)' -gt 0 ]"
check "two gateways: each moved bytes by rc" "[ $m1 -gt 0 ] && [ $m2 -gt 0 ]"
kill -KILL "$gw2"; wait "$gw2" || true; gw2=''
echo 3 >/proc/sys/vm/drop_caches
check "two gateways, the second killed: the files read back" \
  "cmp -s '$mnt/two' '$work/two' && cmp -s '$mnt/big' '$work/big'"
check "two gateways, the second killed: taken out" \
  "[ '$(fs_stat 's3.endpoint_downs{endpoint=1}')' -ge 1 ]"

# ---- the same through the gateway in HTTP bodies, for the figures -------
fusermount3 -u "$mnt"
for _ in $(seq 1 50); do kill -0 "$fs" 2>/dev/null || break; sleep 0.2; done
"$BIN/s3rdmafs" -f "$bucket" "$mnt" -o endpoint=http://127.0.0.1:7490 \
  -o rdma.transport=off,cache.dir="$work/cache" 2>>"$work/fs.log" &
fs=$!
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.2; done
check "mounted again with rdma.transport=off" "mountpoint -q '$mnt'"
t0=$(now)
dd if="$work/big" of="$mnt/big2" bs=1M status=none
t1=$(now)
sync; echo 3 >/proc/sys/vm/drop_caches
t2=$(now)
sum=$(md5sum <"$mnt/big" | cut -d' ' -f1)
t3=$(now)
check "HTTP bodies: the big file reads back" "[ '$sum' = \"\$(md5sum <'$work/big' | cut -d' ' -f1)\" ]"
http_w=$(mbps $((24 << 20)) "$t0" "$t1") http_r=$(mbps $((24 << 20)) "$t2" "$t3")
echo "end to end, 24 MiB through the gateway (MB/s): rc write $rc_w, cold read $rc_r; HTTP bodies write $http_w, cold read $http_r"
echo "e2e_rc_write_MBps=$rc_w e2e_rc_read_MBps=$rc_r e2e_http_write_MBps=$http_w e2e_http_read_MBps=$http_r" >>"$S3R_RESULTS/rc_mount.env"
exit "$fail"
