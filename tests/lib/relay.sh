# shellcheck shell=bash
# A TCP relay between a mount and RGW (tests/integration/tcp_relay.py): the
# network path to S3, cut by killing it and mended by starting it again on
# the same port (sourced by test.sh).
#
#   free_port                prints a port on 127.0.0.1 that nothing holds,
#                            below the kernel's ephemeral range: there no
#                            connection's own port can take it while a
#                            server killed there is down (nor a connect
#                            to it while nothing listens, which can join a
#                            socket to itself), so it can start again on
#                            it (the relay; the gateways, gw_start)
#   relay_port               rport: a free_port
#   relay_up [PATTERN GATE]  the relay on $rport to RGW ($S3R_ENDPOINT's
#                            port), replacing any: relay_pid; with PATTERN
#                            GATE, tcp_relay.py --hold
#   relay_down               the relay killed: connections refused, and
#                            those open reset
# (variables set for, and read from, the sourcing script)
# shellcheck disable=SC2034,SC2154

relay_pid=
free_port() {
  python3 - <<'PY'
import random
import socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randrange(max(1024, lo - 20000), lo)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("free_port: no free port below the ephemeral range")
PY
}
relay_port() { rport=$(free_port); }
relay_up() {
  local ready=$tmp/relay.ready
  relay_down # never two: the one replaced would be left running
  rm -f "$ready"
  python3 "$_test_lib/../integration/tcp_relay.py" "$rport" \
    "${S3R_ENDPOINT##*:}" ${1:+--hold "$1" "$2"} >"$ready" 2>"$tmp/relay.err" &
  relay_pid=$!
  for _ in $(seq 1 300); do grep -qs ready "$ready" && return 0; sleep 0.1; done
  echo "# relay did not start on port $rport: $(tail -n 1 "$tmp/relay.err")" >&2
  return 1
}
relay_down() {
  if [ -n "$relay_pid" ]; then
    { kill -KILL "$relay_pid"; wait "$relay_pid"; } 2>/dev/null || true
  fi
  relay_pid=
}
