# Helpers for the s3rdma-gateway integration tests (sourced).
# Needs: $BIN (build/bin), RGW's S3R_ENDPOINT and keys in the environment.
# shellcheck shell=bash

GW=$BIN/s3rdma-gateway
gw_pid='' gw_port='' gw_log=''

gw_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

gw_answers() {
  curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$gw_port/_s3rdma/stats"
}

# gw_start LOG [gateway flags...]: a foreground gateway in the background on
# a free port (a few tries: another process may take the port in between).
gw_start() {
  gw_log=$1; shift
  for _ in 1 2 3 4 5; do
    gw_port=$(gw_free_port)
    "$GW" -f --listen "127.0.0.1:$gw_port" --upstream "$S3R_ENDPOINT" "$@" \
      >"$gw_log" 2>&1 </dev/null &
    gw_pid=$!
    for _ in $(seq 1 100); do
      if gw_answers; then
        GW_ENDPOINT=http://127.0.0.1:$gw_port
        return 0
      fi
      kill -0 "$gw_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
    grep -q "Address already in use" "$gw_log" || break
  done
  echo "the gateway did not start:"; cat "$gw_log"
  return 1
}

gw_stats() { curl -s --max-time 5 "$GW_ENDPOINT/_s3rdma/stats"; }
gw_stat() { gw_stats | awk -v k="$1" '$1 == k { print $2 }'; }

# gw_stop: SIGTERM, bounded wait; succeeds when it exited 0.
gw_stop() {
  local rc=0
  [ -n "$gw_pid" ] || return 0
  kill -TERM "$gw_pid" 2>/dev/null || return 1
  for _ in $(seq 1 200); do
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$gw_pid" 2>/dev/null; then
    kill -KILL "$gw_pid" 2>/dev/null
    rc=1
  fi
  wait "$gw_pid" 2>/dev/null || rc=$?
  gw_pid=''
  return "$rc"
}
