#!/usr/bin/env bash
# tests/servers/rgw.sh - a throw-away single-node Ceph RADOS Gateway on
# 127.0.0.1 for the s3rdmafs integration tests and benchmarks.
#
#   rgw.sh start    bring up mon + one bluestore osd + radosgw, create the
#                   test S3 user, wait until authenticated S3 calls work
#   rgw.sh stop     stop what start started (by recorded pids), remove state
#   rgw.sh status   exit 0 when running and answering HTTP, else 1
#   rgw.sh env      print export lines: eval "$(tests/servers/rgw.sh env)";
#                   S3R_ENDPOINTS lists every node's URL (";"), running or not
#   rgw.sh restart-radosgw [SECONDS]
#                   (fault tests) SIGKILL radosgw only (mon and osd stay),
#                   leave it down SECONDS (default 0), start it again with
#                   the same config, wait until authenticated S3 calls work
#   rgw.sh node-start K
#                   (several-server tests) start radosgw node K (1 or 2)
#                   beside the first, on port S3R_RGW_PORT+10+K, same
#                   cluster, pools and user; wait until S3 calls work
#   rgw.sh node-stop K
#                   SIGKILL node K and leave it down
#   rgw.sh node-restart K [SECONDS]
#                   restart-radosgw for node K (0 is the first radosgw)
#
# Settings follow docs/testing.md, "Test servers and hardware" (in the
# style of go-ceph's micro-osd.sh):
# auth none, pool size 1, pg num 8 without autoscale, no mgr, bluestore on a
# sparse file.  Everything lives in one state directory with its own
# ceph.conf; nothing in /etc/ceph is read or written.
#
# Environment:
#   S3R_RGW_DIR      state directory         (default /tmp/s3rdmafs-rgw)
#   S3R_RGW_PORT     RGW HTTP port           (default 7480)
#   S3R_RGW_TLS_PORT RGW HTTPS port          (default 7443; self-signed
#                    certificate for 127.0.0.1/localhost in the state dir)
#   S3R_RGW_OSD_GB   size of the sparse bluestore file in GiB (default 32,
#                    capped at 90% of the free disk space)
#   S3R_RGW_TIMEOUT  seconds to wait for each start phase      (default 120)
#   S3R_RGW_QUIET    1: no progress messages (errors still go to stderr)
#   S3R_AWS          awscli binary (default /usr/bin/aws, else aws on PATH)
#
# The mon listens on the fixed ports 3300/6789, so only one instance of this
# script can run per machine.  There is no mgr: ceph commands served by the
# mgr (ceph df, osd df, osd purge, config show, ...) hang; "ceph -s" works.
set -euo pipefail

DIR=$(realpath -m -- "${S3R_RGW_DIR:-/tmp/s3rdmafs-rgw}")  # daemons chdir to /
PORT=${S3R_RGW_PORT:-7480}
TLS_PORT=${S3R_RGW_TLS_PORT:-7443}
OSD_GB=${S3R_RGW_OSD_GB:-32}
TIMEOUT=${S3R_RGW_TIMEOUT:-120}
QUIET=${S3R_RGW_QUIET:-0}

# Fixed test credentials (also used by tests through "rgw.sh env").
ACCESS_KEY=S3RDMAFSTESTKEY00001
SECRET_KEY=s3rdmafs-test-secret-key-0000000000000001
S3_UID=s3rdmafs
REGION=us-east-1

CLUSTER=ceph            # cluster name, passed as --cluster everywhere
MON_ID=a                # mon.a
RGW_ID=rgw.s3rdmafs     # client.rgw.s3rdmafs
CONF=$DIR/ceph.conf
MARKER=$DIR/.s3rdmafs-rgw   # proves a directory is ours before rm -rf
ENDPOINT=http://127.0.0.1:$PORT
DAEMONS=(radosgw2 radosgw1 radosgw osd mon)   # stop order
CORE=(radosgw osd mon)      # what "start" starts, in reverse order
NODES=3                     # radosgw nodes: 0 (radosgw), 1, 2 (on demand)

