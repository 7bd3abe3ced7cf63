#!/usr/bin/env bash
# Side-by-side benchmarks on the local RGW. Each workload prints a human table
# and machine-readable lines:
#   BENCH workload=<name> tool=<name> value=<number> unit=<unit> n=<runs>
#   RATIO workload=<name> a=<tool> b=<tool> value=<a/b>
# and, for a tool that failed some repetitions (its BENCH value is the median
# of the others; no BENCH line when all failed):
#   FAIL workload=<name> tool=<name> failed=<runs> n=<runs>
#
#   bench/run.sh [workload...]     workloads: s3_get fs_read fs_ls fs_write
#                                  fs_rdma fs_fio fs_direct gpu_bw
#                                  gw_starve far py_read nodes
#                                  (default: all)
# Every workload named is run, even after one fails; the exit status is then 1.
# BENCH_BUILD=0: no build, the binaries in build/bin are used as they are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all=(s3_get fs_read fs_ls fs_write fs_rdma fs_fio fs_direct gpu_bw gw_starve far py_read nodes)
[ $# -gt 0 ] || set -- "${all[@]}"
for w in "$@"; do
  case $w in
    s3_get | fs_read | fs_ls | fs_write | fs_rdma | fs_fio | fs_direct | gpu_bw | \
      gw_starve | far | py_read | nodes) ;;
    *) echo "run.sh: unknown workload '$w' (known: ${all[*]})" >&2; exit 2 ;;
  esac
done
rc=0
for w in "$@"; do
  ok=1
  case $w in
    s3_get) "$here/s3_get.sh" || ok=0 ;;
    fs_read|fs_ls) "$here/fs_read.sh" "$w" || ok=0 ;;
    fs_write) "$here/fs_write.sh" || ok=0 ;;
    fs_rdma) "$here/fs_rdma.sh" || ok=0 ;;
    fs_fio) "$here/fs_fio.sh" || ok=0 ;;
    fs_direct) "$here/fs_direct.sh" || ok=0 ;;
    gpu_bw) "$here/gpu_bw.sh" || ok=0 ;;
    gw_starve) "$here/gw_starve.sh" || ok=0 ;;
    far) "$here/far.sh" || ok=0 ;;
    py_read) "$here/py_read.sh" || ok=0 ;;
    nodes) "$here/nodes.sh" || ok=0 ;;
  esac
  [ "$ok" -eq 1 ] || { echo "run.sh: workload $w failed" >&2; rc=1; }
done
exit "$rc"

