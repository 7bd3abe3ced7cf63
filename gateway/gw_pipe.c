/*
 * gw_pipe: bounded byte pipe (see gw_pipe.h for the threading).
 */
#include "gateway/gw_pipe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

int gw_pipe_init(struct gw_pipe *p, size_t cap, unsigned timeout_s)
{
  memset(p, 0, sizeof(*p));
  p->buf = malloc(cap);
  if (!p->buf)
    return -ENOMEM;
  p->cap = cap;
  p->timeout_s = timeout_s ? timeout_s : 120;
  pthread_mutex_init(&p->mu, NULL);
  clock_cond_init(&p->cv);
  return 0;
}

void gw_pipe_cleanup(struct gw_pipe *p)
{
  if (!p->buf)
    return;
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p->buf);
  p->buf = NULL;
}

int gw_pipe_push(struct gw_pipe *p, const void *data, size_t n)
{
  const char *d = data;
  struct timespec ts;
  int rc = 0;

  pthread_mutex_lock(&p->mu);
  ts = clock_deadline((uint64_t)p->timeout_s * 1000);
  while (n > 0) {
    if (p->err) {
      rc = p->err;
      break;
    }
    if (p->len == p->cap) {
      if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT) {
        rc = -ETIMEDOUT;
        break;
      }
      continue;
    }
    size_t tail = (p->head + p->len) % p->cap;
    size_t room = p->cap - p->len;
    size_t k = n < room ? n : room;
    if (k > p->cap - tail)
      k = p->cap - tail;
    memcpy(p->buf + tail, d, k);
    p->len += k;
    d += k;
    n -= k;
    pthread_cond_broadcast(&p->cv);
    ts = clock_deadline((uint64_t)p->timeout_s * 1000);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

long gw_pipe_pull(struct gw_pipe *p, void *out, size_t max)
{
  struct timespec ts;
  long rc;

  pthread_mutex_lock(&p->mu);
  ts = clock_deadline((uint64_t)p->timeout_s * 1000);
  for (;;) {
    if (p->err) {
      rc = p->err;
      break;
    }
    if (p->len > 0) {
      size_t k = max < p->len ? max : p->len;
      if (k > p->cap - p->head)
        k = p->cap - p->head;
      memcpy(out, p->buf + p->head, k);
      p->head = (p->head + k) % p->cap;
      p->len -= k;
      pthread_cond_broadcast(&p->cv);
      rc = (long)k;
      break;
    }
    if (p->eof) {
      rc = 0;
      break;
    }
    if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT) {
      rc = -ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void gw_pipe_close(struct gw_pipe *p)
{
  pthread_mutex_lock(&p->mu);
  p->eof = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void gw_pipe_abort(struct gw_pipe *p, int err)
{
  pthread_mutex_lock(&p->mu);
  if (!p->err)
    p->err = err;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}
