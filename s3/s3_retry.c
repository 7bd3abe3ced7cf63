/*
 * s3_retry: see s3_retry.h for the policy.
 *
 * DESIGN. Policy functions are pure. The quota is shared by every request of
 * a client, on any thread: its token count is protected by q->lock, held
 * only for the arithmetic (no other lock is taken under it).
 *
 * Readings of the header worth stating:
 *  - the exponent counts retries: the first retry (next_attempt 2) waits up
 *    to base_ms, the second up to 2 * base_ms, ...;
 *  - jitter maps rnd linearly onto the closed interval, so rnd 0 gives the
 *    low end and rnd UINT32_MAX exactly the high end;
 *  - a throttle draws from [base_ms/2, ceiling] rather than clamping, so
 *    the waits stay spread out; when max_backoff_ms is below base_ms/2 the
 *    cap wins;
 *  - a retry whose wait would end at or after budget_ms is refused, since
 *    no attempt may start once the budget is spent;
 *  - the quota is charged last, only for a retry that will happen.
 */
#include "s3/s3_retry.h"

void s3_retry_policy_default(struct s3_retry_policy *p)
{
  p->max_attempts = 5;
  p->base_ms = 100;
  p->max_backoff_ms = 5000;
  p->budget_ms = 30000;
}

unsigned s3_retry_backoff_ms(const struct s3_retry_policy *p,
                             unsigned next_attempt, uint32_t rnd,
                             bool throttled)
{
  uint64_t hi, lo = 0;
  unsigned shift;

  if (next_attempt < 2)
    return 0;                   /* the first attempt does not wait */
  shift = next_attempt - 2;
  hi = shift >= 32 ? UINT64_MAX : (uint64_t)p->base_ms << shift;
  if (hi > p->max_backoff_ms)
    hi = p->max_backoff_ms;
  if (throttled)
    lo = p->base_ms / 2 < hi ? p->base_ms / 2 : hi;
  return (unsigned)(lo + (hi - lo) * rnd / UINT32_MAX);
}

void s3_retry_quota_init(struct s3_retry_quota *q, unsigned capacity)
{
  pthread_mutex_init(&q->lock, NULL);
  q->capacity = capacity ? capacity : 500;
  q->tokens = q->capacity;
  q->retry_cost = 5;
  q->timeout_cost = 10;
  q->success_refund = 1;
}

void s3_retry_quota_cleanup(struct s3_retry_quota *q)
{
  if (q)
    pthread_mutex_destroy(&q->lock);
}

bool s3_retry_quota_take(struct s3_retry_quota *q, bool timeout)
{
  unsigned cost;
  bool ok = false;

  if (!q)
    return true;                /* no quota: retries limited by policy only */
  pthread_mutex_lock(&q->lock);
  cost = timeout ? q->timeout_cost : q->retry_cost;
  if (q->tokens >= cost) {
    q->tokens -= cost;
    ok = true;
  }
  pthread_mutex_unlock(&q->lock);
  return ok;
}

void s3_retry_quota_success(struct s3_retry_quota *q)
{
  if (!q)
    return;
  pthread_mutex_lock(&q->lock);
  if (q->tokens < q->capacity &&
      q->capacity - q->tokens > q->success_refund)
    q->tokens += q->success_refund;
  else
    q->tokens = q->capacity;
  pthread_mutex_unlock(&q->lock);
}

enum s3_retry_verdict s3_retry_decide(const struct s3_retry_policy *p,
                                      struct s3_retry_quota *q,
                                      const struct s3_retry_ctx *c,
                                      uint32_t rnd, unsigned *delay_ms)
{
  unsigned d;

  *delay_ms = 0;
  if (!c->retryable)
    return S3_RETRY_NO;
  if (!c->idempotent && !c->before_send)
    return S3_RETRY_NO;         /* the server may have acted on it */
  if (c->attempt >= p->max_attempts)
    return S3_RETRY_NO;
  if (c->failover)
    return S3_RETRY_YES;
  if (c->elapsed_ms >= p->budget_ms)
    return S3_RETRY_NO;
  d = s3_retry_backoff_ms(p, c->attempt + 1, rnd, c->throttled);
  if (c->elapsed_ms + d >= p->budget_ms)
    return S3_RETRY_NO;
  if (!s3_retry_quota_take(q, c->timeout))
    return S3_RETRY_NO;
  *delay_ms = d;
  return S3_RETRY_YES;
}
