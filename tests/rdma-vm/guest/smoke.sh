#!/usr/bin/env bash
# tests/rdma-vm/guest/smoke.sh - in the soft-RoCE guest (run.sh's default):
# perftest's ib_write_bw and ib_read_bw, server and client on the one rxe
# device over its own address (RC, GID index $S3R_GID_INDEX), and their BW
# lines.  These are the reference our RC transport's throughput is compared
# against; emulation makes the absolute numbers meaningless.
#
# Environment: S3R_SMOKE_SIZE bytes per message (default 1 MiB),
# S3R_SMOKE_ITERS messages (default 64: 64 MiB moved), S3R_SMOKE_ROUNDS
# (default 1) write+read rounds, S3R_SMOKE_RDMACM=0 to skip the short
# rdma_cm run (ib_write_bw -R, 16 messages).
# Writes $S3R_RESULTS/perftest.env: ib_write_bw_MBps=median, ..._all=each.
set -euo pipefail

DEV=${S3R_RDMA_DEV:-rxe0}
GIDX=${S3R_GID_INDEX:-1}
IP=${S3R_GUEST_IP:-10.0.2.15}
SIZE=${S3R_SMOKE_SIZE:-1048576}
ITERS=${S3R_SMOKE_ITERS:-64}
ROUNDS=${S3R_SMOKE_ROUNDS:-1}
OUT=${S3R_RESULTS:-/tmp}/perftest.env
CPU=$(($(nproc) - 1))
: > "$OUT"

bw() { # name port extra-args... -> prints the BW line, records the average
  local name=$1 port=$2; shift 2
  local common=(-d "$DEV" -i 1 -x "$GIDX" -s "$SIZE" -n "$ITERS" -F -p "$port" "$@")
  local slog=/tmp/$name.$port.server clog=/tmp/$name.$port.client t0 t1
  # perftest times with rdtsc, and the guest's vCPUs' TSCs are not in step
  # (dmesg: "TSCs unsynchronized"): pin the client, which measures, to one
  # vCPU and the server to another
  timeout 120 taskset -c 0 "$name" "${common[@]}" > "$slog" 2>&1 &
  local spid=$! ok=0
  t0=$(date +%s.%N)
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # the server may not listen yet
    sleep 1
    if timeout 120 taskset -c "$CPU" "$name" "${common[@]}" "$IP" > "$clog" 2>&1; then
      ok=1; break
    fi
    grep -qi "couldn't connect\|Unable to open file descriptor" "$clog" || break
  done
  t1=$(date +%s.%N)
  wait "$spid" || ok=0
  if [ "$ok" -ne 1 ]; then
    echo "--- $name server:"; cat "$slog"; echo "--- $name client:"; cat "$clog"
    echo "smoke: $name $* FAILED"
    return 1
  fi
  # the line after the "#bytes #iterations BW peak BW average MsgRate" header
  local line
  line=$(awk '/#bytes/ {getline; print; exit}' "$clog")
  [ -n "$line" ] || { cat "$clog"; echo "smoke: $name: no BW line"; return 1; }
  # shellcheck disable=SC2086
  set -- $line
  if ! awk -v bw="$4" 'BEGIN {exit !(bw > 0)}'; then
    cat "$clog"; echo "smoke: $name: BW average $4: not a measurement"; return 1
  fi
  printf 'smoke: %-12s %-4s %8s B x %5s  BW peak %8s MB/s  average %8s MB/s  (%.1f s)\n' \
    "$name" "${RDMACM:-rc}" "$1" "$2" "$3" "$4" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
  echo "${name}${SUFFIX:-} $4" >> /tmp/smoke.bw
}

echo "smoke: $DEV GID[$GIDX] $(cat "/sys/class/infiniband/$DEV/ports/1/gids/$GIDX"), $ITERS x $SIZE B"
: > /tmp/smoke.bw
for r in $(seq 1 "$ROUNDS"); do  # interleaved, so drift hits both alike
  [ "$ROUNDS" -eq 1 ] || echo "smoke: round $r of $ROUNDS"
  bw ib_write_bw 18515
  bw ib_read_bw 18516
done
if [ "${S3R_SMOKE_RDMACM:-1}" != 0 ]; then  # connection set up by rdma_cm
  ITERS=16 RDMACM=cm SUFFIX=_rdmacm bw ib_write_bw 18517 -R
fi
# perftest.env: NAME_MBps=median of the rounds, NAME_MBps_all="r1 r2 ..."
cut -d' ' -f1 /tmp/smoke.bw | sort -u | while read -r key; do
  vals=$(awk -v k="$key" '$1 == k {print $2}' /tmp/smoke.bw)
  med=$(sort -n <<<"$vals" | awk '{v[NR] = $1}
    END {printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  echo "${key}_MBps=$med"
  echo "${key}_MBps_all=\"$(tr '\n' ' ' <<<"$vals" | sed 's/ $//')\""
done > "$OUT"
echo "smoke: perftest.env (MB/s = 2^20 B/s; medians of $ROUNDS rounds):"
sed 's/^/  /' "$OUT"
