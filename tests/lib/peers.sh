# shellcheck shell=bash
# Peer tools for the benchmarks (docs/benchmarks.md) and the
# tests (s3fs on the same bucket, tests/lib/test.sh sources this): the
# programs s3rdmafs is compared with, started the same way every time
# against the local RGW.
#
#   eval "$(tests/servers/rgw.sh env)"   # S3R_ENDPOINT, AWS_ACCESS_KEY_ID,
#   . tests/lib/peers.sh                 # AWS_SECRET_ACCESS_KEY, AWS_REGION
#
#   peer_install                          apt-get what is missing (root)
#   peer_mount_s3fs BUCKET MNT [OPT...]   s3fs 1.90, no disk cache; OPT: extra -o
#   peer_mount_rclone BUCKET MNT [FLAG...]        rclone mount, --vfs-cache-mode off
#   peer_mount_rclone_writes BUCKET MNT [FLAG...] rclone mount, --vfs-cache-mode writes
#   peer_umount MNT                       unmount either, wait for the daemon
#   peer_pid MNT                          pid of the daemon serving a peer mount
#   peer_curl_get PATH OUT                one signed GET (PATH: bucket/key or URL)
#   peer_curl_get_parallel N PATH SIZE OUT  N ranged GETs at once (SIZE: bytes|auto)
#   peer_aws ARGS...                      aws CLI on the local endpoint, default config
#   peer_aws_cp SRC DST [ARGS...]         aws s3 cp, default transfer settings
#   peer_head_size BUCKET KEY             object size in bytes (signed HEAD)
#   peer_wait_object BUCKET KEY SIZE [S]  wait until the object has SIZE bytes
#   peer_rm_object BUCKET KEY             delete one object (signed DELETE)
#   peer_abort_uploads BUCKET             abort the bucket's unfinished multipart uploads
#   peer_rm_bucket BUCKET                 delete a bucket and everything in it
#   peer_drop_caches                      sync + drop the kernel page cache (root)
#
# Every function reports errors on stderr and returns non-zero; none exits the
# caller or changes its shell options, and all are safe under set -euo pipefail.
# Every wait is bounded both in iterations and in seconds. Settings (env):
#   PEER_MOUNT_TIMEOUT   seconds to wait for a mount to come up    (30)
#   PEER_UMOUNT_TIMEOUT  seconds to wait for a daemon to exit      (60)
#   PEER_STATE_DIR       per-mount state: pid, log, rclone cache   (/tmp/s3r-peers.UID)
#   PEER_AWS             aws binary (default /usr/bin/aws, Debian's awscli 2.9,
#                        rather than whatever `aws` is first in PATH)
#   PEER_S3FS_OPTS       extra s3fs -o options, comma separated    (none)
#   PEER_RCLONE_VFS_CACHE_MODE  off|minimal|writes|full            (off)
#
# Choices, for a fair comparison (each tool at its out-of-the-box settings,
# except what is needed to reach RGW and to keep reads off local disk caches):
# - s3fs: url=ENDPOINT, use_path_request_style, endpoint=REGION (the SigV4
#   region), sigv4 (no V2 fallback dance), passwd_file in a 0700 state dir (the
#   file is deleted once the mount is up: s3fs 1.90 reads it only at start).
#   No use_cache, so every open re-reads from the server (s3fs still stages
#   data in an unlinked temp file in /tmp). Defaults kept: parallel_count=5,
#   multipart_size=10 (MB), multireq_max=20, stat_cache_expire=900 s,
#   max_stat_cache_size=100000. Run in the foreground (-f) as a detached
#   background process, so its pid is known and its log (dbglevel=err) is kept
#   in the state dir; without -f s3fs logs to syslog, which is absent here.
# - rclone: remote "rgw" defined only by RCLONE_CONFIG_RGW_* variables
#   (type s3, provider Ceph, env_auth false, keys, region, endpoint) and
#   --config /dev/null so no rclone.conf can interfere. AWS_CA_BUNDLE must be
#   unset for it (rclone 1.60 fails with "LoadCustomCABundleError ...
#   unsupported transport"). Defaults kept: --buffer-size 16M,
#   --vfs-read-chunk-size 128M, --dir-cache-time 5m, --attr-timeout 1s,
#   --s3-chunk-size 5M, --s3-upload-concurrency 4. --vfs-cache-mode off
#   handles sequential writes (streamed as a multipart upload; the object is
#   complete on the server when close() returns) but not random writes or
#   read+write opens: use peer_mount_rclone_writes for those. In writes mode
#   close() returns before the upload (--vfs-write-back 5s): time writes with
#   peer_wait_object.
# - awscli: Debian's aws 2.9.19 with AWS_CONFIG_FILE=/dev/null so only the
#   defaults apply (max_concurrent_requests 10, multipart 8 MB). It predates
#   AWS_ENDPOINT_URL, so --endpoint-url is always given.
# - curl 7.88 --aws-sigv4 signs without x-amz-content-sha256, which RGW
#   rejects (403): the header is sent as UNSIGNED-PAYLOAD. Object keys are
#   used as given in the URL: keep them URL-safe.
# Mount points whose path contains whitespace are not supported.

