#!/usr/bin/env bash
# Secrets off the command line (issue 10, item 5).
#  - s3rdma-gateway with --secret-key-file and --upstream-secret-key-file
#    (0600; upstream's access key from $S3RDMA_UPSTREAM_ACCESS_KEY_ID)
#    serves requests signed with the file's key; the file wins over
#    $AWS_SECRET_ACCESS_KEY; neither key reaches the log; a clean stop
#    (LeakSanitizer in ASan builds: the keys read are freed);
#  - a key file readable by group or others, or not a regular file, or
#    given with --secret-key too: the gateway refuses to start, one line
#    naming the file;
#  - --secret-key on the command line: a warning in the log, the key gone
#    from the gateway's /proc/PID/cmdline, requests still served;
#  - s3rdmafs refuses to mount with a group-readable AWS credentials file
#    or a world-readable config file holding credentials.secret_key, naming
#    the file; mounts with them at 0600; -o credentials.secret_key= warns
#    and is scrubbed from its /proc/PID/cmdline.
# Usage: test_gw_secrets.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh" # and tests/lib/gw.sh: gw_start, gw_stop, ...
fs_test_setup "$1" gwsecrets
trap gw_fs_cleanup EXIT

up_sk=$AWS_SECRET_ACCESS_KEY                       # RGW's, for upstream
S3R_TEST_AK=$AWS_ACCESS_KEY_ID
client_sk=client-secret-$$-$RANDOM-only-in-a-file  # the clients', in a file
# curl with SigV4 as a client of the gateway: gcurl SECRET curl-args...
gcurl() { AWS_SECRET_ACCESS_KEY=$1 gw_curl "${@:2}"; }
code() { gcurl "$1" -o /dev/null -w '%{http_code}' "${@:2}"; }
# awscli as a client of the gateway (PUTs: curl 7.88 signs them wrong):
# gaws SECRET aws-args...
gaws() { AWS_SECRET_ACCESS_KEY=$1 AWS_CONFIG_FILE=/dev/null gw_aws "${@:2}"; }
# the gateway binary run by hand, for the refusals: exit status and stderr
gw_refused() { # name, text the one line must hold, then gateway flags
  local name=$1 text=$2 rc=0; shift 2
  timeout 20 "$BIN/s3rdma-gateway" -f --listen 127.0.0.1:0 \
    --upstream "$S3R_ENDPOINT" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  check "$name: exit 2" test "$rc" -eq 2
  check "$name: one line" test "$(wc -l <"$tmp/err")" -eq 1
  check "$name: says '$text'" grep -qF -- "$text" "$tmp/err"
  sed 's/^/# /' "$tmp/err"
}
# s3rdmafs run by hand, for the refusals (read-only, no HTTP data plane)
fs_refused() { # name, text the one line must hold, then args
  local name=$1 text=$2 rc=0; shift 2
  timeout 60 "$FS" "$bucket" "$mnt" -f -o ro,cache.mlock=false,rdma.transport=off \
    "$@" >/dev/null 2>"$tmp/err" || rc=$?
  check "$name: non-zero exit" test "$rc" -ne 0
  check "$name: one line" test "$(wc -l <"$tmp/err")" -eq 1
  check "$name: says '$text'" grep -qF -- "$text" "$tmp/err"
  check "$name: not mounted" bash -c "! grep -qs ' $mnt ' /proc/mounts"
  sed 's/^/# /' "$tmp/err"
}
# does process $1's command line (NULs as spaces) hold the string $2?
cmdline_has() { [[ "$(tr '\0' ' ' <"/proc/$1/cmdline")" == *"$2"* ]]; }
cmdline_lacks() { [ -r "/proc/$1/cmdline" ] && ! cmdline_has "$@"; }
log_lacks() { ! grep -qF -- "$2" "$1"; }

aws_ s3 mb "s3://$bucket" >/dev/null
echo "hello from rgw" >"$tmp/hello"
aws_ s3 cp "$tmp/hello" "s3://$bucket/hello" --quiet

# ---- files: keys from files ----
case_files() {
(umask 077; printf '%s\n' "$client_sk" >"$tmp/client.key"; printf '%s\r\n' "$up_sk" >"$tmp/up.key")
S3RDMA_UPSTREAM_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID \
  gw_start "$tmp/gw" --log-level info --threads 2 \
  --secret-key-file "$tmp/client.key" --upstream-secret-key-file "$tmp/up.key"
check "key files: GET with the file's key" \
  test "$(gcurl "$client_sk" -f "$GW_ENDPOINT/$bucket/hello")" = "hello from rgw"
check "key files: PUT with the file's key" \
  gaws "$client_sk" s3 cp "$tmp/hello" "s3://$bucket/put" --quiet
check "key files: upstream has the PUT" \
  test "$(aws_ s3 cp "s3://$bucket/put" -)" = "hello from rgw"
check "key files: the file wins over \$AWS_SECRET_ACCESS_KEY (403 with it)" \
  test "$(code "$up_sk" "$GW_ENDPOINT/$bucket/hello")" = 403
check "key files: the log says where the keys came from" \
  grep -q "secret keys: the clients' from its key file, upstream's from its key file" "$gw_log"
check "key files: no warning" log_lacks "$gw_log" "command line"
check "key files: the client key is not in the log" log_lacks "$gw_log" "$client_sk"
check "key files: upstream's key is not in the log" log_lacks "$gw_log" "$up_sk"
check "key files: clean stop (keys freed: LeakSanitizer quiet)" gw_stop
}
run_case files case_files

