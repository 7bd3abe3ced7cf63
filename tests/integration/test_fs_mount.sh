#!/usr/bin/env bash
# Mounting: bad input refused before mounting with one clear line, signals
# unmount cleanly, daemon mode, mount(8) helpers, ro/uid/gid/umask, a
# prefix mount, the all-buckets form, s3fs-compatible metadata, a list of
# endpoints whose first never answers.
#
#   test_fs_mount.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" fsm
top=$(cd "$here/../.." && pwd)
log=$tmp/log

"$CLI" mb "$bucket"
printf 'hello' | aws_ s3 cp - "s3://$bucket/top.txt" >/dev/null
printf 'deep' | aws_ s3 cp - "s3://$bucket/pre/fix/in.txt" >/dev/null
# written the way s3fs writes metadata: mode 0100750, uid, gid, mtime
printf 'meta' | aws_ s3 cp - "s3://$bucket/meta.txt" \
  --metadata mode=33256,uid=4242,gid=4343,mtime=1600000000 >/dev/null
# root's, mode 0100600: another user of an allow_other mount may not read it
printf 'secret' | aws_ s3 cp - "s3://$bucket/pre/secret.txt" \
  --metadata mode=33152,uid=0,gid=0 >/dev/null

# ---- input: bad input: one line on stderr, non-zero exit, nothing mounted ----
case_input() {
refused() { # name, expected text, args...
  local name=$1 text=$2; shift 2
  local rc=0
  "$FS" "$@" 2>"$tmp/err" >/dev/null || rc=$?
  check "$name: non-zero exit" test "$rc" -ne 0
  check "$name: one line" test "$(wc -l <"$tmp/err")" -eq 1
  check "$name: says '$text'" grep -q -- "$text" "$tmp/err"
  check "$name: not mounted" bash -c "! grep -qs ' $mnt ' /proc/mounts"
  sed 's/^/# /' "$tmp/err"
}
refused "bad endpoint" "cannot reach" "$bucket" "$mnt" -o endpoint=http://127.0.0.1:9
refused "unparsable endpoint" "endpoint" "$bucket" "$mnt" -o endpoint=ftp://x
AWS_SECRET_ACCESS_KEY=wrong refused "wrong secret" "access denied" "$bucket" "$mnt"
AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 refused "unknown key id" "access denied" "$bucket" "$mnt"
refused "missing bucket" "does not exist" "s3r-no-such-bucket-$$" "$mnt"
refused "bad config key" "did you mean cache.size" "$bucket" "$mnt" -o cache.sise=1G
refused "bad config value" "cache.size" "$bucket" "$mnt" -o cache.size=lots
echo '{"cache": {"size": "1G",}}' >"$tmp/bad.json"
refused "config syntax" "bad.json:1:" "$bucket" "$mnt" -o config="$tmp/bad.json"
echo '{"cache": {"sise": "1G"}}' >"$tmp/bad2.json"
refused "config unknown key" "cache.sise" "$bucket" "$mnt" -o config="$tmp/bad2.json"
}
run_case input case_input

# ---- config: a good config file ----
case_config() {
cat >"$tmp/good.json" <<EOJ
{"cache": {"size": "256M", "mlock": false, "attr_ttl": 5},
 "mount": {"umask": "027", "uid": 1234, "gid": 4321}}
EOJ
fs_mount "$bucket" "$mnt" "$log" -o config="$tmp/good.json"
check "config file: uid/gid" test "$(stat -c %u:%g "$mnt/top.txt")" = 1234:4321
check "config file: umask on files" test "$(stat -c %a "$mnt/top.txt")" = 640
check "config file: umask on dirs" test "$(stat -c %a "$mnt/pre")" = 750
check "s3fs metadata: mode" test "$(stat -c %a "$mnt/meta.txt")" = 750
check "s3fs metadata: owner" test "$(stat -c %u:%g "$mnt/meta.txt")" = 4242:4343
check "s3fs metadata: mtime" test "$(stat -c %Y "$mnt/meta.txt")" = 1600000000
}
run_case config case_config

# ---- signals: SIGTERM and SIGINT unmount cleanly ----
case_signals() {
mountpoint -q "$mnt" || fs_mount "$bucket" "$mnt" "$log" # (config's, else)
# (fs_stop: the daemon must exit 0, unmounted, its log clean)
check "SIGTERM: daemon exits 0 and unmounts" fs_stop "$mnt" TERM
check "SIGTERM: unmounted" wait_mount "$mnt" not
# (a background job starts with SIGINT ignored: give it back its default)
FS_EXEC=(python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])')
fs_mount "$bucket" "$mnt" "$log"
FS_EXEC=()
check "SIGINT: daemon exits 0 and unmounts" fs_stop "$mnt" INT
check "SIGINT: unmounted" wait_mount "$mnt" not
}
run_case signals case_signals

