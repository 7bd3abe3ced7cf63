/*
 * rc_bw: the RC transport's own throughput, both halves in this process
 * on one verbs device, no HTTP and no S3: the figure issue 13 compares
 * with perftest's ib_write_bw (GET: the server RDMA-WRITEs into the
 * client) and ib_read_bw (PUT: the server RDMA-READs out of it).
 *
 *   rc_bw [--size BYTES] [--rounds R] [--chunk BYTES] [--threads N[,N...]]
 *         [--op get|put|both] [--env FILE] [--no-check]
 *
 * The client half (rdx_rc_transport_open) registers one buffer of --size
 * bytes (default 64 MiB); an endpoint gives up to max(N) sessions, each
 * connected to the server half (rdx_server_create, rdx_rc_server_connect)
 * by hand, as tests/unit/test_rdx_rc_client.c's test_loopback does. For
 * each N in --threads (default "1,2,4"): N threads, each with its own
 * session, token and server chunk buffer, take the buffer's chunks in turn
 * from a shared counter and move each with rdx_serve (one request at a
 * time per session, as the dialect has it). First one untimed pass that
 * copies a pattern through the chunk buffers and checks every byte
 * (memcmp; --no-check skips it), then R timed rounds without copies: the time from the start
 * of the round until the last chunk's rdx_serve returned.
 *
 * MB/s is 2^20 bytes a second, as perftest's. One line per operation and
 * thread count; $S3R_RESULTS/rc_bw.env (or --env) gets
 *   rc_get_MBps, rc_put_MBps            the median with the first N
 *   rc_get_MBps_s<N>, rc_put_MBps_s<N>  the median with N sessions
 *   ..._all="r1 r2 ..."                 every round
 * Device and GID: $S3R_RDMA_DEV and $S3R_GID_INDEX (tests/rdma-vm), else
 * the first device and the default GID.
 *
 * Exit status: 0, 1 on a failure (no RDMA device: one line saying so),
 * 2 on a usage error.
 *
 * DESIGN (threads): the main thread sets up everything, then per round
 * fills struct bench's round fields, releases the workers through the
 * start barrier and waits for them at the done barrier; between the two
 * the workers only read those fields and take chunk numbers from the
 * atomic counter. Each worker owns its session's token and chunk buffer.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "rdma/rdx_rc_client.h"
#include "rdma/rdx_rc_server.h"
#include "rdma/rdx_server.h"
#include "rdma/rdx_transport.h"

#define THREADS_MAX 16
#define CONFIGS_MAX 8
#define ROUNDS_MAX 1000
#define MIB (1024.0 * 1024.0)

struct worker {
  struct bench *b;
  pthread_t th;
  struct rdx_token tok[2]; /* [0]: GET, [1]: PUT */
  void *buf;               /* a server chunk buffer */
  int rc;
  char why[RDX_ERR_MAX];
};

struct bench {
  /* options */
  size_t size, chunk;
  unsigned rounds;
  unsigned threads[CONFIGS_MAX], nconfig, max_threads;
  bool do_get, do_put, check;
  const char *env;
  /* both halves */
  struct rdx_transport *t;
  struct rdx_region *r;
  struct rdx_rc_endpoint *ep;
  struct rdx_rc_session *sess[THREADS_MAX];
  struct rdx_server *srv;
  uint8_t *mem;            /* the client's registered buffer */
  uint8_t *ref;            /* the pattern sent or the bytes read */
  struct worker w[THREADS_MAX];
  /* the round (written by main between rounds, read by the workers) */
  pthread_barrier_t start, done;
  unsigned nthreads;
  enum rdx_op op;
  bool copy;               /* the checking pass: copy through the buffers */
  bool quit;
  atomic_uint_fast64_t next; /* the next chunk number to take */
};

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 131 + (i >> 12) * 7 + seed);
}

/* "64M", "1048576", "256k": bytes, or 0 when malformed. */
static size_t parse_size(const char *s)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || end == s)
    return 0;
  switch (*end) {
  case 'k': case 'K': v <<= 10; end++; break;
  case 'm': case 'M': v <<= 20; end++; break;
  case 'g': case 'G': v <<= 30; end++; break;
  default: break;
  }
  if (*end == 'i' && end[1] == 'B')
    end += 2;
  return *end ? 0 : (size_t)v;
}

