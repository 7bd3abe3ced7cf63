#!/usr/bin/env bash
# Workload fs_fio: the fio jobs mountpoint-s3 measures itself with (its
# scripts/fio read, write and mix jobs: 256 KiB blocks, the sync engine, N
# threads each on its own file), scaled to this machine (1 GiB files, one
# pass instead of a time limit), plus a sparse random read, run against
# s3rdmafs and s3fs (rclone on request) on the same RGW in one run. Every
# job gets a fresh mount and the kernel's caches dropped first.
#
#   job             threads  what each thread does
#   seq_read_1t     1        reads its 1 GiB file from start to end
#   seq_read_4t     4        the same, four files at once
#   rand_read_1t    1        reads every 256 KiB block of its file once, in
#                            random order (dense)
#   rand_read_4t    4        the same, four files (mountpoint-s3's
#                            rand_read_4t)
#   rand_sparse_4t  4        64 MiB of random 256 KiB blocks of each file
#   seq_write_1t    1        writes a new 1 GiB file, fsync at close
#   mix_2r2w        2 + 2    two sequential readers and two writers of new
#                            files at once (reads and writes reported apart)
#
# Reported per job and tool: MiB/s (the bytes moved over the wall time of
# the fio run, which includes the uploads at close), CPU seconds per GiB of
# the daemon, and for s3rdmafs the bytes it fetched from S3 per byte fio
# read (fs.get_bytes over fio's bytes: 1.0 is exact, more is read
# amplification) and the most requests it had in flight. RATIO lines: s3rdmafs over each
# peer.
#
#   bench/fs_fio.sh [--jobs "seq_read_1t ..."] [--tools "s3rdmafs s3fs"]
#                   [--size MiB] [--timeout S]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

all_jobs=(seq_read_1t seq_read_4t rand_read_1t rand_read_4t rand_sparse_4t seq_write_1t mix_2r2w)
jobs=("${all_jobs[@]}") tools=(s3rdmafs s3fs) size_mib=1024 tmo=900
usage() {
  echo "usage: $0 [--jobs \"${all_jobs[*]}\"] [--tools \"s3rdmafs s3fs rclone\"] [--size MiB] [--timeout S]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) [ $# -ge 2 ] || usage; read -r -a jobs <<<"$2"; shift 2 ;;
    --tools) [ $# -ge 2 ] || usage; read -r -a tools <<<"$2"; shift 2 ;;
    --size) [ $# -ge 2 ] || usage; size_mib=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; tmo=$2; shift 2 ;;
    fs_fio) shift ;;
    *) usage ;;
  esac
done
for v in "$size_mib" "$tmo"; do case $v in '' | *[!0-9]* | 0) usage ;; esac; done
for j in "${jobs[@]}"; do
  case " ${all_jobs[*]} " in *" $j "*) ;; *) echo "fs_fio: unknown job '$j'" >&2; usage ;; esac
done
for t in "${tools[@]}"; do
  case $t in s3rdmafs | s3fs | rclone) ;; *) echo "fs_fio: unknown tool '$t'" >&2; usage ;; esac
done

bench_setup
peer_install >&2
bucket=s3r-bench-fio
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-fio.XXXXXX")
mnt=$tmp/mnt
mkdir -p "$mnt" "$tmp/cache"
cleanup() {
  local rc=$?
  set +e
  bench_release fs_fio "$mnt" "$tmp"
  peer_rm_object "$bucket" fio/w.0 2>/dev/null # the writers' files; the
  peer_rm_object "$bucket" fio/w.1 2>/dev/null # readers' stay for next time
  bench_teardown
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the four files the readers share, kept for later runs (bench_object), in
# a directory with its marker (for s3fs)
"$CLI" mb "$bucket" 2>/dev/null || true
printf '' | "$CLI" put - "$bucket/fio/" >/dev/null
for i in 0 1 2 3; do bench_object fs_fio "$bucket" "fio/r.$i" $((size_mib * 1048576)); done

# job_file JOB: the fio job file (written to stdout); $jobnum is fio's
# shellcheck disable=SC2016
job_file() {
  local d=$mnt/fio
  printf '[global]\nbs=256k\nioengine=sync\nfallocate=none\nsize=%dM\ndirectory=%s\n' "$size_mib" "$d"
  case $1 in
    seq_read_1t | seq_read_4t | rand_read_1t | rand_read_4t | rand_sparse_4t)
      printf '[%s]\nfilename_format=r.$jobnum\nnumjobs=%s\nrw=%s\n' "$1" "${1: -2:1}" \
        "$([ "${1%%_*}" = seq ] && echo read || echo randread)"
      [ "$1" != rand_sparse_4t ] || printf 'io_size=64M\n'
      ;;
    seq_write_1t)
      printf '[%s]\nfilename_format=w.$jobnum\nrw=write\ncreate_on_open=1\nfsync_on_close=1\n' "$1" ;;
    mix_2r2w)
      printf '[readers]\nfilename_format=r.$jobnum\nnumjobs=2\nrw=read\n'
      printf '[writers]\nfilename_format=w.$jobnum\nnumjobs=2\nrw=write\ncreate_on_open=1\nfsync_on_close=1\n' ;;
  esac
}

