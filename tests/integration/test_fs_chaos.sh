#!/usr/bin/env bash
# Faults through the mount, seeded and bounded: a mount of RGW through a
# fault-injecting proxy (fault_proxy.py: 503 SlowDown, 500, 403, resets
# mid-request and mid-response, truncated bodies, stalls past the request
# timeout, malformed listing XML, wrong Content-Length, 200 with an error
# document); radosgw killed (SIGKILL) and restarted during sequential reads,
# random reads, streaming writes and directory renames; s3rdma-gateway
# killed mid-read and mid-write; the daemon killed (SIGKILL) mid-write,
# after close() failed for other files, and mounted again. A seeded workload with a model (chaos_work.py) checks every
# operation, then after each scenario (faults paused, background retries
# given time, unmounted) the bucket through awscli:
#   - every read returned the right bytes or an error (corrupt bytes: 0);
#   - every close()/fsync() that returned 0 left the complete object on the
#     server; every one that failed kept the data, which reached the server
#     or cache.dir/unsaved/ (lost writes: 0);
#   - never a partial object; no multipart upload left (orphans: 0), but
#     one that is the object (RGW killed as it completed it lists it
#     still, and an abort would delete the object's data: said, spared);
#   - the daemon still serves (a write and a read once faults stop), and
#     exits 0 at unmount.
# One line per scenario, then a table: faults injected, operations run,
# errors surfaced, corrupt bytes, lost writes, orphaned uploads.
#
# Seeds: each scenario has a fixed seed, but faults-random, whose seed is
# random and printed at the start; S3R_CHAOS_SEED=N replays it. S3R_ONLY=RE
# (as in every suite) or S3R_CHAOS_ONLY="name ..." runs only those
# scenarios (names as printed). The proxy picks a request's fault from
# the seed and the request itself, so a replay sees the same faults for the
# same requests; thread timing still varies.
#
# The checker is checked first (checker-selftest): the proxy changes a byte
# of every GET body, which no HTTP client can notice; the verdict must be
# "corrupt bytes".
#
# Scenario lost-init-reply: a CreateMultipartUpload whose reply is lost
# after RGW made the upload (an upload the daemon never learns the id of):
# nothing proves that upload ours (another writer of the key makes the
# same), so it is never aborted: the daemon says so and counts it
# (write.uploads_unknown), and it is left for the bucket's lifecycle rule
# (here the test aborts it, as that rule would, before the check).
#
# RGW: radosgw alone is killed and restarted (tests/servers/rgw.sh
# restart-radosgw, which runs in its own session so that it always finishes);
# the EXIT trap restarts it again should it not answer. Others using the same
# RGW see each restart (about 2 s down). About 3-4 minutes in all.
#
#   test_fs_chaos.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
unset S3R_FS_ENDPOINT S3R_FS_OPTS # mounts name their endpoint themselves
fs_test_setup "$1" chaos

RGW_SH=$(cd "$here/../servers" && pwd)/rgw.sh
WORK=$here/chaos_work.py
MiB=1048576
if [ -n "${S3R_CHAOS_SEED:-}" ]; then
  RSEED=$S3R_CHAOS_SEED
else
  RSEED=$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 ))
fi
echo "# chaos: every scenario has a fixed seed (on its lines) but faults-random:" \
  "seed $RSEED (replay: S3R_CHAOS_SEED=$RSEED S3R_CHAOS_ONLY=faults-random $0 $1)"

results=$tmp/results.jsonl
proxy_pid='' wpid='' gw_on=0

