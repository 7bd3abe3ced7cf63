/*
 * fake_s3: the server and its rules (see fake_s3.h). libmicrohttpd, a
 * thread per connection: a held request blocks its connection's thread on
 * f->cond until fake_s3_release, so the others go on.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_s3_i.h"

#define BODY_MAX (256u << 20)

struct fake_rule {
  struct fake_rule *next;
  enum fake_op op;
  char *key;                  /* NULL: any */
  int status;                 /* 0: served */
  unsigned times;             /* 0: until released (a hold) */
  unsigned delay_ms;
  bool hold;
};

/* One request's body as it arrives. */
struct upload {
  char *p;
  size_t len, cap;
  bool too_big;
};

static const char *q_header(const struct fake_req *q, const char *name)
{
  return MHD_lookup_connection_value(q->con, MHD_HEADER_KIND, name);
}

static const char *q_arg(const struct fake_req *q, const char *name)
{
  return MHD_lookup_connection_value(q->con, MHD_GET_ARGUMENT_KIND, name);
}

static bool q_has_arg(const struct fake_req *q, const char *name)
{
  const char *v = NULL;
  size_t n = 0;

  return MHD_lookup_connection_value_n(q->con, MHD_GET_ARGUMENT_KIND, name,
                                       strlen(name), &v, &n) == MHD_YES;
}

/* The rule that takes q (its times counted), or NULL (lock held). */
static struct fake_rule *take_rule(struct fake_s3 *f, enum fake_op op,
                                   const char *key, struct fake_rule *out)
{
  for (struct fake_rule **pp = &f->rules, *r; (r = *pp); pp = &r->next) {
    if ((r->op != FAKE_ANY && r->op != op) ||
        (r->key && (!key || !strstr(key, r->key))))
      continue;
    *out = *r;
    if (!r->hold && !--r->times) {
      *pp = r->next;
      free(r->key);
      free(r);
    }
    out->key = NULL;
    return out;
  }
  return NULL;
}

static void sleep_ms(unsigned ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

/* Split "/bucket/key..." (MHD has decoded it) into q. */
static char *split_path(const char *url, struct fake_req *q)
{
  char *copy = strdup(url[0] == '/' ? url + 1 : url), *slash;

  q->bucket = *copy ? copy : NULL;
  q->key = NULL;
  if ((slash = strchr(copy, '/'))) {
    *slash = '\0';
    q->key = slash[1] ? slash + 1 : NULL;
  }
  return copy;
}

/* A HEAD's body: never read (MHD sends none), only its length counts. */
static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
  (void)cls;
  (void)pos;
  (void)buf;
  (void)max;
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

static enum MHD_Result send_resp(struct MHD_Connection *con,
                                 struct fake_resp *r, bool head)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;
  char *line, *save = NULL;
  unsigned long long head_len = 0;
  const char *hl = r->headers ? strstr(r->headers, "X-Fake-Length: ") : NULL;

  /* a HEAD's Content-Length: the object's, as a GET's would be */
  if (head && hl && sscanf(hl, "X-Fake-Length: %llu", &head_len) == 1) {
    free(r->body);
    resp = MHD_create_response_from_callback(head_len, 4096, no_body, NULL,
                                             NULL);
  } else {
    resp = MHD_create_response_from_buffer(r->body_len, r->body,
                                           MHD_RESPMEM_MUST_FREE);
  }
  r->body = NULL;
  if (!resp)
    return MHD_NO;
  for (line = r->headers ? strtok_r(r->headers, "\r\n", &save) : NULL; line;
       line = strtok_r(NULL, "\r\n", &save)) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = '\0';
    if (!strcmp(line, "X-Fake-Length"))
      continue;
    MHD_add_response_header(resp, line, colon + 2);
  }
  free(r->headers);
  ret = MHD_queue_response(con, (unsigned)r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_len, void **con_cls)
{
  struct fake_s3 *f = cls;
  struct upload *u = *con_cls;
  struct fake_req q = {.method = method, .header = q_header, .arg = q_arg,
                       .has_arg = q_has_arg, .con = con};
  struct fake_resp r = {0};
  struct fake_rule rule, *hit;
  enum fake_op op;
  char *path;

  (void)version;
  if (!u) { /* the headers: bodies come next */
    *con_cls = calloc(1, sizeof(struct upload));
    return *con_cls ? MHD_YES : MHD_NO;
  }
  if (*data_len) {
    if (u->len + *data_len > BODY_MAX) {
      u->too_big = true;
    } else {
      if (u->len + *data_len > u->cap) {
        char *p = realloc(u->p, (u->len + *data_len) * 2);
        if (!p)
          return MHD_NO;
        u->p = p;
        u->cap = (u->len + *data_len) * 2;
      }
      memcpy(u->p + u->len, data, *data_len);
      u->len += *data_len;
    }
    *data_len = 0;
    return MHD_YES;
  }
  path = split_path(url, &q);
  q.body = u->p;
  q.body_len = u->len;
  op = fake_op_of(&q);
  pthread_mutex_lock(&f->lock);
  f->counts[op]++;
  f->counts[FAKE_ANY] += op != FAKE_ANY;
  hit = take_rule(f, op, q.key, &rule);
  if (hit && hit->hold) {
    unsigned epoch = f->hold_epoch;
    f->held++;
    pthread_cond_broadcast(&f->cond);
    while (epoch == f->hold_epoch)
      pthread_cond_wait(&f->cond, &f->lock);
    hit = NULL;
  }
  pthread_mutex_unlock(&f->lock);
  if (hit && hit->delay_ms)
    sleep_ms(hit->delay_ms);
  pthread_mutex_lock(&f->lock);
  if (u->too_big)
    fake_resp_error(&r, 400, "EntityTooLarge");
  else if (hit && hit->status < 0) { /* served, its answer lost */
    fake_store_serve(f, &q, &r);
    free(r.headers);
    free(r.body);
    memset(&r, 0, sizeof(r));
    fake_resp_error(&r, -hit->status, "InternalError");
  } else if (hit && hit->status == FAKE_RDMA_FAILED) {
    f->refused++;
    fake_resp_error(&r, 500, "RDMATransferFailed");
    r.headers = strdup("x-amz-rdma-reply: 500\r\n");
    r.headers_len = r.headers ? strlen(r.headers) : 0;
  } else if (hit && hit->status) {
    f->refused++;
    fake_resp_error(&r, hit->status,
                    hit->status == 404   ? "NoSuchKey"
                    : hit->status == 412 ? "PreconditionFailed"
                    : hit->status == 503 ? "SlowDown"
                                         : "InternalError");
  } else
    fake_store_serve(f, &q, &r);
  pthread_mutex_unlock(&f->lock);
  free(path);
  return send_resp(con, &r, !strcmp(method, "HEAD"));
}

