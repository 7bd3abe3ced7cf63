/*
 * gw_ups: the gateway's upstreams and their health (see gw_ups.h).
 */
#include "gateway/gw_ups.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/ep_health.h"
#include "common/slog.h"
#include "s3/s3_curl.h"

#define PROBE_TIMEOUT_S 5L
#define PROBE_TICK_MS 200

struct gw_up {
  char *url;                /* fixed: as given */
  CURLU *base;              /* fixed: scheme, host and port (no path) */
  char hostport[256];       /* fixed: what we send (and sign) as Host */
};

struct gw_ups {
  struct gw_up up[GW_UPS_MAX];
  struct ep_health health[GW_UPS_MAX]; /* protected by mu */
  const char *names[GW_UPS_MAX];
  unsigned n;
  unsigned turn;            /* protected by mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* the prober's sleep; stop wakes it */
  bool stop;                /* protected by mu */
  bool prober_on;
  pthread_t prober;
};

/* One URL: http(s)://host[:port][/], nothing else (common/endpoint.h);
   *ep points into u->url. */
static int parse_one(struct gw_up *u, const char *url, size_t len,
                     struct endpoint *ep, char *err, size_t errlen)
{
  const char *why, *rest;

  u->url = strndup(url, len);
  if (!u->url)
    return -ENOMEM;
  if (endpoint_parse(u->url, ep, &why) == 0) {
    rest = ep->authority + ep->authority_len;
    if ((!rest[0] || strcmp(rest, "/") == 0) &&
        ep->authority_len < sizeof(u->hostport)) {
      memcpy(u->hostport, ep->authority, ep->authority_len);
      u->hostport[ep->authority_len] = '\0';
      u->base = curl_url();
      if (!u->base)
        return -ENOMEM;
      if (curl_url_set(u->base, CURLUPART_URL, u->url, 0) == CURLUE_OK)
        return 0;
    }
  }
  snprintf(err, errlen,
           "--upstream: '%s' is not http(s)://host[:port] (path-style, no "
           "path)", u->url);
  return -EINVAL;
}

/* A throttle: the upstream asks for less (it works, or a balancer in
   front of it answers for a dead one). */
static bool throttled(CURLcode cc, long status)
{
  return cc == CURLE_OK && (status == 503 || status == 429);
}

bool gw_ups_failed(CURLcode cc, long status)
{
  switch (cc) {
  case CURLE_OK:
    return status >= 500 && status != 501;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_WEIRD_SERVER_REPLY:
  case CURLE_UNSUPPORTED_PROTOCOL: /* (checked URLs: a reply not HTTP) */
    return true;
  default:
    return false; /* ours or the client's doing */
  }
}

static size_t drop_cb(char *buf, size_t size, size_t n, void *arg)
{
  (void)buf;
  (void)arg;
  return size * n;
}

/* curl's progress callback during a probe: the gateway stopping ends it
   (within a second or so, not at PROBE_TIMEOUT_S). */
static int probe_progress(void *arg, curl_off_t dt, curl_off_t dn,
                          curl_off_t ut, curl_off_t un)
{
  struct gw_ups *s = arg;
  bool stop;

  (void)dt, (void)dn, (void)ut, (void)un;
  pthread_mutex_lock(&s->mu);
  stop = s->stop;
  pthread_mutex_unlock(&s->mu);
  return stop;
}

/* GET / on upstream i (not HEAD /: RGW answers that with a chunked body,
   left on the connection as the next reply's start): did it answer (any
   status but a 5xx or a throttle)? */
static bool probe_one(struct gw_ups *s, CURL *c, unsigned i)
{
  long status = 0;
  CURLcode cc;
  CURLU *u = curl_url_dup(s->up[i].base);

  if (!u)
    return false;
  curl_easy_reset(c);
  s3_curl_setup(c, &(struct s3_curl_opts){
                       .buffer_size = 16384,
                       .connect_timeout_ms = PROBE_TIMEOUT_S * 1000,
                       .low_speed_time_s = PROBE_TIMEOUT_S,
                   });
  curl_easy_setopt(c, CURLOPT_CURLU, u);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop_cb);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, PROBE_TIMEOUT_S);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, probe_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
  cc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(c, CURLOPT_CURLU, NULL);
  curl_url_cleanup(u);
  return cc == CURLE_OK && !gw_ups_failed(cc, status) &&
         !throttled(cc, status);
}

/* The prober: every PROBE_TICK_MS, a HEAD to each upstream due one. */
static void *prober_main(void *arg)
{
  struct gw_ups *s = arg;
  CURL *c = curl_easy_init();
  struct timespec ts;

  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    uint64_t now = clock_mono_ms(), next = now + PROBE_TICK_MS;
    if (!c) /* (out of memory at the last turn: again) */
      c = curl_easy_init();
    for (unsigned i = 0; c && i < s->n && !s->stop; i++) {
      bool ok;
      if (!ep_health_probe_due(&s->health[i], now, &next))
        continue;
      ep_health_take(&s->health[i]);
      pthread_mutex_unlock(&s->mu);
      ok = probe_one(s, c, i);
      pthread_mutex_lock(&s->mu);
      ep_health_end(s->health, s->n, i, EP_TRY_PROBE, !ok, 0,
                    clock_mono_ms());
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += PROBE_TICK_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    if (!s->stop)
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  }
  pthread_mutex_unlock(&s->mu);
  curl_easy_cleanup(c);
  return NULL;
}