static void *worker_main(void *arg)
{
  struct worker *w = arg;
  struct bench *b = w->b;
  uint64_t nchunks = (b->size + b->chunk - 1) / b->chunk;

  for (;;) {
    pthread_barrier_wait(&b->start);
    if (b->quit)
      break;
    struct rdx_req req = {.op = b->op, .len = b->size, .peer_uid = -1,
                          .peer_gid = -1};
    const struct rdx_token *tok = &w->tok[b->op == RDX_GET ? 0 : 1];

    for (;;) {
      uint64_t i = atomic_fetch_add(&b->next, 1);
      uint64_t off = i * b->chunk;
      size_t n;
      int rc;

      if (i >= nchunks)
        break;
      n = b->size - off < b->chunk ? (size_t)(b->size - off) : b->chunk;
      if (b->copy && b->op == RDX_GET)
        memcpy(w->buf, b->ref + off, n);
      rc = rdx_serve(b->srv, tok, &req, off, w->buf, n, w->why,
                     sizeof(w->why));
      if (rc) {
        w->rc = rc;
        atomic_store(&b->next, nchunks); /* the others stop too */
        break;
      }
      if (b->copy && b->op == RDX_PUT)
        memcpy(b->ref + off, w->buf, n);
    }
    pthread_barrier_wait(&b->done);
  }
  return NULL;
}

/* One round with the workers running: its seconds, or < 0 on a failure. */
static double round_run(struct bench *b, enum rdx_op op, bool copy)
{
  double t0, t1;

  b->op = op;
  b->copy = copy;
  atomic_store(&b->next, 0);
  t0 = now_s();
  pthread_barrier_wait(&b->start);
  pthread_barrier_wait(&b->done);
  t1 = now_s();
  for (unsigned i = 0; i < b->nthreads; i++)
    if (b->w[i].rc) {
      fprintf(stderr, "rc_bw: %s with %u session(s): %s\n",
              op == RDX_GET ? "get" : "put", b->nthreads, b->w[i].why);
      return -1;
    }
  return t1 - t0;
}

static int cmp_double(const void *a, const void *c)
{
  double x = *(const double *)a, y = *(const double *)c;

  return (x > y) - (x < y);
}

static double median(const double *v, unsigned n)
{
  double s[ROUNDS_MAX];

  memcpy(s, v, n * sizeof(*v));
  qsort(s, n, sizeof(*s), cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The checking pass, then the timed rounds of op with b->nthreads workers:
   0 and the median MB/s in *mbps, each round's in each[], or -1. */
static int measure(struct bench *b, enum rdx_op op, double *mbps,
                   double *each)
{
  const char *name = op == RDX_GET ? "get" : "put";
  char line[4096];
  size_t used = 0;
  double s;

  /* checking pass: every byte, outside the timed part */
  if (!b->check) {
    /* no pass to check */
  } else if (op == RDX_GET) {
    fill(b->ref, b->size, 7 + b->nthreads);
    memset(b->mem, 0, b->size);
  } else {
    fill(b->mem, b->size, 99 + b->nthreads);
    memset(b->ref, 0, b->size);
  }
  if (b->check && round_run(b, op, true) < 0)
    return -1;
  if (b->check && memcmp(b->mem, b->ref, b->size) != 0) {
    fprintf(stderr, "rc_bw: %s with %u session(s): the bytes differ\n", name,
            b->nthreads);
    return -1;
  }
  for (unsigned i = 0; i < b->rounds; i++) {
    s = round_run(b, op, false);
    if (s < 0)
      return -1;
    each[i] = (double)b->size / MIB / s;
    used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%.1f",
                             i ? " " : "", each[i]);
    if (used >= sizeof(line))
      used = sizeof(line) - 1;
  }
  *mbps = median(each, b->rounds);
  printf("rc_bw: %s %.0f MiB x %u, %u session(s), chunk %zu KiB: median "
         "%.1f MB/s (each: %s)%s\n",
         name, (double)b->size / MIB, b->rounds, b->nthreads, b->chunk >> 10,
         *mbps, line, b->check ? ", bytes checked" : "");
  fflush(stdout);
  return 0;
}

static void env_put(FILE *f, const char *key, double med, const double *each,
                    unsigned n)
{
  fprintf(f, "%s=%.2f\n%s_all=\"", key, med, key);
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "%s%.2f", i ? " " : "", each[i]);
  fprintf(f, "\"\n");
}