# ---- refusals: bad keys ----
case_refusals() {
(umask 022; printf '%s\n' "$client_sk" >"$tmp/open.key")
gw_refused "0644 key file" "--secret-key-file $tmp/open.key: readable by group or others (mode 0644); chmod 600 it" \
  --secret-key-file "$tmp/open.key"
chmod 0640 "$tmp/open.key"
gw_refused "0640 upstream key file" "--upstream-secret-key-file $tmp/open.key: readable by group or others (mode 0640)" \
  --upstream-access-key "$AWS_ACCESS_KEY_ID" --upstream-secret-key-file "$tmp/open.key"
chmod 0604 "$tmp/open.key"
gw_refused "0604 key file" "(mode 0604); chmod 600 it" --secret-key-file "$tmp/open.key"
gw_refused "a directory as key file" "--secret-key-file $tmp: not a regular file (a directory)" \
  --secret-key-file "$tmp"
gw_refused "a missing key file" "--secret-key-file $tmp/nope: cannot open" --secret-key-file "$tmp/nope"
gw_refused "--secret-key and --secret-key-file" "--secret-key and --secret-key-file: give one, not both" \
  --secret-key "$client_sk" --secret-key-file "$tmp/client.key"
check "refusals: the key never printed" log_lacks "$tmp/err" "$client_sk"
}
run_case refusals case_refusals

# ---- cmdline: a key on the command line: warned about, scrubbed, still used ----
case_cmdline() {
# (gateway.sh's wrapper shell keeps its own command line: the gateway's is
# the one checked)
S3RDMA_UPSTREAM_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID S3RDMA_UPSTREAM_SECRET_ACCESS_KEY=$up_sk \
  gw_start "$tmp/gw2" --log-level info --threads 2 --secret-key "$client_sk"
pid=$(cat "$tmp/gw2/pid")
check "--secret-key: the warning is logged" \
  grep -q "warning: --secret-key given on the command line: every local user can read" "$gw_log"
check "--secret-key: logged once" test "$(grep -c 'given on the command line' "$gw_log")" -eq 1
check "--secret-key: the gateway's cmdline lacks the key" cmdline_lacks "$pid" "$client_sk"
check "--secret-key: ... it is scrubbed with x" cmdline_has "$pid" " --secret-key ${client_sk//?/x}"
check "--secret-key: requests signed with it are served" \
  test "$(gcurl "$client_sk" -f "$GW_ENDPOINT/$bucket/hello")" = "hello from rgw"
check "--secret-key: upstream's key from the environment" \
  grep -q "secret keys: the clients' from the command line, upstream's from the environment" "$gw_log"
check "--secret-key: the key is not in the log" log_lacks "$gw_log" "$client_sk"
check "--secret-key: clean stop" gw_stop
}
run_case cmdline case_cmdline

# ---- private: s3rdmafs: credentials files must be private ----
case_private() {
creds=$tmp/aws-credentials
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
  "$S3R_TEST_AK" "$up_sk" >"$creds"
chmod 0640 "$creds"
# the keys from the file only: none in the environment for a while
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
export AWS_SHARED_CREDENTIALS_FILE=$creds
fs_refused "group-readable credentials file" \
  "$creds: readable by group or others (mode 0640); chmod 600 it (it holds the aws_secret_access_key of profile 'default')"
chmod 0600 "$creds"
check "0600 credentials file: mounts" fs_mount "$bucket" "$mnt" "$log" -o ro,rdma.transport=off
check "0600 credentials file: reads" test "$(cat "$mnt/hello" 2>/dev/null)" = "hello from rgw"
fs_umount "$mnt"
unset AWS_SHARED_CREDENTIALS_FILE
export AWS_ACCESS_KEY_ID=$S3R_TEST_AK AWS_SECRET_ACCESS_KEY=$up_sk

printf '{"credentials": {"access_key": "%s", "secret_key": "%s"}}\n' \
  "$AWS_ACCESS_KEY_ID" "$up_sk" >"$tmp/keys.json"
chmod 0644 "$tmp/keys.json"
fs_refused "world-readable config with a secret key" \
  "$tmp/keys.json: readable by group or others (mode 0644); chmod 600 it (it holds credentials.secret_key)" \
  -o config="$tmp/keys.json"
echo '{"cache": {"attr_ttl": 5}}' >"$tmp/plain.json"
chmod 0644 "$tmp/plain.json"
check "world-readable config without secrets: mounts" \
  fs_mount "$bucket" "$mnt" "$log" -o ro,rdma.transport=off,config="$tmp/plain.json"
fs_umount "$mnt"
chmod 0600 "$tmp/keys.json"
check "0600 config with a secret key: mounts" \
  fs_mount "$bucket" "$mnt" "$log" -o ro,rdma.transport=off,config="$tmp/keys.json"
check "0600 config with a secret key: reads" test "$(cat "$mnt/hello" 2>/dev/null)" = "hello from rgw"
fs_umount "$mnt"

# -o credentials.secret_key=...: works, warns once, scrubbed from argv
fs_mount "$bucket" "$mnt" "$log" -o ro,rdma.transport=off \
  -o "credentials.access_key=$AWS_ACCESS_KEY_ID,credentials.secret_key=$up_sk"
pid=$FS_PID
check "-o secret_key: reads" test "$(cat "$mnt/hello" 2>/dev/null)" = "hello from rgw"
check "-o secret_key: the warning is logged once" \
  test "$(grep -c 'warning: credentials.secret_key given with -o' "$log")" -eq 1
check "-o secret_key: not in the daemon's cmdline" cmdline_lacks "$pid" "$up_sk"
check "-o secret_key: scrubbed with x" cmdline_has "$pid" "credentials.secret_key=${up_sk//?/x}"
check "-o secret_key: not in the log" log_lacks "$log" "$up_sk"
fs_umount "$mnt"
}
run_case private case_private

summary
