/*
 * fake_s3: an S3 server in the test's own process, for unit tests of the
 * read and write paths (the real S3 client talks HTTP to it on 127.0.0.1;
 * nothing else is faked). Buckets and objects live in memory: GET (ranges,
 * If-Match, If-None-Match), HEAD, PUT (conditional, x-amz-meta-*), copy,
 * DELETE and multi-delete, ListObjectsV2 (prefix, delimiter, pages),
 * ListBuckets, and multipart uploads (initiate, parts, copied parts,
 * complete, abort, list). Signatures are not checked.
 *
 * Faults, deterministic: a rule answers the next N requests of one kind
 * (and key) with a status, after a delay, or holds them until the test
 * releases them (so that requests land in the order the test chooses).
 * Every request is counted by kind.
 *
 * Threads: libmicrohttpd's, one per connection; every call here may come
 * from any thread.
 */
#ifndef S3R_TEST_FAKE_S3_H
#define S3R_TEST_FAKE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a request is, for rules and counts. */
enum fake_op {
  FAKE_ANY = 0,
  FAKE_GET,           /* GetObject */
  FAKE_HEAD,          /* HeadObject */
  FAKE_PUT,           /* PutObject */
  FAKE_COPY,          /* CopyObject */
  FAKE_DELETE,        /* DeleteObject */
  FAKE_DELETE_MULTI,  /* DeleteObjects */
  FAKE_LIST,          /* ListObjectsV2 */
  FAKE_INITIATE,      /* CreateMultipartUpload */
  FAKE_PART,          /* UploadPart */
  FAKE_PART_COPY,     /* UploadPartCopy */
  FAKE_COMPLETE,      /* CompleteMultipartUpload */
  FAKE_ABORT,         /* AbortMultipartUpload */
  FAKE_LIST_UPLOADS,  /* ListMultipartUploads */
  FAKE_LIST_PARTS,    /* ListParts */
  FAKE_BUCKET,        /* bucket calls: HEAD, PUT, DELETE, ListBuckets */
  FAKE_OPS
};

struct fake_s3;

/* Started on an ephemeral port of 127.0.0.1, with the bucket given made;
   NULL on failure. */
struct fake_s3 *fake_s3_start(const char *bucket);
void fake_s3_stop(struct fake_s3 *f);
/* "http://127.0.0.1:PORT" */
const char *fake_s3_endpoint(const struct fake_s3 *f);

/* An object stored as a client's PUT would (its ETag the MD5 of data). */
int fake_s3_put(struct fake_s3 *f, const char *bucket, const char *key,
                const void *data, size_t len);
/* A copy of an object's bytes (malloc'ed, *data) and its ETag (unquoted,
   up to 48 bytes with the NUL): 0, or -ENOENT. */
int fake_s3_get(struct fake_s3 *f, const char *bucket, const char *key,
                void **data, size_t *len, char *etag);
/* Does the object hold exactly want[0, len)? False says why on stderr
   (absent, its length, the first byte that differs). */
bool fake_s3_holds(struct fake_s3 *f, const char *bucket, const char *key,
                   const void *want, size_t len);
/* Is there such an object? */
bool fake_s3_has(struct fake_s3 *f, const char *bucket, const char *key);
/* Multipart uploads begun and neither completed nor aborted (those
   interrupted, below, included). */
unsigned fake_s3_uploads(struct fake_s3 *f);
/*
 * From now on, completions land as when RGW is killed in the middle of
 * one: the object is written and the upload stays listed, every later
 * completion of it answered 500 ("already in progress"); aborting it
 * deletes the object it became (its parts are the object's data).
 */
void fake_s3_interrupt_completions(struct fake_s3 *f);

/*
 * The next `times` requests of kind op (FAKE_ANY: every kind) whose key
 * contains key (NULL: any) are answered with status (an S3 error: 500
 * InternalError, 503 SlowDown, 404 NoSuchKey, 412 PreconditionFailed, or
 * any other) after delay_ms; status 0 serves them as usual after the
 * delay; a negative status serves them, then answers -status (the
 * request landed, its answer was lost); FAKE_RDMA_FAILED answers 500 with
 * x-amz-rdma-reply: 500 (an RDMA server's failed transfer). Rules are
 * tried in the order they were added; one whose times are used up is gone.
 */
#define FAKE_RDMA_FAILED 1500
void fake_s3_fault(struct fake_s3 *f, enum fake_op op, const char *key,
                   int status, unsigned times, unsigned delay_ms);
/* Every rule gone (faults and holds; held requests go on). */
void fake_s3_clear(struct fake_s3 *f);
/* Requests of kind op (key as above) wait, once received whole, until
   fake_s3_release; fake_s3_held says how many wait now. */
void fake_s3_hold(struct fake_s3 *f, enum fake_op op, const char *key);
unsigned fake_s3_held(struct fake_s3 *f);
/* Every waiting request goes on, and no new one is held. */
void fake_s3_release(struct fake_s3 *f);
/* Wait (at most ms) until n requests are held: true when they are. */
bool fake_s3_wait_held(struct fake_s3 *f, unsigned n, unsigned ms);

/* Requests received of kind op (FAKE_ANY: all), since the start or the
   last reset. */
unsigned fake_s3_count(struct fake_s3 *f, enum fake_op op);
void fake_s3_reset_counts(struct fake_s3 *f);
/* Requests answered by a fault rule's status (since the same reset). */
unsigned fake_s3_refused(struct fake_s3 *f);
/* Wait until no request has come for ms (at most 10 s): true when so (a
   read's readahead GETs, sent after it returned, all in). */
bool fake_s3_quiet(struct fake_s3 *f, unsigned ms);

#endif
