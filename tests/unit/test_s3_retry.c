/*
 * test_s3_retry: s3_retry's policy, exactly: backoff bounds at both ends of the
 * random range, the cap and the throttle floor, the attempt limit, the time
 * budget, the quota's exhaustion and refill, and the idempotency rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <limits.h>
#include <pthread.h>

#include "s3/s3_retry.h"

#define RMAX UINT32_MAX

static uint32_t prng(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 11);
}

static void test_default_policy(void **state)
{
  struct s3_retry_policy p;

  (void)state;
  memset(&p, 0xff, sizeof(p));
  s3_retry_policy_default(&p);
  assert_int_equal(p.max_attempts, 5);
  assert_int_equal(p.base_ms, 100);
  assert_int_equal(p.max_backoff_ms, 5000);
  assert_int_equal(p.budget_ms, 30000);
}

/* ---- backoff ------------------------------------------------------------ */

static const struct backoff_case {
  unsigned base, cap;
  unsigned next_attempt;
  uint32_t rnd;
  bool throttled;
  unsigned want;
} backoff_cases[] = {
    /* no wait before the first attempt */
    {100, 5000, 0, RMAX, false, 0},
    {100, 5000, 1, RMAX, true, 0},
    /* full jitter: [0, base * 2^(next_attempt-2)] */
    {100, 5000, 2, 0, false, 0},
    {100, 5000, 2, RMAX, false, 100},
    {100, 5000, 2, RMAX / 2, false, 49},
    {100, 5000, 3, 0, false, 0},
    {100, 5000, 3, RMAX, false, 200},
    {100, 5000, 4, RMAX, false, 400},
    {100, 5000, 5, RMAX, false, 800},
    {100, 5000, 6, RMAX, false, 1600},
    {100, 5000, 7, RMAX, false, 3200},
    /* the cap */
    {100, 5000, 8, RMAX, false, 5000},
    {100, 5000, 8, 0, false, 0},
    {100, 5000, 33, RMAX, false, 5000},
    {100, 5000, 34, RMAX, false, 5000},
    {100, 5000, 1000, RMAX, false, 5000},
    {100, 5000, UINT_MAX, RMAX, false, 5000},
    /* throttle floor base/2, ceiling unchanged */
    {100, 5000, 2, 0, true, 50},
    {100, 5000, 2, RMAX, true, 100},
    {100, 5000, 5, 0, true, 50},
    {100, 5000, 5, RMAX, true, 800},
    {100, 5000, 20, 0, true, 50},
    {100, 5000, 20, RMAX, true, 5000},
    /* a cap below the floor: the cap wins */
    {100, 30, 2, 0, true, 30},
    {100, 30, 2, RMAX, true, 30},
    {100, 30, 4, RMAX, false, 30},
    /* degenerate and extreme policies do not overflow */
    {0, 5000, 5, RMAX, true, 0},
    {UINT_MAX, UINT_MAX, 2, RMAX, false, UINT_MAX},
    {UINT_MAX, UINT_MAX, 40, RMAX, true, UINT_MAX},
    {UINT_MAX, UINT_MAX, 40, 0, true, UINT_MAX / 2},
    {1, UINT_MAX, 33, RMAX, false, 1u << 31},
    {1, UINT_MAX, 34, RMAX, false, UINT_MAX},
};

static void test_backoff_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(backoff_cases) / sizeof(backoff_cases[0]);
       i++) {
    const struct backoff_case *c = &backoff_cases[i];
    struct s3_retry_policy p = {5, c->base, c->cap, 30000};
    unsigned got = s3_retry_backoff_ms(&p, c->next_attempt, c->rnd,
                                       c->throttled);

    if (got != c->want)
      fail_msg("case %zu: base %u cap %u attempt %u rnd %u thr %d: "
               "got %u want %u",
               i, c->base, c->cap, c->next_attempt, c->rnd, c->throttled, got,
               c->want);
  }
}

/* Every draw lies within [floor, min(cap, base * 2^(n-2))]. */
static void test_backoff_bounds(void **state)
{
  struct s3_retry_policy p;
  uint64_t seed = 0x9e3779b97f4a7c15ull;

  (void)state;
  s3_retry_policy_default(&p);
  for (unsigned n = 2; n <= 40; n++) {
    uint64_t hi = n - 2 >= 32 ? UINT64_MAX : (uint64_t)p.base_ms << (n - 2);

    if (hi > p.max_backoff_ms)
      hi = p.max_backoff_ms;
    for (int k = 0; k < 1000; k++) {
      uint32_t r = prng(&seed);
      unsigned d = s3_retry_backoff_ms(&p, n, r, false);
      unsigned t = s3_retry_backoff_ms(&p, n, r, true);

      assert_true(d <= hi);
      assert_true(t >= p.base_ms / 2 && t <= hi);
    }
    /* monotonic in rnd */
    assert_true(s3_retry_backoff_ms(&p, n, 1000, false) <=
                s3_retry_backoff_ms(&p, n, 2000000000u, false));
  }
}

/* ---- quota -------------------------------------------------------------- */

