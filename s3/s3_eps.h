/*
 * s3_eps: the client's endpoints, all serving the same buckets (one URL, or
 * a list: "URL;URL;..."), and their health (common/ep_health.h: the
 * fewest in flight among those up, three failures in a row take one out
 * for a spell of 1 s doubling to 30 s, a retry goes elsewhere at once).
 * When a spell is over the engine sends the endpoint a probe of its own
 * (GET /, its body dropped, never retried: s3_eps_probe), so that no
 * application request is the one to find it still dead. With one
 * endpoint every attempt goes to it, down or not, and nothing is probed.
 *
 * Threads: s3_eps_parse and s3_eps_free at the client's creation and end;
 * the rest on the engine thread (the counters are atomics, read by any
 * thread through s3_client_endpoints_format).
 */
#ifndef S3R_S3_EPS_H
#define S3R_S3_EPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_client.h"

#define S3_EPS_MAX S3_ENDPOINTS_MAX

struct s3_client;
struct s3_req;

struct s3_ep {
  char *url;                      /* fixed: without trailing '/' */
  char *scheme_host;              /* fixed: "http://10.0.0.5:7480" */
  char *host;                     /* fixed: the Host header */
  char *base_path;                /* fixed: "" usually */
};

/* Parse list (URLs separated by ';') into c->eps: 0, or
   -EINVAL / -ENOMEM with err naming the URL at fault. */
int s3_eps_parse(struct s3_client *c, const char *list, char *err,
                 size_t errlen);
void s3_eps_free(struct s3_client *c);

/* The endpoint r's attempt goes to (r->ep_only for a probe; a request
   bound to one, there while it is up and has not failed r; else the
   pick, passing over those in r->ep_avoid while another is up), counted
   in flight until s3_eps_end; how it came there in r->ep_try. */
int s3_eps_pick(struct s3_client *c, struct s3_req *r);
/* Send a probe to each down endpoint whose spell is over and that has none
   out; *next_ms lowered to the end of the next spell still running. */
void s3_eps_probe(struct s3_client *c, uint64_t now_ms, uint64_t *next_ms);
/* r's attempt, picked for r->ep, never went out (its start failed, or it
   was cancelled): nothing learnt of the endpoint. */
void s3_eps_release(struct s3_client *c, const struct s3_req *r);
/* r's attempt on endpoint i ended: failed says the endpoint failed it (no
   connection, a reset, a timeout, a reply not HTTP, a 5xx but 501);
   bytes it moved (sent and received). True when another endpoint is up
   that has not failed r, to take the retry at once. */
bool s3_eps_end(struct s3_client *c, const struct s3_req *r, int i,
                bool failed, uint64_t bytes, uint64_t now_ms);

#endif