static int start_prober(struct gw_ups *s)
{
  pthread_condattr_t ca;
  int rc;

  if (pthread_condattr_init(&ca))
    return -ENOMEM;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  rc = pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc)
    return -ENOMEM;
  if (pthread_create(&s->prober, NULL, prober_main, s)) {
    pthread_cond_destroy(&s->cv);
    return -EAGAIN;
  }
  s->prober_on = true;
  return 0;
}

int gw_ups_create(const char *list, struct gw_ups **out, char *err,
                  size_t errlen)
{
  struct gw_ups *s = calloc(1, sizeof(*s));
  struct endpoint ep[GW_UPS_MAX];
  const char *p = list, *url;
  size_t len;
  int rc = 0;

  *out = NULL;
  if (!s)
    return -ENOMEM;
  while (!rc && endpoint_list_next(&p, &url, &len)) {
    if (s->n == GW_UPS_MAX) {
      snprintf(err, errlen, "--upstream: more than %d URLs", GW_UPS_MAX);
      rc = -EINVAL;
      break;
    }
    rc = parse_one(&s->up[s->n], url, len, &ep[s->n], err, errlen);
    for (unsigned i = 0; !rc && i < s->n; i++)
      if (endpoint_same(&ep[i], &ep[s->n])) {
        snprintf(err, errlen, "--upstream: '%s' is the same server as '%s'",
                 s->up[s->n].url, s->up[i].url);
        rc = -EINVAL;
      }
    s->names[s->n] = s->up[s->n].url;
    s->n++;
  }
  if (!rc && !s->n) {
    snprintf(err, errlen, "--upstream: no URL");
    rc = -EINVAL;
  }
  if (!rc) {
    ep_health_init(s->health, s->n, s->names);
    pthread_mutex_init(&s->mu, NULL);
    if (s->n > 1 && (rc = start_prober(s)) != 0) {
      snprintf(err, errlen, "cannot start the upstream prober");
      pthread_mutex_destroy(&s->mu);
    }
  }
  if (rc) {
    for (unsigned i = 0; i < s->n; i++) {
      curl_url_cleanup(s->up[i].base);
      free(s->up[i].url);
    }
    free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void gw_ups_destroy(struct gw_ups *s)
{
  if (!s)
    return;
  if (s->prober_on) {
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->prober, NULL);
    pthread_cond_destroy(&s->cv);
  }
  pthread_mutex_destroy(&s->mu);
  for (unsigned i = 0; i < s->n; i++) {
    curl_url_cleanup(s->up[i].base);
    free(s->up[i].url);
  }
  free(s);
}

unsigned gw_ups_count(const struct gw_ups *s) { return s->n; }

unsigned gw_ups_pick(struct gw_ups *s, uint32_t avoid, enum ep_try *how)
{
  unsigned i;

  pthread_mutex_lock(&s->mu);
  i = ep_health_pick(s->health, s->n, &s->turn, avoid, how);
  pthread_mutex_unlock(&s->mu);
  return i;
}

void gw_ups_release(struct gw_ups *s, unsigned i, enum ep_try how)
{
  pthread_mutex_lock(&s->mu);
  ep_health_release(&s->health[i], how);
  pthread_mutex_unlock(&s->mu);
}

CURLU *gw_ups_base(const struct gw_ups *s, unsigned i)
{
  return s->up[i].base;
}

const char *gw_ups_hostport(const struct gw_ups *s, unsigned i)
{
  return s->up[i].hostport;
}

const char *gw_ups_url(const struct gw_ups *s, unsigned i)
{
  return s->up[i].url;
}

bool gw_ups_end(struct gw_ups *s, unsigned i, enum ep_try how, bool failed,
                uint64_t bytes)
{
  bool elsewhere;

  pthread_mutex_lock(&s->mu);
  elsewhere = ep_health_end(s->health, s->n, i, how, failed, bytes,
                            clock_mono_ms());
  pthread_mutex_unlock(&s->mu);
  return elsewhere;
}

bool gw_ups_outcome(struct gw_ups *s, unsigned i, enum ep_try how,
                    CURLcode cc, long status, uint64_t bytes)
{
  bool thr = throttled(cc, status);

  if (thr && how == EP_TRY_UP) {
    gw_ups_release(s, i, how);
    return false;
  }
  return gw_ups_end(s, i, how, thr || gw_ups_failed(cc, status), bytes);
}

size_t gw_ups_format(const void *arg, char *buf, size_t len, size_t off)
{
  const struct gw_ups *s = arg;

  return ep_health_format(s->health, s->n, "upstream", "upstream", buf, len,
                          off);
}