static void test_quota_defaults(void **state)
{
  struct s3_retry_quota q;

  (void)state;
  s3_retry_quota_init(&q, 0);
  assert_int_equal(q.capacity, 500);
  assert_int_equal(q.tokens, 500);
  assert_int_equal(q.retry_cost, 5);
  assert_int_equal(q.timeout_cost, 10);
  assert_int_equal(q.success_refund, 1);
  s3_retry_quota_cleanup(&q);
  s3_retry_quota_init(&q, 42);
  assert_int_equal(q.capacity, 42);
  assert_int_equal(q.tokens, 42);
  s3_retry_quota_cleanup(&q);
  s3_retry_quota_cleanup(NULL);
}

static void test_quota_exhaust_refill(void **state)
{
  struct s3_retry_quota q;
  int n = 0;

  (void)state;
  s3_retry_quota_init(&q, 500);
  while (s3_retry_quota_take(&q, false))
    n++;
  assert_int_equal(n, 100);             /* 500 / 5 */
  assert_int_equal(q.tokens, 0);
  assert_false(s3_retry_quota_take(&q, true));
  /* four successes are not enough for one retry, five are */
  for (int i = 0; i < 4; i++)
    s3_retry_quota_success(&q);
  assert_false(s3_retry_quota_take(&q, false));
  s3_retry_quota_success(&q);
  assert_true(s3_retry_quota_take(&q, false));
  assert_int_equal(q.tokens, 0);
  /* a timeout costs 10 */
  for (int i = 0; i < 9; i++)
    s3_retry_quota_success(&q);
  assert_false(s3_retry_quota_take(&q, true));
  assert_true(s3_retry_quota_take(&q, false));   /* 9 >= 5 */
  assert_int_equal(q.tokens, 4);
  for (int i = 0; i < 6; i++)
    s3_retry_quota_success(&q);
  assert_true(s3_retry_quota_take(&q, true));
  assert_int_equal(q.tokens, 0);
  /* refill stops at the capacity */
  for (int i = 0; i < 2000; i++)
    s3_retry_quota_success(&q);
  assert_int_equal(q.tokens, 500);
  /* a bigger refund is clamped too */
  q.success_refund = 7;
  assert_true(s3_retry_quota_take(&q, false));
  s3_retry_quota_success(&q);
  assert_int_equal(q.tokens, 500);
  s3_retry_quota_cleanup(&q);
  /* no quota at all: always allowed */
  assert_true(s3_retry_quota_take(NULL, true));
  s3_retry_quota_success(NULL);
}

struct hammer {
  struct s3_retry_quota *q;
  int taken;
};

static void *hammer_thread(void *arg)
{
  struct hammer *h = arg;

  for (int i = 0; i < 20000; i++) {
    if (s3_retry_quota_take(h->q, i % 3 == 0))
      h->taken++;
    if (i % 2)
      s3_retry_quota_success(h->q);
  }
  return NULL;
}

