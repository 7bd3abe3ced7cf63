#!/usr/bin/env bash
# Side-by-side benchmarks on the local RGW. Each workload prints a human table
# and machine-readable lines:
#   BENCH workload=<name> tool=<name> value=<number> unit=<unit> n=<runs>
#   RATIO workload=<name> a=<tool> b=<tool> value=<a/b>
#
#   bench/run.sh [workload...]     workloads: s3_get fs_read fs_ls
#                                  (default: all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all=(s3_get fs_read fs_ls)
[ $# -gt 0 ] || set -- "${all[@]}"
for w in "$@"; do
  case $w in
    s3_get) "$here/s3_get.sh" ;;
    fs_read|fs_ls) "$here/fs_read.sh" "$w" ;;
    *) echo "run.sh: unknown workload '$w' (known: ${all[*]})" >&2; exit 2 ;;
  esac
done
