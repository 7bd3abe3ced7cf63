/*
 * s3_retry: when and how long to wait before trying a request again.
 * Pure logic (the caller passes the random numbers and clock), so the policy
 * is unit-tested exactly.
 *
 * Per request: at most max_attempts attempts, and no new attempt once
 * budget_ms has elapsed since the first one started. Backoff is "full jitter":
 * uniform in [0, min(max_backoff_ms, base_ms * 2^(attempt-1))], with a floor
 * of base_ms/2 for throttling replies so a SlowDown always slows us down.
 * Per client: a retry quota (token bucket, as AWS SDKs do): each retry costs
 * retry_cost tokens (timeouts cost timeout_cost), each success refunds
 * success_refund up to the capacity; when the bucket cannot pay, no retry, so
 * a dead server is not hammered by every request at once.
 * Only safe retries: idempotent requests on any retryable error (and
 * those marked so: a completion, settled by looking; a
 * CreateMultipartUpload, its orphan said); another POST only when the
 * failure happened before the server could act.
 */
#ifndef S3R_S3_RETRY_H
#define S3R_S3_RETRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct s3_retry_policy {
  unsigned max_attempts;    /* including the first; default 5 */
  unsigned base_ms;         /* default 100 */
  unsigned max_backoff_ms;  /* default 5000 */
  unsigned budget_ms;       /* default 30000 */
};

void s3_retry_policy_default(struct s3_retry_policy *p);

/*
 * Backoff before attempt number next_attempt (2 = first retry), given a
 * uniform random 32-bit value rnd. throttled: the error was a throttle.
 */
unsigned s3_retry_backoff_ms(const struct s3_retry_policy *p,
                             unsigned next_attempt, uint32_t rnd,
                             bool throttled);

struct s3_retry_quota {
  pthread_mutex_t lock;
  unsigned capacity;        /* default 500 */
  unsigned tokens;          /* protected by lock */
  unsigned retry_cost;      /* default 5 */
  unsigned timeout_cost;    /* default 10 */
  unsigned success_refund;  /* default 1 */
};

void s3_retry_quota_init(struct s3_retry_quota *q, unsigned capacity);
void s3_retry_quota_cleanup(struct s3_retry_quota *q);
/* Take the cost of one retry; false when the quota is exhausted. */
bool s3_retry_quota_take(struct s3_retry_quota *q, bool timeout);
void s3_retry_quota_success(struct s3_retry_quota *q);

enum s3_retry_verdict {
  S3_RETRY_NO = 0,
  S3_RETRY_YES,
};

struct s3_retry_ctx {
  unsigned attempt;         /* attempts made so far (>= 1) */
  uint64_t elapsed_ms;      /* since the first attempt started */
  bool idempotent;
  bool retryable;           /* from s3_err_map */
  bool before_send;         /* from s3_err_map */
  bool throttled;
  bool timeout;
  bool failover;            /* the attempt's server failed it and another
                               is up: the retry goes there */
};

/*
 * Decide. On S3_RETRY_YES *delay_ms is the wait, the quota has been charged,
 * and the delay never takes the request past budget_ms. A failover (still
 * within max_attempts) goes at once, past the budget (one server that
 * hangs can spend all of it) and uncharged (the quota keeps retries off a
 * sick server; this one goes to another).
 */
enum s3_retry_verdict s3_retry_decide(const struct s3_retry_policy *p,
                                      struct s3_retry_quota *q,
                                      const struct s3_retry_ctx *c,
                                      uint32_t rnd, unsigned *delay_ms);

#endif
