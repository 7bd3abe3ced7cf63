#!/usr/bin/env bash
# s3rdma-gateway in front of the local RGW (tests/servers/rgw.sh), for the
# tests, the benchmarks and the quickstart. RGW must be running.
#
#   scripts/gateway.sh start [--port N] [-- gateway flags...]
#                      start it (does nothing when it already runs); port 0:
#                      one the kernel picks (tests: no race for a free port)
#   scripts/gateway.sh stop     stop it (SIGTERM, then SIGKILL after 20 s);
#                               exit 0 when it exited 0 (a clean stop)
#   scripts/gateway.sh status   exit 0 when it answers
#   scripts/gateway.sh env      S3R_GW_ENDPOINT=http://127.0.0.1:PORT
#   scripts/gateway.sh stats    its counters (GET /_s3rdma/stats)
#
# The binary: $S3R_GATEWAY, else build/bin/s3rdma-gateway. State (pid, port,
# log) in $S3R_GW_DIR (default /tmp/s3rdmafs-gw). Its upstream: RGW's
# $S3R_ENDPOINT, or $S3R_GW_UPSTREAM (a list: "URL;URL"). The keys are RGW's: clients
# sign with the same keys through the gateway as without it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${S3R_GW_DIR:-/tmp/s3rdmafs-gw}
bin=${S3R_GATEWAY:-$top/build/bin/s3rdma-gateway}
port=7490

say() { echo "gateway.sh: $*" >&2; }

running() {
  [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null
}
endpoint() { echo "http://127.0.0.1:$(cat "$dir/port")"; }
answers() {
  curl -s -o /dev/null --max-time 2 "$(endpoint)/_s3rdma/stats"
}

start() {
  local extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --port) port=$2; shift 2 ;;
      --) shift; extra=("$@"); break ;;
      *) say "unknown argument '$1'"; exit 2 ;;
    esac
  done
  if running && answers; then return 0; fi
  [ -x "$bin" ] || { say "no gateway binary at $bin (build first)"; exit 1; }
  local up=${S3R_GW_UPSTREAM:-}
  eval "$("$top/tests/servers/rgw.sh" env)"
  up=${up:-$S3R_ENDPOINT}
  mkdir -p "$dir"
  rm -f "$dir/pid" "$dir/port" "$dir/exit"
  # setsid: the gateway outlives the shell that started it (ctest fixtures);
  # its parent, a bash of its own, notes its pid and then its exit status
  setsid bash -c 'd=$1; shift; "$@" & echo $! >"$d/pid"; wait $!; echo $? >"$d/exit"' \
    _ "$dir" "$bin" -f --listen "127.0.0.1:$port" --upstream "$up" \
    ${extra[@]+"${extra[@]}"} >"$dir/log" 2>&1 </dev/null &
  for _ in $(seq 1 50); do [ -s "$dir/pid" ] && break; sleep 0.1; done
  for _ in $(seq 1 100); do
    if [ ! -s "$dir/port" ]; then
      # the port it bound, from its first notice: "listening on A (port N)"
      sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$dir/log" | head -n 1 >"$dir/port"
    fi
    if [ -s "$dir/port" ] && answers; then
      say "running on $(endpoint) in front of $up"
      return 0
    fi
    running || break
    sleep 0.1
  done
  say "the gateway did not start; its log:"
  cat "$dir/log" >&2
  exit 1
}

stop() {
  local pid rc=0
  if ! running; then # not started, stopped, or died: say which way it ended
    [ ! -s "$dir/exit" ] || [ "$(cat "$dir/exit")" = 0 ] || rc=1
    rm -f "$dir/pid"
    return "$rc"
  fi
  pid=$(cat "$dir/pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running 20 s after SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    rc=1
  fi
  for _ in $(seq 1 50); do [ -s "$dir/exit" ] && break; sleep 0.1; done
  [ "$(cat "$dir/exit" 2>/dev/null)" = 0 ] || rc=1
  rm -f "$dir/pid"
  return "$rc"
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) running && answers ;;
  env) [ -f "$dir/port" ] || { say "not started"; exit 1; }; echo "S3R_GW_ENDPOINT=$(endpoint)" ;;
  stats) curl -sf --max-time 5 "$(endpoint)/_s3rdma/stats" ;;
  *) echo "usage: $0 start [--port N] [-- flags] | stop | status | env | stats" >&2; exit 2 ;;
esac
