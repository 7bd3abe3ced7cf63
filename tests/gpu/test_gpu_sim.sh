#!/usr/bin/env bash
# libs3rdmafs's GPU calls on a real mount, against the stand-in CUDA driver
# (fake_cuda.c, through $S3RDMAFS_CUDA_LIB): SIMULATED, no GPU takes part.
# gpu_sim_check.c does the calls and the comparing:
#   - 4 threads of staged reads (random unaligned ranges up to 6.5 ring
#     slots, partial final slots, past the end, the batch form) into
#     "device memory", compared with the source, on plain RGW and through
#     s3rdma-gateway with rdma.transport=cma;
#   - errors mid-transfer: a copy failing on the 3rd call, pinning the ring
#     failing: -EIO, the failed call named;
#   - no driver, no device: -ENODEV with the reason; host memory and a
#     range past its allocation: -EINVAL; a forked child of a process
#     that used the driver: -ENODEV, the reason naming fork (CUDA's rule),
#     its host reads right, the parent's GPU reads right after it;
#   - a checkpoint written from device memory (gpu_write), read back: the
#     ring's halves written with write_direct (direct.staged_writes), with
#     cma their whole parts sent from the ring's pages (direct.write_parts);
#     a dma-buf exported for it and refused by the daemon: staged;
#   - GPUDirect's control flow ($FAKECUDA_DMABUF): a device without
#     dma-buf support never asked; a driver refusing the export asked
#     once (remembered); an export failing asked each call; an export
#     made but refused by the daemon (no verbs transport here: the dma-buf
#     is never registered, so no GPUDirect read is ever done) refused once
#     per mount, counted; every read staged, bytes exact;
#   - the daemon's counters per path: staged reads (ring slots), host
#     reads (read_direct), GPUDirect reads (none);
#   - the real-GPU suite's program (gpu_check.c) against the stand-in, and
#     its reads and writes of files off the mount (staged by pread(2) and
#     pwrite(2)).
#
#   test_gpu_sim.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" gpusim local
trap 'rc=$?; set +e; gw_stop; (exit $rc); fs_cleanup' EXIT
GC=$BIN/gpu_sim_check
export S3RDMAFS_CUDA_LIB
S3RDMAFS_CUDA_LIB=$(cd "$BIN/../tests/gpu-sim" && pwd)/libcuda.so.1
MiB=1048576

"$CLI" mb "$bucket"
gen 7 $((72 * MiB + 4321)) >"$tmp/local/a.bin"
"$CLI" --parallel 4 put "$tmp/local/a.bin" "$bucket/a.bin"

