# Shared helpers for the filesystem integration tests (sourced).
# Needs: $BIN (build/bin), S3R_ENDPOINT and keys in the environment.
# shellcheck shell=bash

FS=$BIN/s3rdmafs
CLI=$BIN/s3rdma-cli
pass=0 fail=0

# aws_ ARG...: awscli against RGW, the second client checking the mount
# (through a warm awscli started here: tests/lib/aws.sh)
# shellcheck source=tests/lib/aws.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/aws.sh"

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
# gen SEED BYTES: reproducible pseudo-random bytes, fast
gen() {
  { openssl enc -aes-128-ctr -nosalt -pbkdf2 -pass "pass:$1" </dev/zero 2>/dev/null || true; } |
    head -c "$2"
}
# eq NAME GOT WANT: a comparison that says what it got
eq() { [ "$2" = "$3" ] || { echo "# $1: want '$3', got '$2'"; return 1; }; }
# check_eq NAME GOT WANT: check NAME (GOT is WANT), saying what it got
check_eq() {
  check "$1" test "$2" = "$3"
  [ "$2" = "$3" ] || echo "#   got '$2', want '$3'"
}
# in_range N LO HI
in_range() {
  if [ "$1" -ge "$2" ] 2>/dev/null && [ "$1" -le "$3" ]; then return 0; fi
  echo "# want a number in [$2, $3], got '$1'"
  return 1
}

# ---- the bucket seen through awscli ($bucket) ----
# key_absent KEY: HEAD answers 404 (not some other error)
key_absent() {
  local out
  if out=$(aws_ s3api head-object --bucket "$bucket" --key "$1" --query \
      '[ContentLength, LastModified]' --output text 2>&1); then
    echo "# $1 is there: $out"
    return 1
  fi
  grep -qE '404|Not Found' <<<"$out" || { echo "# HEAD $1: $out"; return 1; }
}
# key_md5 KEY: md5 of the object's content, fetched through awscli
key_md5() { aws_ s3 cp "s3://$bucket/$1" - | md5sum | cut -d' ' -f1; }
# keys PREFIX: every key under PREFIX, one a line, sorted (C locale)
keys() {
  local out
  out=$(aws_ s3api list-objects-v2 --bucket "$bucket" --prefix "$1" \
    --query 'Contents[].Key' --output text) || { echo "(listing failed)"; return 0; }
  tr '\t' '\n' <<<"$out" | grep -v '^None$' | LC_ALL=C sort || true
}
# fs_uploads [PREFIX]: "KEY<tab>UPLOADID", a line per multipart upload in
# the bucket (under PREFIX), nothing when there is none; "error: ..." and
# status 1 when the listing fails
fs_uploads() {
  local out
  if ! out=$(aws_ s3api list-multipart-uploads --bucket "$bucket" --prefix "${1:-}" \
      --query 'Uploads[].[Key, UploadId]' --output text 2>&1); then
    echo "error: $(tail -n 1 <<<"$out")"
    return 1
  fi
  [ "$out" = None ] || printf '%s\n' "$out"
}
# fs_abort_uploads: abort every multipart upload in the bucket (cleanup,
# after the checks that none was left)
fs_abort_uploads() {
  local k id
  fs_uploads "" | while IFS=$'\t' read -r k id; do
    [ -n "$id" ] || continue
    aws_ s3api abort-multipart-upload --bucket "$bucket" --key "$k" \
      --upload-id "$id" >/dev/null 2>&1 || true
  done
}

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
