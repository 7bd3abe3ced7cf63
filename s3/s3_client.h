/*
 * s3_client: the S3 client. A client owns its configuration, credentials,
 * one request engine (s3_engine.c: a thread driving a curl multi handle) and
 * its stats. Every operation exists as a request any thread may submit; the
 * synchronous calls below submit and wait. All functions return 0 or a
 * negative errno (the mapping is s3_err.c's table).
 */
#ifndef S3R_S3_CLIENT_H
#define S3R_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "common/endpoint.h"
#include "s3/s3_creds.h"
#include "s3/s3_retry.h"
#include "s3/s3_sigv4.h"
#include "s3/s3_xml.h"

#define S3_ETAG_MAX 80
#define S3_SINK_MAX_IOV 64
#define S3_ENDPOINTS_MAX ENDPOINT_LIST_MAX /* URLs in an endpoint list */

struct s3_client_config {
  const char *endpoint;       /* "http://127.0.0.1:7480", "https://s3.x.com" */
  bool virtual_host;          /* bucket.host/key instead of host/bucket/key */
  struct s3_creds_opts creds; /* keys, profile, region, anonymous */
  const char *ca_bundle;      /* NULL: $AWS_CA_BUNDLE, else system default */
  bool insecure;              /* do not verify TLS peers (tests only) */
  unsigned max_inflight;      /* requests on the wire at once; default 128 */
  unsigned connect_timeout_ms; /* default 5000 */
  unsigned request_timeout_ms; /* per attempt, 0 = none (default) */
  unsigned low_speed_time_s;  /* abort an attempt idle this long; default 30
                                 (s3.low_speed_time); 0: none; never an
                                 attempt carrying an RDMA token
                                 (rdma_timeout_ms) */
  unsigned rdma_timeout_ms;   /* an attempt carrying an RDMA token: its
                                 deadline, plus 1 s per 8 MiB it moves;
                                 default 30000, the low-speed window's, so
                                 that a server that does not answer costs
                                 what it costs without a token
                                 (rdma.timeout); 0: the default */
  bool sign_payload;          /* SHA-256 the bodies we PUT; default
                                 UNSIGNED-PAYLOAD for data, always signed for
                                 our small XML bodies */
  struct s3_retry_policy retry; /* zeroed: s3_retry_policy_default */
  unsigned retry_quota;       /* tokens; 0: default 500 */
  const char *rdma_header;    /* header carrying RDMA tokens; NULL:
                                 "x-amz-rdma-token" */
};

/* Fill defaults (everything above except the endpoint). */
void s3_client_config_default(struct s3_client_config *cfg);

struct s3_client;

/*
 * Create a client and start its engine thread. Credentials are resolved now;
 * on failure returns NULL with the reason in err (naming what is wrong).
 * Destroy cancels whatever is still in flight, waits for it, and frees.
 */
struct s3_client *s3_client_create(const struct s3_client_config *cfg,
                                   char *err, size_t errlen);
void s3_client_destroy(struct s3_client *c);
/*
 * The end of c's requests, before its destroy: the stop hook runs, what is
 * still in flight is cancelled and waited for (every callback has run when
 * it returns); from then on nothing may be submitted. Once; destroy does
 * it when it was not done. NULL is fine.
 */
void s3_client_stop(struct s3_client *c);
/*
 * fn(arg) runs at the start of s3_client_destroy, while the engine still
 * sends requests (a data plane says goodbye to its server: s3_rc.h). Set
 * once, before the client is shared; NULL clears it.
 */
typedef void (*s3_client_stop_fn)(void *arg);
void s3_client_set_stop_hook(struct s3_client *c, s3_client_stop_fn fn,
                             void *arg);

/* The resolved region and credential source (borrowed). */
const char *s3_client_region(const struct s3_client *c);
const char *s3_client_creds_source(const struct s3_client *c);

