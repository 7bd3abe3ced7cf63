/*
 * ep_health, the choice among servers and their spells, on a clock of the
 * test's: ties in turn, the fewest in flight first; three failures take a
 * server out for 1 s; attempts already on their way when it died fail
 * without lengthening its spell; a failed probe doubles it (to 30 s at
 * most); an answer brings it back with the spell reset; every server down:
 * the one back soonest, its failure counted as a probe's; one server
 * alone never out; the stats rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/ep_health.h"

static const char *const names[] = {"http://a", "http://b", "http://c"};

static void test_spread_and_fewest(void **state)
{
  struct ep_health v[3];
  unsigned turn = 0, i, seen[3] = {0};
  enum ep_try how;

  (void)state;
  ep_health_init(v, 3, names);
  for (int k = 0; k < 6; k++) { /* one at a time: in turn */
    i = ep_health_pick(v, 3, &turn, 0, &how);
    assert_int_equal(how, EP_TRY_UP);
    seen[i]++;
    ep_health_end(v, 3, i, how, false, 10, 0);
  }
  assert_int_equal(seen[0], 2);
  assert_int_equal(seen[1], 2);
  assert_int_equal(seen[2], 2);
  /* two held on a and b: the next goes to c */
  v[0].inflight = v[1].inflight = 1;
  i = ep_health_pick(v, 3, &turn, 0, &how);
  assert_int_equal(i, 2);
  assert_int_equal(atomic_load(&v[0].bytes) + atomic_load(&v[1].bytes) +
                       atomic_load(&v[2].bytes), 60);
  /* passing over those that failed the request, while another is up */
  v[0].inflight = v[1].inflight = v[2].inflight = 0;
  assert_int_equal(ep_health_pick(v, 3, &turn, 3u, &how), 2);
  v[2].inflight = 0;
  /* every one up failed it: in turn again, the least loaded first */
  i = ep_health_pick(v, 3, &turn, 7u, &how);
  v[i].inflight = 0;
  assert_int_not_equal(ep_health_pick(v, 3, &turn, 7u, &how), i);
  v[0].inflight = v[1].inflight = 1;
  v[2].inflight = 0;
  assert_int_equal(ep_health_pick(v, 3, &turn, 7u, &how), 2);
}

static void test_stragglers_start_no_spell(void **state)
{
  struct ep_health v[2];
  unsigned turn = 0, i;
  enum ep_try how[12];
  unsigned on_a[12], n = 0;

  (void)state;
  ep_health_init(v, 2, names);
  for (int k = 0; k < 24; k++) { /* 12 in flight on each */
    enum ep_try h;
    i = ep_health_pick(v, 2, &turn, 0, &h);
    if (i == 0) {
      how[n] = h;
      on_a[n++] = i;
    }
  }
  assert_int_equal(n, 12);
  /* a dies at t=1000: all 12 of its attempts fail */
  for (unsigned k = 0; k < n; k++)
    assert_true(ep_health_end(v, 2, on_a[k], how[k], true, 0, 1000));
  assert_int_equal(atomic_load(&v[0].failures), 12);
  assert_int_equal(atomic_load(&v[0].downs), 1);
  assert_int_equal(v[0].down_until_ms, 2000); /* 1 s, not 30 */
  /* no probe due before the spell's end, one at it */
  uint64_t next = 5000;
  assert_false(ep_health_probe_due(&v[0], 1500, &next));
  assert_int_equal(next, 2000);
  assert_true(ep_health_probe_due(&v[0], 2000, &next));
  /* the probe fails: 2 s; the next fails: 4 s */
  ep_health_take(&v[0]);
  assert_false(ep_health_probe_due(&v[0], 2000, &next)); /* one out */
  ep_health_end(v, 2, 0, EP_TRY_PROBE, true, 0, 2000);
  assert_int_equal(v[0].down_until_ms, 4000);
  ep_health_take(&v[0]);
  ep_health_end(v, 2, 0, EP_TRY_PROBE, true, 0, 4000);
  assert_int_equal(v[0].down_until_ms, 8000);
  assert_int_equal(atomic_load(&v[0].failures), 12); /* probes apart */
  assert_int_equal(atomic_load(&v[0].probes), 2);
  /* while down, nothing picks it */
  for (int k = 0; k < 4; k++) {
    enum ep_try h;
    i = ep_health_pick(v, 2, &turn, 0, &h);
    assert_int_equal(i, 1);
  }
  /* a probe answers: up, the spell back to 1 s */
  ep_health_take(&v[0]);
  assert_false(ep_health_end(v, 2, 0, EP_TRY_PROBE, false, 0, 8000));
  assert_int_equal(v[0].down_until_ms, 0);
  assert_int_equal(v[0].backoff_ms, 1000);
  assert_false(atomic_load(&v[0].down));
}

static void test_all_down(void **state)
{
  struct ep_health v[2];
  unsigned turn = 0, i;
  enum ep_try h;

  (void)state;
  ep_health_init(v, 2, names);
  for (unsigned s = 0; s < 2; s++)
    for (int k = 0; k < 3; k++) {
      v[s].inflight++;
      ep_health_end(v, 2, s, EP_TRY_UP, true, 0, s ? 500 : 0);
    }
  assert_int_equal(v[0].down_until_ms, 1000);
  assert_int_equal(v[1].down_until_ms, 1500);
  /* both down: the one back soonest, as a try while down */
  i = ep_health_pick(v, 2, &turn, 0, &h);
  assert_int_equal(i, 0);
  assert_int_equal(h, EP_TRY_DOWN);
  assert_true(v[0].probing);
  assert_false(ep_health_end(v, 2, 0, h, true, 0, 1200));
  assert_int_equal(v[0].down_until_ms, 3200); /* its spell doubled */
  assert_false(v[0].probing);
}

static void test_alone_and_rows(void **state)
{
  struct ep_health v[1];
  unsigned turn = 0;
  enum ep_try h;
  char buf[1024];
  size_t n;

  (void)state;
  ep_health_init(v, 1, names);
  for (int k = 0; k < 10; k++) {
    assert_int_equal(ep_health_pick(v, 1, &turn, 1u, &h), 0);
    assert_false(ep_health_end(v, 1, 0, h, true, 0, 0));
  }
  assert_int_equal(v[0].down_until_ms, 0); /* never out */
  assert_int_equal(atomic_load(&v[0].failures), 10);
  n = ep_health_format(v, 1, "x", "e", buf, sizeof(buf), 0);
  assert_int_equal(n, 0); /* no rows for one */

  struct ep_health w[2];
  ep_health_init(w, 2, names);
  n = ep_health_format(w, 2, "s3.endpoint", "endpoint", buf, sizeof(buf), 0);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "s3.endpoint_up{endpoint=1} 1\n"));
  assert_non_null(strstr(buf, "s3.endpoint_probes{endpoint=0} 0\n"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spread_and_fewest),
      cmocka_unit_test(test_stragglers_start_no_spell),
      cmocka_unit_test(test_all_down),
      cmocka_unit_test(test_alone_and_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