/* Run every configuration; 0 or -1. */
static int run_all(struct bench *b)
{
  static double each[2][CONFIGS_MAX][ROUNDS_MAX];
  double med[2][CONFIGS_MAX] = {{0}};
  FILE *f = NULL;
  int rc = 0;

  for (unsigned c = 0; c < b->nconfig && !rc; c++) {
    unsigned started = 0;

    b->nthreads = b->threads[c];
    b->quit = false;
    if (pthread_barrier_init(&b->start, NULL, b->nthreads + 1) ||
        pthread_barrier_init(&b->done, NULL, b->nthreads + 1)) {
      fprintf(stderr, "rc_bw: pthread_barrier_init failed\n");
      return -1;
    }
    for (; started < b->nthreads; started++) {
      b->w[started].b = b;
      b->w[started].rc = 0;
      if (pthread_create(&b->w[started].th, NULL, worker_main,
                         &b->w[started]))
        break;
    }
    if (started < b->nthreads) {
      fprintf(stderr, "rc_bw: pthread_create failed\n");
      /* the barrier cannot be met: the threads started are left waiting,
         and exit ends them */
      return -1;
    }
    if (b->do_get)
      rc = measure(b, RDX_GET, &med[0][c], each[0][c]);
    if (!rc && b->do_put)
      rc = measure(b, RDX_PUT, &med[1][c], each[1][c]);
    b->quit = true;
    pthread_barrier_wait(&b->start);
    for (unsigned i = 0; i < started; i++)
      pthread_join(b->w[i].th, NULL);
    pthread_barrier_destroy(&b->start);
    pthread_barrier_destroy(&b->done);
  }
  if (rc || !b->env)
    return rc;
  f = fopen(b->env, "w");
  if (!f) {
    fprintf(stderr, "rc_bw: %s: %s\n", b->env, strerror(errno));
    return -1;
  }
  fprintf(f, "rc_size=%zu\nrc_chunk=%zu\nrc_rounds=%u\n", b->size, b->chunk,
          b->rounds);
  for (int o = 0; o < 2; o++) {
    char key[64];

    if (!(o == 0 ? b->do_get : b->do_put))
      continue;
    snprintf(key, sizeof(key), "rc_%s_MBps", o == 0 ? "get" : "put");
    env_put(f, key, med[o][0], each[o][0], b->rounds);
    for (unsigned c = 0; c < b->nconfig; c++) {
      snprintf(key, sizeof(key), "rc_%s_MBps_s%u", o == 0 ? "get" : "put",
               b->threads[c]);
      env_put(f, key, med[o][c], each[o][c], b->rounds);
    }
  }
  if (fclose(f)) {
    fprintf(stderr, "rc_bw: %s: %s\n", b->env, strerror(errno));
    return -1;
  }
  return 0;
}

/* Connect session i through the connect step by hand; tokens for the whole
   buffer, both ways. 0 or -1. */
