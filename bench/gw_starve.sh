#!/usr/bin/env bash
# Workload gw_starve: a cold sequential read of one object (default 1 GiB)
# through s3rdma-gateway (its default limits) with the mount's
# rdma.transport=cma, alone (tool cma) and while user nobody keeps 64
# keyless connections trickling their heads at the gateway (tool
# cma-attack: tests/integration/gw_hostile.py trickle 64, reopening each
# one the gateway closes). The tools alternate, every mount is fresh and
# caches are dropped before each run; medians reported, and the ratio
# attack/alone (issue 28: at least 0.8). The attacker's own counts (opened,
# refused at once) and the gateway's refusal counters are printed.
#
#   bench/gw_starve.sh [--size MiB] [--reps N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

size_mib=1024 reps=3
while [ $# -gt 0 ]; do
  case $1 in
    --size) size_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    gw_starve) shift ;;
    *) echo "usage: $0 [--size MiB] [--reps N]" >&2; exit 2 ;;
  esac
done
if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
  echo "gw_starve: needs user nobody and setpriv" >&2
  exit 1
fi

bench_setup
bench_gateway_setup gw_starve "$size_mib" # tmp, mnt, GW, gw_pid; the object
chmod 755 "$tmp"
attack_pid=''
stop_attack() {
  [ -n "$attack_pid" ] || return 0
  touch "$tmp/attack.stop"
  wait "$attack_pid" || true
  attack_pid=''
  grep -o 'trickle:.*' "$tmp/attack.log" >&2 || true
}
trap 'stop_attack; _bench_gateway_cleanup' EXIT

# shellcheck disable=SC2153 # (S3R_GW_ENDPOINT: bench_gateway_setup)
start_attack() {
  rm -f "$tmp/attack.stop" "$tmp/attack.started"
  touch "$tmp/attack.started" && chmod 666 "$tmp/attack.started"
  setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env -i PATH="$PATH" S3R_GW_ENDPOINT="$S3R_GW_ENDPOINT" \
    TRICKLE_STARTED="$tmp/attack.started" TRICKLE_STOP="$tmp/attack.stop" \
    timeout 600 python3 - trickle 64 600 \
    <"$BENCH_TOP/tests/integration/gw_hostile.py" >"$tmp/attack.log" 2>&1 &
  attack_pid=$!
  for _ in $(seq 1 100); do [ -s "$tmp/attack.started" ] && break; sleep 0.1; done
  sleep 11 # past the default --auth-timeout (10 s): the steady state of
  # deadlines, refusals and reopening
}

gw_stat() { "$GW" stats | awk -v k="$1" '$1 == k { print $2 }'; }

# run_once TOOL: a fresh mount, caches dropped, the attack started for
# cma-attack, the read timed. Sets r_mbs.
run_once() {
  local t0 t1
  bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o \
    "endpoint=$S3R_GW_ENDPOINT,rdma.transport=cma"
  drop_caches
  [ "$1" != cma-attack ] || start_attack
  t0=$(now)
  dd if="$mnt/$key" of=/dev/null bs=1M status=none
  t1=$(now)
  stop_attack
  if ! grep -q '^s3.rdma_bytes [1-9]' "$mnt/.s3rdmafs-stats"; then
    echo "gw_starve: the cma mount moved no bytes by rdma" >&2
    exit 1
  fi
  bench_umount_ours "$mnt"
  r_mbs=$(awk -v b="$bytes" -v a="$t0" -v c="$t1" 'BEGIN { printf "%.1f", b / 1e6 / (c - a) }')
}

tools=(cma cma-attack)
declare -A mbs
for ((i = 1; i <= reps; i++)); do
  for tool in "${tools[@]}"; do
    run_once "$tool"
    echo "gw_starve: rep $i $tool $r_mbs MB/s" >&2
    mbs[$tool]="${mbs[$tool]:-} $r_mbs"
  done
done

printf '\n%-10s %-11s %8s\n' gw_starve tool MB/s
declare -A m
for tool in "${tools[@]}"; do
  # shellcheck disable=SC2086
  m[$tool]=$(median ${mbs[$tool]})
  printf '%-10s %-11s %8s\n' "" "$tool" "${m[$tool]}"
  bench_line gw_starve "s3rdmafs-$tool" "${m[$tool]}" MB/s "$reps"
done
for k in refused_peer_strangers refused_strangers head_timeouts; do
  echo "gw_starve: the gateway's $k: $(gw_stat "$k")" >&2
done
ratio_line gw_starve s3rdmafs-cma-attack s3rdmafs-cma "${m[cma-attack]}" "${m[cma]}"
