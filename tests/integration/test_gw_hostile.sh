#!/usr/bin/env bash
# s3rdma-gateway in front of RGW against hostile clients. Every attack is
# answered with its exact status and S3 error code, forwards nothing,
# stores nothing, and the gateway serves a good request afterwards.
#  - HTTP (gw_hostile.py: raw sockets, SigV4 signed by itself): bad auth;
#    request-targets that are not origin-form (an SSRF: a listener on a
#    kernel-chosen port must see no connection); bad bytes in a target;
#    ambiguous framing; oversized headers.
#  - cma tokens (gw_token_probe --attack, as nobody): a victim's own valid
#    tokens presented by a process the kernel would not let ptrace it: the
#    victim another user's (root), a setgid program of the same user
#    (gw_victim), a non-dumpable process of the same user, or the token
#    naming a thread id. Each victim checks its buffer and the canaries
#    around it when it exits; the attacker checks nothing was stored and
#    that the refusals disclose no uid, start time or address of the
#    victim's.
# Tokens whose range or operation differ from the request: gw_token_probe's
# test_refused (test_gw_token.sh).
# Usage: test_gw_hostile.sh BIN_DIR (with RGW's env: run under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/test.sh
. "$here/../lib/test.sh" # and tests/lib/gw.sh: gw_start, gw_stop, ...

PROBE=$BIN/gw_token_probe
tmp=$(mktemp -d /tmp/s3r-gwhostile.XXXXXX)
bucket=s3r-hostile-$$-$((RANDOM % 10000))
vdir=$tmp/victims   # token files and victims' logs: nobody writes here
sgid_dir=''         # the setgid copy's directory (when not under $tmp)
group_made=''       # a group this test created (groupdel at exit)
victim_pid='' victim_fd='' vrc='' sgid_bin='' sgid_group=''
ns_made='' extra_pids=() extra_ep='' extra_pid='' fake_pid=''

# victim_start NAME CMD...: run CMD... FILE (a victim; CMD a program, so
# that $! is the victim), its stdin a fifo we hold, until it has written
# its token file FILE ($vtok); its log is $vlog.
victim_start() {
  local name=$1
  shift
  vtok=$vdir/$name.tok vlog=$vdir/$name.log
  mkfifo "$vdir/$name.in"
  "$@" "$vtok" <"$vdir/$name.in" >"$vlog" 2>&1 &
  victim_pid=$!
  exec {victim_fd}>"$vdir/$name.in" # pairs with the victim's open
  for _ in $(seq 1 100); do
    [ -s "$vtok" ] && return 0
    kill -0 "$victim_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "# victim $name did not write its tokens"
  victim_end
  return 1
}

# victim_end: close its stdin; succeeds when it exits 0 (its buffer and
# canaries untouched) within 10 s. Its exit status in $vrc.
victim_end() {
  vrc=1
  [ -n "$victim_pid" ] || return 1
  exec {victim_fd}>&-
  for _ in $(seq 1 100); do
    kill -0 "$victim_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$victim_pid" 2>/dev/null && echo "# the victim did not exit: killed"
  vrc=0
  wait "$victim_pid" || vrc=$?
  victim_pid=''
  [ "$vrc" = 0 ] || { echo "# the victim exited $vrc; its log:"; cat "$vlog"; }
  return "$vrc"
}

