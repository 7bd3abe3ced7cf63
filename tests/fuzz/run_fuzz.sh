#!/usr/bin/env bash
# One fuzz ctest: replay every past finding in tests/fuzz/regress/NAME/
# (each must now pass), then fuzz a scratch copy of the seed corpus
# tests/fuzz/corpus/NAME/ for SECONDS with a fixed seed, so the committed
# corpus never changes. A crash is kept under ./artifacts/NAME/ (the ctest
# working directory, build-fuzz/tests/fuzz) with how to make it a regression.
#
#   run_fuzz.sh BINARY NAME SECONDS
set -uo pipefail

[ $# -eq 3 ] || { echo "usage: $0 BINARY NAME SECONDS" >&2; exit 2; }
bin=$1 name=$2 secs=$3
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/corpus/$name
regress=$here/regress/$name
dict=$here/dict/$name.dict

if [ ! -x "$bin" ]; then
  echo "run_fuzz: $bin is not built: cmake --build build-fuzz --target fuzz_all" >&2
  exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# 1. past findings: each input runs once
if [ -d "$regress" ]; then
  mapfile -t inputs < <(find "$regress" -type f ! -name '.*' | sort)
  if [ ${#inputs[@]} -gt 0 ]; then
    echo "== $name: replaying ${#inputs[@]} regression input(s)"
    if ! "$bin" "${inputs[@]}"; then
      echo "run_fuzz: $name: a regression input in $regress fails again" >&2
      exit 1
    fi
  fi
fi

# 2. fuzz a scratch copy of the seed corpus
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_$name.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
[ -d "$corpus" ] && cp -r "$corpus/." "$scratch/"
art=$PWD/artifacts/$name
mkdir -p "$art"
args=(-max_total_time="$secs" -seed=1 -timeout=10 -rss_limit_mb=2048
      -print_final_stats=1 -artifact_prefix="$art/")
[ -f "$dict" ] && args+=(-dict="$dict")
echo "== $name: fuzzing for ${secs}s"
if ! "$bin" "${args[@]}" "$scratch"; then
  echo "run_fuzz: $name: found a failing input, kept in $art/" >&2
  echo "  minimise: $bin -minimize_crash=1 -runs=10000 $art/crash-..." >&2
  echo "  then add it as tests/fuzz/regress/$name/<short-name> (docs/testing.md: Fuzzing)" >&2
  exit 1
fi