# ---- daemon: daemon mode ----
case_daemon() {
# (fs_san_env: its sanitizer reports go to files fs_umount reads)
check "daemon mode: returns 0" fs_san_env "$FS" "$bucket" "$mnt" -o cache.mlock=false
check "daemon mode: mounted" wait_mount "$mnt"
check "daemon mode: reads" test "$(cat "$mnt/top.txt")" = hello
check "daemon mode: exits on unmount" fs_umount "$mnt"
}
run_case daemon case_daemon

# ---- options: ro, prefix mount, allow_other ----
case_options() {
fs_mount "$bucket:/pre" "$mnt" "$log" -o ro,allow_other
check "prefix mount shows the prefix's content" test "$(cat "$mnt/fix/in.txt")" = deep
check "prefix mount hides the rest" test ! -e "$mnt/top.txt"
check "ro in the mount options" bash -c "grep ' $mnt ' /proc/mounts | grep -q '[ ,]ro[ ,]'"
check "allow_other in the mount options" bash -c "grep ' $mnt ' /proc/mounts | grep -q allow_other"
check "ro: writes refused with EROFS" bash -c "touch '$mnt/x' 2>&1 | grep -q 'Read-only file system'"
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  chmod 755 "$tmp"
  as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  check "allow_other: another user reads a 0644 file" \
    test "$("${as_nobody[@]}" cat "$mnt/fix/in.txt")" = deep
  check "allow_other: the owner reads its 0600 file" \
    test "$(cat "$mnt/secret.txt")" = secret
  check "allow_other: another user is refused it (default_permissions)" \
    bash -c "! ${as_nobody[*]} cat '$mnt/secret.txt' 2>'$tmp/err' && grep -q 'Permission denied' '$tmp/err'"
else
  echo "# no user nobody or no setpriv: the allow_other permission check is skipped"
fi
fs_umount "$mnt"
}
run_case options case_options

# ---- endpoints: a list whose first server never answers (nothing listens
# ---- on port 1): mounted, served by the other, said once ----
case_endpoints() {
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=http://127.0.0.1:1;$S3R_ENDPOINT"
check "endpoints: mounted, a read" test "$(cat "$mnt/top.txt")" = hello
printf 'listed' >"$tmp/listed"
check "endpoints: a write" cp "$tmp/listed" "$mnt/listed.txt"
check "endpoints: ... on the server" eq md5 "$(key_md5 listed.txt)" "$(md5 "$tmp/listed")"
check "endpoints: the first taken out (s3.endpoint_downs{endpoint=0})" \
  eq downs "$(stat_of 's3.endpoint_downs{endpoint=0}')" 1
check "endpoints: the second up, carrying the requests" eq up \
  "$(stat_of 's3.endpoint_up{endpoint=0}') $(stat_of 's3.endpoint_up{endpoint=1}')" "0 1"
check "endpoints: one log line about it" \
  eq "log lines" "$(grep -c '127.0.0.1:1 failed' "$log")" 1
fs_umount "$mnt"
}
run_case endpoints case_endpoints

# ---- buckets: all buckets ----
case_buckets() {
fs_mount --all-buckets "$mnt" "$log"
check "all buckets: our bucket is a directory" test -d "$mnt/$bucket"
check "all buckets: read through it" test "$(cat "$mnt/$bucket/top.txt")" = hello
fs_umount "$mnt"
}
run_case buckets case_buckets

# ---- helpers: the mount(8) helpers ----
case_helpers() {
check "mount.s3rdmafs helper" fs_san_env env S3RDMAFS_BIN="$FS" \
  "$top/packaging/mount.s3rdmafs" "$bucket" "$mnt" -o cache.mlock=false,_netdev
check "mount.s3rdmafs: mounted" wait_mount "$mnt"
check "mount.s3rdmafs: reads" test "$(cat "$mnt/top.txt")" = hello
fs_umount "$mnt"
# mount.fuse3 runs "s3rdmafs" from a fixed system PATH: borrow a place in
# /usr/local/sbin for the build's binary unless one is installed already
if ! command -v s3rdmafs >/dev/null 2>&1 && [ -d /usr/local/sbin ] &&
   [ ! -e /usr/local/sbin/s3rdmafs ]; then
  ln -s "$FS" /usr/local/sbin/s3rdmafs
  trap 'rc=$?; set +e; rm -f /usr/local/sbin/s3rdmafs; (exit $rc); fs_cleanup' EXIT
fi
check "mount -t fuse.s3rdmafs" \
  fs_san_env mount -t fuse.s3rdmafs "$bucket" "$mnt" -o cache.mlock=false
check "mount -t fuse.s3rdmafs: reads" test "$(cat "$mnt/top.txt")" = hello
fs_umount "$mnt"
}
run_case helpers case_helpers

summary
