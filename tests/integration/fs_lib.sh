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

# fs_mount, fs_umount (the daemon's exit status and its log checked),
# fs_stop, fs_kill, is_mounted, wait_mount: the mount library the
# benchmarks use too. Logs are appended to, one marker line per mount.
# shellcheck source=tests/lib/mount.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/mount.sh"
FS_ARGS=(-o cache.mlock=false)

md5() { md5sum <"$1" | cut -d' ' -f1; }

# fs_cleanup: the EXIT trap of a test script using $tmp, $mnt, $log and
# $bucket: on failure show the daemon's log, then unmount (every mount of
# fs_mount still there: each daemon's exit checked), drop the bucket and
# the temporary directory. A daemon found failing only here (left mounted)
# fails the test too.
fs_cleanup() {
  local rc=$? fail0=$fail
  set +e # errexit would stop the cleanup at its first failing step
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- the daemon's log (exit $rc)"
    tail -n 60 "$log" 2>/dev/null || true
  fi
  fs_umount "$mnt" || true
  fs_umount_all || true
  aws_ s3 rb "s3://$bucket" --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
  if [ "$rc" -eq 0 ] && [ "$fail" -gt "$fail0" ]; then exit 1; fi
}

summary() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
