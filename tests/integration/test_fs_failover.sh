#!/usr/bin/env bash
# Failover (several servers): a mount over three RGWs of one cluster
# (tests/servers/rgw.sh node-start 1 and 2, beside the usual one) keeps
# serving while one RGW is killed and started again: sequential and random
# reads, streaming writes, listing and renames see no error and every byte
# is right; the killed RGW is taken out and is back in use after it
# returns; in a steady run each RGW carries its share. The same through a
# gateway in front of the three RGWs (an RGW killed), and through two
# gateways (a gateway killed). The control case shows the same kill
# failing a mount that names the killed RGW alone.
#
#   test_fs_failover.sh BUILD_BIN_DIR
#
# S3R_FAILOVER_ONE=1: every mount names the killed RGW alone (the suite
# must then fail: what each case holds needs the failover).
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fov
RGW_SH=$here/../servers/rgw.sh
work() { python3 "$here/failover_work.py" "$@"; }
IFS=';' read -r -a URLS <<<"$S3R_ENDPOINTS"

WPIDS=() # the workloads running (stopped first at exit)
fov_cleanup() {
  local rc=$? p g
  set +e
  touch "$tmp/stop"
  for p in ${WPIDS[@]+"${WPIDS[@]}"}; do kill "$p" 2>/dev/null; wait "$p"; done
  fs_umount "$mnt" # (before the gateways it may go through)
  for g in "$tmp"/gw*/; do
    [ -d "$g" ] && S3R_GW_DIR=$g "$GW_SH" stop >/dev/null 2>&1
  done
  "$RGW_SH" node-stop 1 >/dev/null 2>&1
  "$RGW_SH" node-stop 2 >/dev/null 2>&1
  (exit "$rc")
  fs_cleanup
}
trap fov_cleanup EXIT

"$RGW_SH" node-start 1 >"$tmp/rgw.log" 2>&1 &&
  "$RGW_SH" node-start 2 >>"$tmp/rgw.log" 2>&1 ||
  { cat "$tmp/rgw.log"; echo "not ok - three RGWs"; exit 1; }
"$CLI" mb "$bucket"

# The mount: dir and attribute TTLs of 0 and a small cache, so that the
# work keeps asking the servers while one of them dies.
OPTS=cache.size=32M,read.readahead_max=8M,cache.kernel_cache=false,cache.dir_ttl=0,cache.attr_ttl=0
fov_mount() { # the endpoints
  fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$1" -o "$OPTS"
}
# ep_stat WHAT K: s3.endpoint_WHAT of endpoint K (0 where the mount names
# one endpoint and so keeps no such row); with GW_STATS=1 the gateway's
# upstream_WHAT of upstream K ($S3R_GW_DIR's)
GW_STATS=0
ep_stat() {
  local v
  if [ "$GW_STATS" = 1 ]; then v=$(gw_stat "upstream_$1{upstream=$2}")
  else v=$(stat_of "s3.endpoint_$1{endpoint=$2}"); fi
  echo "${v:-0}"
}
# back_in_use K N: endpoint K up and given more than N attempts
back_in_use() {
  [ "$(ep_stat up "$1")" = 1 ] && [ "$(ep_stat attempts "$1")" -gt "$2" ]
}
# The kill of failover: RGW K down 4 s (KILL=gw: the gateway in dir
# $tmp/gwK, SIGKILL, then started again on its port)
KILL=rgw ONE_URL=
kill_restart() {
  if [ "$KILL" = rgw ]; then
    "$RGW_SH" node-restart "$1" 4 >>"$tmp/rgw.log" 2>&1
    return
  fi
  local d=$tmp/gw$1
  kill -KILL "$(cat "$d/pid")"
  sleep 4
  S3R_GW_DIR=$d S3R_GW_UPSTREAM=$S3R_ENDPOINTS "$GW_SH" start \
    --port "$(cat "$d/port")" >>"$tmp/rgw.log" 2>&1
}
# json FILE KEY: a number of a workload's report
json() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$1" "$2" 2>/dev/null || echo -1
}