static void on_done(void *cls, struct MHD_Connection *con, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
  struct upload *u = *con_cls;

  (void)cls;
  (void)con;
  (void)toe;
  if (u) {
    free(u->p);
    free(u);
    *con_cls = NULL;
  }
}

struct fake_s3 *fake_s3_start(const char *bucket)
{
  struct fake_s3 *f = calloc(1, sizeof(*f));
  const union MHD_DaemonInfo *di;

  if (!f)
    return NULL;
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  if (bucket && !fake_store_bucket(f, bucket, true))
    goto fail;
  f->mhd = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
          MHD_USE_ERROR_LOG,
      0, NULL, NULL, on_request, f, MHD_OPTION_NOTIFY_COMPLETED, on_done, f,
      MHD_OPTION_SOCK_ADDR,
      (const struct sockaddr *)&(struct sockaddr_in){
          .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
      MHD_OPTION_END);
  if (!f->mhd)
    goto fail;
  di = MHD_get_daemon_info(f->mhd, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(f->endpoint, sizeof(f->endpoint), "http://127.0.0.1:%u",
           (unsigned)di->port);
  return f;

fail:
  fake_store_free(f);
  free(f);
  return NULL;
}

void fake_s3_stop(struct fake_s3 *f)
{
  if (!f)
    return;
  fake_s3_clear(f); /* (held requests go on: their threads can end) */
  MHD_stop_daemon(f->mhd);
  fake_store_free(f);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->lock);
  free(f);
}

const char *fake_s3_endpoint(const struct fake_s3 *f)
{
  return f->endpoint;
}

int fake_s3_put(struct fake_s3 *f, const char *bucket, const char *key,
                const void *data, size_t len)
{
  struct fake_bucket *b;
  int rc = -ENOENT;

  pthread_mutex_lock(&f->lock);
  if ((b = fake_store_bucket(f, bucket, false)))
    rc = fake_store_put(b, key, data, len, NULL, NULL);
  pthread_mutex_unlock(&f->lock);
  return rc;
}

