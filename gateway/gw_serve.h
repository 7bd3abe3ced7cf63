/*
 * gw_serve: a token request's bytes, moved with rdx_serve one chunk at a
 * time through the request's chunk buffer, on the worker running it: a GET
 * fills the chunk from upstream's body and moves it into the client's
 * memory; a PUT moves the client's memory into the chunk and hands it to
 * upstream. A token whose kind cannot be served at its first chunk is
 * declined (a GET goes on over HTTP, a PUT is answered 501); one refused or
 * failed is answered with an error and counted. A request the connection
 * has given up (gw_req_cancel) is never served again.
 */
#ifndef S3R_GW_SERVE_H
#define S3R_GW_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/gw_proxy.h"

/* A worker's view of the request it runs (made by gw_upstream.c). */
struct gw_run {
  const struct gw_config *cfg;
  struct gw_stats *stats;
  struct rdx_server *rdx;
  struct gw_req *r;
  size_t chunk_pos;    /* PUT: bytes of chunk already given to curl */
  int64_t up_left;     /* HTTP body bytes still to hand curl */
  bool hdrs_done;      /* the final header block was seen: ignore trailers */
  bool body_taken;     /* curl asked for the body: the client's bytes (or
                          the token's) are no longer all to be sent */
  const char *stopped; /* why the upstream request was abandoned */
};

/* Upstream answered a token request 2xx: check a GET whose length only
   upstream knew, then serve by rdma (or decline). 0, or -1: failed. */
int gw_serve_start(struct gw_run *w);
/* GET: take upstream's body bytes buf[0, len) into the chunk, serving each
   full chunk. 0 with *used bytes taken (fewer than len once declined: the
   rest goes over HTTP), or -1: failed, the transfer aborts. */
int gw_serve_get_write(struct gw_run *w, const char *buf, size_t len,
                       size_t *used);
/* GET: serve what the chunk holds (the last bytes). 0 or -1. */
int gw_serve_get_flush(struct gw_run *w);
/* PUT: the next body bytes for upstream, from the client's memory: a
   length (0 at the end) or CURL_READFUNC_ABORT. */
size_t gw_serve_put_read(struct gw_run *w, char *buf, size_t max);
/* The token failed (rc, why); midway: after bytes were moved. */
void gw_serve_fail(struct gw_run *w, int rc, const char *why, bool midway);

#endif
