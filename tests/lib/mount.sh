# shellcheck shell=bash
# Mounting and unmounting s3rdmafs: the one library the tests
# (tests/lib/test.sh) and the benchmarks (bench/lib.sh) share.
# Sourced; needs $FS, the s3rdmafs binary.
#
#   fs_mount BUCKET[:/PREFIX] MNT LOG [ARG...]
#       the daemon in the foreground (-f), started in the background by this
#       shell: its pid in $FS_PID, and in $! as long as the caller starts no
#       other background job. Its output is appended to LOG after a marker
#       line ("--- fs_mount N: ..."): a remount does not truncate the log, so
#       a grep of LOG reads the whole run. Returns once MNT answers a stat;
#       1 (and the log) when the daemon exits or MNT does not come up.
#   fs_umount MNT
#       unmount (fusermount3 -u, retried while busy; umount -l as a last
#       resort), then wait (bounded) for the daemon to exit and check its
#       exit status is 0 (137 after fs_kill) and that its part of the log
#       holds no sanitizer report. A check: prints "ok - ..." or
#       "not ok - ..." (with the report), counts in $pass/$fail when the
#       caller has them, returns 1 on failure. Quiet 0 when MNT is neither
#       mounted nor has a daemon of ours.
#   fs_stop MNT SIGNAL
#       TERM or INT: the daemon unmounts by itself; the same checks.
#   fs_kill MNT
#       SIGKILL the daemon on purpose and reap it; the next fs_umount MNT
#       (which removes the dead mount) then expects exactly that status.
#   fs_umount_all
#       fs_umount every mount fs_mount made that is still there (cleanup).
#   fs_drop_pools DIR
#       remove the part-buffer files (write.pool_dir, /dev/shm) that the
#       pool.at files under DIR name: a daemon killed on purpose leaves its
#       pool for the next mount's recovery, which a test whose cache.dir
#       goes with DIR never makes (each one 256 MiB of tmpfs, for ever).
#       Before DIR itself is removed.
#   fs_san_env CMD...
#       run CMD (a daemonising s3rdmafs, mount(8), a mount helper) with the
#       sanitizers writing their reports under $FS_SAN_DIR rather than to a
#       stderr nobody reads; fs_umount of such a mount checks that directory
#       (its exit status cannot be had: the daemon is nobody's child here).
#   is_mounted MNT, wait_mount MNT [not], unmount_busy: unmount.sh
#
# Settings: FS_ARGS (array: arguments before the caller's; the tests give
# -o cache.mlock=false), FS_EXEC (array: a command prefix, exec'ing the
# daemon), S3R_FS_ENDPOINT and S3R_FS_OPTS (with_gateway.sh: mount through
# another endpoint with more -o options), FS_MOUNT_TIMEOUT (60 s),
# FS_EXIT_TIMEOUT (120 s: a daemon finishes its last uploads after the
# unmount), FS_REPORT_FD (1; the benchmarks: 2), FS_SAN_DIR ($tmp/sanitizer).
#
# fs_mount and fs_umount of one mount must run in the same shell, and kills
# on purpose go through fs_kill: only the daemon's parent can have its exit
# status, once (fs_umount says when it could not).

FS_PID=''
FS_MOUNTS=0
declare -gA _fs_pid=() _fs_log=() _fs_off=() _fs_status=()
_fs_san_re='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
# shellcheck source=tests/lib/unmount.sh
. "$(dirname "${BASH_SOURCE[0]}")/unmount.sh"

_fs_say() { printf '%s\n' "$@" >&"${FS_REPORT_FD:-1}"; }
_fs_ok() {
  _fs_say "ok - $*"
  [ -z "${pass+x}" ] || pass=$((pass + 1))
}
_fs_not_ok() {
  _fs_say "not ok - $*"
  [ -z "${fail+x}" ] || fail=$((fail + 1))
  return 1
}


