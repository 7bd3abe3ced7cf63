/* stats_hist: see stats_hist.h. */
#include "common/stats_hist.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/stats_fmt.h"

static const uint64_t bounds_us[STATS_HIST_NB] = {
    1000,    2500,    5000,    10000,   25000,    50000,    100000,
    250000,  500000,  1000000, 2500000, 5000000, 10000000, 30000000};

uint64_t stats_hist_bound_us(size_t i)
{
  return i < STATS_HIST_NB ? bounds_us[i] : UINT64_MAX;
}

void stats_hist_add(struct stats_hist *h, uint64_t us)
{
  size_t i = 0;

  while (i < STATS_HIST_NB && us > bounds_us[i])
    i++;
  if (i < STATS_HIST_NB)
    atomic_fetch_add_explicit(&h->le[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

size_t stats_hist_format(const struct stats_hist *h, const char *name,
                         const char *labels, char *buf, size_t len,
                         size_t off)
{
  uint64_t cum = 0, count, sum;
  const char *lb = labels && *labels ? "{" : "";
  const char *le = labels && *labels ? "}" : "";

  labels = labels ? labels : "";
  /* count first: an observation racing the printing lands in +Inf rather
     than making a bucket exceed the count */
  count = atomic_load_explicit(&h->count, memory_order_relaxed);
  sum = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
  for (size_t i = 0; i < STATS_HIST_NB; i++) {
    cum += atomic_load_explicit(&h->le[i], memory_order_relaxed);
    if (cum > count)
      cum = count;
    off = stats_fmt_line(buf, len, off, "%s%s%s%s.bucket.le_%g %" PRIu64 "\n",
                         name, lb, labels, le, (double)bounds_us[i] / 1e6,
                         cum);
  }
  off = stats_fmt_line(buf, len, off, "%s%s%s%s.bucket.le_+Inf %" PRIu64 "\n",
                       name, lb, labels, le, count);
  off = stats_fmt_line(buf, len, off, "%s%s%s%s.sum %.6f\n", name, lb, labels,
                       le, (double)sum / 1e6);
  return stats_fmt_line(buf, len, off, "%s%s%s%s.count %" PRIu64 "\n", name,
                        lb, labels, le, count);
}
