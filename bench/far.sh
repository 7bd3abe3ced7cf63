#!/usr/bin/env bash
# Workload far: the server at a distance. Every tool reaches RGW through
# bench/delay_relay.py, which holds the bytes half the round trip each way
# (the kernel here has no netem; the relay is used at 0 ms too, so that its
# own cost is in every figure), then, for each tool (s3rdmafs, s3fs,
# rclone; each mount fresh, defaults) and each delay (default 0 and 10 ms
# of round trip), the median of --reps runs of:
#   ls       ls -l of 1,000 names (s)
#   cat400   cat of 400 files of 256 KiB, 8 readers at once (MiB/s)
#   first    the first byte of a 4 KiB file, cold directory: fone/f00000,
#            one directory below the mount's root (ms: open, read(1) and
#            close timed in the process that makes them, as for the
#            next three: no process start is counted)
#   second   ... of a second file of the directory just looked in (ms)
#   listed   ... of a file of a directory ls just listed (ms)
#   deep     ... of a file three names down, cold: far/one/f00000 (ms)
#   create   200 new 4 KiB files written one after another by one
#            process, one descriptor each (files/s)
#   seqread  a cold read of 512 MiB (MB/s)
#   seqwrite a write of 256 MiB, until close returns (MB/s)
# and for s3rdmafs the requests each step sent (its stats file). The row
# "bare" is what the round trips allow: curl on one kept connection
# sending, one after another, the requests a step cannot do without
# (ls: one LIST of 1,000 names; first: LIST fone/ and GET; second and
# listed: GET; deep: LIST far/, LIST far/one/, GET; create: PUT; cat400:
# the 400 GETs, 8 at once), through the same relay. Printed as a
# table, BENCH lines (workload far_STEP_dDELAY), and ratios: ours over
# s3fs's, rclone's and bare's at each delay, and ours at each delay over
# ours at the first.
#
#   bench/far.sh [--delays "0 10 50"] [--tools "s3rdmafs s3fs rclone"]
#                [--reps N] [--steps "first second ..."]
#                [--ours "-o KEY=VALUE ..."]  (options for our mounts)
# Needs root (mounts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

delays="0 10" tools="s3rdmafs s3fs rclone" reps=3
steps=(ls cat400 first second listed deep create seqread seqwrite)
ours=()
while [ $# -gt 0 ]; do
  case $1 in
    --delays) delays=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) read -ra steps <<<"$2"; shift 2 ;;
    --ours) read -ra ours <<<"$2"; shift 2 ;;
    far) shift ;;
    *) echo "usage: $0 [--delays \"0 10 50\"] [--tools \"s3rdmafs s3fs rclone\"] [--reps N] [--steps \"first ...\"]" >&2; exit 2 ;;
  esac
done

