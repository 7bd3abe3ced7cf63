#!/usr/bin/env bash
# libs3rdmafs's direct reads on real mounts (direct_check.c does the
# reading and comparing):
#   - plain RGW (the daemon copies from its page cache): 8 threads of
#     random unaligned ranges of two files (one past a multipart part
#     boundary and not a whole number of pages) into registered buffers and
#     plain memory, compared byte for byte; again after a remount;
#   - a file being written, read back before its close (the write-back's
#     view, never the server's);
#   - the registrations go with the open file: counted while a process
#     holds them, none left once it has exited;
#   - hostile ioctls refused (a plain file's fd, a file of the mount
#     itself, a hugetlbfs memfd, an unsealed or write-sealed memfd, a file
#     opened only for writing, lengths past the memfd or the buffer,
#     unknown and foreign handles, another version, unknown READ flags,
#     a dma-buf not whole pages, or on a mount that cannot register one:
#     EOPNOTSUPP, counted in direct.gpudirect_refused);
#   - every read counted as a host buffer's (direct.host_reads), none as
#     staged or GPUDirect;
#   - one buffer used through 40 opens in turn: the library gives back
#     the handles it stops remembering;
#   - a caller the daemon may not ptrace gets EPERM: the daemon runs as
#     root without CAP_SYS_PTRACE, the caller as nobody (allow_other), so
#     pidfd_getfd(2) refuses, and the same daemon serves root without
#     CAP_SYS_PTRACE (same user, no capability the daemon lacks);
#     with cma (which gives up CAP_SYS_PTRACE in the daemon) a root
#     caller is served (the fd is taken on a thread that kept it);
#   - through s3rdma-gateway with rdma.transport=cma: the server writes
#     the bytes into the caller's registered buffer (s3.rdma_bytes moves);
#     a dma-buf refused (cma cannot register device memory);
#   - direct writes (dwrite_check.c): 4 threads each writing a new file
#     with write_direct from registered buffers (16 MiB calls, then at
#     unaligned places) and from plain memory (5 MiB + 7 calls), read
#     back after close and again after a remount; a file whose sent parts
#     are rewritten with pwrite (the move to the staging file), then
#     appended with write_direct and fsync'ed; hostile WRITEs refused.
#     Plain RGW: everything copied into the write-back
#     (direct.write_parts 0); with cma, the whole parts go straight from
#     the caller's pages (direct.write_parts, s3.rdma_bytes), and the
#     rest copied.
#
#   test_fs_direct.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" direct local
trap 'rc=$?; set +e; gw_stop; (exit $rc); fs_cleanup' EXIT
DC=$BIN/direct_check
MiB=1048576

"$CLI" mb "$bucket"
gen 1 $((20 * MiB + 12345)) >"$tmp/local/a.bin"
gen 2 $((3 * MiB + 77)) >"$tmp/local/b.bin"
"$CLI" --parallel 4 put "$tmp/local/a.bin" "$bucket/a.bin"
"$CLI" put "$tmp/local/b.bin" "$bucket/b.bin"

verify_all() { # LABEL
  check "$1: a.bin, 8 threads" "$DC" verify "$mnt/a.bin" "$tmp/local/a.bin" 8 40 "$RANDOM"
  check "$1: b.bin, 8 threads" "$DC" verify "$mnt/b.bin" "$tmp/local/b.bin" 8 40 "$RANDOM"
}

# direct writes: NAME SIZE (files NAME.reg.N from registered buffers,
# NAME.plain.N from plain memory; NAME.back)
DW=$BIN/dwrite_check
dwrites() { # LABEL NAME SIZE
  check "$1: write_direct, registered, 4 threads" \
    "$DW" write "$mnt/$2.reg" "$3" $((16 * MiB)) reg 4
  check "$1: write_direct, plain memory, 4 threads" \
    "$DW" write "$mnt/$2.plain" "$3" $((5 * MiB + 7)) plain 4
  check "$1: parts sent, then rewritten with pwrite, appended, fsync" \
    "$DW" back "$mnt/$2.back" "$3" $((9 * MiB + 5))
}
dwcheck() { # LABEL NAME SIZE: what the server holds, after a remount
  local t
  for t in 0 1 2 3; do
    check "$1: $2.reg.$t as written" "$DW" check "$mnt/$2.reg.$t" "$3" "$t"
    check "$1: $2.plain.$t as written" "$DW" check "$mnt/$2.plain.$t" "$3" "$t"
  done
}

