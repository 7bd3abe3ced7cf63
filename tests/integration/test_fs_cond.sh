#!/usr/bin/env bash
# Conditional writes through the mount (fs/write/fsx_wb_upload.c), with RGW
# behind the fault proxy (fault_proxy.py):
#   - late-put / late-new: a PUT given up by the daemon (the proxy keeps it,
#     cuts the connection off, and sends it to RGW 5 s later) must not bring
#     back its bytes once a newer version was stored: the late PUT carries
#     If-Match with the ETag it replaced (If-None-Match: * for a new file)
#     and gets 412. Without the conditions RGW stores it and the file goes
#     back to the older bytes.
#   - lost-reply: a PUT stored whose answer is lost: the retry gets 412, and
#     the daemon finds its own bytes there (the ETag is their MD5): close()
#     returns 0 with no further PUT and no "replaced" notice.
#   - other-writer: the object changed by another client while the file is
#     open for writing: the last close wins (stored conditionally on what it
#     replaces), with one notice naming the key.
#   - old-server: a server that answers conditional writes with 501 (the
#     proxy's no_cond): the upload is sent again without, one warning, and
#     later uploads go without conditions.
#   - abort-refused: a multipart upload whose abort is refused (403) is
#     aborted by the retry thread once the server answers.
#   - via-gateway: late-put and lost-reply through s3rdma-gateway (token
#     PUTs over cma, the proxy between the gateway and RGW).
#   - rename-fails: a rename whose copy landed and whose DELETE of the
#     source was refused: the new name shown at once, the old one kept.
#   - server-gone: nothing listening where the server was: reads and
#     lookups fail with EIO (fsx_errno), not ECONNREFUSED.
#
#   test_fs_cond.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
unset S3R_FS_ENDPOINT S3R_FS_OPTS # the mount names its endpoint itself
fs_test_setup "$1" cond mnt2
mnt2=$tmp/mnt2
proxy_pid='' gw_on=0
cleanup() {
  local rc=$?
  set +e
  if is_mounted "$mnt2"; then fs_umount "$mnt2"; fi
  if [ "$gw_on" = 1 ]; then gw_stop >/dev/null 2>&1; fi
  if [ -n "$proxy_pid" ]; then { kill "$proxy_pid"; wait "$proxy_pid"; } 2>/dev/null; fi
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- the proxy's log"
    tail -n 30 "$tmp/proxy.log" 2>/dev/null
  fi
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- the second mount's log"; tail -n 30 "$tmp/fs2.log" 2>/dev/null
    echo "--- the gateway's log"; tail -n 30 "$tmp/gw/log" 2>/dev/null
  fi
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT

fault_proxy_start --stall-s 5 # proxy_pid, PROXY, ADMIN, admin
puts() { admin stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["by_class"]["put"])'; }
# one fault of KIND for the next matching request of CLASS, then none
NONE="slowdown=0&internal=0&forbidden=0&reset_resp=0&reset_req=0&truncate=0&stall=0&bad_xml=0&bad_length=0&error_200=0&no_cond=0&late=0&flip=0"
one_fault() {
  admin "set?$NONE&$1=1&classes=$2&limit=1" >/dev/null && admin resume >/dev/null
}

"$CLI" mb "$bucket" >/dev/null
fs_mount "$bucket" "$mnt" "$log" -o endpoint="$PROXY" \
  -o cache.dir="$tmp/cache" -o s3.request_timeout_ms=3000 \
  -o s3.retry.max_attempts=4 -o write.retry_interval=1 -o rdma.transport=off

# put FILE CONTENT: the whole file rewritten and closed through the mount,
# one open and one close (a shell redirection or dd dup()s and closes
# twice: two uploads, the first of an empty file)
put() { put_at "$mnt/$1" "$2"; }
put_at() {
  python3 -c 'import sys; f = open(sys.argv[1], "w"); f.write(sys.argv[2]); f.close()' "$1" "$2"
}
server_has() { # KEY CONTENT: the object holds exactly that
  [ "$(aws_ s3 cp "s3://$bucket/$1" - 2>/dev/null)" = "$2" ]
}
wait_late() { # N: the proxy has sent N late requests and logged the answers
  local i
  for ((i = 0; i < 150; i++)); do
    [ "$(grep -c ' answered ' "$tmp/proxy.log" 2>/dev/null || true)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
late_answer() { grep ' answered ' "$tmp/proxy.log" | sed -n "$1p" | awk '{print $NF}'; }
# late requests answered so far (a case's own are counted from here)
lates() { grep -c ' answered ' "$tmp/proxy.log" 2>/dev/null || true; }
# faults of a kind the proxy has made so far
faults_of() { admin stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults"][sys.argv[1]])' "$1"; }
body() { head -c 4000 /dev/zero | tr '\0' "$1"; } # 4000 bytes of one letter

# ---- late-put: a given-up overwrite arrives after a newer one ----
case_late-put() {
l0=$(lates)
check "late-put: first version stored" put f "$(body a)"
one_fault late put
check "late-put: close() of the overwrite returns 0 (its PUT held back, retried)" \
  put f "$(body b)"
check "late-put: ... the proxy held one back" grep -q ' fault late PUT' "$tmp/proxy.log"
check "late-put: a newer version stored" put f "$(body c)"
check "late-put: the held-back PUT reached RGW" wait_late $((l0 + 1))
check "late-put: ... and was refused: 412" test "$(late_answer $((l0 + 1)))" = 412
check "late-put: the object is the newest version" server_has f "$(body c)"
check "late-put: the mount reads the newest version" \
  test "$(cat "$mnt/f")" = "$(body c)"
}
run_case late-put case_late-put

# ---- late-new: the same for a file that did not exist ----
case_late-new() {
l0=$(lates)
one_fault late put
check "late-new: close() of a new file returns 0" put g "$(body d)"
check "late-new: a newer version stored" put g "$(body e)"
check "late-new: the held-back PUT reached RGW" wait_late $((l0 + 1))
check "late-new: ... and was refused: 412" test "$(late_answer $((l0 + 1)))" = 412
check "late-new: the object is the newest version" server_has g "$(body e)"
}
run_case late-new case_late-new

# ---- lost-reply: stored, its answer lost ----
case_lost-reply() {
n0=$(puts)
one_fault reset_resp put
check "lost-reply: close() returns 0" put f "$(body h)"
check "lost-reply: the object holds it" server_has f "$(body h)"
np=$(( $(puts) - n0 ))
echo "# lost-reply: $np PUTs"
check "lost-reply: two PUTs (the first stored, the retry refused), no third" \
  test "$np" = 2
check "lost-reply: no 'replaced' notice (it found its own bytes)" \
  bash -c "! grep -q 'f: changed on the server' '$log'"
}
run_case lost-reply case_lost-reply

# ---- other-writer: the last close wins, said once ----
case_other-writer() {
admin pause >/dev/null
printf '%s' "$(body x)" >"$tmp/x"
y=$(body y)
# open for writing (truncated) and based on the current object; no child
# may inherit the descriptor (its exit would close it: an upload)
exec 7>"$mnt/f"
aws_ s3 cp "$tmp/x" "s3://$bucket/f" >/dev/null 7>&-
printf '%s' "$y" >&7
exec 7>&-
check "other-writer: the last close wins" server_has f "$(body y)"
check "other-writer: one notice naming the key" \
  test "$(grep -c 'f: changed on the server since it was opened' "$log")" = 1
}
run_case other-writer case_other-writer

# ---- old-server: a server that does not take conditions (501) ----
case_old-server() {
admin "set?$NONE&no_cond=1&classes=put,complete&limit=-1" >/dev/null
admin resume >/dev/null
check "old-server: close() returns 0" put f "$(body q)"
check "old-server: the object holds it" server_has f "$(body q)"
check "old-server: the conditional PUT was refused once" test "$(faults_of no_cond)" = 1
check "old-server: one warning" \
  test "$(grep -c 'does not take conditional writes' "$log")" = 1
check "old-server: then uploads go without conditions" put f "$(body r)"
check "old-server: ... none refused" test "$(faults_of no_cond)" = 1
check "old-server: ... stored" server_has f "$(body r)"
admin pause >/dev/null
}
run_case old-server case_old-server

# ---- abort-refused: an upload whose abort fails is aborted later ----
case_abort-refused() {
# A streamed file (its multipart upload begun) emptied, then written with
# one part: the upload is aborted at the truncate; the abort is refused
# (403) while the fault lasts. The retry thread aborts it once the server
# answers (it used to stay until the next mount). (Cut to a size other
# than 0, a streamed file's parts would be completed as the object first:
# nothing to abort; test_fs_stream.)
admin "set?$NONE&forbidden=1&classes=abort&limit=-1" >/dev/null
admin resume >/dev/null
check "abort-refused: a streamed file emptied, 1 MiB written, closed" \
  python3 -c 'import os, sys
f = open(sys.argv[1], "wb")
for _ in range(20):
    f.write(os.urandom(1 << 20))
f.truncate(0)
f.seek(0)
f.write(os.urandom(1 << 20))
f.close()' "$mnt/cut"
check "abort-refused: the abort was refused" test "$(faults_of forbidden)" -ge 1
has_upload() { [ -n "$(fs_uploads "$1")" ]; }
check "abort-refused: the upload is still there meanwhile" has_upload cut
admin pause >/dev/null
left=1
for _ in $(seq 1 100); do # bounded: 10 s (the retry thread runs every 1 s)
  left=$(fs_uploads cut | grep -c . || true)
  [ "$left" = 0 ] && break
  sleep 0.1
done
check "abort-refused: aborted by the retry thread" test "$left" = 0
check "abort-refused: said" grep -q "aborted on retry" "$log"
check "abort-refused: the file holds its 1 MiB" \
  test "$(aws_ s3api head-object --bucket "$bucket" --key cut --query ContentLength --output text)" = 1048576
}
run_case abort-refused case_abort-refused

# ---- via-gateway: the same through s3rdma-gateway, bytes moved by cma ----
case_via-gateway() {
# The token PUT's If-Match goes upstream with it (the proxy now sits
# between the gateway and RGW).
l0=$(lates)
admin pause >/dev/null
gw_start "$tmp/gw" --upstream "$PROXY"
gw_on=1
fs_mount "$bucket" "$mnt2" "$tmp/fs2.log" -o endpoint="$GW_ENDPOINT" \
  -o cache.dir="$tmp/cache2" -o s3.request_timeout_ms=3000 \
  -o s3.retry.max_attempts=4 -o write.retry_interval=1
check "via-gateway: first version stored" put_at "$mnt2/v" "$(body m)"
t0=$(gw_stat token_puts)
one_fault late put
check "via-gateway: close() of the overwrite returns 0" put_at "$mnt2/v" "$(body n)"
check "via-gateway: a newer version stored" put_at "$mnt2/v" "$(body o)"
if [ "$(stat_of rdma.transport "$mnt2")" = cma ]; then
  check "via-gateway: the PUTs moved their bytes by token" \
    test "$(( $(gw_stat token_puts) - t0 ))" -ge 2
else
  echo "# via-gateway: cma cannot run here: the PUTs went in HTTP bodies"
fi
check "via-gateway: the held-back PUT reached RGW" wait_late $((l0 + 1))
check "via-gateway: ... and was refused: 412" test "$(late_answer $((l0 + 1)))" = 412
check "via-gateway: the object is the newest version" server_has v "$(body o)"
one_fault reset_resp put
check "via-gateway: lost reply: close() returns 0" put_at "$mnt2/v" "$(body p)"
check "via-gateway: lost reply: the object holds it" server_has v "$(body p)"
check "via-gateway: lost reply: no 'replaced' notice" \
  bash -c "! grep -q 'v: changed on the server' '$tmp/fs2.log'"
admin pause >/dev/null
fs_umount "$mnt2"
gw_stop
gw_on=0
}
run_case via-gateway case_via-gateway

# ---- rename-fails: its copy landed, the source's DELETE refused ----
case_rename-fails() {
# The rename fails (EACCES) with the copy on the server: the new name must
# be shown at once (the kernel's negative entry for it, made as the rename
# began, forgotten: fsx_inval), the old one still readable.
admin pause >/dev/null
check "rename-fails: source stored" put rs "$(body r)"
check "rename-fails: the new name absent (the kernel remembers that)" \
  test ! -e "$mnt/rd"
one_fault forbidden delete
rename_rc=$(python3 -c 'import errno, os, sys
try:
    os.rename(sys.argv[1], sys.argv[2]); print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$mnt/rs" "$mnt/rd")
admin pause >/dev/null
check "rename-fails: the rename failed (EACCES)" test "$rename_rc" = EACCES
check "rename-fails: the copy on the server" server_has rd "$(body r)"
shown=''
for _ in $(seq 1 80); do # bounded: 8 s (the notification is on its thread)
  shown=$(cat "$mnt/rd" 2>/dev/null) && break
  sleep 0.1
done
check "rename-fails: the new name shown, before negative_ttl (10 s)" \
  test "$shown" = "$(body r)"
check "rename-fails: the old one still read" \
  test "$(cat "$mnt/rs")" = "$(body r)"
}
run_case rename-fails case_rename-fails

# ---- server-gone: errors a filesystem has ----
case_server-gone() {
# With nothing listening where the server was, reads and lookups fail with
# EIO after their retries, not with the socket's ECONNREFUSED. The object
# is larger than read.lookup_bytes (64K): its lookup's GET does not bring
# all of it, so the read must ask the server.
head -c 200000 /dev/zero | tr '\0' k >"$tmp/k"
aws_ s3 cp "$tmp/k" "s3://$bucket/cold" >/dev/null
check "server-gone: a cold object looked up" stat "$mnt/cold" >/dev/null
kill "$proxy_pid" && wait "$proxy_pid" 2>/dev/null || true
proxy_pid=''
errno_of() { # CALL PATH: the errno name a Python call on PATH fails with
  python3 -c 'import errno, os, sys
try:
    if sys.argv[1] == "read":
        with open(sys.argv[2], "rb") as f: f.read()
    else:
        os.stat(sys.argv[2])
    print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$@"
}
e=$(errno_of read "$mnt/cold"); echo "# read with the server gone: $e"
check "server-gone: a read fails with EIO" test "$e" = EIO
e=$(errno_of stat "$mnt/never-seen"); echo "# lookup with the server gone: $e"
check "server-gone: a lookup fails with EIO" test "$e" = EIO

fs_umount "$mnt"
}
run_case server-gone case_server-gone

summary