bench_setup
peer_install >&2
bucket=s3r-bench-far
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-far.XXXXXX")
mnt=$tmp/mnt
mkdir -p "$mnt"
port=${S3R_ENDPOINT##*:}
port=${port%%/*}
rgw_endpoint=$S3R_ENDPOINT relay_pid=''

delay_off() {
  [ -z "$relay_pid" ] || { kill "$relay_pid" 2>/dev/null; wait "$relay_pid" 2>/dev/null || true; }
  relay_pid=''
  export S3R_ENDPOINT=$rgw_endpoint
  unset S3R_FS_ENDPOINT
}
# delay_on MS: every tool's endpoint a relay adding MS of round trip
delay_on() {
  delay_off
  rm -f "$tmp/relay.port"
  python3 "$here/delay_relay.py" 0 "$port" "$1" --port-file "$tmp/relay.port" &
  relay_pid=$!
  for _ in $(seq 1 100); do [ -s "$tmp/relay.port" ] && break; sleep 0.1; done
  local rp
  rp=$(cat "$tmp/relay.port")
  export S3R_ENDPOINT=http://127.0.0.1:$rp S3R_FS_ENDPOINT=http://127.0.0.1:$rp
}
trap 'delay_off; bench_release far "$mnt" "$tmp"; bench_teardown' EXIT

# ---- the objects (no delay) ----
"$CLI" mb "$bucket" 2>/dev/null || true
have() { "$CLI" ls "$bucket/$1" 2>/dev/null | wc -l; }
: >"$tmp/empty"
for d in far/ls far/small far/one far/new fone; do "$CLI" put "$tmp/empty" "$bucket/$d/" >/dev/null; done
[ "$(have far/ls/)" -ge 1000 ] || "$CLI" --parallel 32 fill "$bucket/far/ls/f" 1000 100 >/dev/null
[ "$(have far/small/)" -ge 400 ] || "$CLI" --parallel 32 fill "$bucket/far/small/f" 400 262144 >/dev/null
[ "$(have far/one/)" -ge 4 ] || "$CLI" --parallel 4 fill "$bucket/far/one/f" 4 4096 >/dev/null
[ "$(have fone/)" -ge 4 ] || "$CLI" --parallel 4 fill "$bucket/fone/f" 4 4096 >/dev/null
bench_object far "$bucket" far/seq.bin $((512 * 1048576))

mount_tool() { bench_mount_tool "$1" "$bucket" "$mnt" "$tmp/fs.log" ${ours[@]+"${ours[@]}"}; }
umount_tool() { bench_umount_tool "$1" "$mnt"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
# requests our mount has sent so far (0 for the others)
reqs() { [ "$1" = s3rdmafs ] && awk '$1 == "s3.requests" { print $2 }' "$mnt/.s3rdmafs-stats" || echo 0; }

# byte1 PATH: seconds an open, a read of 1 byte and a close of PATH take
byte1() {
  python3 -c 'import os, sys, time
t = time.perf_counter()
fd = os.open(sys.argv[1], os.O_RDONLY)
assert len(os.read(fd, 1)) == 1
os.close(fd)
print("%.6f" % (time.perf_counter() - t))' "$1"
}
# run TOOL STEP: one fresh mount, the step timed; sets val (its unit as
# above) and nreq (requests sent by the step, ours only)
run() {
  local tool=$1 step=$2 t0 t1 r0 i s=
  mount_tool "$tool"
  case $step in
    seqread) drop_caches ;;
    create) rm -f "$mnt"/far/new/c* 2>/dev/null || true ;;
  esac
  r0=$(reqs "$tool")
  t0=$(now)
  case $step in
    ls) ls -l "$mnt/far/ls" >/dev/null ;;
    cat400) printf '%s\n' "$mnt"/far/small/f* | xargs -P 8 -n 50 cat >/dev/null ;;
    first) s=$(byte1 "$mnt/fone/f00000") ;;
    second)
      byte1 "$mnt/fone/f00000" >/dev/null
      r0=$(reqs "$tool")
      s=$(byte1 "$mnt/fone/f00001") ;;
    listed)
      ls "$mnt/fone" >/dev/null
      r0=$(reqs "$tool")
      s=$(byte1 "$mnt/fone/f00002") ;;
    deep) s=$(byte1 "$mnt/far/one/f00000") ;;
    create) python3 -c 'import sys
data = open(sys.argv[1], "rb").read()
for i in range(200):
    with open("%s/c%d" % (sys.argv[2], i), "wb") as f:
        f.write(data)' "$tmp/src4k" "$mnt/far/new" ;;
    seqread) dd if="$mnt/far/seq.bin" of=/dev/null bs=1M status=none ;;
    seqwrite) dd if="$tmp/src256" of="$mnt/far/w.bin" bs=1M status=none ;;
  esac
  t1=$(now)
  nreq=$(($(reqs "$tool") - r0))
  case $step in
    seqwrite) rm -f "$mnt/far/w.bin" ;;
    create) rm -f "$mnt"/far/new/c* ;;
  esac
  umount_tool "$tool"
  [ -n "$s" ] || s=$(elapsed "$t0" "$t1")
  case $step in
    ls) val=$s ;;
    cat400) val=$(awk -v s="$s" 'BEGIN { printf "%.1f", 100 / s }') ;;
    first | second | listed | deep) val=$(awk -v s="$s" 'BEGIN { printf "%.1f", s * 1000 }') ;;
    create) val=$(awk -v s="$s" 'BEGIN { printf "%.1f", 200 / s }') ;;
    seqread) val=$(awk -v s="$s" 'BEGIN { printf "%.1f", 512 * 1048576 / 1e6 / s }') ;;
    seqwrite) val=$(awk -v s="$s" 'BEGIN { printf "%.1f", 256 * 1048576 / 1e6 / s }') ;;
  esac
}
# bare STEP: what the round trips allow for STEP (ms; create: files/s):
# curl on one connection, warmed by a first request, sends the step's
# requests one after another; the median of 5 goes
bare() {
  local b=${S3R_ENDPOINT%/}/$bucket list="?list-type=2&delimiter=%2F&max-keys=1" u
  local -a urls=() args=() v=()
  case $1 in
    first) urls=("$b$list&prefix=fone%2F" "$b/fone/f00000") ;;
    second | listed) urls=("$b/fone/f00001") ;;
    deep) urls=("$b$list&prefix=far%2F" "$b$list&prefix=far%2Fone%2F" "$b/far/one/f00000") ;;
    create) # (curl 7.88 signs a PUT after a GET of the same call wrongly,
      # and one without its Expect header too: each PUT is a call of its
      # own, its connection made to the relay, which adds no round trip
      # for it, and its body sent as data, which asks no 100-continue)
      for _ in 1 2 3 4 5; do
        v+=("$(_peer_curl -w '%{time_total}\n' -o /dev/null -X PUT \
          -H 'Content-Type: application/octet-stream' \
          --data-binary @"$tmp/src4k" "$b/far/new/bare" |
          awk '{ printf "%.1f", $1 * 1000 }')")
      done
      _peer_curl -X DELETE -o /dev/null "$b/far/new/bare" || true
      awk -v ms="$(median "${v[@]}")" 'BEGIN { printf "%.1f", 1000 / ms }'
      return ;;
    cat400) # (MiB/s: the 400 GETs, 8 at once on kept connections)
      for u in $(seq -f "$b/far/small/f%05g" 0 399); do args+=(-o /dev/null "$u"); done
      for _ in 1 2 3; do
        local t0 t1
        t0=$(now)
        _peer_curl -Z --parallel-max 8 "${args[@]}" 2>/dev/null
        t1=$(now)
        v+=("$(awk -v s="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.1f", 100 / s }')")
      done
      median "${v[@]}"
      return ;;
    ls) # (s: the LIST of 1,000 names, one page, on a kept connection)
      for _ in 1 2 3 4 5; do
        v+=("$(_peer_curl -w '%{time_total}\n' -o /dev/null "$b/fone/f00003" \
          -o /dev/null "$b?list-type=2&delimiter=%2F&prefix=far%2Fls%2F" |
          tail -n +2 | awk '{ printf "%.4f", $1 }')")
      done
      median "${v[@]}"
      return ;;
    *) echo - ; return ;;
  esac
  for u in ${urls[@]+"${urls[@]}"}; do args+=(-o /dev/null "$u"); done
  for _ in 1 2 3 4 5; do
    v+=("$(_peer_curl -w '%{time_total}\n' -o /dev/null "$b/fone/f00003" "${args[@]}" |
      tail -n +2 | awk '{ t += $1 } END { printf "%.1f", t * 1000 }')")
  done
  median "${v[@]}"
}
head -c 4096 /dev/urandom >"$tmp/src4k"
head -c $((256 * 1048576)) /dev/urandom >"$tmp/src256"

declare -A unit=([ls]=s [cat400]=MiB/s [first]=ms [second]=ms [listed]=ms
                 [deep]=ms [create]=files/s [seqread]=MB/s [seqwrite]=MB/s)
declare -A res reqn
for d in $delays; do
  delay_on "$d"
  for step in "${steps[@]}"; do
    declare -A vals=()
    for _ in $(seq 1 "$reps"); do # tools alternate between repetitions
      for tool in $tools; do
        run "$tool" "$step"
        vals[$tool]+=" $val"
        reqn[$d,$step,$tool]=$nreq
        echo "far: ${d} ms $step $tool: $val ${unit[$step]} (requests: $nreq)" >&2
      done
    done
    for tool in $tools; do
      # shellcheck disable=SC2086 # (the values, one word each)
      res[$d,$step,$tool]=$(median ${vals[$tool]})
    done
    unset vals
    res[$d,$step,bare]=$(bare "$step")
  done
  delay_off
done

printf '\n%-6s %-9s %-9s' far delay step
for tool in $tools bare; do printf ' %12s' "$tool"; done
printf ' %10s\n' "our reqs"
for d in $delays; do
  for step in "${steps[@]}"; do
    printf '%-6s %-9s %-9s' "" "${d}ms" "$step"
    for tool in $tools bare; do printf ' %12s' "${res[$d,$step,$tool]}"; done
    printf ' %10s\n' "${reqn[$d,$step,s3rdmafs]:--}"
  done
done
for d in $delays; do
  for step in "${steps[@]}"; do
    for tool in $tools; do
      bench_line "far_${step}_d${d}" "$tool" "${res[$d,$step,$tool]}" "${unit[$step]}" "$reps"
    done
    for tool in $tools bare; do
      [ "$tool" != s3rdmafs ] && [ "${res[$d,$step,$tool]}" != - ] || continue
      case $step in # time: the other's over ours (higher: we are faster)
        ls | first | second | listed | deep) ratio_line "far_${step}_d${d}" "$tool" s3rdmafs \
          "${res[$d,$step,$tool]}" "${res[$d,$step,s3rdmafs]}" ;;
        *) ratio_line "far_${step}_d${d}" s3rdmafs "$tool" \
          "${res[$d,$step,s3rdmafs]}" "${res[$d,$step,$tool]}" ;;
      esac
    done
  done
done
first_delay=${delays%% *}
for d in $delays; do
  [ "$d" != "$first_delay" ] || continue
  for step in seqread seqwrite cat400 create; do
    [ -n "${res[$d,$step,s3rdmafs]:-}" ] || continue
    ratio_line "far_${step}_d${d}_vs_d${first_delay}" "s3rdmafs-d$d" \
      "s3rdmafs-d$first_delay" "${res[$d,$step,s3rdmafs]}" "${res[$first_delay,$step,s3rdmafs]}"
  done
done
