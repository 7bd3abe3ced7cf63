/*
 * stats_prom: a stats text (stats_fmt's "name value" lines, and
 * stats_hist's rows) in Prometheus's text exposition format 0.0.4, for
 * `s3rdmafs stats --format prometheus` and the gateway's
 * /_s3rdma/stats?format=prometheus (and so node_exporter's textfile
 * collector):
 *
 *   a.b_c 12              -> # TYPE PREFIX_a_b_c_total counter
 *                            PREFIX_a_b_c_total 12
 *   (a gauge, by name)    -> # TYPE PREFIX_a_b_c gauge ...
 *   a.b text              -> # TYPE PREFIX_a_b_info gauge
 *                            PREFIX_a_b_info{value="text"} 1
 *   h{op=get}.bucket.le_0.5 3, .sum 1.2, .count 4
 *                         -> # TYPE PREFIX_h histogram
 *                            PREFIX_h_bucket{op="get",le="0.5"} 3 ...
 *
 * Characters a metric name cannot hold become '_'; a label value is
 * escaped. Pure: no state but the caller's buffers.
 */
#ifndef S3R_STATS_PROM_H
#define S3R_STATS_PROM_H

#include <stddef.h>

/*
 * text (NUL-terminated) into out (len bytes, kept NUL-terminated);
 * prefix like "s3rdmafs"; gauges: NULL-terminated names that are gauges
 * (the rest are counters), each exact or ending in '*' (a prefix). Returns
 * the length written, or -ENOSPC when out is too small (out then holds
 * what fitted), -EINVAL for a line that is not "name value".
 */
long stats_prom(const char *text, const char *prefix,
                const char *const *gauges, char *out, size_t len);

#endif
