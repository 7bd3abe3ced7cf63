#!/usr/bin/env bash
# Workload nodes: one mount over two RGWs of one cluster against one RGW
# (tests/servers/rgw.sh node-start 1: a second radosgw on the same pools),
# in one run, each mount fresh, the median of --reps runs of:
#   read     a cold read of a 1 GiB object (MB/s)
#   write    a write of 1 GiB to a new file, until close returns (MB/s)
# with the daemon's CPU seconds per GiB, requests per GiB, and for the
# two-RGW mount each RGW's share of the attempts and bytes (its
# s3.endpoint_* counters). Then "survive": the same read over two RGWs
# while the second is killed 1 s in and left down 4 s (rgw.sh
# node-restart 1 4): its MB/s, whether every byte was right, and the
# attempts each RGW took. On this 2-core machine both RGWs share the
# CPUs, so two are no faster than one here: the figures to read are the
# spread and the survival.
#
#   bench/nodes.sh [--reps N] [--size MIB]
# Needs root (mounts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

reps=3 mib=1024
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --size) mib=$2; shift 2 ;;
    nodes) shift ;;
    *) echo "usage: $0 [--reps N] [--size MIB]" >&2; exit 2 ;;
  esac
done

bench_setup
bucket=s3r-bench-nodes key=nodes.bin bytes=$((mib * 1048576))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-nodes.XXXXXX")
mnt=$tmp/mnt
mkdir -p "$mnt"
started1=0 kpid=
cleanup() {
  [ -z "$kpid" ] || { kill "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null; }
  bench_release nodes "$mnt" "$tmp"
  [ "$started1" = 0 ] || "$RGW_SH" node-stop 1 >&2 || true
  bench_teardown
}
trap cleanup EXIT
"$RGW_SH" status >/dev/null 2>&1 || { echo "nodes: RGW is not running" >&2; exit 1; }
IFS=';' read -r -a urls <<<"$S3R_ENDPOINTS"
# (a second radosgw this script did not start is left running at the end)
curl -s -o /dev/null --max-time 2 "${urls[1]}" || started1=1
if ! "$RGW_SH" node-start 1 >&2; then
  echo "nodes: cannot start a second radosgw" >&2
  exit 1
fi
one=${urls[0]} two="${urls[0]};${urls[1]}"

bench_object nodes "$bucket" "$key" "$bytes"
"$CLI" get "$bucket/$key" "$tmp/want" >/dev/null
want=$(md5sum <"$tmp/want" | cut -d' ' -f1)
rm -f "$tmp/want"

st() { awk -v k="$1" '$1 == k { print $2 }' "$mnt/.s3rdmafs-stats"; }
mb_s() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.1f", b / 1e6 / t }'; }
# run ENDPOINTS STEP: a fresh mount, the step timed; sets val (MB/s), cpu
# (daemon CPU s per GiB), reqs (requests per GiB), ok (bytes right),
# share ("a/b" attempts per endpoint; "" with one)
run() {
  local eps=$1 step=$2 t0 t1 c0 r0 sum
  bench_mount_ours "$bucket" "$mnt" "$tmp/fs.log" -o "endpoint=$eps"
  drop_caches
  c0=$(proc_cpu_s "$ours_pid") r0=$(st s3.requests)
  t0=$(now)
  ok=1
  case $step in
    read)
      sum=$(md5sum <"$mnt/$key" | cut -d' ' -f1) || sum=failed
      [ "$sum" = "$want" ] || ok=0 ;;
    survive)
      { sleep 1; "$RGW_SH" node-restart 1 4 >/dev/null 2>&1; } &
      kpid=$!
      sum=$(md5sum <"$mnt/$key" | cut -d' ' -f1) || sum=failed
      wait "$kpid"
      kpid=
      [ "$sum" = "$want" ] || ok=0 ;;
    write) head -c "$bytes" /dev/zero >"$mnt/w-$RANDOM.bin" || ok=0 ;;
  esac
  t1=$(now)
  val=$(mb_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
  cpu=$(awk -v a="$c0" -v b="$(proc_cpu_s "$ours_pid")" -v m="$mib" \
    'BEGIN { printf "%.2f", (b - a) * 1024 / m }')
  reqs=$(awk -v a="$r0" -v b="$(st s3.requests)" -v m="$mib" \
    'BEGIN { printf "%.0f", (b - a) * 1024 / m }')
  share=''
  if [[ $eps == *';'* ]]; then
    share="$(st 's3.endpoint_attempts{endpoint=0}')/$(st 's3.endpoint_attempts{endpoint=1}') attempts, $(($(st 's3.endpoint_bytes{endpoint=0}') >> 20))/$(($(st 's3.endpoint_bytes{endpoint=1}') >> 20)) MiB"
  fi
  rm -f "$mnt"/w-*.bin
  bench_umount_ours "$mnt"
}

printf '%-8s %-5s %10s %10s %10s %s\n' step rgws MB/s CPUs/GiB req/GiB "share (attempts, MiB per RGW)"
for step in read write; do
  for n in 1 2; do
    eps=$one
    [ "$n" = 1 ] || eps=$two
    vals=()
    for ((i = 0; i < reps; i++)); do
      run "$eps" "$step"
      [ "$ok" = 1 ] || { echo "nodes: $step over $n RGW(s): wrong bytes or an error" >&2; exit 1; }
      vals+=("$val")
    done
    val=$(median "${vals[@]}")
    printf '%-8s %-5s %10s %10s %10s %s\n' "$step" "$n" "$val" "$cpu" "$reqs" "$share"
    bench_line "nodes_${step}_$n" s3rdmafs "$val" MB/s "$reps"
    eval "v_${step}_$n=$val"
  done
  ratio_line "nodes_$step" two one "$(eval echo "\$v_${step}_2")" "$(eval echo "\$v_${step}_1")"
done
run "$two" survive
printf '%-8s %-5s %10s %10s %10s %s (bytes %s)\n' survive 2 "$val" "$cpu" "$reqs" \
  "$share" "$([ "$ok" = 1 ] && echo right || echo WRONG)"
bench_line nodes_survive_2 s3rdmafs "$val" MB/s 1
[ "$ok" = 1 ]
