/*
 * stats_hist: a latency histogram any thread adds to without a lock
 * (atomic buckets), printed as rows of the stats text that
 * stats_prom turns into a Prometheus histogram:
 *
 *   NAME{LABELS}.bucket.le_0.001 N      (cumulative, as Prometheus)
 *   ...
 *   NAME{LABELS}.bucket.le_+Inf N
 *   NAME{LABELS}.sum 0.123456           (seconds)
 *   NAME{LABELS}.count N
 *
 * The buckets are fixed (1 ms to 30 s, roughly 2.5x apart): what one S3
 * request takes on a LAN or a WAN.
 */
#ifndef S3R_STATS_HIST_H
#define S3R_STATS_HIST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_HIST_NB 14 /* finite upper bounds; +Inf is count */

struct stats_hist {
  _Atomic uint64_t le[STATS_HIST_NB]; /* observations in (prev, bound] */
  _Atomic uint64_t sum_us;
  _Atomic uint64_t count;
};

/* The upper bound of bucket i, in microseconds. */
uint64_t stats_hist_bound_us(size_t i);
/* One observation of us microseconds. */
void stats_hist_add(struct stats_hist *h, uint64_t us);
/*
 * h as rows (see above) appended at buf+off (len in all); name is the
 * metric's stats name, labels "" or "op=get,phase=total". Returns the new
 * offset (truncated as stats_fmt_rows does).
 */
size_t stats_hist_format(const struct stats_hist *h, const char *name,
                         const char *labels, char *buf, size_t len,
                         size_t off);

#endif