cleanup() {
  local rc=$?
  set +e
  if [ -n "$victim_pid" ]; then
    exec {victim_fd}>&-
    kill -KILL "$victim_pid" 2>/dev/null
    wait "$victim_pid" 2>/dev/null
  fi
  gw_log_on_failure "$rc" 80
  gw_stop
  for p in "${extra_pids[@]}" $fake_pid; do kill -KILL "$p" 2>/dev/null; done
  [ -z "$ns_made" ] || ip netns del "$ns_made"
  hostile rb >/dev/null
  [ -z "$group_made" ] || groupdel "$group_made"
  [ -z "$sgid_dir" ] || rm -rf "$sgid_dir"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM # (cleanup then sees a failure, and says so)
trap 'exit 130' INT

hostile() {
  HOSTILE_BUCKET=$bucket S3R_GW_ENDPOINT=$GW_ENDPOINT \
    timeout 120 python3 "$here/gw_hostile.py" "$@"
}

# answered NAME STATUS/CODE CASE [ARG...]: the case is answered so, then a
# good request is still served.
answered() {
  local name=$1 want=$2
  shift 2
  check "$name: $want" hostile --expect "$want" "$@"
  check "  ... then a good request is served" hostile good
}

gw_start "$tmp/gw" --log-level info --chunk-size 262144 --auth-timeout 3 \
  --max-uploads-per-addr 1
hostile mb
check "a good request is served" hostile good

# ---- http: HTTP ------------------------------------------------------------------
case_http() {

# (the codes S3 itself answers with)
answered "no Authorization" 403/AccessDenied noauth
answered "bad signature" 403/SignatureDoesNotMatch badsig
answered "unknown access key" 403/InvalidAccessKeyId badkey
answered "x-amz-date 20 minutes old, validly signed" \
  403/RequestTimeTooSkewed skew
answered "malformed Authorization" 400/AuthorizationHeaderMalformed malformed

# Request-targets that are not origin-form, validly signed. The first is
# an SSRF on a gateway that appends the target to the upstream URL: curl
# takes "127.0.0.1:7480@" for userinfo and sends the request, signed with
# the gateway's upstream keys, to the listener.
for t in '@127.0.0.1:{PORT}/{B}/x' 'http://127.0.0.1:{PORT}/{B}/x' \
  '{B}/x' '*'; do
  answered "GET $t: nothing forwarded" 400/InvalidURI target "$t"
done

# Bad bytes in a target (controls, "#", "\\", raw UTF-8, "<"): 400 from us
# (InvalidURI) or from libmicrohttpd before us (no S3 error document), and
# nothing stored.
for t in '/{B}/ctl\x01x' '/{B}/del\x7fx' '/{B}/tab\tx' '/{B}/frag#x' \
  '/{B}/back\\x' '/{B}/bad%zz' '/{B}/caf\xc3\xa9' '/{B}/a<b>'; do
  answered "PUT $t" 400/InvalidURI,- put-target "$t"
  check "  ... nothing stored" hostile only good
done

# Framing. Content-Length with Transfer-Encoding, and two Content-Lengths
# (5 and 11), are refused before anything is forwarded (libmicrohttpd
# 0.9.75 passes both on: the gateway must look itself; a later
# libmicrohttpd that refuses two Content-Lengths on its own answers 400
# without an S3 error document).
answered "PUT with Content-Length and Transfer-Encoding: chunked" \
  400/InvalidRequest cl-te
check "  ... nothing stored" hostile only good
answered "PUT with two Content-Length headers" 400/InvalidRequest,- cl-cl
check "  ... nothing stored" hostile only good
# bytes after the body are the next request (here an unsigned PUT: 403),
# never part of the object
answered "PUT with a pipelined request after its body: 200, the body only" \
  200 cl-short
check "  ... only the Content-Length bytes stored" hostile only good pipelined

# Oversized headers. One header of 200 KiB: libmicrohttpd itself answers
# 431 (its HTML "Request too big" page, no S3 error document) when a
# request's head does not fit the connection's memory
# (MHD_OPTION_CONNECTION_MEMORY_LIMIT, 128 KiB), and closes the
# connection. 200 small headers fit: the gateway counts them (MAX_HEADERS,
# 128) and answers 400 InvalidRequest.
answered "a header of 200 KiB" 431/- big-header
answered "200 headers" 400/InvalidRequest many-headers
}
run_case http case_http

# ---- dc: dc tokens -------------------------------------------------------------
case_dc() {

# A dc token names its target by GID: by default (--rdma-dc-targets peer)
# only the client's own address, from loopback one of this host's. Another
# host's target is refused before anything moves (served by this gateway
# or not); this host's is not refused (here dc is not served: declined,
# the GET answered over HTTP).
answered "a dc token naming another host's target" 403/AccessDenied \
  dc-target other
check "a dc token naming this host's own address: not refused" \
  hostile dc-target own
}
run_case dc case_dc

# ---- cma: cma tokens ------------------------------------------------------------
case_cma() {
need_case http

# a command prefix (not a function: victim_start's $! must be the victim)
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# attack FILE STATUS CODE: nobody presents the victim's tokens from FILE
attack() {
  timeout 120 "${as_nobody[@]}" env S3R_ENDPOINT="$GW_ENDPOINT" \
    "$PROBE" --attack "$1" --expect "$2" "$3"
}

# token_case NAME STATUS CODE: attack the running victim ($vtok), then it
# must find its memory untouched, and the gateway still serves.
token_case() {
  check "$1: the victim's tokens refused, $2 $3, nothing disclosed" \
    attack "$vtok" "$2" "$3"
  check "  ... the victim's buffer and canaries untouched" victim_end
  check "  ... then a good request is served" hostile good
}

# A group that nobody is not in, for the setgid victim: an existing system
# group, else one of our own.
pick_group() {
  local g
  for g in staff games; do
    getent group "$g" >/dev/null || continue
    [[ " $(id -Gn nobody) " == *" $g "* ]] && continue
    sgid_group=$g
    return 0
  done
  sgid_group=s3r-hostile-$$
  groupadd --system "$sgid_group" && group_made=$sgid_group
}

if ! id nobody >/dev/null 2>&1 || ! getent group nogroup >/dev/null ||
  ! command -v setpriv >/dev/null; then
  echo "# no user nobody, group nogroup or setpriv: the token cases cannot run"
  check "the token cases can run" false
  summary
  exit
fi
chmod 755 "$tmp"
mkdir -m 1777 "$vdir"

# 7. Another user's process (root): 403 AccessDenied, and the refusal
# names none of the victim's uids (also in test_gw_token.sh, without the
# disclosure checks).
if ! victim_start root "$PROBE" --victim && [ "$vrc" = 77 ]; then
  echo "skip: cma not available here: the token cases"
  summary && exit 77
  exit 1
fi
token_case "another user's (root) process" 403 AccessDenied

# 8. A setgid program of the same user: nobody with egid $sgid_group, the
# attacker nobody/nogroup. The kernel would not let the attacker ptrace it
# (its gids differ, and a setgid exec makes it non-dumpable). The copy
# must live on a filesystem mounted without nosuid.
pick_group
for d in "$tmp" "$(dirname "$BIN")"; do
  [[ ",$(findmnt -no OPTIONS -T "$d")," == *,nosuid,* ]] && continue
  if [ "$d" = "$tmp" ]; then sgid_bin=$tmp/sgid/gw_victim; mkdir "$tmp/sgid"
  else
    sgid_dir=$(mktemp -d "$d/gw-hostile-sgid.XXXXXX")
    sgid_bin=$sgid_dir/gw_victim
  fi
  chmod 755 "$(dirname "$sgid_bin")"
  break
done
if [ -z "$sgid_bin" ]; then
  check "a filesystem without nosuid for the setgid victim" false
else
  cp "$BIN/gw_victim" "$sgid_bin"
  chgrp "$sgid_group" "$sgid_bin"
  chmod 2755 "$sgid_bin"
  ls -l "$sgid_bin"
  check "the setgid copy: group $sgid_group, mode g+s" \
    test "$(stat -c '%G %A' "$sgid_bin")" = "$sgid_group -rwxr-sr-x"
  if victim_start setgid "${as_nobody[@]}" "$sgid_bin"; then
    grep -E '^(Uid|Gid):' "/proc/$victim_pid/status"
    want_gid=$(getent group "$sgid_group" | cut -d: -f3)
    nogroup_gid=$(getent group nogroup | cut -d: -f3)
    # Gid: real effective saved fs
    read -r _ rgid egid sgid _ < <(grep '^Gid:' "/proc/$victim_pid/status")
    check "the setgid victim runs with egid $sgid_group, the attacker's gid is not" \
      test "$rgid $egid $sgid" = "$nogroup_gid $want_gid $want_gid"
  else
    check "the setgid victim started" false
  fi
  token_case "a setgid program of the same user" 403 AccessDenied
fi

# 9. A non-dumpable process of the same user (its /proc files are then
# root's: the proof it is non-dumpable)
if victim_start nondumpable "${as_nobody[@]}" "$PROBE" --victim-nondumpable; then
  check "the victim is non-dumpable" \
    test "$(stat -c %U "/proc/$victim_pid/environ")" = root
fi
token_case "a non-dumpable process of the same user" 403 AccessDenied

# 10. A thread id instead of a pid (same user): not a process
if victim_start thread "${as_nobody[@]}" "$PROBE" --victim-thread; then
  tid=$((16#$(head -n 1 "$vtok" | cut -d: -f4)))
  check "the token names a thread ($tid) of the victim ($victim_pid)" \
    test "$tid" != "$victim_pid" -a -d "/proc/$victim_pid/task/$tid"
fi
token_case "a thread id instead of a pid" 400 InvalidRDMAToken

check "nothing stored in the bucket but ours" hostile only good pipelined
}
run_case cma case_cma

# ---- share: strangers' share --------------------------------------------------------
case_share() {
need_case http

# A half-sent request is dropped at --auth-timeout (3 s here), not at
# --timeout (120 s): a stranger cannot hold connections by sending slowly.
check "a half-sent request's connection is closed (--auth-timeout)" \
  hostile slowloris
# A key holder trickling a body holds one upload slot of its address; more
# bodies from it meanwhile get 503 SlowDown (S3's "retry later").
check "uploads past --max-uploads-per-addr: 503 SlowDown" hostile upload-share
check "  ... counted" test "$(gw_stat slowdowns)" -ge 1
check "malformed requests counted" test "$(gw_stat bad_requests)" -ge 10
hostile only good pipelined second trickled >/dev/null || true

# gw_extra NAME ADDR UPSTREAM [flags...]: one more gateway, in the
# foreground, its log $tmp/NAME.log; sets extra_ep and extra_pid.
gw_extra() {
  local name=$1 addr=$2 up=$3 port=''
  shift 3
  "$BIN/s3rdma-gateway" -f --listen "$addr:0" --upstream "$up" \
    --log-level info "$@" >"$tmp/$name.log" 2>&1 &
  extra_pid=$!
  extra_pids+=("$extra_pid")
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/$name.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  extra_ep=http://$addr:$port
  [ -n "$port" ]
}
extra_stop() { # succeeds when every extra gateway exits 0 on SIGTERM
  local p rc=0
  for p in "${extra_pids[@]}"; do
    kill -TERM "$p" 2>/dev/null
    wait "$p" || rc=1
  done
  extra_pids=()
  return "$rc"
}

# Upstream's own x-amz-rdma-* reply headers never reach the client (only
# the gateway speaks for its transfers): an upstream that sends them.
python3 "$here/gw_hostile.py" fake-upstream "$tmp/fake.port" &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/fake.port" ] && break; sleep 0.1; done
if gw_extra fake 127.0.0.1 "http://127.0.0.1:$(cat "$tmp/fake.port")"; then
  check "upstream's x-amz-rdma-* reply headers dropped" \
    env S3R_GW_ENDPOINT="$extra_ep" HOSTILE_BUCKET="$bucket" timeout 60 \
    python3 "$here/gw_hostile.py" rdma-headers
else
  check "a gateway in front of the fake upstream started" false
fi
kill "$fake_pid"
wait "$fake_pid" 2>/dev/null || true
fake_pid=''

# Connections per address, for a remote address: a client on this host is
# its user, whatever address it connects from, so the client runs in a
# network namespace of its own, behind a veth pair (removed at exit).
net=10.213.$((RANDOM % 250))
ns=s3r-hostile-$$ conns_ran=''
veth() {
  ip link add "s3rh$$a" type veth peer name "s3rh$$b" netns "$ns" &&
    ip addr add "$net.1/30" dev "s3rh$$a" && ip link set "s3rh$$a" up &&
    ip -n "$ns" addr add "$net.2/30" dev "s3rh$$b" &&
    ip -n "$ns" link set "s3rh$$b" up && ip -n "$ns" link set lo up &&
    [[ $(ip -n "$ns" addr show dev "s3rh$$b") == *" $net.2/30 "* ]]
}
counted() { # FILE: a gateway's log whose stats count a refused connection
  grep -q 'refused_conns [1-9]' "$1" || { sed 's/^/# log: /' "$1"; false; }
}
if ip netns add "$ns" 2>/dev/null; then
  ns_made=$ns
  if ! veth; then
    check "a veth pair into a network namespace ($net.1, $net.2)" false
  elif ! gw_extra conns "$net.1" "$S3R_ENDPOINT" --max-conns-per-addr 3; then
    check "a gateway on $net.1 started" false
  else
    conns_ran=1
    check "connections past --max-conns-per-addr: closed at once" \
      ip netns exec "$ns" env S3R_GW_ENDPOINT="$extra_ep" HOSTILE_BUCKET="$bucket" \
      timeout 60 python3 "$here/gw_hostile.py" conns-limit 3
  fi
else
  echo "# cannot make a network namespace: the per-address connection limit is not tested"
fi
check "the extra gateways stop cleanly" extra_stop
if [ -n "$conns_ran" ]; then # (its stats, printed at exit)
  check "  ... refused connections counted" counted "$tmp/conns.log"
fi
check "gateway stops cleanly" gw_stop
}
run_case share case_share

summary
