/*
 * gw_pipe: a bounded byte pipe between two threads (the connection thread
 * and the upstream worker of one request): one producer pushes, one
 * consumer pulls, both block (with a timeout) when full / empty.
 *
 * DESIGN (threads): every field is protected by mu; the producer waits on
 * cv for room, the consumer on cv for data (one condition: there is only
 * ever one waiter on each side).
 */
#ifndef S3R_GW_PIPE_H
#define S3R_GW_PIPE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct gw_pipe {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *buf;       /* protected by mu */
  size_t cap, head, len; /* protected by mu */
  bool eof;        /* producer is done; protected by mu */
  int err;         /* aborted: negative errno for both sides; protected by mu */
  unsigned timeout_s;
};

/* Returns 0 or -ENOMEM. cap bytes of buffer. */
int gw_pipe_init(struct gw_pipe *p, size_t cap, unsigned timeout_s)
    __attribute__((warn_unused_result));
void gw_pipe_cleanup(struct gw_pipe *p);

/*
 * Push all n bytes (blocking while full). Returns 0, the abort error, or
 * -ETIMEDOUT when no room came for timeout_s.
 */
int gw_pipe_push(struct gw_pipe *p, const void *data, size_t n);
/*
 * Pull up to max bytes (blocking while empty). Returns the count (> 0), 0 at
 * end of stream, the abort error, or -ETIMEDOUT.
 */
long gw_pipe_pull(struct gw_pipe *p, void *out, size_t max);
/* The producer is done (no-op after abort). */
void gw_pipe_close(struct gw_pipe *p);
/* Abort both sides with err (< 0); the first error sticks. */
void gw_pipe_abort(struct gw_pipe *p, int err);

#endif