/* Concurrent takes and refunds keep the count consistent. */
static void test_quota_threads(void **state)
{
  struct s3_retry_quota q;
  struct hammer h[4];
  pthread_t t[4];

  (void)state;
  s3_retry_quota_init(&q, 100);
  for (int i = 0; i < 4; i++) {
    h[i].q = &q;
    h[i].taken = 0;
    assert_int_equal(pthread_create(&t[i], NULL, hammer_thread, &h[i]), 0);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  assert_true(q.tokens <= q.capacity);
  /* 4 * 10000 refunds of 1 plus 100 initial bound what was spent: each
     take costs >= 5 */
  assert_true((h[0].taken + h[1].taken + h[2].taken + h[3].taken) * 5 <=
              4 * 10000 + 100);
  s3_retry_quota_cleanup(&q);
}

/* ---- decide ------------------------------------------------------------- */

#define NO S3_RETRY_NO
#define YES S3_RETRY_YES

static const struct decide_case {
  const char *name;
  struct s3_retry_ctx c;
  uint32_t rnd;
  int want;
  unsigned want_delay;
  unsigned want_tokens;  /* left in a 500 quota */
} decide_cases[] = {
    /* attempt, elapsed, idempotent, retryable, before_send, throttled, tmo,
       failover */
    {"idempotent retryable", {1, 0, true, true, false, false, false, false},
     RMAX, YES, 100, 495},
    {"rnd 0 waits nothing", {1, 0, true, true, false, false, false, false},
     0, YES, 0, 495},
    {"not retryable", {1, 0, true, false, true, false, false, false},
     RMAX, NO, 0, 500},
    {"POST after send", {1, 0, false, true, false, false, false, false},
     RMAX, NO, 0, 500},
    {"POST before send", {1, 0, false, true, true, false, false, false},
     RMAX, YES, 100, 495},
    {"POST throttled before send", {2, 0, false, true, true, true, false, false},
     0, YES, 50, 495},
    {"throttle floor", {1, 0, true, true, true, true, false, false},
     0, YES, 50, 495},
    {"timeout costs more", {1, 0, true, true, false, false, true, false},
     RMAX, YES, 100, 490},
    {"4th attempt", {4, 0, true, true, false, false, false, false},
     RMAX, YES, 800, 495},
    {"max attempts reached", {5, 0, true, true, false, false, false, false},
     RMAX, NO, 0, 500},
    {"past max attempts", {9, 0, true, true, false, false, false, false},
     0, NO, 0, 500},
    {"budget spent", {1, 30000, true, true, false, false, false, false},
     0, NO, 0, 500},
    {"budget overspent", {1, 90000, true, true, true, true, false, false},
     0, NO, 0, 500},
    {"wait would end at budget", {1, 29900, true, true, false, false, false, false},
     RMAX, NO, 0, 500},
    {"wait ends before budget", {1, 29900, true, true, false, false, false, false},
     RMAX / 2, YES, 49, 495},
    {"no wait fits", {1, 29999, true, true, false, false, false, false},
     0, YES, 0, 495},
    /* another server is up: there at once, past the budget, uncharged */
    {"failover past budget", {1, 90000, true, true, false, false, true, true},
     RMAX, YES, 0, 500},
    {"failover, attempts spent", {5, 0, true, true, false, false, true, true},
     0, NO, 0, 500},
    {"failover of a POST sent", {1, 0, false, true, false, false, true, true},
     0, NO, 0, 500},
};

static void test_decide_table(void **state)
{
  struct s3_retry_policy p;

  (void)state;
  s3_retry_policy_default(&p);
  for (size_t i = 0; i < sizeof(decide_cases) / sizeof(decide_cases[0]);
       i++) {
    const struct decide_case *dc = &decide_cases[i];
    struct s3_retry_quota q;
    unsigned delay = 12345;
    int v;

    s3_retry_quota_init(&q, 500);
    v = s3_retry_decide(&p, &q, &dc->c, dc->rnd, &delay);
    if (v != dc->want || delay != dc->want_delay ||
        q.tokens != dc->want_tokens)
      fail_msg("%s: verdict %d delay %u tokens %u, want %d %u %u", dc->name,
               v, delay, q.tokens, dc->want, dc->want_delay,
               dc->want_tokens);
    s3_retry_quota_cleanup(&q);
  }
}

static void test_decide_quota_exhausted(void **state)
{
  struct s3_retry_policy p;
  struct s3_retry_quota q;
  struct s3_retry_ctx c = {1, 0, true, true, true, false, false, false};
  unsigned delay;

  (void)state;
  s3_retry_policy_default(&p);
  s3_retry_quota_init(&q, 12);
  assert_int_equal(s3_retry_decide(&p, &q, &c, RMAX, &delay), YES);
  assert_int_equal(s3_retry_decide(&p, &q, &c, RMAX, &delay), YES);
  assert_int_equal(q.tokens, 2);
  assert_int_equal(s3_retry_decide(&p, &q, &c, RMAX, &delay), NO);
  assert_int_equal(delay, 0);
  assert_int_equal(q.tokens, 2);
  for (int i = 0; i < 3; i++)
    s3_retry_quota_success(&q);
  assert_int_equal(s3_retry_decide(&p, &q, &c, RMAX, &delay), YES);
  assert_int_equal(delay, 100);
  /* without a quota only the policy limits */
  assert_int_equal(s3_retry_decide(&p, NULL, &c, RMAX, &delay), YES);
  s3_retry_quota_cleanup(&q);
}

/*
 * Simulated requests that fail every time, with random waits and attempt
 * durations: never more than max_attempts, no attempt starts at or past the
 * budget, every wait within its bounds.
 */
static void test_never_past_budget(void **state)
{
  uint64_t seed = 12345;

  (void)state;
  for (int run = 0; run < 5000; run++) {
    struct s3_retry_policy p;
    struct s3_retry_ctx c = {0};
    unsigned delay;

    s3_retry_policy_default(&p);
    p.max_attempts = 1 + prng(&seed) % 12;
    p.budget_ms = 1000 + prng(&seed) % 40000;
    c.idempotent = true;
    c.retryable = true;
    c.throttled = prng(&seed) & 1;
    for (;;) {
      uint64_t start = c.elapsed_ms;

      assert_true(start < p.budget_ms || c.attempt == 0);
      c.attempt++;
      c.elapsed_ms += prng(&seed) % 8000;     /* the attempt itself */
      if (s3_retry_decide(&p, NULL, &c, prng(&seed), &delay) == NO)
        break;
      assert_true(delay <= p.max_backoff_ms);
      assert_true(c.elapsed_ms + delay < p.budget_ms);
      c.elapsed_ms += delay;
    }
    assert_true(c.attempt >= 1 && c.attempt <= p.max_attempts);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_policy),
      cmocka_unit_test(test_backoff_table),
      cmocka_unit_test(test_backoff_bounds),
      cmocka_unit_test(test_quota_defaults),
      cmocka_unit_test(test_quota_exhaust_refill),
      cmocka_unit_test(test_quota_threads),
      cmocka_unit_test(test_decide_table),
      cmocka_unit_test(test_decide_quota_exhausted),
      cmocka_unit_test(test_never_past_budget),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