/*
 * n connections to the endpoint made now, ready for the first requests: n
 * HEADs of bucket sent at once, in the background, each answer (any)
 * dropped. Counted in warm_requests only; their round trips feed
 * s3_client_rtt_us. Never retried. bucket NULL: nothing sent (RGW answers
 * a HEAD of the service with a stray chunk after it, which breaks the
 * next answer on that connection).
 */
void s3_client_warm(struct s3_client *c, const char *bucket, unsigned n);

/* ---- stats ---- */

struct s3_stats {
  uint64_t requests;          /* requests completed (any outcome) */
  uint64_t attempts;          /* HTTP exchanges, retries included */
  uint64_t retries;
  uint64_t bytes_sent;        /* request bodies */
  uint64_t bytes_received;    /* response bodies */
  uint64_t cancelled;
  uint64_t errors[16];        /* by enum s3_err_class, final outcomes */
  uint64_t inflight;          /* now */
  uint64_t max_inflight_seen; /* (connection warmers left out) */
  uint64_t warm_requests;     /* s3_client_warm's, done (not in requests) */
  uint64_t rtt_us;            /* s3_client_rtt_us, now */
  /* RDMA tokens (s3_req_set_rdma): bytes_sent/bytes_received above count
     HTTP bodies only, these the bytes the server moved by RDMA */
  uint64_t rdma_requests;     /* attempts that carried a token */
  uint64_t rdma_bytes;
  uint64_t rdma_declined;     /* x-amz-rdma-reply: 501 */
  uint64_t rdma_ignored;      /* replies without x-amz-rdma-reply */
  uint64_t rdma_resent;       /* sent again over HTTP: PUTs declined,
                                 ignored or failed; requests bound to an
                                 endpoint that is down */
  uint64_t rdma_put_etag;     /* PUTs served without a reply header, the
                                 ETag showing our bytes stored */
};

void s3_client_stats(const struct s3_client *c, struct s3_stats *out);
/*
 * The server's round trip as this client sees it, in microseconds: the
 * least time from a request sent (its connection made) to the first byte
 * of the answer, over the last 10 to 20 s of answers (the network's delay
 * and the server's quickest reply together); 0 before the first answer.
 */
uint64_t s3_client_rtt_us(const struct s3_client *c);
/* Human-readable, one "name value" per line, into buf; returns length. */
size_t s3_stats_format(const struct s3_stats *s, char *buf, size_t len);
/*
 * The latency histograms (common/stats_hist.h) appended at buf+off:
 * s3.request_seconds{op=OP,phase=ttfb|total}, per HTTP exchange the
 * server answered (retries each count), for each operation seen (get,
 * put, head, list, delete, part, copy, multipart, other). Returns the new
 * offset.
 */
size_t s3_client_latency_format(struct s3_client *c, char *buf, size_t len,
                                size_t off);
/*
 * With more than one endpoint, theirs appended at buf+off, by their place
 * in the list (as the mount's log names them): s3.endpoint_attempts,
 * s3.endpoint_failures, s3.endpoint_downs (taken out), s3.endpoint_up
 * (1 or 0), s3.endpoint_probes, s3.endpoint_bytes, each {endpoint=I}.
 * Returns the new offset.
 */
size_t s3_client_endpoints_format(const struct s3_client *c, char *buf,
                                  size_t len, size_t off);
/* The URL of endpoint i, or NULL past the list. */
const char *s3_client_endpoint(const struct s3_client *c, unsigned i);
/* How many endpoints the client has (1 or more). */
unsigned s3_client_endpoints(const struct s3_client *c);
/* The endpoint a new per-server thing (an RC session's request) goes to
   (any thread): of those up, the one with the least load[i] (the caller's
   measure of what it has there, e.g. sessions busy; NULL: all equal), ties
   in turn; every one down: the next in turn. */
unsigned s3_client_endpoint_next(struct s3_client *c, const unsigned *load);

/* ---- generic requests (the asynchronous interface) ---- */

struct s3_req;
typedef void (*s3_req_done_fn)(struct s3_req *req, void *arg);

/*
 * A request: method on bucket/key (key may be NULL or "" for bucket-level,
 * bucket NULL for the service). The strings are copied.
 */
