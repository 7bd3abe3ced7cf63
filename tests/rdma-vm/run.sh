#!/usr/bin/env bash
# tests/rdma-vm/run.sh - run a command inside a QEMU guest (TCG, no KVM
# needed) that has a soft-RoCE device, rxe0, on its user-mode NIC.
#
#   run.sh [--shell] [--build DIR] [--timeout S] [-- COMMAND [ARG...]]
#
# (1) prepares the guest kernel and initramfs (mkinitramfs.sh, cached),
# (2) boots it with the host's /usr and /etc, the repo and the build tree
#     shared read-only over 9p at their host paths (host binaries run as
#     they are; the build tree writable in the guest through a tmpfs
#     overlay, the host's untouched) and a writable results directory,
# (3) the guest (guest/init) loads rdma_rxe, creates rxe0, checks
#     ibv_devices/ibv_devinfo, then runs COMMAND with bash in the repo root
#     (default: tests/rdma-vm/guest/smoke.sh, perftest over rxe0),
# (4) prints the guest's output, PASS or FAIL, kills the guest and exits
#     with the command's status (non-zero on any failure or timeout).
# --shell gives an interactive shell in the guest instead (on this tty).
#
# In the guest, COMMAND sees:
#   S3R_REPO, S3R_BUILD   the repo and the build tree (host paths)
#   S3R_RESULTS           writable directory, on the host afterwards
#   S3R_HOST_IP=10.0.2.2  the host (its 127.0.0.1: RGW at 10.0.2.2:7480)
#   S3R_GUEST_IP=10.0.2.15, S3R_NETDEV, S3R_RDMA_DEV=rxe0, S3R_GID_INDEX=1
#   S3R_ENDPOINT          default http://10.0.2.2:7480
#   every S3R_* and AWS_* variable of the host (S3R_VM_* aside), with
#   "://127.0.0.1" and "://localhost" made "://10.0.2.2"; note that /tmp is
#   the guest's own (S3R_CA_BUNDLE in /tmp is not there)
#
# Environment:
#   S3R_VM_CACHE    kernel/initramfs cache (default /var/cache/s3rdmafs-vm
#                   as root, else $XDG_CACHE_HOME/s3rdmafs-vm)
#   S3R_VM_TIMEOUT  seconds before the guest is killed (default 300)
#   S3R_VM_MEM      guest MiB (default 2048); S3R_VM_SMP vCPUs (default 2)
#   S3R_VM_RESULTS  results directory (default: a new /tmp/s3rdmafs-vm.*,
#                   removed after a PASS, kept after a FAIL)
#   S3R_VM_QUIET=1  do not stream the guest console (shown on FAIL anyway)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$REPO/build
SHELL_MODE=0
TIMEOUT=${S3R_VM_TIMEOUT:-300}
usage() { sed -n '4p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --shell) SHELL_MODE=1 ;;
    --build) [ $# -ge 2 ] || usage; BUILD=$2; shift ;;
    --timeout) [ $# -ge 2 ] || usage; TIMEOUT=$2; shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
  shift
done
[ $# -gt 0 ] || set -- tests/rdma-vm/guest/smoke.sh

if [ -z "${S3R_VM_CACHE:-}" ]; then
  if [ "$(id -u)" -eq 0 ]; then S3R_VM_CACHE=/var/cache/s3rdmafs-vm
  else S3R_VM_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/s3rdmafs-vm; fi
fi
for t in qemu-system-x86_64 ibv_devices ib_write_bw rdma; do
  command -v "$t" >/dev/null ||
    { echo "rdma-vm: $t missing: run scripts/setup.sh --no-build" >&2; exit 1; }
done

t0=$(date +%s)
prep=$("$HERE/mkinitramfs.sh" "$S3R_VM_CACHE") || { echo "rdma-vm: FAIL (prepare)" >&2; exit 1; }
KERNEL=$(sed -n 's/^KERNEL=//p' <<<"$prep")
INITRD=$(sed -n 's/^INITRD=//p' <<<"$prep")
t1=$(date +%s)

keep=1
if [ -n "${S3R_VM_RESULTS:-}" ]; then
  RES=$S3R_VM_RESULTS
  mkdir -p "$RES"
  rm -f "$RES"/{rc,vm.env,cmd,guest.log,console.log,dmesg}
else
  RES=$(mktemp -d /tmp/s3rdmafs-vm.XXXXXX)
  keep=0
fi
RES=$(cd "$RES" && pwd)

qpid=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    kill "$qpid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$qpid" 2>/dev/null || true
  fi
  [ "$keep" -eq 1 ] || rm -rf "$RES"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# what the guest is told (sourced by busybox ash: values quoted with %q)
{
  q() { printf 'export %s=%q\n' "$1" "$2"; }
  guest_url() { # the host's 127.0.0.1/localhost is 10.0.2.2 in the guest
    local v=${1//:\/\/127.0.0.1/:\/\/10.0.2.2}
    printf '%s' "${v//:\/\/localhost/:\/\/10.0.2.2}"
  }
  while IFS='=' read -r name _; do
    case $name in
      S3R_VM_*) ;;
      S3R_*|AWS_*) q "$name" "$(guest_url "${!name}")" ;;
    esac
  done < <(env | grep -E '^(S3R|AWS)_[A-Za-z0-9_]*=' || true)
  [ -n "${S3R_ENDPOINT:-}" ] || q S3R_ENDPOINT "http://10.0.2.2:${S3R_RGW_PORT:-7480}"
  q S3R_HOST_IP 10.0.2.2
  q S3R_GUEST_IP 10.0.2.15
  q S3R_RDMA_DEV rxe0
  q S3R_GID_INDEX 1
  q S3R_REPO "$REPO"
  q S3R_RESULTS /s3r/results
  if [ -d "$BUILD" ]; then
    BUILD=$(cd "$BUILD" && pwd)
    q S3R_BUILD "$BUILD"
    case $BUILD/ in "$REPO"/*) ;; *) q S3R_BUILD_SHARE 1 ;; esac
  fi
} > "$RES/vm.env"
printf '%q ' "$@" > "$RES/cmd"
echo >> "$RES/cmd"

for p in "$REPO" "$RES" "${BUILD:-}"; do
  case $p in *[[:space:],]*) echo "rdma-vm: paths with spaces or commas are not supported: $p" >&2; exit 2 ;; esac
done
# shellcheck disable=SC2054 # commas inside QEMU options
args=(
  -machine pc -accel tcg,thread=multi -cpu max
  -smp "${S3R_VM_SMP:-2}" -m "${S3R_VM_MEM:-2048}"
  -nodefaults -no-user-config -display none -no-reboot
  -kernel "$KERNEL" -initrd "$INITRD"
  -netdev user,id=n0 -device virtio-net-pci,netdev=n0
)
share() { # tag path [rw]: a 9p share, read-only unless rw
  local ro=,readonly=on
  [ "${3:-}" = rw ] && ro=
  args+=(-virtfs "local,path=$2,mount_tag=$1,security_model=none,multidevs=remap$ro")
}
share usr /usr
share etc /etc
share results "$RES" rw
share repo "$REPO"
grep -q '^export S3R_BUILD_SHARE=' "$RES/vm.env" && share build "$BUILD"
append="console=ttyS0 panic=-1 quiet loglevel=4"


if [ "$SHELL_MODE" -eq 1 ]; then
  echo "rdma-vm: shell in the guest (results in $RES); exit to power off" >&2
  keep=1
  timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" \
    -append "$append s3r.shell" -serial mon:stdio || true
  exit 0
fi

echo "rdma-vm: booting $(basename "$(dirname "$KERNEL")") (prepare $((t1 - t0)) s), timeout $TIMEOUT s: $*" >&2
: > "$RES/console.log"
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" -append "$append" \
  -chardev file,id=con,path="$RES/console.log" -serial chardev:con \
  </dev/null >"$RES/qemu.log" 2>&1 &
qpid=$!
tpid=
if [ "${S3R_VM_QUIET:-0}" != 1 ]; then
  tail -n +1 -f --pid="$qpid" "$RES/console.log" &
  tpid=$!
fi
qrc=0
wait "$qpid" || qrc=$?
qpid=
[ -z "$tpid" ] || wait "$tpid" 2>/dev/null || true
t2=$(date +%s)

rc=$(cat "$RES/rc" 2>/dev/null || true)
why=
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  why="guest killed after the $TIMEOUT s timeout"; rc=${rc:-124}
elif [ -z "$rc" ]; then
  why="the guest left no exit status (qemu exit $qrc)"; rc=97
  [ -s "$RES/qemu.log" ] && sed 's/^/qemu: /' "$RES/qemu.log" >&2
elif [ "$rc" -ne 0 ]; then
  why="the guest command exited with $rc"
fi
times="prepare $((t1 - t0)) s, guest $((t2 - t1)) s"
if [ -z "$why" ]; then
  echo "rdma-vm: PASS ($times)"
  exit 0
fi
keep=1
if [ "${S3R_VM_QUIET:-0}" = 1 ]; then tail -n 60 "$RES/console.log" >&2; fi
echo "rdma-vm: FAIL: $why ($times); logs in $RES" >&2
exit "$rc"
