/*
 * s3_client: configuration, the endpoint, stats. The client starts and
 * stops its engine (s3_engine.c), which makes each attempt ready and signs
 * it (s3_attempt.c, s3_req_sign.c) without calling back into the client.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "common/stats_fmt.h"
#include "s3/s3_eps.h"
#include "s3/s3_i.h"

void s3_client_config_default(struct s3_client_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->max_inflight = 128;
  cfg->connect_timeout_ms = 5000;
  cfg->low_speed_time_s = 30;
  cfg->rdma_timeout_ms = 30000;
  s3_retry_policy_default(&cfg->retry);
  cfg->retry_quota = 500;
}

uint64_t s3_wall_ms(void)
{
  return clock_wall_ms();
}

/* The client's own strings, then the client. */
static void free_strings(struct s3_client *c)
{
  free(c->ca_bundle);
  free(c->rdma_header);
  free(c->endpoint);
  s3_eps_free(c);
  free(c);
}

struct s3_client *s3_client_create(const struct s3_client_config *cfg,
                                   char *err, size_t errlen)
{
  struct s3_client *c;
  const char *ca;
  int rc;

  if (!cfg->endpoint || !*cfg->endpoint) {
    snprintf(err, errlen, "endpoint: not set");
    return NULL;
  }
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->cfg = *cfg;
  for (int i = 0; i < 2; i++) {
    atomic_init(&c->rtt_min_us[i], UINT64_MAX);
    c->rtt_window[i] = UINT64_MAX;
  }
  if (!c->cfg.max_inflight)
    c->cfg.max_inflight = 128;
  if (!c->cfg.retry.max_attempts)
    s3_retry_policy_default(&c->cfg.retry);
  rc = s3_eps_parse(c, cfg->endpoint, err, errlen);
  if (!rc && !(c->endpoint = strdup(c->eps[0].url))) {
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
  }
  if (rc)
    goto free_endpoint;
  ca = cfg->ca_bundle ? cfg->ca_bundle : getenv("AWS_CA_BUNDLE");
  if (ca && *ca && !(c->ca_bundle = strdup(ca)))
    goto free_endpoint;
  c->rdma_header = strdup(cfg->rdma_header && *cfg->rdma_header
                              ? cfg->rdma_header
                              : "x-amz-rdma-token");
  if (!c->rdma_header)
    goto free_endpoint;
  for (char *p = c->rdma_header; *p; p++) {
    if (*p <= ' ' || *p >= 127 || *p == ':') {
      snprintf(err, errlen, "rdma token header '%s': not a header name",
               cfg->rdma_header);
      goto free_endpoint;
    }
    *p = (char)tolower((unsigned char)*p);
  }
  rc = s3_creds_resolve(&cfg->creds, &c->creds, err, errlen);
  if (rc)
    goto free_endpoint;
  s3_retry_quota_init(&c->quota, c->cfg.retry_quota ? c->cfg.retry_quota
                                                     : 500);
  rc = s3_engine_start(c);
  if (rc) {
    snprintf(err, errlen, "cannot start the request engine: %s",
             strerror(-rc));
    goto free_quota;
  }
  log_debug("s3 client: endpoint %s region %s credentials from %s",
            c->endpoint, c->creds.region, c->creds.source);
  return c;

free_quota:
  s3_retry_quota_cleanup(&c->quota);
  s3_creds_cleanup(&c->creds);
free_endpoint:
  free_strings(c);
  return NULL;
}

void s3_client_stop(struct s3_client *c)
{
  if (!c || c->stopped)
    return;
  c->stopped = true;
  if (c->stop_hook)
    c->stop_hook(c->stop_arg); /* the engine still sends */
  s3_engine_stop(c);
}

void s3_client_destroy(struct s3_client *c)
{
  if (!c)
    return;
  s3_client_stop(c);
  s3_engine_free(c);
  s3_retry_quota_cleanup(&c->quota);
  s3_creds_cleanup(&c->creds);
  free_strings(c);
}

static void warm_done(struct s3_req *r, void *arg)
{
  (void)arg;
  s3_req_destroy(r);
}

void s3_client_warm(struct s3_client *c, const char *bucket, unsigned n)
{
  for (unsigned i = 0; bucket && i < n; i++) {
    struct s3_req *r = s3_req_create(c, "HEAD", bucket, NULL);

    if (!r)
      return;
    r->warm = true;
    s3_req_set_timeout(r, 10000);
    s3_req_submit(r, warm_done, NULL);
  }
}

