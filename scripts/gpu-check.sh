#!/usr/bin/env bash
# GPU truth in one command, on a machine where nothing can be installed:
# a checkout with a build (build/bin), or the bundle scripts/gpu-bundle.sh
# makes (bin/, lib/ beside this script's folder). It needs bash, coreutils
# and python3; nothing is fetched.
#
#   scripts/gpu-check.sh [--simulated] [--no-fuse] [--size MiB] [--reps N]
#                        [--keep] [--python PY]
#
#  1. What the machine offers: the GPU and driver (the driver API, through
#     gpu_check probe), /dev/fuse, RDMA devices, python3 and its torch and
#     cupy.
#  2. The check's own S3 server (scripts/gpu_check_s3.py: Python's standard
#     library, keys in a temporary folder, signatures not checked; for this
#     check only) on 127.0.0.1, holding a file of --size MiB (+ 4099 bytes).
#  3. With FUSE: the file mounted (rdma.transport=off), then
#     - gpu_check's cases: 1 GiB into device memory at unaligned places, 4
#       threads, a write-read round trip from device memory, the batch
#       call, refusals of host pointers, freed memory and a range past an
#       allocation;
#     - gpu_bw: s3rdmafs_gpu_read from the warm page cache against
#       cuMemcpyHtoD from pinned memory, as a ratio (issue 15's goal: 0.8),
#       with the path the reads took (the daemon's counters: staged,
#       GPUDirect);
#     - Python (the bundle's module, or one built here from its sources when
#       this python3 is another version): reads into device memory through
#       __cuda_array_interface__ (memory of the driver's own; torch and cupy
#       tensors where they are), load_safetensors to the GPU with torch.
#     Without FUSE: libs3rdmafs's staging ring on an ordinary file (read
#     by pread(2), written by pwrite(2): gpu_check local), gpu_bw on it
#     (the staging copy alone against cuMemcpyHtoD), and the reason the
#     mount could not be tested.
#  4. One table; exit 0 only if every case that ran passed, 77 when there
#     is no CUDA driver or device (nothing to check).
#
# --simulated: the stand-in driver (tests/gpu/fake_cuda.c) instead of the
# machine's: every result is labelled simulated (CI runs it so, so that the
# script cannot rot). --no-fuse: as where FUSE is absent (CI runs that
# path too). --python: that interpreter (default python3). --keep: the
# temporary folder and logs stay.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
size_mib=1024 reps=3 sim=0 keep=0 nofuse=0 py=$(command -v python3 || true)
usage() { echo "usage: $0 [--simulated] [--no-fuse] [--size MiB] [--reps N] [--keep] [--python PY]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --simulated) sim=1; shift ;;
    --no-fuse) nofuse=1; shift ;;
    --python) [ $# -ge 2 ] || usage; py=$2; shift 2 ;;
    --size) [ $# -ge 2 ] || usage; size_mib=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || usage; reps=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) usage ;;
  esac
done
for v in "$size_mib" "$reps"; do case $v in '' | *[!0-9]* | 0) usage ;; esac; done

# ---- where the programs are: the bundle's layout, else a build ----
binlib=${LD_LIBRARY_PATH:-} pylib=${LD_LIBRARY_PATH:-}
if [ -x "$top/bin/s3rdmafs" ]; then
  bin=$top/bin pydir=$top/python libdir=$top/lib
  sim_lib=$top/lib/gpu-sim/libcuda.so.1
  # the programs: the bundle's libraries (those needing a newer glibc only
  # where the machine has none of that name); Python: libs3rdmafs alone
  binlib=$top/lib:$top/lib/deps${binlib:+:$binlib} pylib=$top/lib${pylib:+:$pylib}
  ldc=$(command -v ldconfig || echo /sbin/ldconfig)
  for l in "$top"/lib/deps-newer/*; do
    [ -e "$l" ] || continue
    "$ldc" -p 2>/dev/null | grep -F " ${l##*/} " >/dev/null && continue
    binlib=$binlib:$top/lib/deps-newer
    break
  done
