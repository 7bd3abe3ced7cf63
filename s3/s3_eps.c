/* s3_eps: the client's endpoints and their health (design in s3_eps.h). */
#include "s3/s3_eps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/endpoint.h"
#include "common/ep_health.h"
#include "s3/s3_i.h"

#define PROBE_TIMEOUT_MS 5000

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
  c->ep_health = calloc(S3_EPS_MAX, sizeof(*c->ep_health));
  if (!c->eps || !c->ep_health)
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
  if (!rc) { /* each named by its URL */
    const char *names[S3_EPS_MAX];
    for (unsigned i = 0; i < n; i++)
      names[i] = c->eps[i].url;
    ep_health_init(c->ep_health, n, names);
  }
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
  free(c->ep_health);
  c->eps = NULL;
  c->ep_health = NULL;
  c->n_eps = 0;
}

int s3_eps_pick(struct s3_client *c, struct s3_req *r)
{
  enum ep_try how = EP_TRY_PROBE;
  unsigned i;

  if (r->ep_only >= 0) {
    i = (unsigned)r->ep_only;
    ep_health_take(&c->ep_health[i]);
  } else if (r->ep_pin >= 0 && (unsigned)r->ep_pin < c->n_eps &&
             (r->ep_strict || r->rdma_only ||
              (!c->ep_health[r->ep_pin].down_until_ms &&
               !(r->ep_failed >> r->ep_pin & 1)))) {
    /* bound there (its RDMA session): while it is up and has not failed
       it (a throttle keeps it there), or always */
    i = (unsigned)r->ep_pin;
    ep_health_use(&c->ep_health[i], &how);
  } else {
    i = ep_health_pick(c->ep_health, c->n_eps, &c->ep_turn,
                       r->ep_avoid, &how);
  }
  r->ep_try = (int)how;
  return (int)i;
}

static void probe_done(struct s3_req *r, void *arg)
{
  (void)arg;
  s3_req_destroy(r);
}

void s3_eps_probe(struct s3_client *c, uint64_t now_ms, uint64_t *next_ms)
{
  for (unsigned i = 0; c->n_eps > 1 && i < c->n_eps; i++) {
    struct s3_req *r;

    if (!ep_health_probe_due(&c->ep_health[i], now_ms, next_ms))
      continue;
    /* GET /, not HEAD /: RGW answers HEAD / with a chunked body, which
       would be read as the next reply's start on that connection */
    r = s3_req_create(c, "GET", NULL, NULL);
    if (!r)
      return; /* tried again at the next turn of the engine */
    r->warm = true; /* never retried; its outcome is the endpoint's */
    r->ep_only = (int)i;
    c->ep_health[i].probing = true; /* (until the probe's attempt ends) */
    s3_req_set_timeout(r, PROBE_TIMEOUT_MS);
    s3_req_submit(r, probe_done, NULL);
  }
}

void s3_eps_release(struct s3_client *c, const struct s3_req *r)
{
  if (r->ep >= 0 && (unsigned)r->ep < c->n_eps)
    ep_health_release(&c->ep_health[r->ep], (enum ep_try)r->ep_try);
}

bool s3_eps_end(struct s3_client *c, const struct s3_req *r, int i,
                bool failed, uint64_t bytes, uint64_t now_ms)
{
  if (i < 0 || (unsigned)i >= c->n_eps)
    return false;
  ep_health_end(c->ep_health, c->n_eps, (unsigned)i, (enum ep_try)r->ep_try,
                failed, bytes, now_ms);
  return ep_health_other_up(c->ep_health, c->n_eps,
                            r->ep_failed | 1u << (unsigned)i);
}

size_t s3_client_endpoints_format(const struct s3_client *c, char *buf,
                                  size_t len, size_t off)
{
  return ep_health_format(c->ep_health, c->n_eps, "s3.endpoint", "endpoint",
                          buf, len, off);
}

void s3_req_set_endpoint(struct s3_req *r, int i, bool strict)
{
  r->ep_pin = i;
  r->ep_strict = strict;
}

unsigned s3_client_endpoints(const struct s3_client *c)
{
  return c->n_eps;
}

unsigned s3_client_endpoint_next(struct s3_client *c, const unsigned *load)
{
  unsigned n = c->n_eps, t = atomic_fetch_add(&c->ep_next, 1), best = n;

  for (unsigned k = 0; k < n; k++) {
    unsigned i = (t + k) % n;
    if (atomic_load(&c->ep_health[i].down))
      continue;
    if (best == n || (load && load[i] < load[best]))
      best = i;
    if (!load)
      break;
  }
  return best < n ? best : t % n;
}

const char *s3_client_endpoint(const struct s3_client *c, unsigned i)
{
  return i < c->n_eps ? c->eps[i].url : NULL;
}
