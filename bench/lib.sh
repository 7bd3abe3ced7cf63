# shellcheck shell=bash
# Shared helpers for the benchmarks (sourced), on top of the test library
# (tests/lib): mount.sh for our mounts, peers.sh for the peer tools.

BENCH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RGW_SH=$BENCH_TOP/tests/servers/rgw.sh
CLI=$BENCH_TOP/build/bin/s3rdma-cli

# bench_setup: packages, a build (skipped with BENCH_BUILD=0: use the binaries
# already in build/bin), RGW started if it is not running, its environment.
bench_started_rgw=0
bench_setup() {
  if [ "${BENCH_BUILD:-1}" = 0 ]; then
    "$BENCH_TOP/scripts/setup.sh" --no-build >&2
  else
    "$BENCH_TOP/scripts/setup.sh" >&2
  fi
  if ! "$RGW_SH" status >/dev/null 2>&1; then
    "$RGW_SH" start >&2
    bench_started_rgw=1
  fi
  eval "$("$RGW_SH" env)"
}

bench_teardown() {
  [ "$bench_started_rgw" -eq 0 ] || "$RGW_SH" stop >&2
}

# bench_read_object WORKLOAD SIZE_MIB: the object the read workloads share,
# SIZE_MIB MiB in bucket s3r-bench-fs; sets bucket, key and bytes
bench_read_object() {
  bucket=s3r-bench-fs
  key=read-${2}m.bin
  bytes=$(($2 * 1048576))
  bench_object "$1" "$bucket" "$key" "$bytes"
}

# bench_object WORKLOAD BUCKET KEY BYTES: the bucket, and in it an object of
# BYTES random bytes at KEY, uploaded only when not already there with that
# size (later runs reuse it).
bench_object() {
  "$CLI" mb "$2" 2>/dev/null || true
  if ! "$CLI" head "$2/$3" 2>/dev/null | grep -qx "size $4"; then
    echo "$1: uploading a $(($4 / 1048576)) MiB object" >&2
    head -c "$4" /dev/urandom | "$CLI" --parallel 8 put - "$2/$3"
  fi
}

# Mounts for the filesystem workloads: the tests' mount library
# (tests/lib/mount.sh: the daemon's exit status and log checked at unmount;
# its messages on stderr here). No -o cache.mlock=false: our daemon runs
# with its defaults (the page-cache arena pinned as root).
FS=$BENCH_TOP/build/bin/s3rdmafs
FS_REPORT_FD=2
# shellcheck source=tests/lib/mount.sh
. "$BENCH_TOP/tests/lib/mount.sh"
# The peer tools (peer_mount_s3fs, peer_umount, peer_curl_get, ...)
# shellcheck source=tests/lib/peers.sh
. "$BENCH_TOP/tests/lib/peers.sh"
# bench_mount_ours BUCKET MNT LOG [s3rdmafs args...]: our daemon, in the
# foreground in the background: its pid in $ours_pid, its output appended
# to LOG. Returns once the mount answers, or 1.
ours_pid=
bench_mount_ours() {
  fs_mount "$@" >&2 || { echo "bench: s3rdmafs did not mount $1 on $2" >&2; return 1; }
  ours_pid=$FS_PID
}
# bench_umount_ours MNT: unmount and wait (FS_EXIT_TIMEOUT, 120 s) for our
# daemon to exit (its last uploads); fails when it does not exit 0 or its
# log has a sanitizer report.
bench_umount_ours() {
  ours_pid=
  fs_umount "$1" >&2
}
# bench_mount_tool TOOL BUCKET MNT LOG [s3rdmafs args...]: s3rdmafs, s3fs or
# rclone (cache off) on MNT; bench_umount_tool TOOL MNT.
bench_mount_tool() {
  local tool=$1
  shift
  case $tool in
    s3rdmafs) bench_mount_ours "$@" ;;
    s3fs) peer_mount_s3fs "$1" "$2" >&2 ;;
    rclone) peer_mount_rclone "$1" "$2" >&2 ;;
  esac
}
bench_umount_tool() {
  case $1 in
    s3rdmafs) bench_umount_ours "$2" ;;
    *) peer_umount "$2" >&2 || true ;;
  esac
}