struct s3_req *s3_req_create(struct s3_client *c, const char *method,
                             const char *bucket, const char *key);
/*
 * Add a query parameter (raw, encoded here) or a request header (signed).
 * Headers are where per-request extras such as the RDMA token go.
 */
int s3_req_add_query(struct s3_req *r, const char *name, const char *value);
int s3_req_add_header(struct s3_req *r, const char *name, const char *value);
/* Body to send, borrowed until completion; resent on retry. */
void s3_req_set_body(struct s3_req *r, const void *buf, size_t len,
                     bool sign_payload);
/*
 * Where the reply body goes. Into a caller buffer of cap bytes (borrowed; a
 * longer body is -EBADMSG), skipping the first skip bytes (a server that
 * answers a ranged GET with the whole object), or into an XML parser of the
 * given kind writing into result.
 */
void s3_req_set_sink_buf(struct s3_req *r, void *buf, size_t cap);
/* The same into several buffers filled in order (at most S3_SINK_MAX_IOV;
   -EINVAL beyond). The iovec array is copied, the buffers are borrowed. */
int s3_req_set_sink_iov(struct s3_req *r, const struct iovec *iov, int n);
void s3_req_set_sink_xml(struct s3_req *r, enum s3_xml_kind kind,
                         void *result);
void s3_req_set_range(struct s3_req *r, uint64_t off, uint64_t len);
/* A server that answers the range with the whole object fails the request
   (-EBADMSG) once the buffer is full, rather than sending all of it (a
   lookup's GET of a file's first bytes). */
void s3_req_set_range_only(struct s3_req *r);
void s3_req_set_timeout(struct s3_req *r, unsigned timeout_ms);
/* Safe to repeat? Defaults: GET/HEAD/PUT/DELETE yes, POST no. */
void s3_req_set_idempotent(struct s3_req *r, bool idempotent);
/* How many attempts the server may have acted on (sent, then no answer or
   a 5xx) were repeated? Read once the request is done. */
unsigned s3_req_resent(const struct s3_req *r);

/*
 * Submit. done (may be NULL) runs on the engine thread when the request has
 * finished (success, error after retries, or cancellation); it must not
 * block, and may destroy the request. Without done, use s3_req_wait.
 * Submitted while the client is being destroyed, the request completes at
 * once with -ECANCELED, on the caller's thread.
 */
void s3_req_submit(struct s3_req *r, s3_req_done_fn done, void *arg);
/* Wait for a request submitted without done; returns s3_req_result. */
int s3_req_wait(struct s3_req *r);
/* Ask for cancellation; the request completes with -ECANCELED. */
void s3_req_cancel(struct s3_req *r);
void s3_req_destroy(struct s3_req *r);

/*
 * RDMA (docs/rdma.md, "Token formats"). Carry token, a transport's
 * token for exactly
 * the len bytes this GET, PUT or UploadPart moves, in the client's token
 * header (signed), with x-amz-content-sha256: UNSIGNED-PAYLOAD and no body
 * (a PUT also sends x-amz-decoded-content-length: len). The memory the token
 * names must be the request's own: for a GET the sink buffer (a single one,
 * of len bytes; set the range to the same len), for a PUT the body (kept,
 * borrowed, for an HTTP resend). The reply decides:
 *   x-amz-rdma-reply 200/204/206  the server moved the bytes: a GET must
 *        have an empty body and x-amz-rdma-bytes-transferred <= len (fewer at
 *        the end of the object), a PUT exactly len; else -EBADMSG
 *   x-amz-rdma-reply 501  declined: a GET's bytes came in the body; a PUT
 *        is sent again at once over HTTP
 *   no x-amz-rdma-reply   a PUT whose reply's ETag is the body's MD5: the
 *        server moved the bytes and omitted the header (some do): as 200.
 *        Otherwise the server ignored the token: as 501 (for a PUT it
 *        stored an empty object or part, which the resend overwrites), and
 *        s3_client_rdma_usable() turns false (logged once)
 *   any other value       -EBADMSG
 * Time: the server moves the bytes while the HTTP exchange is idle, so an
 * attempt carrying the token is not subject to the low-speed abort; it has
 * a deadline instead (rdma_timeout_ms plus 1 s per 8 MiB, or the request's
 * timeout when shorter), sent and signed as x-amz-rdma-expires: the
 * CLOCK_REALTIME in ms after which the server must not touch the token's
 * memory (s3rdma-gateway stops there). The client gives up at that moment
 * too, so the two never move the same bytes twice at once.
 * -EINVAL: not a GET or PUT, an empty or CR/LF-carrying token, len 0.
 */
