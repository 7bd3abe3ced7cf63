/*
 * gw_proxy: the upstream side of s3rdma-gateway. A fixed pool of worker
 * threads, each owning one curl easy handle (its connections to upstream
 * are reused from request to request), executes requests handed over by
 * the HTTP side (gw_http.c): re-sign with the upstream keys, forward, and
 * either stream the bodies through the request's two bounded pipes or, for
 * a token request, move the object bytes with rdx_serve through a chunk
 * buffer.
 *
 * DESIGN (threads): a struct gw_req is created and owned by the connection
 * thread (gw_http.c). Before gw_proxy_submit everything in it is written by
 * that thread only; after, the fields marked "immutable" are read-only, the
 * pipes synchronise themselves, and the fields marked "protected by mu" are
 * shared with the worker. The worker never touches the request after it has
 * set done (under mu), so the connection thread may free it once it has
 * seen done. mode, status and the response headers are written by the
 * worker only and read by the connection thread only once it has seen ready
 * (set under mu, after them). Lock order: pool lock, then a request's mu (never both held
 * by a worker while it transfers).
 */
#ifndef S3R_GW_PROXY_H
#define S3R_GW_PROXY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_pipe.h"
#include "gateway/gw_stats.h"
#include "rdma/rdx_server.h"
#include "s3/s3_sigv4.h"

struct gw_config {
  const char *listen;        /* "127.0.0.1:7481" */
  const char *upstream;      /* "http://127.0.0.1:7480" */
  const char *access_key, *secret_key;          /* the clients' keys */
  const char *up_access_key, *up_secret_key;    /* upstream's keys */
  const char *region;        /* NULL: the client's credential scope */
  const char *token_header;  /* "x-amz-rdma-token" */
  unsigned max_conns;        /* 64 */
  unsigned threads;          /* 16 */
  size_t chunk_size;         /* 1 MiB: rdma chunk buffer */
  size_t pipe_size;          /* 256 KiB: each body pipe */
  unsigned timeout_s;        /* 120: idle limit for every wait */
  unsigned auth_timeout_s;   /* 10: idle limit until a request is verified */
  unsigned conns_per_addr;   /* 16: connections from one non-loopback
                                address (0: no limit) */
  unsigned uploads_per_addr; /* threads / 2: bodies streamed upstream at
                                once for one address (0: no limit) */
  uint64_t max_put;          /* 5 GiB */
  bool serve_none;           /* --serve none: decline every token (501) */
  /* test hooks (0: off), hidden from --help's main list */
  unsigned test_token_delay_ms; /* a token request waits this long before
                                   it moves a byte */
  unsigned test_token_delay_n;  /* ... only the first n of them (0: all) */
  unsigned test_put_hold_ms;    /* a token PUT waits this long after reading
                                   the client's last bytes, before the last
                                   of them go upstream */
};

/* How the HTTP side must answer once the worker says ready. */
enum gw_mode {
  GW_MODE_HTTP = 0, /* stream status, headers and the body from down */
  GW_MODE_RDMA,     /* token served: status, headers, rdma headers, no body */
  GW_MODE_ERROR,    /* answer err_status / err_code */
};

enum gw_tok {
  GW_TOK_NONE = 0,
  GW_TOK_GET,
  GW_TOK_PUT,
};

struct gw_req {
  /* immutable after submit */
  char *method, *path, *query;  /* path and query raw, as received */
  struct s3_kv *hdrs;           /* every client header (copies) */
  size_t n_hdrs;
  char region[32];
  int64_t body_len;             /* client body bytes (-1: none expected) */
  enum gw_tok tok;              /* a token request served by rdma */
  bool decline;                 /* token declined: add x-amz-rdma-reply 501 */
  bool upload_part;             /* PUT ?partNumber&uploadId */
  bool range_known;             /* token GET: rdx.len fixed from Range */
  struct rdx_token token;
  struct rdx_req rdx;           /* rdx.len set by the worker when !range_known */
  bool has_up;                  /* up carries a body */
  struct gw_pipe up, down;      /* client -> upstream, upstream -> client */

  /* worker only, until done */
  uint64_t tok_off;             /* bytes moved by rdma so far */
  size_t chunk_fill;
  void *chunk;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool ready;                   /* protected by mu: mode and headers set */
  bool done;                    /* protected by mu: worker finished */
  enum gw_mode mode;            /* protected by mu */
  long status;                  /* protected by mu: upstream's status */
  char **resp_hdrs;             /* protected by mu: "Name: value" lines */
  size_t n_resp_hdrs, resp_hdr_bytes;
  int64_t resp_len;             /* protected by mu: Content-Length, -1 */
  int err_status;               /* protected by mu: GW_MODE_ERROR's */
  const char *err_code;         /* protected by mu */
  char err_msg[160];            /* protected by mu */
  uint64_t rdma_bytes;          /* protected by mu: when done, RDMA mode */
  bool cancel;                  /* protected by mu: the client was answered
                                   or left: its memory is not touched again,
                                   and a request not answered yet is
                                   abandoned upstream (a PUT not completed
                                   there is not completed later) */
  bool serving;                 /* protected by mu: inside rdx_serve */

  struct gw_req *next;          /* protected by the pool lock */
};

struct gw_proxy;

/*
 * Start the pool (cfg->threads workers). cfg, stats and rdx are borrowed
 * for the proxy's life. Returns 0 and *out, -EINVAL (bad upstream URL) or
 * -ENOMEM, with a reason in err.
 */
int gw_proxy_create(const struct gw_config *cfg, struct gw_stats *stats,
                    struct rdx_server *rdx, struct gw_proxy **out, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
/* Stop the workers (after every request finished) and free. */
void gw_proxy_destroy(struct gw_proxy *p);

/* Queue r for a worker. The worker sets ready, then done (under r->mu). */
void gw_proxy_submit(struct gw_proxy *p, struct gw_req *r);

/* Wait (bounded by timeout_ms) until r->ready. Returns 0 or -ETIMEDOUT. */
int gw_req_wait_ready(struct gw_req *r, unsigned timeout_ms);
/*
 * The connection gives r up (it answers without the worker, or the client
 * left): once this returns, the worker never touches the client's memory
 * for r again (a transfer in progress fails at its next chunk), and an
 * upstream request not yet answered is aborted.
 */
void gw_req_cancel(struct gw_req *r);
/* Wait until r->done (no bound: the worker's own timeouts end it). */
void gw_req_wait_done(struct gw_req *r);

/* The RDMA error mapping: an rdx errno to an HTTP status and S3 code. */
void gw_rdx_error(int rc, int *status, const char **code);

#endif
