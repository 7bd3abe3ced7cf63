# Shared helpers for the filesystem integration tests (sourced).
# Needs: $BIN (build/bin), S3R_ENDPOINT and keys in the environment.
# shellcheck shell=bash

FS=$BIN/s3rdmafs
CLI=$BIN/s3rdma-cli
pass=0 fail=0

aws_() { "${S3R_AWS:-/usr/bin/aws}" --endpoint-url "$S3R_ENDPOINT" "$@"; }

check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok - $name"
  else fail=$((fail + 1)); echo "not ok - $name"; fi
}

# Is $1 mounted? From /proc/mounts: mountpoint(1) fails on a dead FUSE
# mount (its daemon gone), which is exactly when cleanup must still act.
is_mounted() { grep -qs " $1 " /proc/mounts; }

# Wait (bounded) until $1 is mounted, or until it is not (with "not").
wait_mount() {
  local mp=$1 want=${2:-yes}
  for _ in $(seq 1 100); do
    if is_mounted "$mp"; then [ "$want" = yes ] && return 0
    else [ "$want" = not ] && return 0; fi
    sleep 0.1
  done
  return 1
}

# fs_mount BUCKET MNT LOG [extra args...]: foreground daemon in the background.
# S3R_FS_ENDPOINT and S3R_FS_OPTS (with_gateway.sh sets them) mount through
# another endpoint with more -o options; awscli checks stay on S3R_ENDPOINT.
fs_mount() {
  local bucket=$1 mp=$2 log=$3; shift 3
  local via=()
  if [ -n "${S3R_FS_ENDPOINT:-}" ]; then via+=(-o "endpoint=$S3R_FS_ENDPOINT"); fi
  if [ -n "${S3R_FS_OPTS:-}" ]; then via+=(-o "$S3R_FS_OPTS"); fi
  "$FS" "$bucket" "$mp" -f -o cache.mlock=false "${via[@]}" "$@" >"$log" 2>&1 &
  wait_mount "$mp" || { echo "mount failed:"; cat "$log"; return 1; }
}

fs_umount() {
  local mp=$1
  is_mounted "$mp" || return 0
  for _ in $(seq 1 50); do
    fusermount3 -u "$mp" 2>/dev/null && break
    sleep 0.2
  done
  if is_mounted "$mp"; then umount -l "$mp"; fi
  wait_mount "$mp" not
}

md5() { md5sum <"$1" | cut -d' ' -f1; }

# fs_cleanup: the EXIT trap of a test script using $tmp, $mnt, $log and
# $bucket: on failure show the daemon's log, then unmount, drop the bucket
# and the temporary directory.
fs_cleanup() {
  local rc=$?
  set +e # errexit would stop the cleanup at its first failing step
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- the daemon's log (exit $rc)"
    tail -n 60 "$log" 2>/dev/null || true
  fi
  fs_umount "$mnt" || true
  aws_ s3 rb "s3://$bucket" --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
}

summary() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
