# shellcheck shell=bash
# The test library (sourced): what the shell suites (tests/integration) and
# the benchmarks (bench/lib.sh) share. Sourcing it sources the rest of
# tests/lib: mount.sh (fs_mount, fs_umount, ...), aws.sh (aws_: the second
# client, a warm awscli started here), peers.sh (s3fs, rclone, curl: the
# peer tools), gw.sh (a gateway per test) and relay.sh (a TCP relay to RGW,
# killed to cut the path).
#
#   . "$(dirname "$0")/../lib/test.sh"
#   fs_test_setup BIN_DIR NAME [DIR...]
#       the usual start of a suite: BIN (absolute), FS, CLI; here (the
#       script's directory); tmp (a new temporary directory), mnt
#       ($tmp/mnt, made), log ($tmp/fs.log), bucket (s3r-NAME-PID-RANDOM),
#       each DIR made under $tmp; fs_cleanup as the EXIT trap
#   check NAME CMD...          a check: "ok - NAME" or "not ok - NAME",
#                              counted in $pass and $fail; summary at the end
#   check_eq NAME GOT WANT     check NAME (GOT is WANT), saying what it got
#   eq NAME GOT WANT           a comparison that says what it got
#   in_range N LO HI           LO <= N <= HI, saying what it got
#   md5 FILE, gen SEED BYTES   an md5; reproducible pseudo-random bytes
#   stat_of NAME [MNT]         a value of the mount's stats file ($mnt)
#   wait_for SECONDS STEP CMD  poll CMD until it succeeds (bounded)
#   key_absent KEY, key_md5 KEY, keys PREFIX, fs_uploads [PREFIX],
#   fs_abort_uploads [PREFIX]  the bucket ($bucket) seen through awscli
#   wait_recovered LOG         the daemon's recovery over (its summary line)
#   fault_proxy_start [ARG...] fault_proxy.py in front of RGW: proxy_pid,
#                              PROXY, ADMIN; admin PATH (its admin API)
#   fs_cleanup                 the EXIT trap of a suite ($tmp $mnt $log
#                              $bucket); fs_cleanup_s3fs: also unmounts
#                              the s3fs mount at $smnt
#   summary                    "N passed, M failed"; fails when any failed
# (variables set for, and read from, the sourcing script)
# shellcheck disable=SC2034,SC2154

[ -z "${_test_sourced:-}" ] || return 0 # (once a shell)
_test_sourced=1
_test_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pass=0 fail=0
# a suite that set -e stops says where (a long log's tail then shows it);
# -E: in functions too (not where set -e is off: conditions, subshells of
# $(...), set +e)
set -E
_test_stopped() { # EXIT LINE COMMAND
  # (the suite's own shell only: a background job's failure is its own,
  # and its stdout may be a file the suite reads)
  [[ $- != *e* ]] || [ -n "${_test_summed:-}" ] || [ "$BASHPID" != "$$" ] ||
    echo "# stopped by set -e: ${BASH_SOURCE[1]##*/}:$2: $3 (exit $1)" >&2
}
trap '_test_stopped $? "$LINENO" "$BASH_COMMAND"' ERR
if [ -n "${BIN:-}" ]; then FS=$BIN/s3rdmafs CLI=$BIN/s3rdma-cli; fi

# shellcheck source=tests/lib/aws.sh
. "$_test_lib/aws.sh"
# shellcheck source=tests/lib/mount.sh
. "$_test_lib/mount.sh"
FS_ARGS=(-o cache.mlock=false)
# shellcheck source=tests/lib/peers.sh
. "$_test_lib/peers.sh"
# shellcheck source=tests/lib/gw.sh
. "$_test_lib/gw.sh"
# shellcheck source=tests/lib/relay.sh
. "$_test_lib/relay.sh"

fs_test_setup() {
  BIN=$(cd "$1" && pwd)
  FS=$BIN/s3rdmafs CLI=$BIN/s3rdma-cli
  here=$(cd "$(dirname "$0")" && pwd)
  tmp=$(mktemp -d -t "s3r-$2.XXXXXX")
  mnt=$tmp/mnt
  log=$tmp/fs.log
  bucket=s3r-$2-$$-$RANDOM
  mkdir -p "$mnt"
  shift 2
  local d
  for d in "$@"; do mkdir -p "$tmp/$d"; done
  trap fs_cleanup EXIT
}

# run_case NAME FUNC: a case of the suite (FUNC makes the data it needs,
# need_case runs the cases it builds on), run unless S3R_ONLY, a regular
# expression of case names, leaves it out, or it ran already as another's
# need; a failing case says how to run it alone
declare -gA cases_done=()
run_case() {
  local name=$1 fn=$2 f0=$fail
  if [ -n "${S3R_ONLY:-}" ] && ! [[ $name =~ $S3R_ONLY ]]; then
    echo "# case $name: left out (S3R_ONLY='$S3R_ONLY')"
    return 0
  fi
  cases_run=$((${cases_run:-0} + 1))
  if [ -n "${cases_done[$name]:-}" ]; then
    echo "# case $name: ran already, needed by another"
    return 0
  fi
  echo "# case $name"
  cases_done[$name]=1
  "$fn"
  [ "$fail" -eq "$f0" ] || echo "# case $name failed; alone: S3R_ONLY='^$name\$'" \
    "$here/with_rgw.sh $0 $BIN"
}