else
  bin=${S3R_BUILD:-$top/build}/bin
  pydir=$bin/../python libdir=$bin/../lib
  sim_lib=$bin/../tests/gpu-sim/libcuda.so.1
  pylib=$libdir${pylib:+:$pylib}
fi
run() { LD_LIBRARY_PATH=$binlib "$@"; } # one of our programs
for p in s3rdmafs gpu_check gpu_bw; do
  [ -x "$bin/$p" ] || { echo "gpu-check: $bin/$p is missing (build first, or use the bundle)" >&2; exit 1; }
done
label=
if [ "$sim" = 1 ]; then
  [ -f "$sim_lib" ] || { echo "gpu-check: no stand-in driver at $sim_lib" >&2; exit 1; }
  export S3RDMAFS_CUDA_LIB=$sim_lib FAKECUDA_DELAY_US=${FAKECUDA_DELAY_US:-0}
  label=" (simulated)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3r-gpu-check.XXXXXX")
mnt=$tmp/mnt srv_pid='' fs_pid=''
mkdir -p "$mnt" "$tmp/s3"
rows=() fails=0
row() { rows+=("$1|$2|$3"); [ "$2" != FAIL ] || fails=$((fails + 1)); }
cleanup() {
  set +e
  if [ -n "$fs_pid" ]; then
    fusermount3 -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$fs_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$fs_pid" 2>/dev/null
  fi
  [ -z "$srv_pid" ] || { kill "$srv_pid"; wait "$srv_pid"; } 2>/dev/null
  if [ "$keep" = 1 ]; then echo "gpu-check: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the machine ----
echo "== the machine$label"
set +e
probe=$(run "$bin/gpu_check" probe 2>&1)
prc=$?
set -e
printf '%s\n' "$probe" | sed 's/^/  /'
if [ "$prc" = 77 ]; then
  echo "gpu-check: nothing to check: $probe"
  exit 77
fi
[ "$prc" = 0 ] || { echo "gpu-check: gpu_check probe failed" >&2; exit 1; }
pv() { printf '%s\n' "$probe" | sed -n "s/^$1=//p"; }
probe_export=$(pv dmabuf_export)
fuse=no why_no_fuse=
if [ "$nofuse" = 1 ]; then why_no_fuse="--no-fuse"
elif [ ! -c /dev/fuse ]; then why_no_fuse="/dev/fuse is absent"
elif [ "$(id -u)" != 0 ] && ! command -v fusermount3 >/dev/null; then
  why_no_fuse="fusermount3 is not installed (and not root)"
else fuse=yes; fi
rdma=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ' || true)
pyver=$([ -n "$py" ] && "$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' || echo none)
has() { [ -n "$py" ] && "$py" -c "import $1" 2>/dev/null && echo yes || echo no; }
echo "  fuse=$fuse${why_no_fuse:+ ($why_no_fuse)} rdma_devices=${rdma:-none} python=$pyver torch=$(has torch) cupy=$(has cupy)"
row "GPU and driver" info "$(pv name), driver $(pv driver_version), $(pv memory_mib) MiB, dma-buf $(pv dmabuf)${probe_export:+ (export: $probe_export)}$label"
row "FUSE" info "$fuse${why_no_fuse:+: $why_no_fuse}"
row "RDMA devices" info "${rdma:-none}"

if [ "$fuse" = yes ] && [ -z "$py" ]; then
  fuse=no why_no_fuse="no python3 for the check's S3 server"
fi

bytes=$((size_mib * 1048576 + 4099))
head -c "$bytes" /dev/urandom >"$tmp/ref.bin"
ratio() { # gpu_read_s htod_s fields -> htod / gpu_read of their medians
  awk -v a="$1" -v b="$2" '{ x[NR] = $a; y[NR] = $b }
    function med(v, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }; return v[int((n + 1) / 2)] }
    END { if (NR) printf "%.2f %.3f %.3f", med(y, NR) / med(x, NR), med(x, NR), med(y, NR) }'
}
# gpu_bw FILE NAME [DETAIL]: a row of gpu_read against cuMemcpyHtoD
gpu_bw() {
  local out brc=0 r rr gs hs
  out=$(run timeout 300 "$bin/gpu_bw" "$1" 64 "$reps" 2>&1) || brc=$?
  printf '%s\n' "$out" | sed 's/^/  /'
  if [ "$brc" = 0 ]; then
    r=$(printf '%s\n' "$out" | grep '^driver=' | sed 's/[a-z_]*=//g' | ratio 4 5)
    read -r rr gs hs <<<"$r"
    row "$2" ok "ratio $rr (gpu_read $gs s, HtoD $hs s for $size_mib MiB)${3:-}$label"
  else
    row "$2" FAIL "exit $brc"
  fi
}
# gpu_check ARGS...: a row per case it reports
cases() {
  local out verdict rest crc=0
  out=$(run timeout 300 "$bin/gpu_check" "$@" 2>&1) || crc=$?
  printf '%s\n' "$out" | sed 's/^/  /'
  while read -r verdict rest; do
    case $verdict in
      ok) row "${rest#- }" ok "$label" ;;
      not) row "${rest#ok - }" FAIL "$label" ;;
    esac
  done <<<"$out"
  # (a case failing exits 1 with its line said; anything else is a crash)
  [ "$crc" = 0 ] || [ "$crc" = 1 ] ||
    row "gpu_check $1" FAIL "exited $crc: $(printf '%s\n' "$out" | tail -1)"
}

