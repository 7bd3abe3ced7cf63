#!/usr/bin/env bash
# The real-GPU suite (label gpu): gpu_check.c with the machine's CUDA
# driver and device 0, on a real mount of RGW: 1 GiB read into device
# memory and checked byte for byte, 4 threads at unaligned offsets, and a
# write-read round trip from device memory. Without a driver or a device
# it is skipped (exit 77) with the reason; test_gpu_sim.sh runs the same
# checks against the stand-in driver (simulated).
#
#   test_gpu.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
unset S3RDMAFS_CUDA_LIB
probe=$("$1/gpu_check" /dev/null /dev/null /dev/null 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "$probe"
  exit 77
fi
fs_test_setup "$1" gpu local
GC=$BIN/gpu_check
"$CLI" mb "$bucket"

# ---- gpu: gpu_check's cases on a mount of RGW ----
case_gpu() {
gen 9 $((1024 * 1048576 + 4099)) >"$tmp/local/big.bin"
"$CLI" --parallel 8 put "$tmp/local/big.bin" "$bucket/big.bin"
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=off
check "gpu: reads into device memory, and a round trip" \
  "$GC" "$mnt/big.bin" "$tmp/local/big.bin" "$mnt/ckpt.bin"
fs_umount "$mnt"
}
run_case gpu case_gpu

summary