int s3_req_set_rdma(struct s3_req *r, const char *token, uint64_t len);
/*
 * Bind r to endpoint i (its token names a session there). Each attempt
 * goes to i while i is up; strict, or a token that must go by RDMA
 * (rdma_only): every attempt to i, up or not. Otherwise an attempt that
 * goes elsewhere carries no token (the bytes in the HTTP body).
 */
void s3_req_set_endpoint(struct s3_req *r, int i, bool strict);

/*
 * After s3_req_set_rdma on a PUT: the token names memory the client cannot
 * read (device memory: GPUDirect), so the body is never sent nor hashed.
 * Where a PUT would be resent over HTTP (declined, ignored, reply 500) it
 * fails instead with -EOPNOTSUPP, not retried: whatever a server that
 * ignored the token stored is its to overwrite (an UploadPart sent again).
 */
void s3_req_set_rdma_only(struct s3_req *r);
/*
 * The token names memory another process owns and may change while the
 * server reads it (a caller's registered buffer): a PUT reply without
 * x-amz-rdma-reply is not judged by the body's MD5 (it is taken as not
 * served: resent over HTTP), and it never turns tokens off for the client
 * (s3_client_rdma_usable stays as it is). Implied by s3_req_set_rdma_only.
 * Call before or after s3_req_set_rdma.
 */
void s3_req_set_rdma_foreign(struct s3_req *r);

enum s3_rdma_path {
  S3_RDMA_NONE = 0, /* no token, or the request failed */
  S3_RDMA_DONE,     /* the server moved the bytes */
  S3_RDMA_DECLINED, /* 501: HTTP body (a PUT: resent) */
  S3_RDMA_IGNORED,  /* no reply header: HTTP body (a PUT: resent) */
  S3_RDMA_FAILED,   /* 500: the transfer failed (NVIDIA's
                       RDMATransferFailed; RC: the session is gone): sent
                       again at once over HTTP, GET and PUT alike */
};
/* How the finished request's bytes moved, and how many by RDMA. */
enum s3_rdma_path s3_req_rdma_path(const struct s3_req *r);
uint64_t s3_req_rdma_bytes(const struct s3_req *r);
/* Was x-amz-rdma-reply 500 answered to any attempt of r? */
bool s3_req_rdma_failed(const struct s3_req *r);
/*
 * fn(r, arg) runs exactly once: when r finishes, before its done callback
 * or waiter sees it (on the engine thread, or the submitter's when the
 * client is stopping), or at s3_req_destroy if r was never submitted. It
 * must not block; r's results and RDMA state are readable in it. A data
 * plane gives back what the token's request held (an RC session).
 */
typedef void (*s3_req_release_fn)(struct s3_req *r, void *arg);
void s3_req_set_rdma_release(struct s3_req *r, s3_req_release_fn fn,
                             void *arg);
/* Did the last attempt carry a token? (false after an HTTP resend) */
bool s3_req_rdma_carried(const struct s3_req *r);
/*
 * Did an attempt carrying the token end without an HTTP reply (timeout,
 * connection lost, cancellation)? Then the server may still be using the
 * memory the token names, whatever the request's final outcome: do not
 * reuse it before s3_req_rdma_deadline has passed. (Set before the
 * request is finished, a cancelled one included.)
 */