# ---- plain: the calls on a mount of RGW itself ----
case_plain() {
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off
check "sim: staged reads, 4 threads" "$GC" read "$mnt/a.bin" "$tmp/local/a.bin" 4 10 "$RANDOM"
check "sim: read into the ring by direct reads" test "$(stat_of direct.reads)" -gt 0
check_eq "sim: ... each counted as staged (direct.staged_reads)" \
  "$(stat_of direct.staged_reads)" "$(stat_of direct.reads)"
check_eq "sim: ... none as a host buffer's or GPUDirect" \
  "$(stat_of direct.host_reads) $(stat_of direct.gpudirect_reads)" "0 0"

# GPUDirect's control flow against the stand-in: dm MODE N ASKED EXPORTED
# (FAKECUDA_DMABUF=MODE; the stand-in's export counters, exactly)
dm() { FAKECUDA_DMABUF=$1 "$GC" dmabuf "$mnt/a.bin" "$tmp/local/a.bin" "${@:2}"; }
g0=$(stat_of direct.gpudirect_refused) s0=$(stat_of direct.staged_reads)
check "sim: no dma-buf on the device: never asked; staged, bytes exact" \
  dm none 4 0 0
check "sim: dma-buf refused by the driver: asked once; staged, bytes exact" \
  dm refuse 6 1 0
check "sim: ... once per allocation (another may be exportable)" \
  dm refuse 6 2 0 two
check "sim: a dma-buf export failing: asked each call; staged, bytes exact" \
  dm fail 3 3 0
check_eq "sim: ... the daemon never asked (direct.gpudirect_refused)" \
  "$(stat_of direct.gpudirect_refused)" "$g0"
s1=$(stat_of direct.staged_reads)
check "sim: dma-buf exported, refused by the daemon (no verbs transport): once; staged, bytes exact" \
  dm export 6 1 1
check_eq "sim: ... the refusal counted once (direct.gpudirect_refused)" \
  "$(stat_of direct.gpudirect_refused)" $((g0 + 1))
check "sim: ... its reads staged (direct.staged_reads)" \
  test "$(stat_of direct.staged_reads)" -ge $((s1 + 6))
check "sim: ... as were the others'" test "$s1" -ge $((s0 + 13))
check_eq "sim: ... none GPUDirect, none registered" \
  "$(stat_of direct.gpudirect_reads) $(stat_of direct.gpudirect_registrations)" "0 0"
h0=$(stat_of direct.host_reads) s2=$(stat_of direct.staged_reads)
check "sim: host reads (read_direct), bytes exact" "$GC" host "$mnt/a.bin" "$tmp/local/a.bin" 5
check "sim: ... counted as host reads (direct.host_reads)" \
  test "$(stat_of direct.host_reads)" -ge $((h0 + 5))
check_eq "sim: ... not as staged" "$(stat_of direct.staged_reads)" "$s2"
check "sim: a copy failing mid-transfer: EIO, said" \
  env FAKECUDA_FAIL=cuMemcpyHtoDAsync_v2:3 "$GC" fail "$mnt/a.bin" 5
check "sim: pinning the ring failing: EIO, said" \
  env FAKECUDA_FAIL=cuMemHostRegister_v2:1 "$GC" fail "$mnt/a.bin" 5
check "sim: no device: ENODEV" env FAKECUDA_DEVICES=0 "$GC" nodev "$mnt/a.bin"
check "sim: no driver: ENODEV" env S3RDMAFS_CUDA_LIB=/nonexistent/libcuda.so.1 "$GC" nodev "$mnt/a.bin"
check "sim: host memory, and past an allocation: EINVAL" "$GC" hostmem "$mnt/a.bin"
check "sim: a forked child cannot use its parent's CUDA (ENODEV, said)" \
  "$GC" fork "$mnt/a.bin" "$tmp/local/a.bin"
w0=$(stat_of direct.staged_writes)
check "sim: a checkpoint from device memory" "$GC" write "$mnt/ckpt.bin" $((30 * MiB + 5))
check "sim: ... its ring written by direct writes, counted as staged (direct.staged_writes)" \
  test "$(stat_of direct.staged_writes)" -gt "$w0"
check_eq "sim: ... none as a host buffer's or GPUDirect" \
  "$(stat_of direct.host_writes) $(stat_of direct.gpudirect_writes)" "0 0"
g0=$(stat_of direct.gpudirect_refused)
check "sim: a checkpoint, a dma-buf exported, refused by the daemon: staged, bytes exact" \
  env FAKECUDA_DMABUF=export "$GC" write "$mnt/ckpt3.bin" $((20 * MiB + 3))
check_eq "sim: ... the refusal counted (direct.gpudirect_refused)" \
  "$(stat_of direct.gpudirect_refused)" $((g0 + 1))
check "sim: the real-GPU suite's checks (gpu_check), simulated" \
  "$BIN/gpu_check" "$mnt/a.bin" "$tmp/local/a.bin" "$mnt/ckpt2.bin"
check "sim: ... on the server" eq size \
  "$(aws_ s3api head-object --bucket "$bucket" --key ckpt.bin --query ContentLength)" $((30 * MiB + 5))
check "sim: files off the mount: staged by pread(2) and pwrite(2), bytes exact" \
  "$BIN/gpu_check" local "$tmp/local/a.bin" "$tmp/local/ckpt-local.bin"
fs_umount "$mnt"
}
run_case plain case_plain

# ---- cma: through s3rdma-gateway with rdma.transport=cma ----
case_cma() {
gw_start "$tmp/gw"
if fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"; then
  r0=$(stat_of s3.rdma_bytes)
  check "sim+cma: staged reads, 4 threads" "$GC" read "$mnt/a.bin" "$tmp/local/a.bin" 4 6 "$RANDOM"
  check "sim+cma: the ring filled by the server (s3.rdma_bytes)" test "$(stat_of s3.rdma_bytes)" -gt "$r0"
  # halves of the ring (16 MiB: two whole parts) written at once, straight
  # from the ring's pages: 2 + 2 + 1 parts, and 5 bytes copied
  p0=$(stat_of direct.write_parts)
  check "sim+cma: a checkpoint from device memory, read back" \
    "$GC" write "$mnt/ckpt4.bin" $((40 * MiB + 5))
  check_eq "sim+cma: ... its whole parts sent from the ring's pages (direct.write_parts)" \
    "$(stat_of direct.write_parts)" $((p0 + 5))
  fs_umount "$mnt"
else
  echo "# sim+cma: skipped (the transport cannot run here)"
fi
}
run_case cma case_cma

summary