# failover NAME K MODE DIR [SIZE]: the workload MODE on DIR while RGW K is
# killed, left down 4 s and started again; then until K is back in use.
# Checks: no error, no wrong byte, the kill felt (failures on K), K taken
# out and back in use.
failover() {
  local name=$1 k=$2 mode=$3 dir=$4 wpid f0 d0 a1 ep=$2
  shift 4
  if [ "${S3R_FAILOVER_ONE:-0}" = 1 ]; then
    ep=0
    fs_umount "$mnt"
    fov_mount "${ONE_URL:-${URLS[$k]}}"
  fi
  rm -f "$tmp/stop"
  work "$mode" "$tmp/stop" "$dir" "$@" >"$tmp/$name.json" &
  wpid=$!
  WPIDS=("$wpid")
  sleep 1
  f0=$(ep_stat failures "$ep") d0=$(ep_stat downs "$ep")
  kill_restart "$k"
  a1=$(ep_stat attempts "$ep")
  check "$name: the killed RGW back in use after it returns" \
    wait_for 45 0.5 back_in_use "$ep" "$a1"
  touch "$tmp/stop"
  wait "$wpid" || true
  echo "# $name: $(cat "$tmp/$name.json")"
  check "$name: work done" test "$(json "$tmp/$name.json" ops)" -gt 0
  check "$name: no error seen by the application" \
    eq errors "$(json "$tmp/$name.json" errors)" 0
  check "$name: every byte right" eq bad "$(json "$tmp/$name.json" bad)" 0
  check "$name: the kill was felt (failures on it)" \
    test "$(ep_stat failures "$ep")" -gt "$f0"
  check "$name: the killed RGW taken out" test "$(ep_stat downs "$ep")" -gt "$d0"
}

# ---- prep: the files the cases read, list and rename ----
case_prep() {
fov_mount "$S3R_ENDPOINTS"
mkdir -p "$mnt/r" "$mnt/l" "$mnt/n" "$mnt/w"
check "prep: 8 files of 16 MiB" work prep "$mnt/r" 8 16777216
check "prep: 200 names to list" work prep "$mnt/l" 200 4096
check "prep: 30 files to rename" work prep "$mnt/n" 30 8192
}

# ---- spread: a steady run over three RGWs: each within 2x of the mean ----
case_spread() {
need_case prep
local a=() d=() i sum=0 mean p1 p2
for i in 0 1 2; do a[i]=$(ep_stat attempts "$i"); done
rm -f "$tmp/stop"
work randread "$tmp/stop" "$mnt/r" >"$tmp/spread-r.json" &
p1=$!
work seqread "$tmp/stop" "$mnt/r" >"$tmp/spread-s.json" &
p2=$!
WPIDS=("$p1" "$p2")
sleep 6
touch "$tmp/stop"
wait "$p1" "$p2" || true
for i in 0 1 2; do
  d[i]=$(($(ep_stat attempts "$i") - a[i]))
  sum=$((sum + d[i]))
done
mean=$((sum / 3))
echo "# spread: attempts ${d[*]} (mean $mean)"
check "spread: requests went out" test "$sum" -gt 30
for i in 0 1 2; do
  check "spread: RGW $i within 2x of the mean" \
    in_range "${d[i]}" $((mean / 2)) $((mean * 2))
done
}

# ---- seqread / randread / write / listing / renames: RGW killed ----
case_seqread() { need_case prep; failover seqread 1 seqread "$mnt/r"; }
case_randread() { need_case prep; failover randread 2 randread "$mnt/r"; }
case_listing() { need_case prep; failover listing 1 list "$mnt/l"; }
case_renames() { need_case prep; failover renames 2 rename "$mnt/n"; }
# written NAME DIR SIZE: every file the workload NAME closed in DIR (a
# directory of the bucket's root) is on the server, whole; no upload left
written() {
  local n bad=0 up
  for n in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["closed"]))' "$tmp/$1.json"); do
    aws_ s3 cp "s3://$bucket/$2/$n" - | work check "$n" "$3" || bad=$((bad + 1))
  done
  check "$1: every file closed is on the server, whole" eq "files wrong" "$bad" 0
  up=$(fs_uploads "$2/")
  check "$1: no multipart upload left" eq uploads "$up" ""
}
case_write() {
need_case prep
failover write 1 write "$mnt/w" 12582912
written write w 12582912
}