T0=$SECONDS
STARTING=0   # 1 while "start" creates daemons: die() then stops them
log() { [[ $QUIET == 1 ]] || echo "rgw.sh: [$((SECONDS - T0))s] $*" >&2; }

# die MESSAGE [LOGFILE...]: report, show the log tails, exit 1.
die() {
    local msg=$1 f; shift
    echo "rgw.sh: ERROR: $msg" >&2
    for f in "$@"; do
        [[ -s $f ]] || continue
        echo "----- last 40 lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
    if [[ $STARTING == 1 ]]; then
        STARTING=0
        kill_daemons
        echo "rgw.sh: logs kept in $DIR/log" >&2
    fi
    exit 1
}

# Ceph command line tools, always against our own config.  CEPH_WAIT is how
# long the ceph CLI tries to reach the mon (short while polling).
CEPH_WAIT=20
ceph_() { timeout 30 ceph --cluster "$CLUSTER" -c "$CONF" --connect-timeout "$CEPH_WAIT" "$@"; }
rgwadmin() { timeout 120 radosgw-admin --cluster "$CLUSTER" -c "$CONF" "$@"; }

# awscli against the local RGW with the test user.  Newer botocore sends
# CRC trailers RGW 16 does not understand; ask for checksums only when needed.
aws_() {
    AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY \
    AWS_DEFAULT_REGION=$REGION AWS_REGION=$REGION \
    AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
    AWS_SHARED_CREDENTIALS_FILE=/dev/null \
    AWS_REQUEST_CHECKSUM_CALCULATION=when_required \
    AWS_RESPONSE_CHECKSUM_VALIDATION=when_required \
        timeout 60 "$AWS" --endpoint-url "$ENDPOINT" "$@"
}

# ---------------------------------------------------------------- packages

ensure_packages() {
    local need=0 b
    for b in ceph-mon ceph-osd monmaptool radosgw radosgw-admin ceph aws openssl; do
        command -v "$b" >/dev/null 2>&1 || need=1
    done
    if [[ $need == 1 ]]; then
        [[ $(id -u) == 0 ]] || die "ceph/radosgw/awscli missing and not root: cannot apt-get install"
        log "installing ceph-mon ceph-osd radosgw ceph-common awscli openssl"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends \
            ceph-mon ceph-osd radosgw ceph-common awscli openssl >&2 ||
            die "apt-get install failed"
    fi
    AWS=${S3R_AWS:-}
    if [[ -z $AWS ]]; then
        if [[ -x /usr/bin/aws ]]; then AWS=/usr/bin/aws; else AWS=$(command -v aws); fi
    fi
}

# ---------------------------------------------------------------- processes

pidfile() { echo "$DIR/run/$1.pid"; }

# alive NAME: the recorded daemon runs (and is really ours: its command line
# names our config file, so a recycled pid is never mistaken for it).
alive() {
    local pf pid cmd
    pf=$(pidfile "$1"); [[ -r $pf ]] || return 1
    pid=$(<"$pf"); [[ $pid =~ ^[0-9]+$ ]] || return 1
    cmd=$(tr '\0' ' ' 2>/dev/null </proc/"$pid"/cmdline) || return 1
    [[ $cmd == *" $CONF "* ]]
}

# spawn NAME CMD...: run a daemon in the foreground (-f) of its own session,
# in the background of ours; stdout/stderr to log/NAME.out, pid recorded.
spawn() {
    local name=$1; shift
    setsid "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
    echo $! >"$(pidfile "$name")"
}

# radosgw node K: its daemon name (pid file), its ceph id and its port.
node_name() { if [[ $1 == 0 ]]; then echo radosgw; else echo "radosgw$1"; fi; }
node_id() { if [[ $1 == 0 ]]; then echo "$RGW_ID"; else echo "$RGW_ID.$1"; fi; }
node_port() { if [[ $1 == 0 ]]; then echo "$PORT"; else echo $((PORT + 10 + $1)); fi; }