# ---- plain: plain RGW, through the page cache ----
case_plain() {
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off
verify_all "plain"
check "plain: direct reads counted" test "$(stat_of direct.reads)" -gt 0
check_eq "plain: ... all of them as host buffers' (direct.host_reads)" \
  "$(stat_of direct.host_reads)" "$(stat_of direct.reads)"
check_eq "plain: ... none staged, none GPUDirect" \
  "$(stat_of direct.staged_reads) $(stat_of direct.gpudirect_reads)" "0 0"
check_eq "plain: no registration left" "$(stat_of direct.registered)" 0
check "a file being written, read back before close" "$DC" written "$mnt/w.bin" $((6 * MiB + 5))
check "... and its object is those bytes after close" eq "size" \
  "$(aws_ s3api head-object --bucket "$bucket" --key w.bin --query ContentLength)" $((6 * MiB + 5))

# registrations belong to the open file: held, then gone with the process
"$DC" hold "$mnt/b.bin" 5 4 >"$tmp/hold.out" &
hpid=$!
held() { grep -q registered "$tmp/hold.out"; }
check "hold: five registered" wait_for 30 0.1 held
check_eq "hold: counted while held" "$(stat_of direct.registered)" 5
wait "$hpid" || true
gone() { [ "$(stat_of direct.registered)" = 0 ]; }
check "hold: none left once the process exited" wait_for 30 0.1 gone

g0=$(stat_of direct.gpudirect_refused)
check "hostile ioctls refused" "$DC" hostile "$mnt/b.bin"
check_eq "hostile: the dma-buf refused, counted (direct.gpudirect_refused)" \
  "$(stat_of direct.gpudirect_refused)" $((g0 + 1))
check "one buffer through 40 opens in turn" "$DC" many "$mnt/b.bin" 40
gone0() { [ "$(stat_of direct.registered)" = 0 ]; }
check "... none left registered" wait_for 30 0.1 gone0

w0=$(stat_of direct.writes)
dwrites "plain" dwp $((20 * MiB + 12345))
check "plain: hostile WRITEs refused" "$DW" hostile "$mnt/dwh.bin"
check "plain: one user may make 512 registrations, not more (ENOSPC)" \
  "$DW" user "$mnt/b.bin"
check "plain: ... none left once closed" wait_for 30 0.1 gone0
check "plain: direct writes counted" test "$(stat_of direct.writes)" -gt "$w0"
check_eq "plain: ... as host buffers' (direct.host_writes)" \
  "$(stat_of direct.host_writes)" "$(stat_of direct.writes)"
check_eq "plain: ... no part straight from a caller's buffer (no data plane)" \
  "$(stat_of direct.write_parts)" 0
fs_umount "$mnt"

fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off
verify_all "remounted"
dwcheck "remounted" dwp $((20 * MiB + 12345))
fs_umount "$mnt"
}
run_case plain case_plain

# ---- who: who may, the kernel's ptrace check, through pidfd_getfd ----
case_who() {
# The daemon as root without CAP_SYS_PTRACE; the caller nobody.
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  # the checker where nobody can run it (the build tree may be private)
  mkdir -p "$tmp/pbin"
  cp "$DC" "$BIN"/../lib/libs3rdmafs.so* "$tmp/pbin/"
  chmod 755 "$tmp" "$tmp/local" "$tmp/pbin"
  FS_EXEC=(setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace --)
  fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off,allow_other
  FS_EXEC=()
  check "perm: root, without CAP_SYS_PTRACE, may not take nobody's fd" \
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env LD_LIBRARY_PATH="$tmp/pbin" "$tmp/pbin/direct_check" perm "$mnt/b.bin"
  check "perm: nobody was refused, counted" test "$(stat_of direct.refused)" -ge 1
  # the kernel also wants the caller's capabilities to be the daemon's or
  # fewer: root without CAP_SYS_PTRACE, as the daemon
  check "perm: a caller of its own user and capabilities is served" \
    setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace -- \
    "$DC" verify "$mnt/b.bin" "$tmp/local/b.bin" 2 10 "$RANDOM"
  fs_umount "$mnt"
else
  echo "# perm: skipped (no setpriv or no user nobody)"
fi
}
run_case who case_who

# ---- gateway: the server writes into the caller's buffer ----
case_gateway() {
gw_start "$tmp/gw"
if fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"; then
  r0=$(stat_of s3.rdma_bytes)
  verify_all "cma"
  # long reads: several GETs of one read at once, each into its piece
  check "cma: a.bin, reads up to 24 MiB, 4 threads" \
    "$DC" verify "$mnt/a.bin" "$tmp/local/a.bin" 4 12 "$RANDOM" 24
  check "cma: the bytes moved by the server (s3.rdma_bytes)" \
    test "$(stat_of s3.rdma_bytes)" -gt "$r0"
  check "cma: a dma-buf refused (cma cannot register device memory)" \
    "$DC" nodmabuf "$mnt/b.bin"
  check_eq "cma: ... counted" "$(stat_of direct.gpudirect_refused)" 1
  r0=$(stat_of s3.rdma_bytes)
  dwrites "cma" dwc $((40 * MiB + 4097))
  # 4 files x 5 whole 8 MiB parts from registered buffers; from plain
  # memory (the 8 MiB bounce buffer) only calls at a part's start
  check "cma: whole parts sent straight from the callers' pages (direct.write_parts >= 20)" \
    test "$(stat_of direct.write_parts)" -ge 20
  check "cma: ... the server read them (s3.rdma_bytes grew by 160 MiB or more)" \
    test "$(( $(stat_of s3.rdma_bytes) - r0 ))" -ge $((160 * MiB))
  fs_umount "$mnt"
  fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
  dwcheck "cma, remounted" dwc $((40 * MiB + 4097))
  fs_umount "$mnt"
else
  echo "# cma: skipped (the transport cannot run here)"
fi
}
run_case gateway case_gateway

summary