static int session_connect(struct bench *b, unsigned i)
{
  struct rdx_rc_connect_req req;
  struct rdx_rc_accept acc;
  char err[RDX_ERR_MAX], tok[RDX_TOKEN_MAX];
  struct rdx_rc_session *s;
  int rc;

  rc = rdx_rc_session_get(b->ep, 0, &b->sess[i], err, sizeof(err));
  if (rc) {
    fprintf(stderr, "rc_bw: session %u: %s\n", i, err);
    return -1;
  }
  s = b->sess[i];
  if (rdx_rc_session_connect_req(s, &req)) {
    fprintf(stderr, "rc_bw: session %u: no connect request\n", i);
    return -1;
  }
  rc = rdx_rc_server_connect(b->srv, req.token, strlen(req.token), req.psn,
                             strlen(req.psn), &acc, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "rc_bw: server connect: %s\n", err);
    return -1;
  }
  rc = rdx_rc_session_connect(s, acc.session, strlen(acc.session), acc.reply,
                              strlen(acc.reply), acc.psn, strlen(acc.psn),
                              err, sizeof(err));
  if (rc) {
    fprintf(stderr, "rc_bw: client connect: %s\n", err);
    return -1;
  }
  for (int o = 0; o < 2; o++) {
    enum rdx_op op = o == 0 ? RDX_GET : RDX_PUT;

    rc = rdx_rc_token_for(s, b->r, 0, b->size, op, tok, sizeof(tok));
    if (rc < 0 || rdx_token_parse(tok, (size_t)rc, &b->w[i].tok[o])) {
      fprintf(stderr, "rc_bw: session %u: no token (%s)\n", i,
              strerror(rc < 0 ? -rc : EINVAL));
      return -1;
    }
  }
  return 0;
}

static void usage(FILE *f)
{
  fprintf(f, "usage: rc_bw [--size BYTES] [--rounds R] [--chunk BYTES] "
             "[--threads N[,N...]] [--op get|put|both] [--env FILE] "
             "[--no-check]\n"
             "  --size     bytes moved per round (default 64M)\n"
             "  --rounds   timed rounds per operation (default 5)\n"
             "  --chunk    bytes per rdx_serve call (default 1M, the "
             "server's default buffer)\n"
             "  --threads  sessions in parallel, one thread each; a list "
             "runs each (default 1,2,4)\n"
             "  --op       get, put or both (default both)\n"
             "  --env      where to write the results (default "
             "$S3R_RESULTS/rc_bw.env)\n"
             "  --no-check skip the pass that checks every byte\n"
             "device: $S3R_RDMA_DEV (default: the first), GID index "
             "$S3R_GID_INDEX (default: RoCE v2 IPv4-mapped)\n");
}

static int parse_threads(struct bench *b, const char *arg)
{
  char buf[128], *save = NULL, *s;

  if (strlen(arg) >= sizeof(buf))
    return -1;
  strcpy(buf, arg);
  b->nconfig = 0;
  b->max_threads = 0;
  for (s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (*end || v == 0 || v > THREADS_MAX || b->nconfig == CONFIGS_MAX)
      return -1;
    b->threads[b->nconfig++] = (unsigned)v;
    if (v > b->max_threads)
      b->max_threads = (unsigned)v;
  }
  return b->nconfig ? 0 : -1;
}

static int parse_args(struct bench *b, int argc, char **argv)
{
  static const struct option opts[] = {
      {"size", required_argument, NULL, 's'},
      {"rounds", required_argument, NULL, 'r'},
      {"chunk", required_argument, NULL, 'c'},
      {"threads", required_argument, NULL, 't'},
      {"op", required_argument, NULL, 'o'},
      {"env", required_argument, NULL, 'e'},
      {"no-check", no_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  static char env_default[4096];
  const char *res = getenv("S3R_RESULTS");
  int c;

  b->size = (size_t)64 << 20;
  b->chunk = (size_t)1 << 20; /* rdx_server_create's default buf_size */
  b->rounds = 5;
  b->do_get = b->do_put = b->check = true;
  parse_threads(b, "1,2,4");
  if (res && *res) {
    snprintf(env_default, sizeof(env_default), "%s/rc_bw.env", res);
    b->env = env_default;
  }
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 's':
      b->size = parse_size(optarg);
      if (!b->size || b->size > RDX_SEG_MAX)
        return -1;
      break;
    case 'c':
      b->chunk = parse_size(optarg);
      if (!b->chunk || b->chunk > ((size_t)1 << 30))
        return -1;
      break;
    case 'r': {
      char *end;
      unsigned long v = strtoul(optarg, &end, 10);

      if (*end || v == 0 || v > ROUNDS_MAX)
        return -1;
      b->rounds = (unsigned)v;
      break;
    }
    case 't':
      if (parse_threads(b, optarg))
        return -1;
      break;
    case 'o':
      b->do_get = strcmp(optarg, "get") == 0 || strcmp(optarg, "both") == 0;
      b->do_put = strcmp(optarg, "put") == 0 || strcmp(optarg, "both") == 0;
      if (!b->do_get && !b->do_put)
        return -1;
      break;
    case 'e':
      b->env = optarg;
      break;
    case 'n':
      b->check = false;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    default:
      return -1;
    }
  }
  return optind == argc ? 0 : -1;
}

