/*
 * Internals shared by the s3/ files: the client and request structs.
 * Locking: eng.lock protects every engine list and each request's state,
 * cancel flag and waiter fields; everything else in a request belongs to the
 * submitter before submit, to the engine thread while it runs, and to the
 * submitter again once it is done.
 */
#ifndef S3R_S3_I_H
#define S3R_S3_I_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "common/stats_hist.h"
#include "s3/s3_client.h"
#include "s3/s3_err.h"

#define S3_MAX_RESP_HEADERS 96
#define S3_MAX_RESP_HEADER_BYTES (32 * 1024)

enum s3_req_state {
  S3_REQ_NEW = 0,
  S3_REQ_QUEUED,   /* on eng.queue, waiting for a slot or a retry time */
  S3_REQ_ACTIVE,   /* its easy handle is in the multi handle */
  S3_REQ_DONE,
};

enum s3_sink_kind { S3_SINK_NONE = 0, S3_SINK_BUF, S3_SINK_XML };

struct s3_req {
  struct s3_client *client;
  struct s3_req *next, *prev;     /* eng.queue or eng.active; eng.lock */
  struct s3_req *link;            /* engine thread's private lists */

  /* what to send (owned) */
  char method[8];
  char curl_err[CURL_ERROR_SIZE]; /* engine thread: curl's reason for the
                                     last attempt's failure ("" if none) */
  char *bucket;
  char *key;
  char *path;                     /* a fixed path instead of bucket/key
                                     (s3_rc.c's POSTs); NULL usually */
  struct s3_kv *query;            /* raw name/value, owned strings */
  size_t n_query;
  struct s3_kv *headers;          /* owned strings */
  size_t n_headers;
  const unsigned char *body;      /* borrowed */
  size_t body_len;
  size_t body_off;                /* engine: read position this attempt */
  char payload_hash[S3_SHA256_HEX_LEN + 1];
  bool has_range;
  bool range_only;                /* a whole object for the range: fail */
  uint64_t range_off, range_len;
  unsigned timeout_ms;
  bool idempotent;
  unsigned resent;                /* engine thread: attempts the server
                                     may have acted on, repeated */
  int ep;                         /* engine thread: the endpoint of the
                                     attempt on the wire (-1: none) */
  uint32_t ep_failed;             /* engine thread: those that failed its
                                     attempts (a bit each) */
  uint32_t ep_avoid;              /* ... those, and those that throttled
                                     it: passed over by its retries */
  int ep_only;                    /* a probe (s3_eps_probe): its endpoint;
                                     -1 for every other request */
  int ep_try;                     /* engine thread: how the attempt on the
                                     wire came to ep (enum ep_try) */
  int ep_pin;                     /* s3_req_set_endpoint's (-1: none) */
  bool ep_strict;                 /* ... and only there */
  bool warm;                      /* a connection warmer (s3_client_warm):
                                     counted apart, never retried */

  /* RDMA token (s3_rdma.c); owned */
  char *rdma_token;               /* NULL: none */
  uint64_t rdma_len;              /* the bytes the token names */
  bool rdma_on;                   /* this attempt carries it (cleared for the
                                     HTTP resend of a declined PUT) */
  enum s3_rdma_path rdma_path;    /* how the last attempt moved the bytes */
  uint64_t rdma_bytes;            /* moved by the server over RDMA */
  bool rdma_doubt;                /* an attempt with the token ended without
                                     an HTTP reply (s3_req_rdma_doubt) */
  unsigned rdma_attempt_ms;       /* this token attempt's deadline, relative
                                     (s3_attempt_prepare) */
  uint64_t rdma_until_ms;         /* the last token attempt's deadline:
                                     monotonic (clock_mono_ms) */
  uint64_t rdma_until_wall_ms;    /* the same as sent in x-amz-rdma-expires
                                     (CLOCK_REALTIME) */
  uint64_t rdma_doubt_ms;         /* the latest deadline of an attempt left
                                     in doubt, monotonic (0: none) */
  uint64_t rdma_doubt_wall_ms;    /* the same, CLOCK_REALTIME */
  bool rdma_failed;               /* x-amz-rdma-reply 500 was answered */
  bool rdma_only;                 /* no HTTP resend: the token's memory is
                                     not ours to read (s3_req_set_rdma_only) */
  bool rdma_foreign;              /* the token's memory is another process's
                                     (s3_req_set_rdma_foreign) */
  bool rdma_md5_set;              /* rdma_md5 holds the body's MD5: made on
                                     the submitter's thread when the server
                                     omits PUT replies (rdma_put_quiet) */
  unsigned char rdma_md5[16];
  s3_req_release_fn rdma_release; /* runs once when the request finishes
                                     (or is destroyed unsubmitted) */
  void *rdma_release_arg;

