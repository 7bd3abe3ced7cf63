#!/usr/bin/env bash
# Starving the gateway without a key: users nobody and daemon each keep
# 64 connections to it that trickle a request's head one byte every 0.5 s
# and never finish it (gw_hostile.py trickle), reopening each one the
# gateway closes. Together they hold every slot unverified connections may
# take (--max-strangers, 32: 16 each). Meanwhile root, another local user,
# makes a signed GET and mounts the bucket through the gateway and reads
# files from it: both must be served (each attacker holds at most
# --max-strangers-per-peer connections, each of them at most
# --auth-timeout in all however it trickles, and a newcomer of a smaller
# peer takes the place of the largest peer's oldest). The refusals,
# evictions and deadlines are counted in the gateway's stats.
#
#   test_gw_starve.sh BUILD_BIN_DIR          (under with_rgw.sh)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" gwstarve local
attack_pids=()
trap 'rc=$?; set +e; for p in "${attack_pids[@]}"; do kill "$p" 2>/dev/null; done
  gw_log_on_failure "$rc" 40; gw_stop; (exit $rc); fs_cleanup' EXIT

if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
  echo "skip: no user nobody or no setpriv"
  exit 77
fi
AUTH_S=4 PER_PEER=16 CONNS=64

# ---- attack: two local users trickle connections at the gateway while
# ---- root's requests and a mount go on ----
case_attack() {
"$CLI" mb "$bucket"
for i in 1 2 3; do
  head -c $((3 * 1048576 + i)) /dev/urandom >"$tmp/local/f$i"
  "$CLI" put "$tmp/local/f$i" "$bucket/f$i"
done
gw_start "$tmp/gw" --log-level info --auth-timeout "$AUTH_S" \
  --max-strangers-per-peer "$PER_PEER" --max-conns "$CONNS"
hostile() {
  HOSTILE_BUCKET=$bucket S3R_GW_ENDPOINT=$GW_ENDPOINT \
    timeout 120 python3 "$here/gw_hostile.py" "$@"
}
check "a good request is served" hostile good

# the attackers: the script on their stdin (nothing of ours they must
# read); they go on until we are done (stop) or for 100 s
chmod 755 "$tmp"
stop=$tmp/attack.stop
attackers=(nobody)
id daemon >/dev/null 2>&1 && attackers+=(daemon)
for who in "${attackers[@]}"; do
  started=$tmp/$who.started
  touch "$started" && chmod 666 "$started" && : >"$started"
  setpriv --reuid="$who" --regid=nogroup --clear-groups \
    env -i PATH="$PATH" S3R_GW_ENDPOINT="$GW_ENDPOINT" \
    TRICKLE_STARTED="$started" TRICKLE_STOP="$stop" \
    timeout 120 python3 - trickle "$CONNS" 100 \
    <"$here/gw_hostile.py" >"$tmp/$who.log" 2>&1 &
  attack_pids+=($!)
done
for who in "${attackers[@]}"; do
  for _ in $(seq 1 100); do [ -s "$tmp/$who.started" ] && break; sleep 0.1; done
  check "the attack of $who started" test -s "$tmp/$who.started"
done
sleep 1

# while it goes on: another user's signed requests and a mount's reads
check "under attack: a signed PUT and GET are served" hostile good
check "under attack: a mount through the gateway starts" \
  fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT"
for i in 1 2 3; do
  check "under attack: f$i read through the mount" \
    eq "md5 f$i" "$(md5 "$mnt/f$i")" "$(md5 "$tmp/local/f$i")"
done
check "under attack: a file written through the mount" \
  cp "$tmp/local/f1" "$mnt/w1"
check "under attack: ... and closed (uploaded)" \
  eq "md5 w1" "$(key_md5 w1)" "$(md5 "$tmp/local/f1")"
echo "# the mount's S3 requests: $(stat_of s3.requests), retried: $(stat_of s3.retries)"
check "under attack: no operation of the mount failed" \
  eq "fs.errors" "$(stat_of fs.errors)" 0
fs_umount "$mnt"
for p in "${attack_pids[@]}"; do
  check "the attack was still running meanwhile" kill -0 "$p"
done
sleep "$AUTH_S" # (a full deadline more of it, for the counts below)
touch "$stop"

for p in "${attack_pids[@]}"; do wait "$p" || true; done
attack_pids=()
for who in "${attackers[@]}"; do
  cat "$tmp/$who.log"
  report=$(grep -o 'opened=.*' "$tmp/$who.log" || true)
  longest=$(sed -n 's/.*longest=\([0-9.]*\).*/\1/p' <<<"$report")
  refused=$(sed -n 's/.*refused=\([0-9]*\).*/\1/p' <<<"$report")
  check "$who reported" test -n "$longest"
  # its connections lived at most the deadline (plus the watcher's and
  # the attacker's own polling), though each sent a byte every 0.5 s
  check "no trickling connection of $who outlived --auth-timeout (${AUTH_S} s): ${longest:-?} s" \
    python3 -c "import sys; sys.exit(0 if float('${longest:-99}') <= $AUTH_S + 1.5 else 1)"
  check "most of $who's connections were refused at once: ${refused:-?}" \
    test "${refused:-0}" -ge $((CONNS - PER_PEER))
done
check "refusals counted: refused_peer_strangers $(gw_stat refused_peer_strangers)" \
  test "$(gw_stat refused_peer_strangers)" -ge $((CONNS - PER_PEER))
if [ "${#attackers[@]}" -gt 1 ]; then
  # two attackers fill the strangers in all: root's connections got in
  # at the larger one's expense
  check "root's newcomers took attackers' places: evicted_strangers $(gw_stat evicted_strangers)" \
    test "$(gw_stat evicted_strangers)" -ge 1
fi
check "deadlines counted: head_timeouts $(gw_stat head_timeouts)" \
  test "$(gw_stat head_timeouts)" -ge "$PER_PEER"
check "after the attack: a good request is served" hostile good
check "gateway stops cleanly" gw_stop
}
run_case attack case_attack

summary
