/*
 * s3_eps: the client's endpoints, all serving the same buckets (one URL, or
 * a list: "URL;URL;..."). Each attempt goes to the endpoint with the fewest
 * attempts in flight among those up (ties in turn); an endpoint that fails
 * S3_EPS_BURST attempts in a row (no connection, a reset, a timeout, a 5xx
 * but 501) is down for a backoff (1 s, doubling to 30 s), after which one
 * attempt at a time is let through to try it again (the probe); an answer
 * brings it up. A retry avoids the endpoint that failed it, at once where
 * another is up. With one endpoint every attempt goes to it: down or not.
 *
 * Threads: s3_eps_parse and s3_eps_free at the client's creation and end;
 * s3_eps_pick and s3_eps_end on the engine thread (the counters are
 * atomics, read by any thread through s3_client_endpoint_stats).
 */
#ifndef S3R_S3_EPS_H
#define S3R_S3_EPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3_EPS_MAX 16
#define S3_EPS_BURST 3

struct s3_client;

struct s3_ep {
  char *url;                      /* fixed: without trailing '/' */
  char *scheme_host;              /* fixed: "http://10.0.0.5:7480" */
  char *host;                     /* fixed: the Host header */
  char *base_path;                /* fixed: "" usually */
  unsigned inflight;              /* engine thread: attempts on the wire */
  unsigned fails;                 /* engine thread: failed in a row */
  unsigned backoff_ms;            /* engine thread: the next down spell */
  uint64_t down_until_ms;         /* engine thread: 0 when up */
  bool probing;                   /* engine thread: a probe is out */
  _Atomic bool down;              /* for the stats */
  atomic_ullong attempts, failures, downs; /* counters */
};

/* Parse list (URLs separated by ';') into c->eps: 0, or
   -EINVAL / -ENOMEM with err naming the URL at fault. */
int s3_eps_parse(struct s3_client *c, const char *list, char *err,
                 size_t errlen);
void s3_eps_free(struct s3_client *c);

/* The endpoint an attempt goes to (avoid: the one that failed its last
   attempt, or -1); counted in flight until s3_eps_end. */
int s3_eps_pick(struct s3_client *c, int avoid, uint64_t now_ms);
/* An attempt picked for endpoint i never went out (its start failed, or it
   was cancelled): nothing learnt of the endpoint. */
void s3_eps_release(struct s3_client *c, int i);
/* The attempt on endpoint i ended: failed says the endpoint failed it (no
   connection, a reset, a timeout, a 5xx but 501). True when another
   endpoint is up to take the retry at once. */
bool s3_eps_end(struct s3_client *c, int i, bool failed, uint64_t now_ms);

#endif