# ---- without FUSE: the library's staging ring on an ordinary file ----
if [ "$fuse" = no ]; then
  echo "== no mount ($why_no_fuse): libs3rdmafs on an ordinary file"
  cases local "$tmp/ref.bin" "$tmp/ckpt.bin"
  gpu_bw "$tmp/ref.bin" "gpu_bw, a local file: staging vs cuMemcpyHtoD"
  row "the mount's cases" skipped "not run: $why_no_fuse"
fi

# ---- 2. the check's own S3 server ----
if [ "$fuse" = yes ]; then
  echo "== the check's S3 server and a mount"
  "$py" "$here/gpu_check_s3.py" --dir "$tmp/s3" --bucket gpucheck \
    --port-file "$tmp/port" >"$tmp/s3.log" 2>&1 &
  srv_pid=$!
  for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { cat "$tmp/s3.log"; echo "gpu-check: the S3 server did not start" >&2; exit 1; }
  ep=http://127.0.0.1:$(cat "$tmp/port")
  "$py" "$here/gpu_check_s3.py" --put "$ep/gpucheck/big.bin" "$tmp/ref.bin"
  LD_LIBRARY_PATH=$binlib AWS_ACCESS_KEY_ID=gpucheck AWS_SECRET_ACCESS_KEY=gpucheck \
    "$bin/s3rdmafs" gpucheck "$mnt" -f -o "endpoint=$ep" -o rdma.transport=off \
    -o "cache.dir=$tmp/cache" >"$tmp/fs.log" 2>&1 &
  fs_pid=$!
  for _ in $(seq 1 300); do
    mountpoint -q "$mnt" 2>/dev/null && break
    kill -0 "$fs_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! mountpoint -q "$mnt" 2>/dev/null; then
    cat "$tmp/fs.log"
    kill -KILL "$fs_pid" 2>/dev/null || true # (a late mount in $tmp: never)
    wait "$fs_pid" 2>/dev/null || true
    fs_pid=''
    row "mount" FAIL "s3rdmafs did not mount (its log above)"
  fi
fi