bool s3_req_rdma_doubt(const struct s3_req *r);
/*
 * When s3_req_rdma_doubt: the deadline (x-amz-rdma-expires) of the latest
 * attempt left in doubt, *mono_ms on CLOCK_MONOTONIC and *wall_ms on
 * CLOCK_REALTIME, both in ms (else 0 and 0). A server that honours the
 * deadline touches the memory no more once both clocks have passed it
 * (allow a moment for its last call to end). Attempts answered since do
 * not matter: their server was done with their token when it answered.
 */
void s3_req_rdma_deadline(const struct s3_req *r, uint64_t *mono_ms,
                          uint64_t *wall_ms);
/* false once the server has shown it ignores tokens: stop making them. */
bool s3_client_rdma_usable(const struct s3_client *c);
/*
 * Has the server answered a token (x-amz-rdma-reply, or a PUT's ETag)?
 * Until then, a PutObject over an existing object should go without one:
 * a server that ignores the token stores an empty object until the HTTP
 * resend, and others would see the old data gone meanwhile. (Parts are
 * not visible before Complete, and a new object was not there to lose.)
 */
bool s3_client_rdma_known(const struct s3_client *c);

/* ---- results of a finished request ---- */

/* 0 or a negative errno. */
int s3_req_result(const struct s3_req *r);
long s3_req_status(const struct s3_req *r);
/* Bytes stored in the sink buffer (by the HTTP body or by RDMA). */
size_t s3_req_received(const struct s3_req *r);
/* A response header by name (case-insensitive), borrowed, or NULL. */
const char *s3_req_header(const struct s3_req *r, const char *name);
/* Iterate response headers: i from 0; returns false past the end. */
bool s3_req_header_at(const struct s3_req *r, size_t i, const char **name,
                      const char **value);
/* The S3 error of a failed request (code empty if none). */
const struct s3_error_info *s3_req_error(const struct s3_req *r);
unsigned s3_req_attempts(const struct s3_req *r);

/* ---- operations ---- */

struct s3_object_meta {
  uint64_t size;
  char etag[S3_ETAG_MAX];     /* quotes removed */
  time_t mtime;
  char content_type[128];
  struct s3_meta_kv {         /* x-amz-meta-* without the prefix */
    char *key;
    char *val;
  } *meta;
  size_t n_meta;
};
void s3_object_meta_cleanup(struct s3_object_meta *m);

struct s3_put_opts {
  const char *content_type;
  const struct s3_kv *meta;   /* x-amz-meta-<key>: <val> */
  size_t n_meta;
  const struct s3_kv *headers; /* extra headers */
  size_t n_headers;
};

struct s3_list_params {
  const char *prefix;
  const char *delimiter;
  const char *continuation;
  const char *start_after;
  unsigned max_keys;          /* 0: server default (1000) */
};

int s3_list_buckets(struct s3_client *c, struct s3_buckets_result *out);
int s3_create_bucket(struct s3_client *c, const char *bucket);
int s3_delete_bucket(struct s3_client *c, const char *bucket);
/* One page; follow out->next_token for more. */
int s3_list_objects(struct s3_client *c, const char *bucket,
                    const struct s3_list_params *p, struct s3_list_result *out);
int s3_head_object(struct s3_client *c, const char *bucket, const char *key,
                   struct s3_object_meta *out);
/*
 * Read [off, off+len) into buf; *got is the number of bytes stored (less than
 * len at the end of the object, 0 at or past it).
 */
int s3_get_object(struct s3_client *c, const char *bucket, const char *key,
                  uint64_t off, size_t len, void *buf, size_t *got);
int s3_put_object(struct s3_client *c, const char *bucket, const char *key,
                  const void *buf, size_t len, const struct s3_put_opts *o,
                  char etag[S3_ETAG_MAX]);
/*
 * CreateMultipartUpload; *upload_id is malloc'd, the caller frees it.
 * Retried like any request, also once sent (as AWS's SDKs do): an attempt
 * whose answer was lost may have made an upload that is then nobody's;
 * *orphans says how many may exist, one per such attempt (NULL: the log
 * says it).
 */