# need_case NAME: case NAME (case_NAME), whose files another case uses,
# run now unless it ran already
need_case() {
  [ -z "${cases_done[$1]:-}" ] || return 0
  echo "# case $1 (needed first)"
  cases_done[$1]=1
  "case_$1"
}

failed_checks=() # their names, repeated by summary (a long log's tail)
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok - $name"
  else
    fail=$((fail + 1)) failed_checks+=("$name")
    echo "not ok - $name"
  fi
}

md5() { md5sum <"$1" | cut -d' ' -f1; }
# gen SEED BYTES: reproducible pseudo-random bytes, fast
gen() {
  { openssl enc -aes-128-ctr -nosalt -pbkdf2 -pass "pass:$1" </dev/zero 2>/dev/null || true; } |
    head -c "$2"
}
# eq NAME GOT WANT: a comparison that says what it got
eq() { [ "$2" = "$3" ] || { echo "# $1: got '$2', want '$3'"; return 1; }; }
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
# wait_for SECONDS STEP CMD...: run CMD every STEP seconds until it returns
# 0 (then 0) or 2 (it never will: then 1), for at most SECONDS (then 1)
wait_for() {
  local s=$1 step=$2 t0=$SECONDS n rc
  shift 2
  n=$(awk -v s="$s" -v d="$step" 'BEGIN { print int(s / d) }')
  for ((; n > 0; n--)); do
    rc=0
    "$@" || rc=$?
    [ "$rc" -ne 0 ] || return 0
    [ "$rc" -ne 2 ] || return 1
    [ $((SECONDS - t0)) -lt "$s" ] || return 1
    sleep "$step"
  done
  return 1
}
# stat_of NAME [MNT]: NAME's value in the stats file of MNT ($mnt), served
# by the daemon without S3
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "${2:-$mnt}/.s3rdmafs-stats"; }

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
# wait_recovered LOG: wait (bounded) for the recovery summary line in the
# daemon's LOG (recovery runs in the background after a mount)
wait_recovered() {
  for _ in $(seq 1 600); do
    grep -qs "earlier mounts' leftovers" "$1" && return 0
    sleep 0.1
  done
  echo "# no recovery summary in $1" >&2
  return 1
}
# fs_abort_uploads [PREFIX]: abort every multipart upload in the bucket
# (under PREFIX) (cleanup, after the checks that none was left)
fs_abort_uploads() {
  local k id
  fs_uploads "${1:-}" | while IFS=$'\t' read -r k id; do
    [ -n "$id" ] || continue
    aws_ s3api abort-multipart-upload --bucket "$bucket" --key "$k" \
      --upload-id "$id" >/dev/null 2>&1 || true
  done
}

# fault_proxy_start [ARG...]: fault_proxy.py (tests/integration) in front
# of RGW, paused (no fault until told), seed 1, more fault_proxy.py
# options in ARG (say --stall-s 4), its log in $tmp/proxy.log; it ends
# with this shell. Sets proxy_pid, PROXY (its S3 endpoint) and ADMIN (its
# admin API, used through admin PATH); exits the test when it does not
# answer.
fault_proxy_start() {
  local up=${S3R_ENDPOINT#http://}
  python3 "$_test_lib/../integration/fault_proxy.py" --upstream "${up%%/*}" --paused \
    --seed 1 --port-file "$tmp/proxy.ports" --log "$tmp/proxy.log" \
    --exit-with-parent "$@" >/dev/null 2>&1 &
  proxy_pid=$!
  for _ in $(seq 1 100); do [ -s "$tmp/proxy.ports" ] && break; sleep 0.1; done
  PROXY=http://127.0.0.1:$(awk '$1 == "proxy" {print $2}' "$tmp/proxy.ports")
  ADMIN=http://127.0.0.1:$(awk '$1 == "admin" {print $2}' "$tmp/proxy.ports")
  admin stats >/dev/null || { echo "the fault proxy did not start"; exit 1; }
}
admin() { curl -sf -m 5 "$ADMIN/$1"; }

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
  fs_drop_pools "$tmp"
  rm -rf "$tmp"
  if [ "$rc" -eq 0 ] && [ "$fail" -gt "$fail0" ]; then exit 1; fi
}
# fs_cleanup_s3fs: fs_cleanup, once the s3fs mount at $smnt (peer_mount_s3fs,
# its state in $PEER_STATE_DIR) is unmounted
fs_cleanup_s3fs() {
  local rc=$?
  set +e
  peer_umount "$smnt" >/dev/null 2>&1
  (exit "$rc")
  fs_cleanup
}

summary() {
  if [ -n "${S3R_ONLY:-}" ] && [ "${cases_run:-0}" -eq 0 ]; then
    fail=$((fail + 1)); echo "not ok - S3R_ONLY='$S3R_ONLY' names no case"
  fi
  local n
  for n in ${failed_checks[@]+"${failed_checks[@]}"}; do
    echo "# failed: $n"
  done
  echo "$pass passed, $fail failed"
  _test_summed=1 # (its own status is no stop)
  [ "$fail" -eq 0 ]
}