# ---- control: the same kill, a mount naming the killed RGW alone ----
case_control() {
need_case prep
local f1 wpid
fs_umount "$mnt"
fov_mount "${URLS[2]}"
rm -f "$tmp/stop"
work seqread "$tmp/stop" "$mnt/r" >"$tmp/control.json" &
wpid=$!
WPIDS=("$wpid")
sleep 1
"$RGW_SH" node-restart 2 6 >>"$tmp/rgw.log" 2>&1
touch "$tmp/stop"
wait "$wpid" || true
echo "# control: $(cat "$tmp/control.json")"
f1=$(json "$tmp/control.json" errors)
check "control: with the killed RGW alone the application sees errors" \
  test "$f1" -gt 0
fs_umount "$mnt"
fov_mount "$S3R_ENDPOINTS"
}

# ---- gw_rgw: through a gateway in front of the three RGWs, RGW 2 killed ----
case_gw_rgw() {
need_case prep
local ups=$S3R_ENDPOINTS
[ "${S3R_FAILOVER_ONE:-0}" != 1 ] || ups=${URLS[2]}
S3R_GW_UPSTREAM=$ups gw_start "$tmp/gw0"
fs_umount "$mnt"
fov_mount "$GW_ENDPOINT"
GW_STATS=1 ONE_URL=$GW_ENDPOINT
failover gw_rgw 2 seqread "$mnt/r"
check "gw_rgw: each upstream in the Prometheus page, the killed one up" \
  grep -q '^s3rdma_gateway_upstream_up{upstream="2"} 1' \
  <(curl -s "$GW_ENDPOINT/_s3rdma/stats?format=prometheus")
GW_STATS=0 ONE_URL=
fs_umount "$mnt"
"$GW_SH" stop
fov_mount "$S3R_ENDPOINTS"
}

# ---- gw_killed: through two gateways (each in front of the three RGWs),
# ---- the second killed and started again, under reads, then writes ----
case_gw_killed() {
need_case prep
S3R_GW_UPSTREAM=$S3R_ENDPOINTS gw_start "$tmp/gw0"
local first=$GW_ENDPOINT
S3R_GW_UPSTREAM=$S3R_ENDPOINTS gw_start "$tmp/gw1"
fs_umount "$mnt"
fov_mount "$first;$GW_ENDPOINT"
if [ "${S3R_FAILOVER_ONE:-0}" != 1 ]; then
  # the data plane per gateway: each serves cma tokens of the mount's
  check "gw_killed: a file read through the two" work read1 "$mnt/r/f000"
  check "gw_killed: the first gateway moved bytes by cma" \
    test "$(S3R_GW_DIR=$tmp/gw0 gw_stat token_gets)" -gt 0
  check "gw_killed: the second gateway moved bytes by cma" \
    test "$(S3R_GW_DIR=$tmp/gw1 gw_stat token_gets)" -gt 0
fi
KILL=gw ONE_URL=$GW_ENDPOINT
failover gw_killed 1 seqread "$mnt/r"
mkdir -p "$mnt/gw"
failover gw_write 1 write "$mnt/gw" 12582912
written gw_write gw 12582912
KILL=rgw ONE_URL=
fs_umount "$mnt"
S3R_GW_DIR=$tmp/gw0 "$GW_SH" stop
S3R_GW_DIR=$tmp/gw1 "$GW_SH" stop
fov_mount "$S3R_ENDPOINTS"
}

run_case prep case_prep
run_case spread case_spread
run_case seqread case_seqread
run_case randread case_randread
run_case write case_write
run_case listing case_listing
run_case renames case_renames
run_case gw_rgw case_gw_rgw
run_case gw_killed case_gw_killed
run_case control case_control
fs_umount "$mnt"
summary
