#!/usr/bin/env bash
# The Python module s3rdmafs (python/) under pytest (test_s3rdmafs.py) on a
# real mount of RGW, then again with the mount through s3rdma-gateway and
# rdma.transport=cma (the server writes into the caller's registered
# buffers: test_cma_zero_copy) and device memory from the stand-in CUDA
# driver (test_device_simulated: SIMULATED, no GPU takes part). Debian's
# interpreter and its numpy and pytest (scripts/setup.sh installs them).
# Cases: rgw, gateway.
#
#   tests/python/run.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" py plain cache
trap 'rc=$?; set +e; gw_stop; (exit $rc); fs_cleanup' EXIT

PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, pytest' 2>/dev/null; then
  echo "not ok - $PY has no numpy or pytest (scripts/setup.sh installs python3-numpy and python3-pytest)"
  exit 1
fi
if [ ! -d "$BIN/../python/s3rdmafs" ]; then
  echo "not ok - no module built in $BIN/../python (python3-dev missing when cmake ran?)"
  exit 1
fi
export PYTHONPATH=$BIN/../python S3R_PY_PLAIN=$tmp/plain
export S3R_PY_MNT=$mnt S3R_PY_STATS=$mnt/.s3rdmafs-stats
pytest_() { "$PY" -m pytest -q -p no:cacheprovider "$here/test_s3rdmafs.py"; }

aws_ s3 mb "s3://$bucket" >/dev/null

# ---- rgw: pytest on a mount of RGW itself ----
case_rgw() {
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
check "pytest: the mount on RGW" pytest_
fs_umount "$mnt"
}
run_case rgw case_rgw

# ---- gateway: pytest through s3rdma-gateway with cma, device memory from
# ---- the stand-in ----
case_gateway() {
gw_start "$tmp/gw"
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache" \
  -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
# and device memory from the stand-in CUDA driver (SIMULATED), if built
sim=$BIN/../tests/gpu-sim/libcuda.so.1
if [ -e "$sim" ]; then
  export S3RDMAFS_CUDA_LIB=$sim
  echo "# device reads and writes: SIMULATED (the stand-in driver $sim)"
fi
if [ "$(stat_of rdma.transport)" = cma ]; then
  S3R_PY_CMA=1 check "pytest: through the gateway, cma" pytest_
else
  echo "# cma cannot run here: the gateway's pass is the HTTP one again"
  check "pytest: through the gateway" pytest_
fi
fs_umount "$mnt"
gw_stop
}
run_case gateway case_gateway

summary
