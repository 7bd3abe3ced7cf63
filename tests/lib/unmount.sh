# shellcheck shell=bash
# Mount points and their daemons (sourced; functions only): the one unmount
# ladder of the mount library (mount.sh) and the peer tools (peers.sh).
#
#   proc_alive PID             the process exists and is not a zombie
#   wait_gone PID SECONDS      wait (bounded) until it is not; 1 when it
#                              still is after SECONDS
#   is_mounted MNT             MNT is in /proc/mounts (mountpoint(1) fails
#                              on a dead FUSE mount, its daemon gone, which
#                              is exactly when cleanup must still act)
#   wait_mount MNT [not]       wait (bounded, 10 s) until MNT is mounted,
#                              or until it is not
#   unmount_busy MNT SAY       unmount MNT: fusermount3 -u, else
#                              fusermount -u, else umount, every 0.2 s
#                              while it is busy, for 10 s; then umount -l
#                              (else fusermount3 -uz), said with SAY TEXT.
#                              Quiet 0 when MNT is not mounted; 1 when it
#                              still is

proc_alive() {
  local s
  [ -n "$1" ] || return 1
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}

wait_gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    proc_alive "$1" || return 0
    sleep 0.1
  done
  ! proc_alive "$1"
}

is_mounted() { grep -qs " $1 " /proc/mounts; }

wait_mount() {
  local mp=$1 want=${2:-yes}
  for _ in $(seq 1 100); do
    if is_mounted "$mp"; then [ "$want" = yes ] && return 0
    else [ "$want" = not ] && return 0; fi
    sleep 0.1
  done
  return 1
}

unmount_busy() {
  local mp=$1 say=$2 i
  for ((i = 0; i < 50; i++)); do
    is_mounted "$mp" || return 0
    fusermount3 -u "$mp" 2>/dev/null || fusermount -u "$mp" 2>/dev/null ||
      umount "$mp" 2>/dev/null || true
    is_mounted "$mp" || return 0
    sleep 0.2
  done
  "$say" "$mp still busy after 10 s: umount -l"
  umount -l "$mp" 2>/dev/null || fusermount3 -uz "$mp" 2>/dev/null || true
  ! is_mounted "$mp"
}