# bench_release WORKLOAD MNT TMP: whatever is mounted on MNT unmounted (our
# daemon or a peer), then TMP removed, unless MNT is still mounted (left in
# place, said on stderr). For the workloads' exit traps.
bench_release() {
  bench_umount_ours "$2" 2>/dev/null
  peer_umount "$2" 2>/dev/null
  if _peer_mounted "$2"; then
    echo "$1: $2 is still mounted; $3 left in place" >&2
  else
    fs_drop_pools "$3"
    rm -rf --one-file-system "$3"
  fi
}

now() { date +%s.%N; }

# median of the numbers given as arguments
median() {
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {
    if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# bench_line workload tool value unit n
bench_line() {
  printf 'BENCH workload=%s tool=%s value=%s unit=%s n=%s\n' "$@"
}

# ratio_line workload a b value_a value_b
ratio_line() {
  printf 'RATIO workload=%s a=%s b=%s value=%s\n' "$1" "$2" "$3" \
    "$(awk -v a="$4" -v b="$5" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
}

# proc_cpu_s PID: CPU seconds (user + system, all threads) used so far by a
# running process, from /proc/PID/stat; fails when it is gone.
proc_cpu_s() {
  local s fld
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  read -r -a fld <<<"$s"
  # fields 14 and 15 (utime, stime); fld[0] is field 3
  awk -v u="${fld[11]}" -v k="${fld[12]}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (u + k) / hz }'
}

# proc_tree_cpu_s PID: proc_cpu_s of PID, of its live children and of the
# children it has reaped (the gateway's cma helpers are its children).
proc_tree_cpu_s() {
  local s fld c total
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  read -r -a fld <<<"$s"
  # fields 14 to 17: utime, stime, cutime, cstime
  total=$(awk -v a="${fld[11]}" -v b="${fld[12]}" -v c="${fld[13]}" -v d="${fld[14]}" \
    -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (a + b + c + d) / hz }')
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    s=$(proc_cpu_s "$c") || continue
    total=$(awk -v a="$total" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
  done
  echo "$total"
}

# proc_user_cpu_s PID: the user-space part of proc_cpu_s (utime only): the
# process's own code, without what the kernel does on its behalf.
proc_user_cpu_s() {
  local s fld
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  read -r -a fld <<<"$s"
  awk -v u="${fld[11]}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", u / hz }'
}

# drop_caches: peer_drop_caches, quiet when it cannot (not root)
drop_caches() { peer_drop_caches 2>/dev/null || true; }

# bench_gateway_setup WORKLOAD SIZE_MIB: for a workload through
# s3rdma-gateway: tmp (removed at exit, with mnt unmounted and the
# gateway stopped), mnt, GW (scripts/gateway.sh), the read object
# (bench_read_object), the gateway started on a port of its own, its env
# (S3R_GW_ENDPOINT) and gw_pid. Sets the EXIT trap.
bench_gateway_setup() {
  GW=$BENCH_TOP/scripts/gateway.sh
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-bench-$1.XXXXXX")
  mnt=$tmp/mnt
  mkdir -p "$mnt"
  export S3R_GW_DIR=$tmp/gw
  trap _bench_gateway_cleanup EXIT
  bench_read_object "$1" "$2" # bucket, key, bytes
  "$GW" start --port 0 >&2
  eval "$("$GW" env)"
  # shellcheck disable=SC2034 # (for the workload)
  gw_pid=$(cat "$S3R_GW_DIR/pid")
}
_bench_gateway_cleanup() {
  set +e
  bench_umount_ours "$mnt"
  "$GW" stop
  fs_drop_pools "$tmp"
  rm -rf "$tmp"
  bench_teardown
}
