#!/usr/bin/env bash
# Metrics in Prometheus's text format, read back by prometheus_client's own
# parser (prom_check.py):
#   - `s3rdmafs stats --format prometheus MOUNTPOINT` after writes, reads,
#     listings and lookups: counters (_total), gauges, and the S3 latency
#     histograms by operation (time to first byte and whole exchange),
#     cumulative, their +Inf bucket equal to their count; the text format
#     unchanged (`stats MOUNTPOINT`, `--format text`); a bad --format: a
#     usage line, exit 2;
#   - the same file written for node_exporter's textfile collector (a
#     temporary file renamed into place, as its documentation asks);
#   - the gateway's GET /_s3rdma/stats?format=prometheus: its counters and
#     its gauge, parsed alike; format=bogus: 400.
#
#   test_metrics.sh BUILD_BIN_DIR
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" metrics textfile
trap gw_fs_cleanup EXIT

PROM=$here/prom_check.py
if ! /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null; then
  echo "# python3-prometheus-client missing: apt-get install python3-prometheus-client"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3-prometheus-client >/dev/null ||
    { echo "not ok - python3-prometheus-client installed (scripts/setup.sh)"; exit 1; }
fi
t0=$SECONDS
"$CLI" mb "$bucket"

# ---- daemon: the mount's stats in each format ----
case_daemon() {
fs_mount "$bucket" "$mnt" "$log" -o cache.dir="$tmp/cache"
gen m1 $((3 * 1048576 + 5)) >"$tmp/f"
cp "$tmp/f" "$mnt/f"
aws_ s3 cp "$tmp/f" "s3://$bucket/g" >/dev/null
cat "$mnt/g" >/dev/null # (a GET: not a file this mount wrote)
mkdir "$mnt/d"
ls -l "$mnt" "$mnt/d" >/dev/null
stat "$mnt/nothing-here" 2>/dev/null || true

prom=$tmp/prom.txt
check "stats --format prometheus" eval '"$FS" stats --format prometheus "$mnt" >"$prom"'
check "  ... parsed by prometheus_client: counters, gauges, histograms" \
  /usr/bin/python3 "$PROM" \
  --family s3rdmafs_fs_lookups:counter --family s3rdmafs_s3_requests:counter \
  --family s3rdmafs_fs_inodes:gauge --family s3rdmafs_s3_inflight:gauge \
  --family s3rdmafs_rdma_transport_info:gauge \
  --family s3rdmafs_s3_request_seconds:histogram \
  --histogram s3rdmafs_s3_request_seconds:op=put,phase=total \
  --histogram s3rdmafs_s3_request_seconds:op=put,phase=ttfb \
  --histogram s3rdmafs_s3_request_seconds:op=get,phase=total \
  --histogram s3rdmafs_s3_request_seconds:op=head,phase=ttfb \
  --histogram s3rdmafs_s3_request_seconds:op=list,phase=total \
  --positive s3rdmafs_fs_lookups_total --positive s3rdmafs_write_bytes_total \
  <"$prom"
"$FS" stats "$mnt" >"$tmp/text1"
"$FS" stats --format text "$mnt" >"$tmp/text2"
check "the text format as before (and with --format text)" eval \
  'grep -q "^fs.lookups [0-9]" "$tmp/text1" &&
   grep -q "^s3.request_seconds{op=get,phase=total}.count [1-9]" "$tmp/text2"'
rc=0
"$FS" stats --format json "$mnt" >/dev/null 2>"$tmp/usage" || rc=$?
check "a bad --format: usage, exit 2" eval '[ "$rc" = 2 ] && grep -q "^usage:" "$tmp/usage"'

# node_exporter's textfile collector: written aside, renamed into place
tf=$tmp/textfile/s3rdmafs.prom
check "for node_exporter's textfile collector" eval \
  '"$FS" stats --format prometheus "$mnt" >"$tf.$$" && mv "$tf.$$" "$tf"'
check "  ... a whole file it parses" /usr/bin/python3 "$PROM" \
  --family s3rdmafs_s3_request_seconds:histogram <"$tf"
fs_umount "$mnt"
}
run_case daemon case_daemon

# ---- gateway: its stats page ----
case_gateway() {
gw_start "$tmp/gw"
printf 'x' | gw_aws s3 cp - "s3://$bucket/via-gw" >/dev/null
gprom=$tmp/gw.prom
check "gateway: /_s3rdma/stats?format=prometheus" eval \
  'curl -sf "$GW_ENDPOINT/_s3rdma/stats?format=prometheus" >"$gprom"'
check "  ... parsed: counters and its gauge" /usr/bin/python3 "$PROM" \
  --family s3rdma_gateway_requests:counter \
  --family s3rdma_gateway_rc_sessions:gauge \
  --positive s3rdma_gateway_requests_total <"$gprom"
check "  ... format=bogus: 400" eq status \
  "$(curl -s -o /dev/null -w '%{http_code}' "$GW_ENDPOINT/_s3rdma/stats?format=bogus")" 400
check "  ... the text page as before" grep -q "^requests [1-9]" \
  <<<"$(curl -sf "$GW_ENDPOINT/_s3rdma/stats")"
gw_stop
}
run_case gateway case_gateway

echo "# $((SECONDS - t0)) s"
summary