# --- internals ---------------------------------------------------------------

# is_mounted, unmount_busy: the unmount ladder of tests/lib/mount.sh too
# shellcheck source=tests/lib/unmount.sh
. "$(dirname "${BASH_SOURCE[0]}")/unmount.sh"

_peer_err() { printf 'peers.sh: %s\n' "$*" >&2; }

_peer_region() { printf '%s' "${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"; }

# _peer_need_env: the RGW endpoint and keys must be in the environment.
_peer_need_env() {
  local v
  for v in S3R_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; do
    if [ -z "${!v:-}" ]; then
      _peer_err "$v is not set (eval \"\$(tests/servers/rgw.sh env)\" first)"
      return 1
    fi
  done
}

# _peer_need_cmd CMD...: each command must exist.
_peer_need_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || { _peer_err "$c is not installed (run peer_install)"; return 1; }
  done
}

# _peer_posint VALUE NAME: VALUE must be a positive integer.
_peer_posint() {
  case $1 in
    '' | *[!0-9]* | 0) _peer_err "$2 must be a positive integer, got '$1'"; return 1 ;;
  esac
}

# _peer_url PATH: bucket/key (leading / optional) -> endpoint URL; full URLs pass.
_peer_url() {
  case $1 in
    http://* | https://*) printf '%s' "$1" ;;
    *) printf '%s/%s' "${S3R_ENDPOINT%/}" "${1#/}" ;;
  esac
}