int s3_create_multipart(struct s3_client *c, const char *bucket,
                        const char *key, const struct s3_put_opts *o,
                        char **upload_id, unsigned *orphans);
int s3_upload_part(struct s3_client *c, const char *bucket, const char *key,
                   const char *upload_id, int part, const void *buf,
                   size_t len, char etag[S3_ETAG_MAX]);
/* Copy [off, off+len) of src into a part; len 0 copies the whole source. */
int s3_upload_part_copy(struct s3_client *c, const char *bucket,
                        const char *key, const char *upload_id, int part,
                        const char *src_bucket, const char *src_key,
                        uint64_t off, uint64_t len, char etag[S3_ETAG_MAX]);
int s3_complete_multipart(struct s3_client *c, const char *bucket,
                          const char *key, const char *upload_id,
                          const struct s3_part_etag *parts, size_t n,
                          char etag[S3_ETAG_MAX]);
/* The same with a precondition header (If-Match: <etag> or If-None-Match:
   *), NULL for none: a 412 is -ESTALE. S3 honours it; RGW 16 ignores it. */
int s3_complete_multipart_if(struct s3_client *c, const char *bucket,
                             const char *key, const char *upload_id,
                             const struct s3_part_etag *parts, size_t n,
                             const struct s3_kv *cond, char etag[S3_ETAG_MAX]);
int s3_abort_multipart(struct s3_client *c, const char *bucket,
                       const char *key, const char *upload_id);
/*
 * ListParts: every part the server lists for the upload (page after page,
 * up to 10,000 parts) in *out, zeroed here; after 0 the caller frees it
 * with s3_parts_result_cleanup. run: how each request is run (NULL: as the
 * synchronous calls are), given arg. -ENOENT: the upload is gone.
 */
int s3_list_parts(struct s3_client *c, const char *bucket, const char *key,
                  const char *upload_id, int (*run)(void *, struct s3_req *),
                  void *arg, struct s3_parts_result *out);
/*
 * ListMultipartUploads: one page (up to 1000) of the uploads in progress
 * whose key starts with prefix (NULL or "": all), in key order, after
 * key_marker/upload_id_marker (NULL: from the start; the upload id marker is
 * only sent with a key marker). *out is zeroed here; after 0 the caller frees
 * it with s3_uploads_result_cleanup; on failure it is empty. When
 * out->truncated, ask again with out->next_key_marker and
 * out->next_upload_id_marker (both set then).
 */
int s3_list_multipart_uploads(struct s3_client *c, const char *bucket,
                              const char *prefix, const char *key_marker,
                              const char *upload_id_marker,
                              struct s3_uploads_result *out);
/*
 * CopyObject. replace_meta false: metadata copied from the source (COPY);
 * true: the source's metadata replaced by o's (REPLACE).
 */
int s3_copy_object(struct s3_client *c, const char *src_bucket,
                   const char *src_key, const char *dst_bucket,
                   const char *dst_key, bool replace_meta,
                   const struct s3_put_opts *o, char etag[S3_ETAG_MAX]);
/*
 * A server-side copy of any size (S3 caps CopyObject at 5 GiB). size is the
 * source's size as the caller knows it. size <= multipart_threshold (callers
 * pass 5 GiB): s3_copy_object. Above it, a multipart upload of part_size
 * parts (5 MiB..5 GiB, else -EINVAL; grown when the object would need more
 * than 10000 parts; objects over 5 TiB are -EFBIG): the source is HEADed
 * first (a size other than size is -ESTALE), each part is an UploadPartCopy
 * of that ETag (x-amz-copy-source-if-match, which Ceph RGW 16 does not
 * check), up to 16 on the wire at once, then Complete. replace_meta false (COPY): the source's Content-Type,
 * Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
 * Expires and x-amz-meta-* go to the new object and o is ignored, as
 * CopyObject does (tags, ACLs and storage class are not carried); true
 * (REPLACE): o's. On any failure the upload is aborted and the error
 * returned. etag may be NULL.
 */