  /* where the reply body goes */
  enum s3_sink_kind sink;
  struct iovec sink_iov[S3_SINK_MAX_IOV]; /* borrowed buffers */
  int sink_niov;
  int sink_seg;                   /* engine: current segment, this attempt */
  size_t sink_seg_off;            /* engine: offset in it */
  size_t sink_cap;                /* total of the segments */
  size_t sink_len;                /* bytes stored this attempt */
  uint64_t sink_skip;             /* bytes still to drop (200 to a range) */
  enum s3_xml_kind xml_kind;
  void *xml_result;
  struct s3_xml *xml;             /* parser for this attempt */
  struct s3_xml *err_xml;         /* error body parser for this attempt */
  size_t err_body_len;            /* error document bytes seen */
  bool body_overflow;
  bool bad_headers;

  /* engine bookkeeping */
  enum s3_req_state state;        /* eng.lock */
  bool cancel;                    /* eng.lock */
  pthread_cond_t cv;              /* s3_req_wait; with eng.lock */
  s3_req_done_fn done;
  void *done_arg;
  CURL *easy;
  struct curl_slist *hdr_list;
  char *url;
  uint64_t not_before_ms;         /* retry time (monotonic) */
  uint64_t first_start_ms;
  unsigned attempts;

  /* results */
  struct s3_etag_result etag_res; /* XML sink of builders whose caller gives
                                     no result (UploadPartCopy) */
  int rc;
  long status;
  struct s3_error_info err;
  char *resp_hdr[S3_MAX_RESP_HEADERS * 2]; /* name, value pairs */
  size_t n_resp_hdr;
  size_t resp_hdr_bytes;
};

struct s3_engine {
  pthread_t thread;
  pthread_mutex_t lock;
  CURLM *multi;
  struct s3_req *queue;           /* FIFO head; protected by lock */
  struct s3_req *queue_tail;      /* protected by lock */
  size_t n_active;                /* protected by lock */
  size_t n_warm;                  /* protected by lock: of n_active,
                                     connection warmers (not counted in
                                     st_max_inflight) */
  struct s3_req *active;          /* protected by lock */
  unsigned n_cancel;              /* cancel requests not yet handled;
                                     protected by lock */
  bool stop;                      /* protected by lock */
  bool started;
  bool stopped;                   /* s3_engine_stop ran: the lock is left
                                     for late submits, freed at destroy */
  CURL **pool;                    /* idle easy handles; engine thread only */
  size_t n_pool;
  uint64_t rng;                   /* engine thread only */
};

/* What a request does, for the latency histograms. */
enum s3_op {
  S3_OP_GET, S3_OP_PUT, S3_OP_HEAD, S3_OP_LIST, S3_OP_DELETE,
  S3_OP_PART, S3_OP_COPY, S3_OP_MULTIPART, S3_OP_OTHER, S3_OP_COUNT
};

struct s3_client {
  struct s3_client_config cfg;    /* strings below are our copies */
  char *endpoint;                 /* the first endpoint's URL (s3_eps.h) */
  struct s3_ep *eps;              /* the endpoints (s3_eps.h) */
  unsigned n_eps;
  struct ep_health *ep_health;    /* [n_eps]: the engine thread's (s3_eps) */
  unsigned ep_turn;               /* engine thread: whose turn on a tie */
  atomic_uint ep_next;            /* s3_client_endpoint_next's turn */
  char *ca_bundle;
  char *rdma_header;              /* token header name, lowercase */
  _Atomic bool rdma_ignored;      /* the server ignores tokens */
  _Atomic bool rdma_seen;         /* it has answered a token */
  _Atomic bool rdma_put_quiet;    /* it served a PUT without a reply header:
                                     hash PUT bodies before submitting */
  _Atomic bool draining_logged;   /* engine stop: said once */
  s3_client_stop_fn stop_hook;    /* set before use; runs at stop */
  void *stop_arg;
  bool stopped;                   /* s3_client_stop ran (the caller's
                                     thread, once no other submits) */
  struct s3_creds creds;
  struct s3_retry_quota quota;
  struct s3_engine eng;