# _peer_curl CURL-ARGS...: curl with SigV4 signing for RGW. Fails on HTTP
# errors; gives up on a connection after 10 s and on a transfer stalled (under
# 1 KB/s) for 60 s, so no call can hang for ever.
_peer_curl() {
  curl -sS -f --connect-timeout 10 --speed-limit 1024 --speed-time 60 \
    --aws-sigv4 "aws:amz:$(_peer_region):s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}

# _peer_aws_bin: which aws to run.
_peer_aws_bin() {
  if [ -n "${PEER_AWS:-}" ]; then
    printf '%s' "$PEER_AWS"
  elif [ -x /usr/bin/aws ]; then
    printf '%s' /usr/bin/aws
  else
    printf '%s' aws
  fi
}

# _peer_state MNT: the state dir of an (absolute) mount point.
_peer_state() {
  local name=${1//\//_}
  printf '%s/mnt%s' "${PEER_STATE_DIR:-${TMPDIR:-/tmp}/s3r-peers.$(id -u)}" "$name"
}

# _peer_alive PID: the process exists and is not a zombie.
_peer_alive() { proc_alive "$1"; }

# _peer_mounted MNT: something is mounted on MNT. Reads mountinfo rather than
# using mountpoint(1), which fails on a FUSE mount whose daemon died
# (ENOTCONN) although the mount is still there and must be unmounted.
_peer_mounted() {
  awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# _peer_mount_prepare MNT: create the mount point, refuse an existing mount
# or a non-empty directory, print the absolute path.
_peer_mount_prepare() {
  local mnt
  mkdir -p "$1" || { _peer_err "cannot create mount point $1"; return 1; }
  mnt=$(realpath "$1") || return 1
  case $mnt in *[[:space:]]*) _peer_err "mount point '$mnt' contains whitespace"; return 1 ;; esac
  if _peer_mounted "$mnt"; then
    _peer_err "$mnt is already a mount point (peer_umount it first)"
    return 1
  fi
  if [ -n "$(ls -A "$mnt" 2>/dev/null)" ]; then
    _peer_err "$mnt is not empty (s3fs refuses without -o nonempty; use an empty directory)"
    return 1
  fi
  printf '%s' "$mnt"
}

# _peer_state_new MNT: a fresh, private state dir for a mount.
_peer_state_new() {
  local st
  st=$(_peer_state "$1")
  if ! { rm -rf "$st" && mkdir -p "$st" && chmod 700 "$st"; }; then
    _peer_err "cannot create state dir $st"
    return 1
  fi
  printf '%s' "$st"
}

# _peer_check_bucket BUCKET: a signed HEAD on the bucket, so bad keys or a
# missing bucket are reported before mounting (and without touching the
# mount's caches).
_peer_check_bucket() {
  local code
  code=$(_peer_curl -o /dev/null -w '%{http_code}' -I "$(_peer_url "$1")" 2>/dev/null) || true
  case $code in
    200) return 0 ;;
    000 | '') _peer_err "cannot reach $S3R_ENDPOINT (is RGW running? tests/servers/rgw.sh status)" ;;
    403) _peer_err "bucket '$1': access denied (HTTP 403: wrong keys?)" ;;
    404) _peer_err "bucket '$1' does not exist (HTTP 404)" ;;
    *) _peer_err "bucket '$1': HTTP $code on HEAD" ;;
  esac
  return 1
}

# _peer_wait_mounted MNT STATE TOOL: wait until the daemon whose pid is in
# STATE/pid serves MNT. Ready means: daemon alive, MNT in mountinfo and stat
# of MNT answered, twice in a row 0.2 s apart (s3fs checks the bucket in its
# FUSE init and exits on failure, just after the mount appears). On failure,
# print the log tail and tear the mount down.
_peer_wait_mounted() {
  local mnt=$1 st=$2 tool=$3 pid ok=0 i end
  pid=$(cat "$st/pid" 2>/dev/null) || pid=
  end=$((SECONDS + ${PEER_MOUNT_TIMEOUT:-30}))
  for ((i = 0; i < 1000; i++)); do
    _peer_alive "$pid" || break
    # stat waits for the daemon's FUSE init (s3fs checks the bucket there,
    # 20 s and more when the server does not answer): bounded by timeout.
    if _peer_mounted "$mnt" && timeout 5 stat "$mnt" >/dev/null 2>&1; then
      ok=$((ok + 1))
      [ "$ok" -lt 2 ] || return 0
    else
      ok=0
    fi
    [ "$SECONDS" -lt "$end" ] || break
    sleep 0.2
  done
  if _peer_alive "$pid"; then
    _peer_err "$tool did not mount $mnt within ${PEER_MOUNT_TIMEOUT:-30} s"
  else
    _peer_err "$tool exited before mounting $mnt"
  fi
  # unmount first: the daemon has exited after it, so its log is flushed
  PEER_KEEP_STATE=1 peer_umount "$mnt" >/dev/null 2>&1 || true
  if [ -s "$st/log" ]; then
    # error lines only: rclone prints its whole usage text on a bad flag
    _peer_err "from $st/log (kept):"
    { grep -iE 'error|err\]|crt\]|crit|fatal|fail|unknown|invalid' "$st/log" ||
      cat "$st/log"; } 2>/dev/null | tail -n 12 >&2 || true
  fi
  return 1
}