cleanup() {
  local rc=$?
  set +e
  if [ -n "$wpid" ]; then { kill -KILL "$wpid"; wait "$wpid"; } 2>/dev/null; fi
  [ -z "$proxy_pid" ] || admin pause >/dev/null 2>&1 # (unmount without faults)
  if [ "$gw_on" = 1 ]; then gw_stop >/dev/null 2>&1; fi
  if is_mounted "$mnt"; then fs_umount "$mnt"; fi
  if [ -n "$proxy_pid" ]; then { kill "$proxy_pid"; wait "$proxy_pid"; } 2>/dev/null; fi
  # radosgw must answer again, whatever happened
  "$RGW_SH" status >/dev/null 2>&1 || "$RGW_SH" restart-radosgw 0
  if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ]; then
    echo "--- errors and warnings in the daemon logs"
    for f in "$tmp"/fs-*.log; do
      [ -e "$f" ] || continue
      echo "--- $(basename "$f")"
      grep -iE 'error|warn|abort|sanitizer' "$f" | tail -n 25
    done
  fi
  fs_abort_uploads
  if [ -n "${S3R_CHAOS_KEEP:-}" ]; then # logs and models for a post-mortem
    mkdir -p "$S3R_CHAOS_KEEP"
    cp "$tmp"/*.log "$tmp"/*.json "$S3R_CHAOS_KEEP"/ 2>/dev/null
    echo "# logs and models kept in $S3R_CHAOS_KEEP"
  fi
  (exit "$rc")
  fs_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- the proxy ----
fault_proxy_start --stall-s 4 # proxy_pid, PROXY, ADMIN, admin
faults_total() { admin stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults_total"])'; }

# rates per fault kind (a request gets at most one)
NONE="slowdown=0&internal=0&forbidden=0&reset_resp=0&reset_req=0&truncate=0&stall=0&bad_xml=0&bad_length=0&error_200=0&flip=0"
LIGHT="slowdown=0.03&internal=0.03&forbidden=0.005&reset_resp=0.03&reset_req=0.03&truncate=0.03&stall=0.005&bad_xml=0.05&bad_length=0.03&error_200=0.05"
HEAVY="slowdown=0.08&internal=0.08&forbidden=0.02&reset_resp=0.06&reset_req=0.06&truncate=0.06&stall=0.01&bad_xml=0.15&bad_length=0.06&error_200=0.15"
MEDIUM="slowdown=0.05&internal=0.05&forbidden=0.01&reset_resp=0.05&reset_req=0.05&truncate=0.05&stall=0.01&bad_xml=0.1&bad_length=0.05&error_200=0.1"

# Short timeouts: a request attempt gives up after 3 s (a stall is 4 s), a
# request after 6 s or 4 attempts; failed uploads are retried every 1 s.
OPTS=(-o write.part_size=5M -o write.retry_interval=1
      -o s3.request_timeout_ms=3000 -o s3.retry.budget_ms=6000
      -o s3.retry.max_attempts=4 -o s3.connect_timeout_ms=1000)

"$CLI" mb "$bucket" >/dev/null

want() { # is scenario $1 selected? (S3R_ONLY: a regular expression, as in
  # every suite; S3R_CHAOS_ONLY: names)
  if [ -n "${S3R_ONLY:-}" ]; then
    [[ $1 =~ $S3R_ONLY ]] || return 1
    cases_run=$((${cases_run:-0} + 1))
    return 0
  fi
  [ -z "${S3R_CHAOS_ONLY:-}" ] && return 0
  [[ " $S3R_CHAOS_ONLY " == *" $1 "* ]]
}
wait_file() { # FILE SECONDS: bounded wait; fails early when the workload ended
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ -e "$1" ] && return 0
    [ -n "$wpid" ] && ! kill -0 "$wpid" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}
wait_pid() { # PID SECONDS: wait for it, bounded; kill it after
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; return; }
    sleep 0.1
  done
  echo "# pid $1 still running after $2 s: killed"
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 124
}

# mount_via NAME ENDPOINT [options]: mount with this scenario's cache.dir
mount_via() {
  local name=$1 ep=$2; shift 2
  log=$tmp/fs-$name.log
  fs_mount "$bucket" "$mnt" "$log" -o endpoint="$ep" \
    -o cache.dir="$tmp/cache-$name" "${OPTS[@]}" "$@"
}

# ---- hooks: what happens to the servers while the workload runs ----
hook_rgw() { "$RGW_SH" restart-radosgw 2 >>"$tmp/rgw-restarts.log" 2>&1; }
hook_gw() {
  local port pid
  port=${GW_ENDPOINT##*:}
  pid=$(cat "$S3R_GW_DIR/pid")
  kill -KILL "$pid"
  for _ in $(seq 1 50); do [ -s "$S3R_GW_DIR/exit" ] && break; sleep 0.1; done
  sleep 1 # down for a moment
  "$GW_SH" start --port "$port" >>"$tmp/gw-restarts.log" 2>&1
}

# scenario NAME PROFILE SEED ENDPOINT RATES HOOK [run options...]
#   ENDPOINT: proxy, rgw, gw; RATES: the proxy's (with proxy or gw through
#   the proxy); HOOK: none, rgw (restart radosgw), gw (kill the gateway)
scenario() {
  local name=$1 profile=$2 seed=$3 route=$4 rates=$5 hook=$6 ep faults=0 hooks=0
  local t0=$SECONDS
  shift 6
  want "$name" || return 0
  local ctl=$tmp/ctl-$name state=$tmp/state-$name.json extra=()
  mkdir -p "$ctl"
  case $route in
    proxy) ep=$PROXY ;;
    rgw) ep=$S3R_ENDPOINT ;;
    gw) ep=$GW_ENDPOINT; extra=(-o rdma.transport=cma) ;;
  esac
  admin "pause" >/dev/null
  # (a CreateMultipartUpload whose answer is lost leaves an upload that
  # nothing proves ours, which is never aborted: lost-init-reply checks it
  # is counted and left; here it is spared, so that "no upload left" keeps
  # its meaning)
  admin "set?$NONE&classes=&spare=reset_resp:init&$rates&seed=$seed" >/dev/null
  admin zero >/dev/null
  if [ "$profile" = seqread ] || [ "$profile" = randread ]; then
    # a page cache smaller than the files, no kernel cache across opens:
    # every pass reads from the server
    extra+=(-o cache.size=16M -o cache.kernel_cache=false -o read.readahead_max=4M)
  fi
  if ! mount_via "$name" "$ep" "${extra[@]}"; then
    if [ "$route" = gw ] && grep -q 'rdma.transport cma' "$log"; then
      echo "# skip $name: cma cannot run here"
    else
      check "$name: mounted" false
    fi
    return 0
  fi
  local args=(run --state "$state" --mnt "$mnt" --bucket "$bucket"
              --prefix "$name" --seed "$seed" --profile "$profile"
              --ctl "$ctl" "$@")
  [ "$route" = rgw ] || args+=(--admin "$ADMIN")
  python3 "$WORK" "${args[@]}" > >(sed "s/^/[$name] /") 2>&1 &
  wpid=$!
  if [ "$hook" != none ]; then
    if wait_file "$ctl/started" 120; then
      sleep "0.$((seed % 7 + 2))"
      check "$name: $hook killed and restarted mid-transfer" "hook_$hook"
      hooks=1
      sleep 1
    else
      echo "# $name: the workload did not start"
    fi
    touch "$ctl/stop"
  fi
  wait_pid "$wpid" 240 || true
  wpid=''
  # faults injected: the kill, or what the proxy injected
  faults=$hooks
  if [ "$rates" != "$NONE" ]; then
    faults=$(($(faults_total) + hooks))
    echo "# $name: faults by kind: $(admin stats | python3 -c 'import json, sys
print(", ".join("%s %d" % kv for kv in sorted(json.load(sys.stdin)["faults"].items()) if kv[1]))')"
  fi
  admin pause >/dev/null
  check "$name: the workload ran" test -s "$state"
  [ -s "$state" ] || { fs_umount "$mnt" || true; return 0; }
  check "$name: the daemon still serves (settled, then a write and a read)" \
    python3 "$WORK" settle --state "$state" --mnt "$mnt" --wait 30
  fs_umount "$mnt" || true # (a check: the daemon exits 0, no sanitizer report)
  local verify=(python3 "$WORK" verify --state "$state"
                --cache-dir "$tmp/cache-$name" --download "$tmp/dl-$name"
                --scenario "$name" --faults "$faults")
  [ "$hook" != rgw ] || verify+=(--rgw-killed)
  if [ "$EXPECT" = caught ]; then
    check "$name: the checker reports the corruption" \
      bash -c '! "$@"' _ "${verify[@]}" --results "$tmp/results-selftest.jsonl"
  else
    check "$name: invariants hold" "${verify[@]}" --results "$results"
  fi
  rm -rf "$tmp/dl-$name"
  echo "# $name: $((SECONDS - t0)) s"
}

EXPECT=pass
# ---- 0) the checker itself: a byte changed in GET bodies (which no HTTP
# ---- client can notice) must be reported as corrupt bytes ----
EXPECT=caught scenario checker-selftest seqread 999 proxy "flip=1&classes=get" none \
  --ops 2 --read-files 1 --read-size $MiB

# ---- 1) the fault proxy under a mixed workload ----
scenario faults-light mixed 1001 proxy "$LIGHT" none --ops 40 --time-limit 90
scenario faults-heavy mixed 1002 proxy "$HEAVY" none --ops 40 --time-limit 90
scenario faults-random mixed "$RSEED" proxy "$MEDIUM" none --ops 40 --time-limit 90

# ---- 2) radosgw killed and restarted mid-transfer ----
scenario rgw-seqread seqread 2001 rgw "$NONE" rgw --ops 60 --after-stop 3 \
  --read-files 3 --read-size $((8 * MiB)) --time-limit 90
scenario rgw-randread randread 2002 rgw "$NONE" rgw --ops 400 --after-stop 10 \
  --read-files 3 --read-size $((8 * MiB)) --time-limit 90
scenario rgw-stream stream 2003 rgw "$NONE" rgw --ops 30 --after-stop 2 --time-limit 90
scenario rgw-dirrename dirrename 2004 rgw "$NONE" rgw --ops 40 --after-stop 2 \
  --dir-files 12 --time-limit 90

# ---- 3) s3rdma-gateway (rdma.transport=cma) killed mid-read and mid-write;
# ---- then with the fault proxy behind it ----
if want gw-read || want gw-write || want gw-faults; then
  gw_start "$tmp/gw"
  gw_on=1
  scenario gw-read seqread 3001 gw "$NONE" gw --ops 60 --after-stop 3 \
    --read-files 3 --read-size $((8 * MiB)) --time-limit 90
  scenario gw-write stream 3002 gw "$NONE" gw --ops 30 --after-stop 2 --time-limit 90
  gw_stop || true
  gw_on=0
  if want gw-faults; then
    gw_start "$tmp/gw2" --upstream "$PROXY"
    gw_on=1
    scenario gw-faults mixed 3003 gw "$MEDIUM" none --ops 20 --time-limit 90
    gw_stop || true
    gw_on=0
  fi
fi

# ---- 4) the daemon killed (SIGKILL) mid-write, after close() returned EIO
# ---- for other files ----
# The proxy fails every upload (503 SlowDown for PUT, CreateMultipartUpload
# and CompleteMultipartUpload): close() returns EIO and the daemon keeps the
# data. Then, uploads working again, one more file is left open half
# written (its first part uploaded), and the daemon is killed. A mount with
# the same cache.dir: what close() failed to upload must reach the server or
# be in cache.dir/unsaved/; the half-written file must never be an object;
# no multipart upload may be left but the half-written file's, when a part
# of it was acknowledged (those bytes' only copy: named in its MANIFEST
# line, then aborted here as its owner would).
if want daemon-kill; then
  name=daemon-kill t0=$SECONDS
  state=$tmp/state-$name.json ctl=$tmp/ctl-$name
  mkdir -p "$ctl"
  admin pause >/dev/null
  admin "set?$NONE&slowdown=1&classes=put,init,complete&seed=4001" >/dev/null
  admin zero >/dev/null
  # (no background retry before the kill: the failed files stay unsaved)
  mount_via "$name" "$PROXY" -o write.retry_interval=600
  mkdir "$mnt/$name"
  admin resume >/dev/null
  python3 "$WORK" killwrite --state "$state" --mnt "$mnt" --bucket "$bucket" \
    --prefix "$name" --seed 4001 --sizes 100000 $((12 * MiB)) \
    --hold $((7 * MiB)) --ctl "$ctl" --admin "$ADMIN" > >(sed "s/^/[$name] /") 2>&1 &
  wpid=$!
  check "$name: a file is held open half written" wait_file "$ctl/holding" 120
  faults=$(faults_total)
  for _ in $(seq 1 50); do # bounded: its first part is uploading
    held=$(fs_uploads "$name/held") && [ -n "$held" ] && break
    sleep 0.2
  done
  fs_kill "$mnt"
  touch "$ctl/killed"
  check "$name: close() returned EIO for the files written while uploads failed" \
    wait_pid "$wpid" 60
  wpid=''
  fs_umount "$mnt" || true
  check "$name: dead mount removed" bash -c "! grep -qs ' $mnt ' /proc/mounts"
  admin "set?classes=" >/dev/null
  echo "# $name: in cache.dir after the kill: $(find "$tmp/cache-$name" -type f | sed "s|$tmp/||" | tr '\n' ' ')"
  mount_via "$name" "$PROXY"
  check "$name: the next mount serves (settled, then a write and a read)" \
    python3 "$WORK" settle --state "$state" --mnt "$mnt" --wait 10
  fs_umount "$mnt" || true
  echo "# $name: in cache.dir after the remount: $(find "$tmp/cache-$name" -type f | sed "s|$tmp/||" | tr '\n' ' ')"
  if [ -n "$(fs_uploads "$name/held")" ]; then
    check "$name: the held file's upload left is named in its MANIFEST line" \
      grep -qs "held.*kept, not aborted" "$tmp/cache-$name/unsaved/MANIFEST"
    fs_abort_uploads "$name/held"
  fi
  check "$name: invariants hold (what close() failed to upload is on the server or in unsaved/)" \
    python3 "$WORK" verify --state "$state" --cache-dir "$tmp/cache-$name" \
      --download "$tmp/dl-$name" --scenario "$name" --faults "$((faults + 1))" \
      --results "$results"
  echo "# $name: $((SECONDS - t0)) s"
fi

# ---- 5) the reply of CreateMultipartUpload lost (the server made the
# ---- upload): said and counted, never aborted ----
if want lost-init-reply; then
  name=lost-init-reply t0=$SECONDS
  admin pause >/dev/null
  admin "set?$NONE&reset_resp=1&classes=init&spare=&limit=1&seed=5001" >/dev/null
  admin zero >/dev/null
  mount_via "$name" "$PROXY"
  admin resume >/dev/null
  state=$tmp/state-$name.json
  python3 "$WORK" run --state "$state" --mnt "$mnt" --bucket "$bucket" \
    --prefix "$name" --seed 5001 --profile stream --ops 1 --admin "$ADMIN" |
    sed "s/^/[$name] /" || true
  check "$name: the workload ran" test -s "$state"
  faults=$(faults_total)
  admin pause >/dev/null
  admin "set?classes=&limit=-1" >/dev/null
  check "$name: the daemon still serves" \
    python3 "$WORK" settle --state "$state" --mnt "$mnt" --wait 30
  check "$name: the upload it may have made is counted" \
    test "$(stat_of write.uploads_unknown)" -ge 1
  fs_umount "$mnt" || true
  check "$name: ... and left on the server (nothing proves it ours)" \
    test "$(fs_uploads "$name" | wc -l)" -ge 1
  fs_abort_uploads "$name" # (what the bucket's lifecycle rule does)
  check "$name: nothing lost, no other upload left behind" \
    python3 "$WORK" verify --state "$state" --cache-dir "$tmp/cache-$name" \
      --download "$tmp/dl-$name" --scenario "$name" --faults "$faults" \
      --results "$results"
  echo "# $name: $((SECONDS - t0)) s"
fi

# ---- the table ----
python3 - "$results" <<'EOF'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if os.path.exists(sys.argv[1]) else []
cols = ("faults", "ops", "errors", "corrupt", "lost", "orphans")
print("# %-16s %6s %8s %6s %6s %7s %7s %8s" % ("scenario", "seed", "faults",
      "ops", "errors", "corrupt", "lost", "orphans"))
for r in rows:
    print("# %-16s %6s %8d %6d %6d %7d %7d %8d%s" % (
        r["scenario"], r["seed"], r["faults"], r["ops"], r["errors"],
        r["corrupt"], r["lost"], r["orphans"], ""))
t = {c: sum(r[c] for r in rows) for c in cols}
print("| faults injected | operations run | errors surfaced | corrupt bytes "
      "| lost writes | orphaned uploads |")
print("|---|---|---|---|---|---|")
print("| %d | %d | %d | %d | %d | %d |" % tuple(t[c] for c in cols))
EOF
summary
