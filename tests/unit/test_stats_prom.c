/*
 * stats_prom and stats_hist: a stats text in Prometheus's text format
 * (counters with _total, gauges by name, text as an info gauge, labelled
 * and plain histograms with cumulative buckets), names and label values
 * made safe, a buffer too small and a bad line reported.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/stats_hist.h"
#include "common/stats_prom.h"

static void assert_has(const char *text, const char *want)
{
  if (!strstr(text, want))
    fail_msg("missing \"%s\" in:\n%s", want, text);
}

static void test_counters_gauges_text(void **state)
{
  static const char *const gauges[] = {"fs.inodes", "cache.chunks_*", NULL};
  const char *in = "fs.lookups 12\n"
                   "fs.inodes 3\n"
                   "cache.chunks_used 7\n"
                   "s3.errors.no-such-key 1\n"
                   "rdma.transport cma (auto; \"x\")\n"
                   "odd.hex 0x10\n"
                   "odd.exp 1.5e3\n";
  char out[4096];
  long n;

  (void)state;
  n = stats_prom(in, "s3rdmafs", gauges, out, sizeof(out));
  assert_true(n > 0);
  assert_int_equal((size_t)n, strlen(out));
  assert_has(out, "# TYPE s3rdmafs_fs_lookups_total counter\n"
                  "s3rdmafs_fs_lookups_total 12\n");
  assert_has(out, "# TYPE s3rdmafs_fs_inodes gauge\ns3rdmafs_fs_inodes 3\n");
  assert_has(out, "# TYPE s3rdmafs_cache_chunks_used gauge\n");
  assert_has(out, "s3rdmafs_s3_errors_no_such_key_total 1\n");
  assert_has(out, "# TYPE s3rdmafs_rdma_transport_info gauge\n"
                  "s3rdmafs_rdma_transport_info{value=\"cma (auto; "
                  "\\\"x\\\")\"} 1\n");
  /* hex is text to the format (its parsers refuse 0x10 as a value) */
  assert_has(out, "s3rdmafs_odd_hex_info{value=\"0x10\"} 1\n");
  assert_has(out, "s3rdmafs_odd_exp_total 1.5e3\n");
}

static void test_histograms(void **state)
{
  struct stats_hist h;
  char text[4096], out[8192];
  size_t off;
  long n;

  (void)state;
  memset(&h, 0, sizeof(h));
  stats_hist_add(&h, 500);      /* <= 1 ms */
  stats_hist_add(&h, 1000);     /* <= 1 ms (bounds are inclusive) */
  stats_hist_add(&h, 7000);     /* <= 10 ms */
  stats_hist_add(&h, 60000000); /* above every bound: +Inf only */
  off = stats_hist_format(&h, "s3.request_seconds", "op=get,phase=total",
                          text, sizeof(text), 0);
  off = stats_hist_format(&h, "s3.request_seconds", "op=put,phase=total",
                          text, sizeof(text), off);
  off = stats_hist_format(&h, "plain", "", text, sizeof(text), off);
  assert_true(off < sizeof(text) - 1);
  assert_has(text, "s3.request_seconds{op=get,phase=total}.bucket.le_0.001 2\n");
  assert_has(text, "s3.request_seconds{op=get,phase=total}.bucket.le_0.01 3\n");
  assert_has(text, "s3.request_seconds{op=get,phase=total}.bucket.le_30 3\n");
  assert_has(text, "s3.request_seconds{op=get,phase=total}.bucket.le_+Inf 4\n");
  assert_has(text, "s3.request_seconds{op=get,phase=total}.count 4\n");
  assert_has(text, "s3.request_seconds{op=get,phase=total}.sum 60.008500\n");
  n = stats_prom(text, "s3rdmafs", NULL, out, sizeof(out));
  assert_true(n > 0);
  /* one TYPE line for the family, whatever its labels */
  assert_has(out, "# TYPE s3rdmafs_s3_request_seconds histogram\n");
  assert_null(strstr(strstr(out, "histogram") + 1,
                     "# TYPE s3rdmafs_s3_request_seconds histogram"));
  assert_has(out, "s3rdmafs_s3_request_seconds_bucket{op=\"get\",phase="
                  "\"total\",le=\"0.001\"} 2\n");
  assert_has(out, "s3rdmafs_s3_request_seconds_bucket{op=\"put\",phase="
                  "\"total\",le=\"+Inf\"} 4\n");
  assert_has(out, "s3rdmafs_s3_request_seconds_sum{op=\"get\",phase="
                  "\"total\"} 60.008500\n");
  assert_has(out, "s3rdmafs_s3_request_seconds_count{op=\"put\",phase="
                  "\"total\"} 4\n");
  /* without labels: .sum and .count belong to the histogram */
  assert_has(out, "# TYPE s3rdmafs_plain histogram\n");
  assert_has(out, "s3rdmafs_plain_bucket{le=\"0.0025\"} 2\n");
  assert_has(out, "s3rdmafs_plain_sum 60.008500\n");
  assert_has(out, "s3rdmafs_plain_count 4\n");
  assert_null(strstr(out, "plain_count_total"));
}

static void test_bad_and_small(void **state)
{
  char out[64];

  (void)state;
  assert_int_equal(stats_prom("novalue\n", "p", NULL, out, sizeof(out)),
                   -EINVAL);
  assert_int_equal(stats_prom(" 5\n", "p", NULL, out, sizeof(out)), -EINVAL);
  assert_int_equal(stats_prom("a{x=1 5\n", "p", NULL, out, sizeof(out)),
                   -EINVAL);
  assert_int_equal(stats_prom("a.very.long.counter.name 123456\n", "p",
                              NULL, out, 40),
                   -ENOSPC);
  assert_true(strlen(out) < 40); /* what fitted, whole lines */
  assert_int_equal(stats_prom("", "p", NULL, out, sizeof(out)), 0);
  assert_string_equal(out, "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counters_gauges_text),
      cmocka_unit_test(test_histograms),
      cmocka_unit_test(test_bad_and_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