# _fs_sanitized: was $FS built with ASan/UBSan?
_fs_sanitized() { grep -qa __asan_init "$FS" 2>/dev/null; }

# _fs_san_report FILE [OFFSET]: print (indented) the first sanitizer report
# in FILE after byte OFFSET; fails when there is none
_fs_san_report() { # (one pass, no reader that stops early in a pipe:
  local report      # under pipefail its writer's SIGPIPE would fail it)
  report=$(awk -v re="$_fs_san_re" '!n && $0 !~ re {next}
    {print "#   " $0} ++n == 60 {exit}' <(tail -c +"$((${2:-0} + 1))" "$1" 2>/dev/null))
  [ -n "$report" ] || return 1
  printf '%s
' "$report" >&"${FS_REPORT_FD:-1}"
}

# _fs_status_text N: "exit N", or the signal it stands for
_fs_status_text() {
  if [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then
    echo "killed by SIG$(kill -l "$(($1 - 128))" 2>/dev/null || echo "$(($1 - 128))")"
  else
    echo "exit $1"
  fi
}

fs_drop_pools() {
  local at pool
  while IFS= read -r -d '' at; do
    pool=$(head -n 1 "$at" 2>/dev/null) || continue
    case ${pool##*/} in
      s3rdmafs-pool-*) [ -f "$pool" ] && [ ! -L "$pool" ] && rm -f "$pool" ;;
    esac
  done < <(find "$1" -xdev -name pool.at -type f -print0 2>/dev/null)
  return 0
}

fs_mount() {
  local bucket=$1 mp=$2 log=$3 pid off st i
  shift 3
  local via=()
  if [ -n "${S3R_FS_ENDPOINT:-}" ]; then via+=(-o "endpoint=$S3R_FS_ENDPOINT"); fi
  if [ -n "${S3R_FS_OPTS:-}" ]; then via+=(-o "$S3R_FS_OPTS"); fi
  if [ -n "${_fs_pid[$mp]:-}" ]; then
    _fs_say "# fs_mount: $mp has a daemon of ours (pid ${_fs_pid[$mp]}): unmounting it first"
    fs_umount "$mp" || true
  fi
  FS_MOUNTS=$((FS_MOUNTS + 1))
  off=$(stat -c %s "$log" 2>/dev/null || echo 0)
  # (no arguments in the marker: they may hold a key)
  printf -- '--- fs_mount %s: %s on %s, %s\n' "$FS_MOUNTS" "$bucket" "$mp" \
    "$(date '+%F %T')" >>"$log"
  ${FS_EXEC[@]+"${FS_EXEC[@]}"} "$FS" "$bucket" "$mp" -f ${FS_ARGS[@]+"${FS_ARGS[@]}"} \
    ${via[@]+"${via[@]}"} "$@" >>"$log" 2>&1 &
  pid=$!
  FS_PID=$pid
  _fs_pid[$mp]=$pid _fs_log[$mp]=$log _fs_off[$mp]=$off
  unset "_fs_status[$mp]"
  for ((i = 0; i < ${FS_MOUNT_TIMEOUT:-60} * 10; i++)); do
    if is_mounted "$mp"; then
      # the first stat waits until the daemon has finished starting
      timeout 30 stat "$mp" >/dev/null && return 0
      break
    fi
    proc_alive "$pid" || break
    sleep 0.1
  done
  if proc_alive "$pid"; then
    if is_mounted "$mp"; then
      _fs_say "mount failed: $mp mounted but a stat of it gets no answer in 30 s; stopping the daemon"
    else
      _fs_say "mount failed: $mp not mounted after ${FS_MOUNT_TIMEOUT:-60} s; stopping the daemon"
    fi
    fusermount3 -u "$mp" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || kill -KILL "$pid" 2>/dev/null || true
  fi
  st=0
  wait "$pid" 2>/dev/null || st=$?
  is_mounted "$mp" && { fusermount3 -u "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true; }
  unset "_fs_pid[$mp]" "_fs_log[$mp]" "_fs_off[$mp]"
  _fs_say "mount failed: s3rdmafs $(_fs_status_text "$st"); its log:"
  tail -c +"$((off + 1))" "$log" >&"${FS_REPORT_FD:-1}"
  if _fs_san_report "$log" "$off"; then
    _fs_not_ok "s3rdmafs on $mp (mount failed): a sanitizer report in its log"
  fi
  return 1
}

# _fs_daemon_of MNT: the pid of an s3rdmafs serving MNT that fs_mount did
# not start (daemon mode, mount(8), a mount helper)
_fs_daemon_of() {
  local d a
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = s3rdmafs ] || continue
    while IFS= read -r -d '' a; do
      if [ "$a" = "$1" ]; then echo "${d#/proc/}"; return 0; fi
    done <"$d/cmdline" 2>/dev/null
  done
  return 1
}

# _fs_unmount MNT: unmount_busy (retried while busy; then umount -l)
_fs_unmount() {
  unmount_busy "$1" _fs_note || true
  wait_mount "$1" not
}
_fs_note() { _fs_say "# $*"; }

# _fs_reap MNT: wait (bounded) for fs_mount's daemon of MNT to exit and
# keep its status; SIGKILL (and a failure) when it does not exit in time
_fs_reap() {
  local mp=$1 pid=${_fs_pid[$1]} st=0 parent
  [ -z "${_fs_status[$mp]:-}" ] || return 0
  if ! wait_gone "$pid" "${FS_EXIT_TIMEOUT:-120}"; then
    _fs_not_ok "s3rdmafs on $mp (pid $pid) still running ${FS_EXIT_TIMEOUT:-120} s after the unmount: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || true
  fi
  parent=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$pid/stat" 2>/dev/null || true)
  if [ -n "$parent" ] && [ "$parent" != "$BASHPID" ]; then
    _fs_status[$mp]=unknown
    return 0
  fi
  wait "$pid" 2>/dev/null || st=$?
  # 127: no such child (reaped elsewhere, or started by another shell)
  [ "$st" -ne 127 ] || st=unknown
  _fs_status[$mp]=$st
}

# _fs_judge MNT WANT HOW: check the kept status against WANT and the log;
# forget the mount
_fs_judge() {
  local mp=$1 want=$2 how=$3 pid=${_fs_pid[$1]} log=${_fs_log[$1]} off=${_fs_off[$1]}
  local st=${_fs_status[$1]} bad=''
  unset "_fs_pid[$mp]" "_fs_log[$mp]" "_fs_off[$mp]" "_fs_status[$mp]"
  if [ "$st" = unknown ]; then
    _fs_say "# s3rdmafs on $mp (pid $pid): exit status not observable (reaped by the caller, or started by another shell: use fs_kill, and fs_mount and fs_umount in one shell)"
  elif [ "$st" != "$want" ]; then
    bad="$(_fs_status_text "$st"), wanted $(_fs_status_text "$want")"
  fi
  if _fs_san_report "$log" "$off"; then
    bad="${bad:+$bad; }a sanitizer report in its log"
  fi
  if [ -n "$bad" ]; then
    _fs_not_ok "s3rdmafs on $mp (pid $pid) $how: $bad"
  elif [ "$st" = unknown ]; then
    _fs_ok "s3rdmafs on $mp (pid $pid) $how: no sanitizer report"
  else
    _fs_ok "s3rdmafs on $mp (pid $pid) $how: $(_fs_status_text "$st"), no sanitizer report"
  fi
}

# _fs_judge_foreign MNT PID: a daemon fs_mount did not start: wait for it
# and look at what fs_san_env had the sanitizers write
_fs_judge_foreign() {
  local mp=$1 pid=$2 i f bad=''
  for ((i = 0; i < ${FS_EXIT_TIMEOUT:-120} * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    bad="still running ${FS_EXIT_TIMEOUT:-120} s after the unmount: SIGKILL"
  fi
  if _fs_sanitized && [ -z "${_fs_san_env_ok:-}" ]; then
    bad="${bad:+$bad; }not started with fs_san_env: its sanitizer reports went nowhere"
  fi
  for f in "${FS_SAN_DIR:-/nonexistent}"/*; do
    case $f in *.seen) continue ;; esac
    [ -s "$f" ] || continue
    if _fs_san_report "$f"; then bad="${bad:+$bad; }a sanitizer report in $f"; fi
    mv "$f" "$f.seen"
  done
  if [ -n "$bad" ]; then
    _fs_not_ok "s3rdmafs on $mp (pid $pid, not started by fs_mount) unmounted: $bad"
  else
    _fs_ok "s3rdmafs on $mp (pid $pid, daemonised: exit status not observable) unmounted: exited, no sanitizer report"
  fi
}

fs_umount() {
  local mp=$1 pid=${_fs_pid[$1]:-} foreign='' want=0 how=unmounted rc=0
  if [ -z "$pid" ]; then
    is_mounted "$mp" || return 0
    foreign=$(_fs_daemon_of "$mp") || foreign=''
    if [ -n "$foreign" ] && _fs_sanitized; then
      _fs_san_env_ok=''
      # (-z reads the NUL-separated file itself: no pipe for a SIGPIPE)
      grep -qzF -- "log_path=${FS_SAN_DIR:-/nonexistent}/" \
        "/proc/$foreign/environ" 2>/dev/null && _fs_san_env_ok=1
    fi
  fi
  _fs_unmount "$mp" || rc=1
  if [ "$rc" -ne 0 ]; then _fs_not_ok "unmount $mp: still mounted"; fi
  if [ -n "$foreign" ]; then
    _fs_judge_foreign "$mp" "$foreign" || rc=1
    return "$rc"
  fi
  [ -n "$pid" ] || return "$rc"
  if [ -n "${_fs_status[$mp]:-}" ]; then # fs_kill reaped it already
    want=137 how="killed on purpose (fs_kill), then unmounted"
  fi
  _fs_reap "$mp"
  _fs_judge "$mp" "$want" "$how" || rc=1
  return "$rc"
}

fs_stop() {
  local mp=$1 sig=$2 pid=${_fs_pid[$1]:-} rc=0
  [ -n "$pid" ] || { _fs_not_ok "fs_stop $mp: no daemon of ours there"; return 1; }
  kill -"$sig" "$pid" 2>/dev/null || true
  _fs_reap "$mp"
  if is_mounted "$mp"; then
    _fs_not_ok "s3rdmafs on $mp: still mounted after SIG$sig and its exit"
    _fs_unmount "$mp" || true
    rc=1
  fi
  _fs_judge "$mp" 0 "stopped by SIG$sig" || rc=1
  return "$rc"
}

fs_kill() {
  local mp=$1 pid=${_fs_pid[$1]:-} st=0
  [ -n "$pid" ] || { _fs_not_ok "fs_kill $mp: no daemon of ours there"; return 1; }
  [ -z "${_fs_status[$mp]:-}" ] || return 0
  kill -KILL "$pid" 2>/dev/null || true
  wait_gone "$pid" 30 || true
  wait "$pid" 2>/dev/null || st=$? # (quiet: no "Killed" line)
  [ "$st" -ne 127 ] || st=unknown
  _fs_status[$mp]=$st
}

fs_umount_all() {
  local mp rc=0
  for mp in "${!_fs_pid[@]}"; do fs_umount "$mp" || rc=1; done
  return "$rc"
}

fs_san_env() {
  if ! _fs_sanitized; then "$@"; return; fi
  FS_SAN_DIR=${FS_SAN_DIR:-${tmp:?fs_san_env needs \$tmp or \$FS_SAN_DIR}/sanitizer}
  mkdir -p "$FS_SAN_DIR"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$FS_SAN_DIR/asan" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$FS_SAN_DIR/ubsan" "$@"
}