  _Atomic uint64_t st_requests, st_attempts, st_retries, st_sent, st_recv,
      st_cancelled, st_inflight, st_max_inflight, st_warm;
  _Atomic uint64_t st_rdma_requests, st_rdma_bytes, st_rdma_declined,
      st_rdma_ignored, st_rdma_resent, st_rdma_put_etag;
  _Atomic uint64_t st_errors[S3_EC_COUNT];
  /* per HTTP exchange answered, by operation (s3_op_of): the time to the
     first byte of the answer and to its end */
  struct stats_hist lat_ttfb[S3_OP_COUNT], lat_total[S3_OP_COUNT];
  /* the round trip (s3_client_rtt_us): the least time from a request
     sent to the first byte of its answer, one slot per S3_RTT_WINDOW_MS
     window, the current and the one before (UINT64_MAX: no answer yet);
     written by the engine thread alone */
  _Atomic uint64_t rtt_min_us[2];
  uint64_t rtt_window[2];      /* engine thread: each slot's window */
};

#define S3_RTT_WINDOW_MS 10000

enum s3_op s3_op_of(const struct s3_req *r);
extern const char *const s3_op_names[S3_OP_COUNT];

/* s3_req.c: engine helpers */
/* Run r's release hook if it has not run yet (engine: before done). */
void s3_req_run_release(struct s3_req *r);
void s3_req_reset_reply(struct s3_req *r);
/* Store one response header line; -EBADMSG for a malformed one. */
int s3_req_store_header(struct s3_req *r, const char *line, size_t len);
/* r's precondition (If-Match or If-None-Match), if it has one, becomes
   If-Match: etag; -ENOMEM leaves it as it was. */
int s3_req_recondition(struct s3_req *r, const char *etag);

/* s3_ops.c: helpers shared by the operation files (s3_ops*.c) */
/* Submit without a callback and wait; returns s3_req_result. */
int s3_ops_run(struct s3_req *r);
/* An ETag header or element into dst, quotes removed ("" for NULL). */
void s3_ops_copy_etag(char dst[S3_ETAG_MAX], const char *src);
/* Content-Type, x-amz-meta-* and extra headers of o (NULL: none). */
int s3_ops_add_put_opts(struct s3_req *r, const struct s3_put_opts *o);
/* x-amz-copy-source: bucket/key, the key URL-encoded. */
int s3_ops_add_copy_source(struct s3_req *r, const char *bucket,
                           const char *key);

/* s3_rdma.c */
enum s3_rdma_verdict { S3_RDMA_KEEP = 0, S3_RDMA_RESEND };
/*
 * Judge a finished attempt that carried a token (engine thread, after
 * classify). May change *rc and *m (a malformed RDMA reply is -EBADMSG).
 * S3_RDMA_RESEND: send the request again at once over HTTP (a PUT the
 * server declined or ignored), token dropped.
 */
enum s3_rdma_verdict s3_rdma_attempt_end(struct s3_client *c, struct s3_req *r,
                                         int *rc, struct s3_err_map *m);

/* s3_engine.c */
int s3_engine_start(struct s3_client *c);
/* The thread stopped, every request finished; a submit after it finishes
   at once with -ECANCELED (the lock stays until s3_engine_free). */
void s3_engine_stop(struct s3_client *c);
void s3_engine_free(struct s3_client *c);

/* s3_client.c */
/* The CLOCK_REALTIME in ms (x-amz-rdma-expires). */
uint64_t s3_wall_ms(void);
/*
 * s3_attempt.c: a token attempt's deadline in ms: the client's
 * rdma_timeout_ms plus a second per 8 MiB the token names, or the request's
 * own timeout (s3_req_set_timeout, else request_timeout_ms) when shorter.
 */
unsigned s3_rdma_attempt_ms(const struct s3_client *c, const struct s3_req *r);

#endif
