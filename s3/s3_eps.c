/* s3_eps: the client's endpoints and their health (design in s3_eps.h). */
#include "s3/s3_eps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/endpoint.h"
#include "common/slog.h"
#include "common/stats_fmt.h"
#include "s3/s3_i.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

static int parse_one(struct s3_ep *e, const char *url, size_t len, char *err,
                     size_t errlen)
{
  char *u = strndup(url, len);
  struct endpoint ep;
  const char *why;

  if (!u)
    return -ENOMEM;
  if (endpoint_parse(u, &ep, &why)) {
    snprintf(err, errlen, "endpoint '%s': %s", u, why);
    free(u);
    return -EINVAL;
  }
  e->url = strndup(u, (size_t)(ep.path + ep.path_len - u));
  e->scheme_host = strndup(u, (size_t)(ep.authority - u));
  e->host = strndup(ep.authority, ep.authority_len);
  e->base_path = strndup(ep.path, ep.path_len);
  free(u);
  e->backoff_ms = BACKOFF_MIN_MS;
  return e->url && e->scheme_host && e->host && e->base_path ? 0 : -ENOMEM;
}

int s3_eps_parse(struct s3_client *c, const char *list, char *err,
                 size_t errlen)
{
  const char *p = list, *url;
  unsigned n = 0;
  size_t len;
  int rc = 0;

  c->eps = calloc(S3_EPS_MAX, sizeof(*c->eps));
  if (!c->eps)
    return -ENOMEM;
  while (!rc && endpoint_list_next(&p, &url, &len)) {
    if (n == S3_EPS_MAX) {
      snprintf(err, errlen, "endpoint: more than %d URLs", S3_EPS_MAX);
      return -EINVAL;
    }
    rc = parse_one(&c->eps[n++], url, len, err, errlen);
  }
  c->n_eps = n;
  if (!rc && !n) {
    snprintf(err, errlen, "endpoint: not set");
    rc = -EINVAL;
  }
  for (unsigned i = 0; !rc && i < n; i++)
    for (unsigned j = 0; j < i; j++)
      if (!strcmp(c->eps[i].url, c->eps[j].url)) {
        snprintf(err, errlen, "endpoint '%s': listed twice", c->eps[i].url);
        rc = -EINVAL;
        break;
      }
  if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory");
  return rc;
}

void s3_eps_free(struct s3_client *c)
{
  for (unsigned i = 0; c->eps && i < S3_EPS_MAX; i++) {
    free(c->eps[i].url);
    free(c->eps[i].scheme_host);
    free(c->eps[i].host);
    free(c->eps[i].base_path);
  }
  free(c->eps);
  c->eps = NULL;
  c->n_eps = 0;
}

/* May endpoint e take an attempt now? Up, or down with its spell over and
   no probe out (the probe is the attempt). */
static bool usable(const struct s3_ep *e, uint64_t now_ms)
{
  return !e->down_until_ms || (now_ms >= e->down_until_ms && !e->probing);
}

int s3_eps_pick(struct s3_client *c, int avoid, uint64_t now_ms)
{
  int best = -1;

  if (c->n_eps == 1) {
    c->eps[0].inflight++;
    atomic_fetch_add(&c->eps[0].attempts, 1);
    return 0;
  }
  for (unsigned k = 0; k < c->n_eps; k++) {
    /* in turn from a moving start: ties go round */
    unsigned i = (c->ep_turn + k) % c->n_eps;
    const struct s3_ep *e = &c->eps[i];
    if ((int)i == avoid || !usable(e, now_ms))
      continue;
    if (best < 0 || e->inflight < c->eps[best].inflight)
      best = (int)i;
  }
  if (best < 0 && avoid >= 0 && usable(&c->eps[avoid], now_ms))
    best = avoid; /* the only one that may be tried */
  if (best < 0) { /* every one down: the one back soonest */
    best = 0;
    for (unsigned i = 1; i < c->n_eps; i++)
      if (c->eps[i].down_until_ms < c->eps[best].down_until_ms)
        best = (int)i;
  }
  c->ep_turn++;
  if (c->eps[best].down_until_ms)
    c->eps[best].probing = true;
  c->eps[best].inflight++;
  atomic_fetch_add(&c->eps[best].attempts, 1);
  return best;
}

void s3_eps_release(struct s3_client *c, int i)
{
  if (i >= 0 && (unsigned)i < c->n_eps) {
    c->eps[i].inflight--;
    c->eps[i].probing = false;
  }
}

size_t s3_client_endpoints_format(const struct s3_client *c, char *buf,
                                  size_t len, size_t off)
{
  for (unsigned i = 0; c->n_eps > 1 && i < c->n_eps; i++) {
    struct s3_ep *e = &c->eps[i];
    char name[4][64];
    const char *what[4] = {"attempts", "failures", "downs", "up"};
    struct stats_row rows[4];
    for (int k = 0; k < 4; k++)
      snprintf(name[k], sizeof(name[k]), "s3.endpoint_%s{endpoint=%u}",
               what[k], i);
    rows[0] = (struct stats_row){name[0], atomic_load(&e->attempts)};
    rows[1] = (struct stats_row){name[1], atomic_load(&e->failures)};
    rows[2] = (struct stats_row){name[2], atomic_load(&e->downs)};
    rows[3] = (struct stats_row){name[3], !atomic_load(&e->down)};
    off = stats_fmt_rows(buf, len, off, NULL, rows, 4);
  }
  return off;
}

const char *s3_client_endpoint(const struct s3_client *c, unsigned i)
{
  return i < c->n_eps ? c->eps[i].url : NULL;
}

bool s3_eps_end(struct s3_client *c, int i, bool failed, uint64_t now_ms)
{
  struct s3_ep *e;

  if (i < 0 || (unsigned)i >= c->n_eps)
    return false;
  e = &c->eps[i];
  e->inflight--;
  e->probing = false;
  if (c->n_eps == 1) { /* the only one: no health to keep */
    if (failed)
      atomic_fetch_add(&e->failures, 1);
    return false;
  }
  if (!failed) {
    if (e->down_until_ms)
      log_notice("endpoint %s answers again: back in use", e->url);
    e->fails = 0;
    e->down_until_ms = 0;
    e->backoff_ms = BACKOFF_MIN_MS;
    atomic_store(&e->down, false);
    return false;
  }
  atomic_fetch_add(&e->failures, 1);
  if (++e->fails >= S3_EPS_BURST || e->down_until_ms) {
    if (!e->down_until_ms) {
      log_warn("endpoint %s failed %u attempts in a row: taken out, tried "
               "again in %u ms", e->url, e->fails, e->backoff_ms);
      atomic_fetch_add(&e->downs, 1);
    }
    e->down_until_ms = now_ms + e->backoff_ms;
    e->backoff_ms = e->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : e->backoff_ms * 2;
    atomic_store(&e->down, true);
  }
  for (unsigned k = 0; k < c->n_eps; k++)
    if ((int)k != i && !c->eps[k].down_until_ms)
      return true;
  return false;
}