int main(int argc, char **argv)
{
  static struct bench b;
  const char *dev = getenv("S3R_RDMA_DEV"), *gid = getenv("S3R_GID_INDEX");
  const char *names[1] = {dev};
  struct rdx_rc_dev_cfg cfg = {names, dev && *dev ? 1 : 0,
                               gid && *gid ? atoi(gid) : -1, 0};
  struct rdx_server_cfg scfg;
  char err[RDX_ERR_MAX];
  unsigned nsess = 0;
  int rc, status = 1;

  if (parse_args(&b, argc, argv)) {
    usage(stderr);
    return 2;
  }
  rc = rdx_rc_transport_open(&cfg, &b.t, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "rc_bw: no RDMA device to measure on: %s\n", err);
    return 1;
  }
  if (rdx_rc_server_set_cfg(&cfg)) {
    fprintf(stderr, "rc_bw: bad device spec for the server\n");
    goto close_t;
  }
  scfg = (struct rdx_server_cfg){b.chunk, b.max_threads, 120};
  rc = rdx_server_create(&scfg, &b.srv, err, sizeof(err));
  if (!rc)
    rc = rdx_server_serves(b.srv, RDX_RC, err, sizeof(err));
  if (rc) {
    fprintf(stderr, "rc_bw: server: %s\n", err);
    goto destroy_srv;
  }
  b.mem = mmap(NULL, b.size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  b.ref = mmap(NULL, b.size, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (b.mem == MAP_FAILED || b.ref == MAP_FAILED) {
    fprintf(stderr, "rc_bw: cannot map 2 x %zu bytes\n", b.size);
    goto unmap;
  }
  rc = rdx_register(b.t, b.mem, b.size, 0, &b.r);
  if (rc) {
    fprintf(stderr, "rc_bw: cannot register %zu bytes: %s\n", b.size,
            strerror(-rc));
    goto unmap;
  }
  rc = rdx_rc_endpoint_create(b.t, b.max_threads, &b.ep);
  if (rc) {
    fprintf(stderr, "rc_bw: endpoint: %s\n", strerror(-rc));
    goto unregister;
  }
  for (; nsess < b.max_threads; nsess++) {
    b.w[nsess].buf = rdx_server_buf_alloc(b.srv, b.chunk);
    if (!b.w[nsess].buf) {
      fprintf(stderr, "rc_bw: no server chunk buffer\n");
      goto put_sessions;
    }
    if (session_connect(&b, nsess)) {
      nsess++; /* its session, if any, is put below */
      goto put_sessions;
    }
  }
  status = run_all(&b) ? 1 : 0;

put_sessions:
  for (unsigned i = 0; i < nsess; i++) {
    char id[RDX_RC_SESSION_LEN + 1];

    if (b.sess[i] && rdx_rc_session_id(b.sess[i], id) > 0)
      rdx_rc_server_disconnect(b.srv, id, strlen(id));
    if (b.sess[i])
      rdx_rc_session_put(b.sess[i], true);
    rdx_server_buf_free(b.srv, b.w[i].buf);
  }
  rdx_rc_endpoint_destroy(b.ep);
unregister:
  rdx_unregister(b.r);
unmap:
  if (b.mem != MAP_FAILED && b.mem)
    munmap(b.mem, b.size);
  if (b.ref != MAP_FAILED && b.ref)
    munmap(b.ref, b.size);
destroy_srv:
  rdx_server_destroy(b.srv);
close_t:
  rdx_transport_close(b.t);
  return status;
}