stat_of_mnt() { awk -v k="$1" '$1 == k { print $2 }' "$mnt/.s3rdmafs-stats"; }

# run_job JOB TOOL: one fio run on a fresh mount. Prints "read_mibs
# write_mibs cpu_per_gib fetched_per_read max_inflight" (- where none), or
# the reason it failed, and returns 1.
run_job() {
  local job=$1 tool=$2 pid c0 c1 t0 t1 rb wb out g0 g1 rc=0
  peer_rm_object "$bucket" fio/w.0 2>/dev/null || true
  peer_rm_object "$bucket" fio/w.1 2>/dev/null || true
  if ! bench_mount_tool "$tool" "$bucket" "$mnt" "$tmp/fs.log" -o "cache.dir=$tmp/cache"; then
    bench_umount_tool "$tool" "$mnt"
    echo "mount failed"
    return 1
  fi
  if [ "$tool" = s3rdmafs ]; then pid=$ours_pid; else pid=$(peer_pid "$mnt") || pid=; fi
  drop_caches
  job_file "$job" >"$tmp/job.fio"
  c0=$(proc_cpu_s "$pid" 2>/dev/null) || c0=
  if [ "$tool" = s3rdmafs ]; then g0=$(stat_of_mnt fs.get_bytes); fi
  t0=$(now)
  timeout -k 10 "$tmo" fio --output-format=json --output="$tmp/out.json" "$tmp/job.fio" \
    >"$tmp/fio.err" 2>&1 || rc=$?
  t1=$(now)
  c1=$(proc_cpu_s "$pid" 2>/dev/null) || c1=
  if [ "$tool" = s3rdmafs ]; then
    g1=$(stat_of_mnt fs.get_bytes)
    out="$((g1 - g0)) $(stat_of_mnt s3.max_inflight_seen)"
    grep -E '^(read\.(dense|kstore)|fs\.(read_bytes|get_bytes|gets) )' "$mnt/.s3rdmafs-stats" | tr '\n' ' ' >&2
    echo >&2
  else
    out="- -"
  fi
  bench_umount_tool "$tool" "$mnt"
  if [ "$rc" -ne 0 ]; then
    echo "fio exit $rc: $(tail -n 3 "$tmp/fio.err" | tr '\n' ' ')"
    return 1
  fi
  read -r rb wb < <(python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(sum(x["read"]["io_bytes"] for x in j["jobs"]), sum(x["write"]["io_bytes"] for x in j["jobs"]))' "$tmp/out.json")
  awk -v rb="$rb" -v wb="$wb" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    -v c0="${c0:-}" -v c1="${c1:-}" -v got="${out% *}" -v infl="${out#* }" 'BEGIN {
      m = 1048576
      printf "%s %s %s %s %s\n", (rb > 0 ? sprintf("%.1f", rb / m / t) : "-"),
        (wb > 0 ? sprintf("%.1f", wb / m / t) : "-"),
        (c0 != "" && c1 != "" ? sprintf("%.2f", (c1 - c0) / ((rb + wb) / (1024 * m))) : "-"),
        (got != "-" && rb > 0 ? sprintf("%.2f", got / rb) : "-"), infl }'
}

rc=0
printf '%-15s %-9s %10s %10s %10s %10s %9s\n' job tool "read MiB/s" "write MiB/s" "CPU s/GiB" fetched/read inflight
for job in "${jobs[@]}"; do
  declare -A rd=() wr=()
  for tool in "${tools[@]}"; do
    if ! res=$(run_job "$job" "$tool"); then
      printf '%-15s %-9s FAILED: %s\n' "$job" "$tool" "$res"
      printf 'FAIL workload=fio_%s tool=%s failed=1 n=1\n' "$job" "$tool"
      rc=1
      continue
    fi
    read -r r w c f i <<<"$res"
    printf '%-15s %-9s %10s %10s %10s %10s %9s\n' "$job" "$tool" "$r" "$w" "$c" "$f" "$i"
    [ "$r" = - ] || { bench_line "fio_${job}_read" "$tool" "$r" MiB/s 1; rd[$tool]=$r; }
    [ "$w" = - ] || { bench_line "fio_${job}_write" "$tool" "$w" MiB/s 1; wr[$tool]=$w; }
    [ "$c" = - ] || bench_line "fio_${job}_cpu" "$tool" "$c" CPU-s/GiB 1
    [ "$f" = - ] || bench_line "fio_${job}_fetched_per_read" "$tool" "$f" ratio 1
  done
  for tool in "${tools[@]}"; do
    [ "$tool" != s3rdmafs ] || continue
    [ -z "${rd[s3rdmafs]:-}" ] || [ -z "${rd[$tool]:-}" ] ||
      ratio_line "fio_${job}_read" s3rdmafs "$tool" "${rd[s3rdmafs]}" "${rd[$tool]}"
    [ -z "${wr[s3rdmafs]:-}" ] || [ -z "${wr[$tool]:-}" ] ||
      ratio_line "fio_${job}_write" s3rdmafs "$tool" "${wr[s3rdmafs]}" "${wr[$tool]}"
  done
  unset rd wr
done
exit "$rc"