int s3_copy_object_any(struct s3_client *c, const char *src_bucket,
                       const char *src_key, const char *dst_bucket,
                       const char *dst_key, bool replace_meta,
                       const struct s3_put_opts *o, uint64_t size,
                       uint64_t multipart_threshold, uint64_t part_size,
                       char etag[S3_ETAG_MAX]);
int s3_delete_object(struct s3_client *c, const char *bucket, const char *key);
/* At most 1000 keys; per-key failures are listed in out->errors. */
int s3_delete_objects(struct s3_client *c, const char *bucket,
                      const char *const *keys, size_t n,
                      struct s3_delete_result *out);

/* Builders for the asynchronous forms (the page cache uses these). */
struct s3_req *s3_get_object_req(struct s3_client *c, const char *bucket,
                                 const char *key, uint64_t off, size_t len,
                                 void *buf);
/* After a GET finishes: 0 and *got, handling 416 as end of object. */
int s3_get_object_result(const struct s3_req *r, size_t *got);
/* After a ranged GET finishes: the object's metadata from the response's
   headers, as a HEAD's (its size from Content-Range). An empty object
   answers a range with 416 (-ERANGE): ask its HEAD. */
int s3_get_meta_result(const struct s3_req *r, struct s3_object_meta *out);
/* HEAD as a request: create with s3_req_create(c, "HEAD", bucket, key). */
int s3_head_object_result(const struct s3_req *r, struct s3_object_meta *out);
/*
 * ListObjectsV2 as a request writing into *out (zeroed here); after it
 * finishes s3_req_result() tells, and the caller cleans *out up either way.
 */
struct s3_req *s3_list_objects_req(struct s3_client *c, const char *bucket,
                                   const struct s3_list_params *p,
                                   struct s3_list_result *out);
/* UploadPart as a request (NULL: ENOMEM or a part number out of 1..10000). */
struct s3_req *s3_upload_part_req(struct s3_client *c, const char *bucket,
                                  const char *key, const char *upload_id,
                                  int part, const void *buf, size_t len);
/* After an UploadPart finishes: 0 and the part's ETag. */
int s3_upload_part_result(const struct s3_req *r, char etag[S3_ETAG_MAX]);
/*
 * PutObject as a request: the body is borrowed until completion (resent on
 * retry), o is copied into the request. NULL: ENOMEM, or an o that cannot
 * be sent (a meta key too long, a header with CR/LF); s3_put_object says
 * which.
 */
struct s3_req *s3_put_object_req(struct s3_client *c, const char *bucket,
                                 const char *key, const void *buf, size_t len,
                                 const struct s3_put_opts *o);
/* After a PUT finishes: 0 and the object's ETag ("" if the server sent
   none; etag may be NULL). */
int s3_put_object_result(const struct s3_req *r, char etag[S3_ETAG_MAX]);
/*
 * UploadPartCopy as a request: [off, off+len) of src into the part (len 0:
 * the whole source). src_if_match (NULL: none; quotes optional) makes it
 * x-amz-copy-source-if-match: the copy fails with -ESTALE (412) when the
 * source's ETag is another. NULL: ENOMEM or a part number out of
 * 1..10000 (s3_upload_part_copy says which).
 * Ceph RGW 16 ignores x-amz-copy-source-if-match (and every other
 * x-amz-copy-source-if-* on UploadPartCopy): the copy proceeds whatever the
 * source's ETag. AWS S3 documents and enforces it.
 */
struct s3_req *s3_upload_part_copy_req(struct s3_client *c,
                                       const char *bucket, const char *key,
                                       const char *upload_id, int part,
                                       const char *src_bucket,
                                       const char *src_key, uint64_t off,
                                       uint64_t len, const char *src_if_match);
/* After an UploadPartCopy finishes: 0 and the part's ETag ("" on failure;
   a reply without one is -EBADMSG). */
int s3_upload_part_copy_result(const struct s3_req *r,
                               char etag[S3_ETAG_MAX]);

#endif
