/* fake_s3's parts (fake_s3.c: the server and its rules; fake_s3_store.c:
   the buckets, objects and uploads, and the answers). */
#ifndef S3R_TEST_FAKE_S3_I_H
#define S3R_TEST_FAKE_S3_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fake_s3.h"

#define FAKE_ETAG_MAX 48

struct fake_obj {
  char *key;
  char *data;
  size_t len;
  char etag[FAKE_ETAG_MAX];   /* unquoted */
  char *meta;                 /* "name: value\n" lines: x-amz-meta-*,
                                 content-type */
  time_t mtime;
};

struct fake_part {
  int num;
  char *data;
  size_t len;
  char etag[FAKE_ETAG_MAX];
};

struct fake_upload {
  char id[24];
  char *bucket, *key;
  char *meta;
  struct fake_part *parts;    /* by number, unsorted */
  size_t nparts;
  char landed[64];            /* its completion landed, the upload kept
                                 listed (interrupted): the object's ETag */
  struct fake_upload *next;
};

struct fake_bucket {
  char *name;
  struct fake_obj *objs;      /* sorted by key */
  size_t nobjs;
};

/* A request as received: what the store answers from. */
struct fake_req {
  const char *method;
  const char *bucket;         /* NULL: the service (ListBuckets) */
  const char *key;            /* NULL: a bucket call */
  const char *body;
  size_t body_len;
  /* the headers and query arguments asked for by name (NULL: none) */
  const char *(*header)(const struct fake_req *q, const char *name);
  const char *(*arg)(const struct fake_req *q, const char *name);
  bool (*has_arg)(const struct fake_req *q, const char *name);
  void *con;                  /* the connection, for the callbacks */
};

/* An answer: status, headers ("Name: value\r\n" lines) and body, all
   malloc'ed (fake_s3.c sends and frees them). */
struct fake_resp {
  int status;
  char *headers;
  size_t headers_len;
  char *body;
  size_t body_len;
};

struct fake_s3 {
  pthread_mutex_t lock;       /* everything below */
  pthread_cond_t cond;        /* a hold released, or one more held */
  struct fake_bucket *buckets;
  size_t nbuckets;
  struct fake_upload *uploads;
  unsigned next_upload;
  bool interrupted;           /* completions land as RGW killed mid-way */
  struct fake_rule *rules;
  unsigned held;              /* requests waiting now */
  unsigned hold_epoch;        /* a release: every waiter goes on */
  unsigned counts[FAKE_OPS];
  unsigned refused;           /* answered by a fault rule's status */
  struct MHD_Daemon *mhd;     /* fixed */
  char endpoint[64];          /* fixed */
};

/* The kind of a request. */
enum fake_op fake_op_of(const struct fake_req *q);
/* Answer q (lock held). */
void fake_store_serve(struct fake_s3 *f, const struct fake_req *q,
                      struct fake_resp *r);
/* The bucket named so, made when make; NULL (lock held). */
struct fake_bucket *fake_store_bucket(struct fake_s3 *f, const char *name,
                                      bool make);
/* Store an object (lock held): data copied, ETag its MD5 unless etag. */
int fake_store_put(struct fake_bucket *b, const char *key, const char *data,
                   size_t len, const char *meta, const char *etag);
struct fake_obj *fake_store_find(struct fake_bucket *b, const char *key);
/* fake_s3_mpu.c: multipart uploads, multi-delete, bucket calls. */
void fake_mpu_serve(struct fake_s3 *f, const struct fake_req *q,
                    struct fake_resp *r, enum fake_op op);
/* Shared by the two (fake_s3_store.c). */
void fake_text_md5(const void *p, size_t n, char out[FAKE_ETAG_MAX]);
void fake_obj_remove(struct fake_bucket *b, const char *key);
void fake_upload_free(struct fake_upload *u);
char *fake_meta_of(const struct fake_req *q);
void fake_etag_result(struct fake_resp *r, const char *root, const char *etag);
struct fake_obj *fake_copy_source(struct fake_s3 *f, const char *src);
/* An S3 error answer. */
void fake_resp_error(struct fake_resp *r, int status, const char *code);
/* Everything the store holds freed (at stop). */
void fake_store_free(struct fake_s3 *f);

#endif