void s3_client_set_stop_hook(struct s3_client *c, s3_client_stop_fn fn,
                             void *arg)
{
  c->stop_hook = fn;
  c->stop_arg = arg;
}

const char *s3_client_region(const struct s3_client *c)
{
  return c->creds.region;
}

const char *s3_client_creds_source(const struct s3_client *c)
{
  return c->creds.source;
}

uint64_t s3_client_rtt_us(const struct s3_client *c)
{
  uint64_t a = atomic_load(&c->rtt_min_us[0]),
           b = atomic_load(&c->rtt_min_us[1]);

  a = b < a ? b : a;
  return a == UINT64_MAX ? 0 : a;
}

void s3_client_stats(const struct s3_client *c, struct s3_stats *out)
{
  memset(out, 0, sizeof(*out));
  out->requests = atomic_load(&c->st_requests);
  out->attempts = atomic_load(&c->st_attempts);
  out->retries = atomic_load(&c->st_retries);
  out->bytes_sent = atomic_load(&c->st_sent);
  out->bytes_received = atomic_load(&c->st_recv);
  out->cancelled = atomic_load(&c->st_cancelled);
  out->inflight = atomic_load(&c->st_inflight);
  out->max_inflight_seen = atomic_load(&c->st_max_inflight);
  out->warm_requests = atomic_load(&c->st_warm);
  out->rtt_us = s3_client_rtt_us(c);
  out->rdma_requests = atomic_load(&c->st_rdma_requests);
  out->rdma_bytes = atomic_load(&c->st_rdma_bytes);
  out->rdma_declined = atomic_load(&c->st_rdma_declined);
  out->rdma_ignored = atomic_load(&c->st_rdma_ignored);
  out->rdma_resent = atomic_load(&c->st_rdma_resent);
  out->rdma_put_etag = atomic_load(&c->st_rdma_put_etag);
  for (int i = 0; i < S3_EC_COUNT && i < 16; i++)
    out->errors[i] = atomic_load(&c->st_errors[i]);
}

size_t s3_client_latency_format(struct s3_client *c, char *buf, size_t len,
                                size_t off)
{
  char labels[64];

  for (int op = 0; op < S3_OP_COUNT; op++) {
    if (!atomic_load(&c->lat_total[op].count))
      continue; /* an operation never asked: no rows */
    snprintf(labels, sizeof(labels), "op=%s,phase=ttfb", s3_op_names[op]);
    off = stats_hist_format(&c->lat_ttfb[op], "s3.request_seconds", labels,
                            buf, len, off);
    snprintf(labels, sizeof(labels), "op=%s,phase=total", s3_op_names[op]);
    off = stats_hist_format(&c->lat_total[op], "s3.request_seconds", labels,
                            buf, len, off);
  }
  return off;
}

size_t s3_stats_format(const struct s3_stats *s, char *buf, size_t len)
{
  const struct stats_row rows[] = {
      {"requests", s->requests},
      {"attempts", s->attempts},
      {"retries", s->retries},
      {"bytes_sent", s->bytes_sent},
      {"bytes_received", s->bytes_received},
      {"cancelled", s->cancelled},
      {"inflight", s->inflight},
      {"max_inflight_seen", s->max_inflight_seen},
      {"warm_requests", s->warm_requests},
      {"round_trip_us", s->rtt_us},
      {"rdma_requests", s->rdma_requests},
      {"rdma_bytes", s->rdma_bytes},
      {"rdma_declined", s->rdma_declined},
      {"rdma_ignored", s->rdma_ignored},
      {"rdma_resent", s->rdma_resent},
      {"rdma_put_etag", s->rdma_put_etag},
  };
  struct stats_row errors[S3_EC_COUNT - 1];
  size_t n = stats_fmt_rows(buf, len, 0, "s3.", rows, STATS_NROWS(rows));

  for (int i = 1; i < S3_EC_COUNT; i++)
    errors[i - 1] = (struct stats_row){
        s3_err_class_name((enum s3_err_class)i), s->errors[i]};
  return stats_fmt_rows(buf, len, n, "s3.errors.", errors,
                        STATS_NROWS(errors));
}
