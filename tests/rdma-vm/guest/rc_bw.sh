#!/usr/bin/env bash
# tests/rdma-vm/guest/rc_bw.sh - in the soft-RoCE guest: perftest's
# ib_write_bw and ib_read_bw (smoke.sh, 64 x 1 MiB) against our RC
# transport's own throughput on the same rxe device (bench/rc_bw: both
# halves in one process, 64 MiB through rdx_serve, no S3), as the ratios
# rc get / ib_write_bw and rc put / ib_read_bw (issue 13: goal 0.7x).
#
#   tests/rdma-vm/run.sh --build DIR -- tests/rdma-vm/guest/rc_bw.sh
#
# The two take turns, round by round (smoke.sh's one write and one read,
# then rc_bw's get and put), so that drift in the emulator, or another
# guest on the host, hits both alike; each figure is the median of all its
# rounds. Only rc_bw's first round checks every byte.
#
# PASS or FAIL says only whether everything ran and every byte arrived;
# the ratios are reported, never judged (emulation makes timings noisy).
#
# Environment: S3R_BW_ROUNDS (default 3) rounds; S3R_RC_BW_ARGS extra
# rc_bw arguments (default --threads 1,2,4; rc_bw times 2 rounds of each
# per round here); S3R_BW_SKIP_PERFTEST=1 runs only rc_bw (no ratios: for
# trying rc_bw's options quickly). Writes to $S3R_RESULTS: perftest.env
# (smoke.sh's, the last round), rc_bw.env (rc_bw's, the last round) and
# bw.env: every figure, the medians and the ratios.
set -uo pipefail

REPO=${S3R_REPO:-$(cd "$(dirname "$0")/../../.." && pwd)}
BUILD=${S3R_BUILD:-$REPO/build}
RES=${S3R_RESULTS:-/tmp}
ROUNDS=${S3R_BW_ROUNDS:-3}
# shellcheck disable=SC2206 # words on purpose
RC_ARGS=(${S3R_RC_BW_ARGS:---threads 1,2,4})
BIN=$BUILD/bin/rc_bw
SKIP_PT=${S3R_BW_SKIP_PERFTEST:-0}
ALL=/tmp/bw.all # lines "key value", every round's figures
fail() { echo "rc_bw.sh: FAIL: $*"; exit 1; }

pt() {
  S3R_SMOKE_SIZE=1048576 S3R_SMOKE_ITERS=64 S3R_SMOKE_ROUNDS=1 \
    S3R_SMOKE_RDMACM=0 bash "$REPO/tests/rdma-vm/guest/smoke.sh"
}
# the device's retransmissions after a local ACK timeout (or a NAK): under
# emulation the 67 ms timeout (14) of both perftest and rc fires spuriously
retries() {
  cat "/sys/class/infiniband/${S3R_RDMA_DEV:-rxe0}/ports/1/hw_counters/completer_retry_err" 2>/dev/null || echo 0
}
pt_ok=0

[ -x "$BIN" ] || fail "$BIN missing (build the rc_bw target)"
echo "rc_bw.sh: $(nproc) vCPUs,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $ROUNDS rounds"
: > "$ALL"
for r in $(seq 1 "$ROUNDS"); do
  echo "rc_bw.sh: round $r of $ROUNDS"
  if [ "$SKIP_PT" != 1 ]; then
    # perftest times with rdtsc and calibrates it against cpu MHz; under
    # emulation that calibration sometimes fails ("Correlation coefficient
    # r^2 < 0.9", BW 0.00), which smoke.sh reports as a failure: once more,
    # then the round goes without perftest figures
    r0=$(retries)
    if pt || pt; then
      awk -F= '/^ib_(write|read)_bw_MBps=/ {sub("_MBps", "", $1); print $1, $2}' \
        "$RES/perftest.env" >> "$ALL"
      pt_ok=$((pt_ok + 1))
    else
      echo "rc_bw.sh: round $r: no perftest figures (smoke.sh failed twice)"
    fi
    echo "rc_bw.sh: perftest: $(($(retries) - r0)) retransmission timeouts (completer_retry_err)"
  fi
  check=
  [ "$r" -eq 1 ] || check=--no-check
  r0=$(retries)
  "$BIN" --rounds 2 --env "$RES/rc_bw.env" $check "${RC_ARGS[@]}" ||
    fail "rc_bw, round $r"
  echo "rc_bw.sh: rc_bw: $(($(retries) - r0)) retransmission timeouts (completer_retry_err)"
  # every timed round of every session count: rc_get_s1 v ...
  awk -F= '/^rc_(get|put)_MBps_s[0-9]+_all=/ {
      key = $1; sub("_MBps", "", key); sub("_all", "", key); gsub("\"", "", $2)
      n = split($2, v, " "); for (i = 1; i <= n; i++) print key, v[i] }' \
    "$RES/rc_bw.env" >> "$ALL"
done

[ "$SKIP_PT" = 1 ] || [ "$pt_ok" -gt 0 ] || fail "perftest gave no figures in $ROUNDS rounds"

# (no process substitution: the guest has no /dev/fd)
cut -d' ' -f1 "$ALL" | sort -u > "$ALL.keys"
grep '^rc_' "$ALL.keys" | sort -t_ -k3,3V -k2,2 > "$ALL.rc"
med() { # key -> the median of its values
  awk -v k="$1" '$1 == k {print $2}' "$ALL" | sort -n | awk '{v[NR] = $1}
    END {if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
each() { awk -v k="$1" '$1 == k {printf "%s%s", sep, $2; sep = " "}' "$ALL"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b}'; }
{
  while read -r key; do
    echo "${key}_MBps=$(med "$key")"
    echo "${key}_MBps_all=\"$(each "$key")\""
  done < "$ALL.keys"
} > "$RES/bw.env"
w=$(med ib_write_bw) rd=$(med ib_read_bw)
echo "rc_bw.sh: MB/s (2^20 B/s), medians of every round; ratio = rc / perftest (goal 0.7):"
[ "$SKIP_PT" = 1 ] || printf '  %-12s %8s  (each: %s)\n' ib_write_bw "$w" "$(each ib_write_bw)" \
  ib_read_bw "$rd" "$(each ib_read_bw)"
while read -r key; do
  base=$w; [ "${key#rc_put}" != "$key" ] && base=$rd
  rt=$(ratio "$(med "$key")" "${base:-0}")
  [ -z "$rt" ] || echo "ratio_${key#rc_}=$rt" >> "$RES/bw.env"
  printf '  %-12s %8s  ratio %-5s (each: %s)\n' "$key" "$(med "$key")" "${rt:--}" "$(each "$key")"
done < "$ALL.rc"
echo "rc_bw.sh: PASS (rc_bw ran, every byte checked in round 1; perftest gave figures in $pt_ok of $ROUNDS rounds)"
