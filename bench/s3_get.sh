#!/usr/bin/env bash
# Workload s3_get: fetch one object (default 1 GiB) from the local RGW with
# our client (N parallel ranged GETs) and with single-stream curl, in the same
# run, alternating tools; report median MB/s and the ratio.
#
#   bench/s3_get.sh [--size MiB] [--reps N] [--parallel N] [--part-size S]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

size_mib=1024 reps=3 parallel=16 part=8M
while [ $# -gt 0 ]; do
  case $1 in
    --size) size_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --part-size) part=$2; shift 2 ;;
    *) echo "usage: $0 [--size MiB] [--reps N] [--parallel N] [--part-size S]" >&2; exit 2 ;;
  esac
done

bench_setup
trap bench_teardown EXIT
bucket=s3r-bench
key=get-${size_mib}m.bin
bytes=$((size_mib * 1024 * 1024))
bench_object s3_get "$bucket" "$key" "$bytes"

run_ours() {
  "$CLI" --parallel "$parallel" --part-size "$part" get "$bucket/$key" /dev/null
}
run_curl() {
  curl -sf --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o /dev/null "$S3R_ENDPOINT/$bucket/$key"
}

ours=() curls=()
for ((i = 1; i <= reps; i++)); do
  for tool in ours curl; do
    drop_caches
    t0=$(now)
    "run_$tool"
    t1=$(now)
    mbs=$(awk -v b="$bytes" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f", b / 1e6 / (t1 - t0) }')
    echo "s3_get: rep $i $tool ${mbs} MB/s" >&2
    if [ "$tool" = ours ]; then ours+=("$mbs"); else curls+=("$mbs"); fi
  done
done
m_ours=$(median "${ours[@]}")
m_curl=$(median "${curls[@]}")
printf '\n%-28s %10s\n' "s3_get (${size_mib} MiB)" "MB/s"
printf '%-28s %10s\n' "s3rdma-cli x$parallel ($part)" "$m_ours" "curl (single stream)" "$m_curl"
bench_line s3_get s3rdma-cli "$m_ours" MB/s "$reps"
bench_line s3_get curl "$m_curl" MB/s "$reps"
ratio_line s3_get s3rdma-cli curl "$m_ours" "$m_curl"