int fake_s3_get(struct fake_s3 *f, const char *bucket, const char *key,
                void **data, size_t *len, char *etag)
{
  struct fake_obj *o;
  int rc = -ENOENT;

  pthread_mutex_lock(&f->lock);
  o = fake_store_find(fake_store_bucket(f, bucket, false), key);
  if (o && (*data = malloc(o->len ? o->len : 1))) {
    memcpy(*data, o->data, o->len);
    *len = o->len;
    if (etag)
      snprintf(etag, FAKE_ETAG_MAX, "%s", o->etag);
    rc = 0;
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

bool fake_s3_holds(struct fake_s3 *f, const char *bucket, const char *key,
                   const void *want, size_t len)
{
  void *got = NULL;
  size_t n = 0, i = 0;
  bool same;

  if (fake_s3_get(f, bucket, key, &got, &n, NULL)) {
    fprintf(stderr, "fake_s3: %s/%s: no such object\n", bucket, key);
    return false;
  }
  while (i < n && i < len && ((char *)got)[i] == ((const char *)want)[i])
    i++;
  same = n == len && i == len;
  if (!same)
    fprintf(stderr, "fake_s3: %s/%s: %zu bytes, %zu wanted; first "
            "difference at byte %zu\n", bucket, key, n, len, i);
  free(got);
  return same;
}

bool fake_s3_has(struct fake_s3 *f, const char *bucket, const char *key)
{
  bool has;

  pthread_mutex_lock(&f->lock);
  has = fake_store_find(fake_store_bucket(f, bucket, false), key) != NULL;
  pthread_mutex_unlock(&f->lock);
  return has;
}

unsigned fake_s3_uploads(struct fake_s3 *f)
{
  unsigned n = 0;

  pthread_mutex_lock(&f->lock);
  for (struct fake_upload *u = f->uploads; u; u = u->next)
    n++;
  pthread_mutex_unlock(&f->lock);
  return n;
}

void fake_s3_interrupt_completions(struct fake_s3 *f)
{
  pthread_mutex_lock(&f->lock);
  f->interrupted = true;
  pthread_mutex_unlock(&f->lock);
}

static void add_rule(struct fake_s3 *f, struct fake_rule *r, const char *key)
{
  struct fake_rule **pp;

  r->key = key ? strdup(key) : NULL;
  pthread_mutex_lock(&f->lock);
  for (pp = &f->rules; *pp; pp = &(*pp)->next)
    ;
  *pp = r;
  pthread_mutex_unlock(&f->lock);
}

void fake_s3_fault(struct fake_s3 *f, enum fake_op op, const char *key,
                   int status, unsigned times, unsigned delay_ms)
{
  struct fake_rule *r = calloc(1, sizeof(*r));

  if (!r || !times) {
    free(r);
    return;
  }
  r->op = op;
  r->status = status;
  r->times = times;
  r->delay_ms = delay_ms;
  add_rule(f, r, key);
}

void fake_s3_hold(struct fake_s3 *f, enum fake_op op, const char *key)
{
  struct fake_rule *r = calloc(1, sizeof(*r));

  if (!r)
    return;
  r->op = op;
  r->hold = true;
  add_rule(f, r, key);
}

unsigned fake_s3_held(struct fake_s3 *f)
{
  unsigned n;

  pthread_mutex_lock(&f->lock);
  n = f->held;
  pthread_mutex_unlock(&f->lock);
  return n;
}

void fake_s3_release(struct fake_s3 *f)
{
  pthread_mutex_lock(&f->lock);
  for (struct fake_rule **pp = &f->rules, *r; (r = *pp);) {
    if (r->hold) {
      *pp = r->next;
      free(r->key);
      free(r);
    } else {
      pp = &r->next;
    }
  }
  f->held = 0;
  f->hold_epoch++;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
}

void fake_s3_clear(struct fake_s3 *f)
{
  fake_s3_release(f);
  pthread_mutex_lock(&f->lock);
  while (f->rules) {
    struct fake_rule *r = f->rules;
    f->rules = r->next;
    free(r->key);
    free(r);
  }
  pthread_mutex_unlock(&f->lock);
}

bool fake_s3_wait_held(struct fake_s3 *f, unsigned n, unsigned ms)
{
  struct timespec ts;
  bool ok;

  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&f->lock);
  while (f->held < n && !pthread_cond_timedwait(&f->cond, &f->lock, &ts))
    ;
  ok = f->held >= n;
  pthread_mutex_unlock(&f->lock);
  return ok;
}

unsigned fake_s3_count(struct fake_s3 *f, enum fake_op op)
{
  unsigned n;

  pthread_mutex_lock(&f->lock);
  n = f->counts[op];
  pthread_mutex_unlock(&f->lock);
  return n;
}

unsigned fake_s3_refused(struct fake_s3 *f)
{
  unsigned n;

  pthread_mutex_lock(&f->lock);
  n = f->refused;
  pthread_mutex_unlock(&f->lock);
  return n;
}

bool fake_s3_quiet(struct fake_s3 *f, unsigned ms)
{
  unsigned last = fake_s3_count(f, FAKE_ANY), still = 0;

  for (unsigned waited = 0; waited < 10000; waited += 10) {
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
    unsigned now = fake_s3_count(f, FAKE_ANY);
    still = now == last ? still + 10 : 0;
    last = now;
    if (still >= ms)
      return true;
  }
  return false;
}

void fake_s3_reset_counts(struct fake_s3 *f)
{
  pthread_mutex_lock(&f->lock);
  f->refused = 0;
  memset(f->counts, 0, sizeof(f->counts));
  pthread_mutex_unlock(&f->lock);
}