# --- installation -------------------------------------------------------------

# peer_install: install the missing peer packages (Debian 12, as root).
# fuse3 provides fusermount/fusermount3 (rclone needs it; s3fs's "fuse"
# dependency is satisfied by it too). Silent when everything is present.
peer_install() {
  local p s missing=()
  for p in s3fs rclone fio awscli curl fuse3; do
    s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || s=
    [ "$s" = "install ok installed" ] || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    _peer_err "missing packages (${missing[*]}); installing them needs root"
    return 1
  fi
  _peer_err "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || { _peer_err "apt-get update failed"; return 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    { _peer_err "apt-get install ${missing[*]} failed"; return 1; }
}

# --- mounts --------------------------------------------------------------------

# peer_mount_s3fs BUCKET MNT [OPT...]: mount BUCKET on MNT with s3fs; each OPT
# (and $PEER_S3FS_OPTS) is added to -o, e.g. peer_mount_s3fs b /mnt/x
# stat_cache_expire=1. Returns once the mount is usable.
peer_mount_s3fs() {
  if [ $# -lt 2 ]; then _peer_err "usage: peer_mount_s3fs BUCKET MOUNTPOINT [OPTION...]"; return 2; fi
  _peer_need_env && _peer_need_cmd s3fs || return 1
  local bucket=$1 mnt st opts o
  mnt=$(_peer_mount_prepare "$2") || return 1
  shift 2
  _peer_check_bucket "$bucket" || return 1
  st=$(_peer_state_new "$mnt") || return 1
  (umask 077 && printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$st/passwd") ||
    { _peer_err "cannot write $st/passwd"; return 1; }
  opts="passwd_file=$st/passwd,url=${S3R_ENDPOINT%/},use_path_request_style"
  opts+=",endpoint=$(_peer_region),sigv4,dbglevel=err"
  for o in "$@"; do opts+=",$o"; done
  [ -z "${PEER_S3FS_OPTS:-}" ] || opts+=",$PEER_S3FS_OPTS"
  printf 's3fs\n' >"$st/tool"
  printf '%s\n' "s3fs $bucket $mnt -f -o $opts" >"$st/cmd"
  # Started from a subshell, so it is not a child of the caller (a bare
  # `wait` in the caller must not wait for the mount); in the foreground (-f)
  # so that the pid written is the daemon's.
  (
    exec </dev/null >>"$st/log" 2>&1
    s3fs "$bucket" "$mnt" -f -o "$opts" &
    printf '%s\n' "$!" >"$st/pid"
  )
  if ! _peer_wait_mounted "$mnt" "$st" s3fs; then
    rm -f "$st/passwd"
    return 1
  fi
  rm -f "$st/passwd"
}

# peer_mount_rclone BUCKET MNT [FLAG...]: rclone mount of BUCKET on MNT with
# --vfs-cache-mode ${PEER_RCLONE_VFS_CACHE_MODE:-off}; FLAGs are added to the
# rclone command line (e.g. --use-server-modtime). Returns once usable.
peer_mount_rclone() {
  if [ $# -lt 2 ]; then _peer_err "usage: peer_mount_rclone BUCKET MOUNTPOINT [FLAG...]"; return 2; fi
  _peer_need_env && _peer_need_cmd rclone || return 1
  local bucket=$1 mnt st mode=${PEER_RCLONE_VFS_CACHE_MODE:-off} region
  region=$(_peer_region)
  mnt=$(_peer_mount_prepare "$2") || return 1
  shift 2
  _peer_check_bucket "$bucket" || return 1
  st=$(_peer_state_new "$mnt") || return 1
  printf 'rclone\n' >"$st/tool"
  printf '%s\n' "rclone --config /dev/null mount rgw:$bucket $mnt --vfs-cache-mode $mode --cache-dir $st/cache $*" >"$st/cmd"
  (
    exec </dev/null >>"$st/log" 2>&1
    export RCLONE_CONFIG_RGW_TYPE=s3 RCLONE_CONFIG_RGW_PROVIDER=Ceph \
      RCLONE_CONFIG_RGW_ENV_AUTH=false \
      RCLONE_CONFIG_RGW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
      RCLONE_CONFIG_RGW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
      RCLONE_CONFIG_RGW_REGION="$region" \
      RCLONE_CONFIG_RGW_ENDPOINT="${S3R_ENDPOINT%/}"
    unset AWS_CA_BUNDLE
    rclone --config /dev/null mount "rgw:$bucket" "$mnt" --vfs-cache-mode "$mode" \
      --cache-dir "$st/cache" "$@" &
    printf '%s\n' "$!" >"$st/pid"
  )
  _peer_wait_mounted "$mnt" "$st" rclone
}

# peer_mount_rclone_writes BUCKET MNT [FLAG...]: the same with
# --vfs-cache-mode writes (files written are staged under the state dir and
# uploaded after close: wait for them with peer_wait_object).
peer_mount_rclone_writes() {
  PEER_RCLONE_VFS_CACHE_MODE=writes peer_mount_rclone "$@"
}

# peer_umount MNT: unmount an s3fs or rclone mount and wait (bounded) for its
# daemon to exit, so that all its uploads are done (rclone with a VFS cache:
# waits first until its cache holds no dirty file). Tries fusermount3 -u,
# fusermount -u and umount for 10 s (EBUSY), then umount -l; a daemon still
# running after $PEER_UMOUNT_TIMEOUT s is sent SIGTERM, then SIGKILL
# (unmount.sh's unmount_busy: the ladder of our own mounts too). Quiet
# success when nothing is mounted.
peer_umount() {
  if [ $# -ne 1 ]; then _peer_err "usage: peer_umount MOUNTPOINT"; return 2; fi
  local mnt st pid='' i end rc=0
  mnt=$(realpath -m "$1")
  st=$(_peer_state "$mnt")
  [ ! -r "$st/pid" ] || pid=$(cat "$st/pid" 2>/dev/null) || pid=
  # rclone with a VFS cache uploads after close (--vfs-write-back 5s) and
  # drops pending uploads when unmounted: wait until no cached file is dirty.
  if [ -d "$st/cache/vfsMeta" ] && _peer_alive "$pid"; then
    end=$((SECONDS + ${PEER_UMOUNT_TIMEOUT:-60}))
    for ((i = 0; i < 10000 && SECONDS < end; i++)); do
      grep -rqE '"Dirty": *true' "$st/cache/vfsMeta" 2>/dev/null || break
      sleep 0.2
    done
    if grep -rqE '"Dirty": *true' "$st/cache/vfsMeta" 2>/dev/null; then
      _peer_err "rclone uploads still pending after ${PEER_UMOUNT_TIMEOUT:-60} s; unmounting anyway (they are lost)"
      rc=1
    fi
  fi
  if ! unmount_busy "$mnt" _peer_err; then _peer_err "cannot unmount $mnt"; rc=1; fi
  if [ -n "$pid" ] && ! wait_gone "$pid" "${PEER_UMOUNT_TIMEOUT:-60}"; then
    _peer_err "daemon $pid for $mnt still running after unmount; sending SIGTERM"
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pid" 5 || kill -KILL "$pid" 2>/dev/null || true
    rc=1
  fi
  if [ "$rc" -eq 0 ] && [ -z "${PEER_KEEP_STATE:-}" ]; then
    rm -rf "$st"
  elif [ -d "$st" ]; then
    _peer_err "state and log kept in $st"
  fi
  return "$rc"
}

# peer_pid MNT: print the pid of the s3fs or rclone daemon serving MNT
# (started by peer_mount_*); fails when it is not running.
peer_pid() {
  if [ $# -ne 1 ]; then _peer_err "usage: peer_pid MOUNTPOINT"; return 2; fi
  local pid
  pid=$(cat "$(_peer_state "$(realpath -m "$1")")/pid" 2>/dev/null) || pid=
  _peer_alive "$pid" || { _peer_err "no peer daemon running for $1"; return 1; }
  printf '%s\n' "$pid"
}

# --- curl ----------------------------------------------------------------------

# peer_curl_get PATH OUT: one signed single-stream GET of PATH (bucket/key or
# a full URL) into OUT (a file, or /dev/null).
peer_curl_get() {
  if [ $# -ne 2 ]; then _peer_err "usage: peer_curl_get BUCKET/KEY|URL OUT"; return 2; fi
  _peer_need_env && _peer_need_cmd curl || return 1
  _peer_curl -o "$2" "$(_peer_url "$1")" || { _peer_err "GET $1 failed"; return 1; }
}

# peer_curl_get_parallel N PATH SIZE OUT: N ranged GETs at once, each one
# contiguous slice of SIZE bytes (SIZE "auto": ask the server). With OUT
# /dev/null every stream is discarded; otherwise OUT is created with SIZE
# bytes and each slice is written at its offset (dd conv=notrunc).
peer_curl_get_parallel() {
  if [ $# -ne 4 ]; then _peer_err "usage: peer_curl_get_parallel N BUCKET/KEY|URL SIZE|auto OUT"; return 2; fi
  _peer_need_env && _peer_need_cmd curl || return 1
  local n=$1 url size=$3 out=$4 chunk i start last pids=() failed=0 p
  _peer_posint "$n" N || return 2
  url=$(_peer_url "$2")
  if [ "$size" = auto ]; then
    size=$(_peer_curl -I "$url" | tr -d '\r' | awk 'tolower($1) == "content-length:" { print $2 }') || size=
    [ -n "$size" ] || { _peer_err "HEAD $2 failed"; return 1; }
  fi
  _peer_posint "$size" SIZE || return 2
  if [ "$out" != /dev/null ]; then
    if ! { rm -f "$out" && truncate -s "$size" "$out"; }; then
      _peer_err "cannot create $out"
      return 1
    fi
  fi
  chunk=$(((size + n - 1) / n))
  for ((i = 0; i < n; i++)); do
    start=$((i * chunk))
    [ "$start" -lt "$size" ] || break
    last=$((start + chunk - 1))
    [ "$last" -lt "$size" ] || last=$((size - 1))
    if [ "$out" = /dev/null ]; then
      _peer_curl -r "$start-$last" -o /dev/null "$url" &
    else
      (
        set -o pipefail
        _peer_curl -r "$start-$last" "$url" |
          dd of="$out" bs=1M seek="$start" oflag=seek_bytes conv=notrunc status=none
      ) &
    fi
    pids+=("$!")
  done
  for p in "${pids[@]}"; do
    wait "$p" || failed=$((failed + 1))
  done
  if [ "$failed" -gt 0 ]; then
    _peer_err "$failed of ${#pids[@]} ranged GETs of $2 failed"
    return 1
  fi
}

# --- awscli --------------------------------------------------------------------

# peer_aws ARGS...: the aws CLI on the local endpoint with only its defaults
# (no ~/.aws files), keys from the environment.
peer_aws() {
  _peer_need_env || return 1
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER='' \
    "$(_peer_aws_bin)" --endpoint-url "${S3R_ENDPOINT%/}" --region "$(_peer_region)" "$@"
}

# peer_aws_cp SRC DST [ARGS...]: aws s3 cp with default transfer settings;
# S3 sides are written s3://bucket/key.
peer_aws_cp() {
  if [ $# -lt 2 ]; then _peer_err "usage: peer_aws_cp SRC DST [ARGS...]"; return 2; fi
  peer_aws s3 cp --only-show-errors "$@"
}

# --- server-side checks ------------------------------------------------------

# peer_head_size BUCKET KEY: print the object's size; fails if it is absent.
peer_head_size() {
  if [ $# -ne 2 ]; then _peer_err "usage: peer_head_size BUCKET KEY"; return 2; fi
  _peer_need_env || return 1
  local hdr len
  # headers first, then parsed: in a pipeline the caller's pipefail would
  # decide whether a 404 (whose error body has a length too) is seen
  hdr=$(_peer_curl -I "$(_peer_url "$1/$2")" 2>/dev/null) || return 1
  len=$(printf '%s\n' "$hdr" | tr -d '\r' | awk 'tolower($1) == "content-length:" { print $2 }')
  [ -n "$len" ] || return 1
  printf '%s\n' "$len"
}

# peer_wait_object BUCKET KEY SIZE [SECONDS]: wait (default 120 s, polling
# every 0.1 s) until the object exists on the server with SIZE bytes; this
# is where a timed write ends (docs/benchmarks.md).
peer_wait_object() {
  if [ $# -lt 3 ]; then _peer_err "usage: peer_wait_object BUCKET KEY SIZE [SECONDS]"; return 2; fi
  local end i got=
  end=$((SECONDS + ${4:-120}))
  for ((i = 0; i < 100000; i++)); do
    got=$(peer_head_size "$1" "$2") || got=
    [ "$got" != "$3" ] || return 0
    [ "$SECONDS" -lt "$end" ] || break
    sleep 0.1
  done
  _peer_err "$1/$2: not $3 bytes on the server after ${4:-120} s (now: ${got:-absent})"
  return 1
}

# peer_rm_object BUCKET KEY: delete one object with a signed DELETE (an
# absent object is no error: S3 answers 204 either way).
peer_rm_object() {
  if [ $# -ne 2 ]; then _peer_err "usage: peer_rm_object BUCKET KEY"; return 2; fi
  _peer_need_env && _peer_need_cmd curl || return 1
  _peer_curl -o /dev/null -X DELETE "$(_peer_url "$1/$2")" || { _peer_err "DELETE $1/$2 failed"; return 1; }
}

# peer_abort_uploads BUCKET: abort every unfinished multipart upload in the
# bucket (a write killed half-way leaves one, whose parts take space on the
# server; RGW 16.2 deletes a bucket with one pending all the same).
peer_abort_uploads() {
  if [ $# -ne 1 ]; then _peer_err "usage: peer_abort_uploads BUCKET"; return 2; fi
  local list key id rc=0
  list=$(peer_aws s3api list-multipart-uploads --bucket "$1" \
    --query 'Uploads[].[UploadId,Key]' --output text) || { _peer_err "cannot list uploads of $1"; return 1; }
  while IFS=$'\t' read -r id key; do
    case $id in '' | None) continue ;; esac
    peer_aws s3api abort-multipart-upload --bucket "$1" --key "$key" --upload-id "$id" ||
      { _peer_err "cannot abort upload $id of $1/$key"; rc=1; }
  done <<<"$list"
  return "$rc"
}

# peer_rm_bucket BUCKET: remove a bucket and all its objects, unfinished
# multipart uploads included.
peer_rm_bucket() {
  if [ $# -ne 1 ]; then _peer_err "usage: peer_rm_bucket BUCKET"; return 2; fi
  peer_abort_uploads "$1" || true
  peer_aws s3 rb --force "s3://$1" >/dev/null
}

# --- page cache ----------------------------------------------------------------

# peer_drop_caches: write back dirty pages and drop the page, dentry and inode
# caches (root only). It does not drop caches inside FUSE daemons (s3fs stat
# cache, rclone directory cache): remount for those.
peer_drop_caches() {
  sync
  if ! { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    _peer_err "cannot drop the page cache (needs root and a writable /proc/sys)"
    return 1
  fi
}