# The Python module built for python $1 in $2 from the sources beside this
# script (a python of another version than the bundle's): its Python.h
# and a C compiler needed.
pybuild() {
  local inc ext
  inc=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  ext=$("$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  [ -f "$inc/Python.h" ] || { echo "no Python.h for $1 (in $inc)"; return 1; }
  command -v cc >/dev/null || { echo "no C compiler (cc)"; return 1; }
  mkdir -p "$2/s3rdmafs"
  cp "$top"/python/s3rdmafs/*.py "$2/s3rdmafs/"
  cc -O2 -std=gnu11 -shared -fPIC -I"$inc" -I"$top" -I"$top/python" \
    "$top"/python/s3py_*.c -L"$libdir" -ls3rdmafs -lpthread \
    -o "$2/s3rdmafs/_s3rdmafs$ext" 2>&1 | tail -3
  LD_LIBRARY_PATH=$pylib PYTHONPATH=$2 "$1" -c 'import s3rdmafs'
}

stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$mnt/.s3rdmafs-stats"; }
if [ "$fuse" = yes ] && [ -n "$fs_pid" ]; then
  # ---- 3. the cases on the mount ----
  echo "== gpu_check"
  cases "$mnt/big.bin" "$tmp/ref.bin" "$mnt/ckpt.bin"
  echo "== gpu_bw"
  s0=$(stat_of direct.staged_reads) g0=$(stat_of direct.gpudirect_reads)
  gpu_bw "$mnt/big.bin" "gpu_bw: gpu_read vs cuMemcpyHtoD"
  row "gpu_bw: the path its reads took" info "ring slots staged $(( $(stat_of direct.staged_reads) - s0 )), GPUDirect reads $(( $(stat_of direct.gpudirect_reads) - g0 ))$label"

  # ---- Python ----
  if [ -z "$py" ]; then
    row "Python" skipped "no python3"
  else
    echo "== Python"
    pp=$pydir why=
    if ! LD_LIBRARY_PATH=$pylib PYTHONPATH=$pp "$py" -c 'import s3rdmafs' 2>/dev/null; then
      pp=$tmp/py
      if why=$(pybuild "$py" "$pp" 2>&1); then
        why=" (module built here for $pyver)"
      else
        row "Python" skipped "the module does not load in python $pyver and could not be built here: $(printf '%s\n' "$why" | tail -1)"
        pp=
      fi
    else
      why=
    fi
    if [ -n "$pp" ]; then
      prc=0
      out=$(LD_LIBRARY_PATH=$pylib PYTHONPATH=$pp timeout 300 "$py" "$here/gpu_check_py.py" "$mnt" "$tmp/ref.bin" 2>&1) || prc=$?
      printf '%s\n' "$out" | sed 's/^/  /'
      while IFS='|' read -r tag name detail; do
        case $tag in
          ok) row "Python: $name" ok "$detail$why$label" ;;
          FAIL) row "Python: $name" FAIL "$detail" ;;
          skip) row "Python: $name" skipped "$detail" ;;
        esac
      done < <(printf '%s\n' "$out" | grep -E '^(ok|FAIL|skip)\|')
      [ "$prc" = 0 ] || row "Python" FAIL "gpu_check_py.py exited $prc: $(printf '%s\n' "$out" | tail -1)"
    fi
  fi
fi

# ---- 4. the table ----
echo
echo "== gpu-check$label: $(date -u '+%F %H:%M UTC'), $(uname -r)"
printf '| %-50s | %-7s | %s\n' case result detail
printf '|%s|%s|%s\n' "$(printf -- '-%.0s' $(seq 1 52))" "---------" "--------"
for r in "${rows[@]}"; do
  IFS='|' read -r c v d <<<"$r"
  printf '| %-50s | %-7s | %s\n' "$c" "$v" "${d# }"
done
[ "$fails" = 0 ] || { echo "gpu-check: $fails case(s) failed"; exit 1; }
echo "gpu-check: every case that ran passed"