# http_answers [PORT]: something answers HTTP there (default: node 0).
http_answers() {
    # Any HTTP status line counts; bash's /dev/tcp needs no curl or proxy care.
    # shellcheck disable=SC2016  # $line expands in the inner bash
    timeout 3 bash -c '
        exec 3<>/dev/tcp/127.0.0.1/'"${1:-$PORT}"' || exit 1
        printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
        read -r -t 2 line <&3 && [[ $line == HTTP/* ]]' 2>/dev/null
}

port_busy() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
mon_is_ours() { [[ $(CEPH_WAIT=5 ceph_ fsid 2>/dev/null) == "$FSID" ]]; }
osd_up() { [[ $(CEPH_WAIT=5 ceph_ osd stat -f json) == *'"num_up_osds":1'* ]]; }

running_ok() {
    local d
    [[ -f $MARKER ]] || return 1
    [[ $(cat "$DIR/port" 2>/dev/null) == "$PORT" ]] || return 1
    for d in "${CORE[@]}"; do alive "$d" || return 1; done
    http_answers "$PORT"
}

# wait_for WHAT LOGFILE DAEMON CMD...: retry CMD for up to TIMEOUT seconds;
# fail early when DAEMON died.
wait_for() {
    local what=$1 logf=$2 daemon=$3 t0=$SECONDS; shift 3
    until "$@" >/dev/null 2>&1; do
        alive "$daemon" || die "$daemon exited while waiting for $what" \
            "$logf" "$DIR/log/$daemon.out"
        ((SECONDS - t0 < TIMEOUT)) ||
            die "timed out after ${TIMEOUT}s waiting for $what" "$logf" "$DIR/log/$daemon.out"
        sleep 0.5
    done
}

# ---------------------------------------------------------------- commands

# running PID: the process exists and is not a zombie (a zombie has an empty
# command line; a daemon that died during "start" is our unreaped child).
running() { [[ -n $(tr -d '\0' 2>/dev/null </proc/"$1"/cmdline) ]]; }

# kill_daemons: stop the recorded daemons one at a time, rgw first, so the
# osd shuts down fast while the mon still hears it; SIGKILL after 15 s.
kill_daemons() {
    local d pid t0
    for d in "${DAEMONS[@]}"; do
        alive "$d" || continue
        pid=$(<"$(pidfile "$d")")
        log "stopping $d (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        t0=$SECONDS
        while running "$pid"; do
            if ((SECONDS - t0 >= 15)); then
                log "$d (pid $pid) ignores SIGTERM: SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
                sleep 0.5
                break
            fi
            sleep 0.1
        done
    done
}

do_stop() {
    [[ -d $DIR ]] || return 0
    kill_daemons
    if [[ -f $MARKER ]] || [[ -z $(ls -A "$DIR" 2>/dev/null) ]]; then
        rm -rf -- "$DIR"
    else
        die "$DIR is not an rgw.sh state directory; not removing it"
    fi
}

write_conf() {
    cat >"$CONF" <<EOF
# Written by tests/servers/rgw.sh: single-node test cluster, no auth.
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
run dir = $DIR/run
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/cluster.log
client mount timeout = 60

[mon.$MON_ID]
mon data = $DIR/mon
mon data avail crit = 0
mon data avail warn = 1
mon warn on insecure global id reclaim allowed = false
mon allow pool delete = true
# Commit map changes every 0.1 s, not every 1 s: each rgw pool creation is a
# few osdmap epochs, so this makes start about twice as fast.
paxos propose interval = 0.1

[osd.0]
osd data = $DIR/osd
public addr = 127.0.0.1
cluster addr = 127.0.0.1
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $((OSD_GB << 30))
bluestore fsck on mkfs = false
osd class load list = *
osd class default list = *
# Keep memory near the 0.6 GB noted in docs/testing.md, "Test servers
# and hardware" (default target is 4 GiB).
osd memory target = 1073741824

[client]
keyring = /dev/null

EOF
    local k
    for ((k = 0; k < NODES; k++)); do rgw_section "$k" >>"$CONF"; done
}

# rgw_section K: node K's section of ceph.conf; node 0 serves https too.
rgw_section() {
    local k=$1 port tls=""
    port=$(node_port "$k")
    [[ $k != 0 ]] ||
        tls=" ssl_endpoint=127.0.0.1:$TLS_PORT ssl_certificate=$DIR/tls.crt ssl_private_key=$DIR/tls.key"
    cat <<EOF

[client.$(node_id "$k")]
ms mon client mode = crc
auth client required = none
keyring = /dev/null
# tcp_nodelay: without it beast's small second write of a reply (a chunked
# listing's body after its headers) waits on Nagle for the client's delayed
# ACK, 40 ms per request on a reused connection
rgw frontends = beast tcp_nodelay=1 endpoint=127.0.0.1:$port$tls
# virtual-host style requests: Host bucket.localhost:PORT (curl resolves
# *.localhost to 127.0.0.1 itself); Host 127.0.0.1:PORT stays path style
rgw dns name = localhost
rgw gc obj min wait = 0
rgw gc processor period = 60
rgw enable usage log = false
# A CompleteMultipartUpload cut short by a kill of radosgw (the chaos
# suite's) leaves RGW's lock on that upload for rgw_mp_lock_max_time
# (600 s): until then every retry of it is answered 500 "This multipart
# completion is already in progress", and the daemon keeps the file for
# later. 10 s here, so that its retries finish such an upload within a test.
rgw mp lock max time = 10
log file = $DIR/log/$(node_name "$k").log
EOF
}

do_start() {
    local osd_uuid p
    ensure_packages
    if running_ok; then
        log "already running on $ENDPOINT"
        return 0
    fi
    [[ -e $DIR ]] && { log "stale state in $DIR: cleaning up"; do_stop; }
    STARTING=1
    mkdir -p "$DIR"/{run,log,mon,osd}
    touch "$MARKER"
    echo "$PORT" >"$DIR/port"
    # Never talk to somebody else's cluster: the mon ports must be free.
    for p in 3300 6789 "$PORT" "$TLS_PORT"; do
        ! port_busy "$p" || die "127.0.0.1:$p is already in use (another rgw.sh or Ceph running?)"
    done
    # The bluestore file is sparse, but must not outgrow the disk under it:
    # an osd that hits ENOSPC dies.  Cap it at 90% of the free space.
    local avail_gb
    avail_gb=$(( $(df -Pk -- "$DIR" | awk 'NR == 2 { print $4 }') * 9 / 10 >> 20 ))
    if ((OSD_GB > avail_gb)); then
        ((avail_gb >= 4)) || die "only ${avail_gb} GiB usable under $DIR; need 4"
        log "only ${avail_gb} GiB free under $DIR: osd size ${OSD_GB} -> ${avail_gb} GiB"
        OSD_GB=$avail_gb
    fi
    FSID=$(</proc/sys/kernel/random/uuid)
    # https too: a throw-away self-signed certificate (tests trust it through
    # S3R_CA_BUNDLE / AWS_CA_BUNDLE)
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$DIR/tls.key" -out "$DIR/tls.crt" >/dev/null 2>&1 ||
        die "openssl could not make a test certificate"
    write_conf

    # --- monitor: monmap with the v2+v1 addresses, mkfs, run.
    log "creating mon.$MON_ID in $DIR"
    monmaptool --create --clobber --fsid "$FSID" \
        --addv "$MON_ID" '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' \
        "$DIR/monmap" >"$DIR/log/mkfs.out" 2>&1 ||
        die "monmaptool failed" "$DIR/log/mkfs.out"
    ceph-mon --cluster "$CLUSTER" -c "$CONF" --id "$MON_ID" --mkfs \
        --monmap "$DIR/monmap" --keyring /dev/null >>"$DIR/log/mkfs.out" 2>&1 ||
        die "ceph-mon --mkfs failed" "$DIR/log/mkfs.out" "$DIR/log/mon.$MON_ID.log"
    touch "$DIR/mon/keyring"
    spawn mon ceph-mon --cluster "$CLUSTER" -c "$CONF" --id "$MON_ID" -f
    wait_for "the monitor" "$DIR/log/mon.$MON_ID.log" mon mon_is_ours

    # --- one bluestore osd on a sparse file.
    log "creating osd.0 (bluestore, sparse ${OSD_GB} GiB file)"
    osd_uuid=$(</proc/sys/kernel/random/uuid)
    [[ $(ceph_ osd new "$osd_uuid" 2>>"$DIR/log/mkfs.out") == 0 ]] ||
        die "ceph osd new did not give osd id 0" "$DIR/log/mkfs.out"
    ceph-osd --cluster "$CLUSTER" -c "$CONF" --id 0 --mkfs --osd-uuid "$osd_uuid" \
        >>"$DIR/log/mkfs.out" 2>&1 ||
        die "ceph-osd --mkfs failed (bluestore needs O_DIRECT: tmpfs has it only on Linux >= 6.6)" \
            "$DIR/log/mkfs.out" "$DIR/log/osd.0.log"
    spawn osd ceph-osd --cluster "$CLUSTER" -c "$CONF" --id 0 -f
    wait_for "osd.0 to come up" "$DIR/log/osd.0.log" osd osd_up

    # --- S3 user first (creates the realm/zone and the rgw pools), then RGW.
    log "creating S3 user $S3_UID"
    if ! rgwadmin user info --uid "$S3_UID" >/dev/null 2>&1; then
        rgwadmin user create --uid "$S3_UID" --display-name "s3rdmafs tests" \
            --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" \
            >"$DIR/log/user.out" 2>&1 ||
            die "radosgw-admin user create failed" "$DIR/log/user.out"
    fi
    log "starting radosgw on $ENDPOINT"
    spawn radosgw radosgw --cluster "$CLUSTER" -c "$CONF" --id "$RGW_ID" -f
    wait_for "RGW to answer HTTP on port $PORT" "$DIR/log/radosgw.log" radosgw http_answers "$PORT"
    wait_for "an authenticated S3 call" "$DIR/log/radosgw.log" radosgw \
        aws_ s3api list-buckets

    # Warm up: the first bucket, object and multipart upload create the
    # index, data and non-ec pools; let no test or benchmark pay for that.
    log "warming up (probe bucket, object, multipart upload)"
    local b=s3rdmafs-probe-$$ up
    { aws_ s3api create-bucket --bucket "$b" &&
      echo probe | aws_ s3 cp - "s3://$b/probe" &&
      up=$(aws_ s3api create-multipart-upload --bucket "$b" --key mp \
               --query UploadId --output text) &&
      aws_ s3api abort-multipart-upload --bucket "$b" --key mp --upload-id "$up" &&
      aws_ s3 rm "s3://$b/probe" &&
      aws_ s3api delete-bucket --bucket "$b"; } >"$DIR/log/probe.out" 2>&1 ||
        die "S3 probe (create bucket, put, delete) failed" \
            "$DIR/log/probe.out" "$DIR/log/radosgw.log"
    STARTING=0
    log "ready on $ENDPOINT (state and logs in $DIR)"
}

do_env() {
    cat <<EOF
export S3R_ENDPOINT=$ENDPOINT
export S3R_ENDPOINT_TLS=https://127.0.0.1:$TLS_PORT
export S3R_ENDPOINTS="http://127.0.0.1:$(node_port 0);http://127.0.0.1:$(node_port 1);http://127.0.0.1:$(node_port 2)"
export S3R_CA_BUNDLE=$DIR/tls.crt
export AWS_ENDPOINT_URL=$ENDPOINT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_DEFAULT_REGION=$REGION
export AWS_REGION=$REGION
export AWS_EC2_METADATA_DISABLED=true
export AWS_REQUEST_CHECKSUM_CALCULATION=when_required
export AWS_RESPONSE_CHECKSUM_VALIDATION=when_required
EOF
}

# restart-radosgw [SECONDS] / node-restart K [SECONDS]: the kill, the pause
# and the start run in a session of their own (setsid -w, output to
# log/restart.out), so that a caller killed meanwhile (a test's timeout)
# never leaves RGW down.
do_restart_radosgw() {
    local down=${1:-0} k=${2:-0} rc=0
    [[ $down =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "restart-radosgw: bad SECONDS '$down'"
    need_cluster "$k"
    setsid -w "$(realpath -- "${BASH_SOURCE[0]}")" _restart-radosgw "$down" "$k" \
        </dev/null >"$DIR/log/restart$k.out" 2>&1 || rc=$?
    if [[ $rc != 0 ]]; then
        cat "$DIR/log/restart$k.out" >&2
        die "restart-radosgw failed (exit $rc)"
    fi
    QUIET=0 log "$(node_name "$k") restarted on port $(node_port "$k")"
}

# need_cluster K: a running cluster of ours, and K a node it knows.
need_cluster() {
    [[ $1 =~ ^[0-9]+$ ]] && (($1 < NODES)) ||
        die "radosgw node '$1': 0 to $((NODES - 1))"
    if ! [[ -f $MARKER ]] || ! alive mon || ! alive osd; then
        die "no running rgw.sh cluster in $DIR (rgw.sh start first)"
    fi
    grep -q "^\[client\.$(node_id "$1")\]" "$CONF" ||
        die "$CONF has no section for node $1 (started by an older rgw.sh: stop, start)"
}

# node_kill K: SIGKILL node K's radosgw and wait until it is gone.
node_kill() {
    local name pid t0
    name=$(node_name "$1")
    alive "$name" || return 0
    pid=$(<"$(pidfile "$name")")
    log "SIGKILL $name (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
    t0=$SECONDS
    while running "$pid"; do
        ((SECONDS - t0 < 30)) || die "$name (pid $pid) survives SIGKILL"
        sleep 0.1
    done
}

# node_start K: start node K's radosgw, wait until it serves the test user.
node_start() {
    local name port
    name=$(node_name "$1") port=$(node_port "$1")
    log "starting $name on port $port"
    spawn "$name" radosgw --cluster "$CLUSTER" -c "$CONF" --id "$(node_id "$1")" -f
    wait_for "RGW to answer HTTP on port $port" "$DIR/log/$name.log" "$name" \
        http_answers "$port"
    ENDPOINT=http://127.0.0.1:$port wait_for "an authenticated S3 call" \
        "$DIR/log/$name.log" "$name" aws_ s3api list-buckets
}

do_restart_radosgw_now() {
    ensure_packages
    node_kill "$2"
    sleep "$1"
    node_start "$2"
    log "$(node_name "$2") answers again"
}

do_node_start() {
    ensure_packages
    need_cluster "$1"
    if alive "$(node_name "$1")"; then
        log "$(node_name "$1") already running"
        return 0
    fi
    ! port_busy "$(node_port "$1")" ||
        die "127.0.0.1:$(node_port "$1") is already in use"
    node_start "$1"
}

case ${1:-} in
    start)  do_start ;;
    stop)   do_stop ;;
    status) if running_ok; then log "running on $ENDPOINT"; else log "not running"; exit 1; fi ;;
    env)    do_env ;;
    restart-radosgw) do_restart_radosgw "${2:-0}" 0 ;;
    _restart-radosgw) do_restart_radosgw_now "$2" "$3" ;;
    node-start) do_node_start "${2:-}" ;;
    node-stop) need_cluster "${2:-}"; node_kill "$2" ;;
    node-restart) do_restart_radosgw "${3:-0}" "${2:-}" ;;
    *)      echo "usage: $0 start|stop|status|env|restart-radosgw [SECONDS]|node-start K|node-stop K|node-restart K [SECONDS]" >&2; exit 2 ;;
esac
