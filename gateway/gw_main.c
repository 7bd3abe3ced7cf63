/*
 * s3rdma-gateway: an S3 front end that verifies clients' SigV4, re-signs
 * and forwards to an upstream S3 endpoint, and moves the object bytes of
 * requests carrying an RDMA token through rdma/rdx_server instead of the
 * HTTP body. The CLI, start-up and shutdown.
 *
 * DESIGN (threads): main parses the flags, optionally daemonises (the
 * starting process waits until the daemon listens, and exits 1 if it
 * does not), binds,
 * blocks SIGINT/SIGTERM (every thread created later inherits the mask),
 * starts the worker pool (gw_proxy) and the HTTP server (gw_http), then
 * waits for a signal in sigwait(). Stop: the HTTP server first (its
 * requests finish), then the pool; the stats are printed last.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/secret.h"
#include "common/slog.h"
#include "gateway/gw_http.h"
#include "gateway/gw_proxy.h"
#include "gateway/gw_secret.h"
#include "rdma/rdx_rc_server.h"

static void usage(FILE *f)
{
  fprintf(f,
"usage: s3rdma-gateway --listen ADDR:PORT --upstream http://HOST:PORT\n"
"                      [--access-key AK] [--secret-key-file FILE] [options]\n"
"  --listen ADDR:PORT          address to serve (e.g. 127.0.0.1:7481, [::1]:7481)\n"
"  --upstream URL              upstream S3 endpoint (path-style)\n"
"  --access-key AK             clients' access key (or $AWS_ACCESS_KEY_ID)\n"
"  --secret-key-file FILE      clients' secret key, read from FILE (one line)\n"
"  --secret-key SK             the same on the command line (discouraged: every\n"
"                              local user can read it until it is scrubbed)\n"
"                              default: $AWS_SECRET_ACCESS_KEY\n"
"  --upstream-access-key AK    upstream's keys (default: the clients'); the\n"
"                              access key also from $S3RDMA_UPSTREAM_ACCESS_KEY_ID\n"
"  --upstream-secret-key-file FILE\n"
"  --upstream-secret-key SK    the secret, as above; default:\n"
"                              $S3RDMA_UPSTREAM_SECRET_ACCESS_KEY\n"
"  --region R                  region to sign upstream requests for\n"
"                              (default: the client's credential scope)\n"
"  --token-header NAME         RDMA token header (default x-amz-rdma-token)\n"
"  --max-conns N               client connections at once (default 64)\n"
"  --threads N                 upstream worker threads (default 16)\n"
"  --chunk-size BYTES          RDMA chunk buffer (default 1048576)\n"
"  --timeout S                 idle limit of every wait (default 120)\n"
"  --auth-timeout S            idle limit of a connection until its request\n"
"                              is verified (default 10)\n"
"  --max-conns-per-addr N      connections from one non-loopback address\n"
"                              (default 16; 0: no limit)\n"
"  --max-uploads-per-addr N    request bodies one address streams upstream\n"
"                              at once; more get 503 SlowDown (default\n"
"                              threads/2; 0: no limit)\n"
"  --serve all|none            serve RDMA tokens (all: every kind this host\n"
"                              can), or decline them all with 501 (a plain\n"
"                              proxy; default all)\n"
"  --rdma-devices LIST         rc: the device to serve on, as comma-separated\n"
"                              names (mlx5_0, rxe0) or addresses of their\n"
"                              netdevs (10.0.0.5); each must exist, the first\n"
"                              is used (default: the first device there is)\n"
"  --rdma-gid-index N          rc: the GID index (default: the RoCE v2\n"
"                              IPv4-mapped GID, or the address's)\n"
"                              Without a device rc is declined (501): tokens\n"
"                              and POST /.s3rdma-rc/connect (SigV4-signed,\n"
"                              like every request; disconnect always 204).\n"
"  --log-level LEVEL           error|warn|notice|info|debug (default notice)\n"
"  --pidfile FILE              write the pid there\n"
"  -f, --foreground            do not daemonise (log to stderr)\n"
"  -h, --help\n"
"Test hooks (a slow server, for the tests): --test-token-delay MS (a token\n"
"request waits MS before it moves a byte), --test-token-delay-count N (only\n"
"the first N do; 0: all), --test-put-hold MS (a token PUT waits MS after\n"
"reading the client's last bytes, before the last of them go upstream).\n"
"A client's x-amz-rdma-expires (signed, CLOCK_REALTIME ms) bounds its token:\n"
"no byte of its memory moves after it; a connection closed by its client\n"
"abandons its request (and the upstream request, a PUT not stored).\n"
"Secret keys: the command line wins over a key file, a key file over the\n"
"environment; a key and its -file together are an error. A key file must be\n"
"a regular file owned by this user or root with mode 0600 or stricter (no\n"
"group or other bits), else the gateway refuses to start. A key given on\n"
"the command line is scrubbed from it at start, with a warning.\n"
"GET /_s3rdma/stats (loopback peers, no auth) shows the counters.\n");
}

static int parse_uint(const char *flag, const char *v, unsigned long long min,
                      unsigned long long max, unsigned long long *out)
{
  char *end;
  unsigned long long n;

  errno = 0;
  n = strtoull(v, &end, 10);
  if (!v[0] || *end || errno || n < min || n > max || v[0] == '-') {
    fprintf(stderr, "s3rdma-gateway: %s: '%s' is not a number in %llu..%llu\n",
            flag, v, min, max);
    return -EINVAL;
  }
  *out = n;
  return 0;
}

enum {
  OPT_LISTEN = 256, OPT_UPSTREAM, OPT_AK, OPT_SK, OPT_UAK, OPT_USK,
  OPT_REGION, OPT_TOKHDR, OPT_MAXCONNS, OPT_THREADS, OPT_CHUNK, OPT_TIMEOUT, OPT_SERVE,
  OPT_LOGLEVEL, OPT_PIDFILE, OPT_SK_FILE, OPT_USK_FILE, OPT_AUTH_TIMEOUT,
  OPT_CONNS_ADDR, OPT_UPLOADS_ADDR, OPT_TEST_DELAY, OPT_TEST_DELAY_N,
  OPT_TEST_PUT_HOLD, OPT_RDMA_DEVS, OPT_RDMA_GID,
};

static const struct option opts[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"upstream", required_argument, NULL, OPT_UPSTREAM},
    {"access-key", required_argument, NULL, OPT_AK},
    {"secret-key", required_argument, NULL, OPT_SK},
    {"upstream-access-key", required_argument, NULL, OPT_UAK},
    {"upstream-secret-key", required_argument, NULL, OPT_USK},
    {"secret-key-file", required_argument, NULL, OPT_SK_FILE},
    {"upstream-secret-key-file", required_argument, NULL, OPT_USK_FILE},
    {"region", required_argument, NULL, OPT_REGION},
    {"token-header", required_argument, NULL, OPT_TOKHDR},
    {"max-conns", required_argument, NULL, OPT_MAXCONNS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"chunk-size", required_argument, NULL, OPT_CHUNK},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
    {"max-conns-per-addr", required_argument, NULL, OPT_CONNS_ADDR},
    {"max-uploads-per-addr", required_argument, NULL, OPT_UPLOADS_ADDR},
    {"serve", required_argument, NULL, OPT_SERVE},
    {"test-token-delay", required_argument, NULL, OPT_TEST_DELAY},
    {"test-token-delay-count", required_argument, NULL, OPT_TEST_DELAY_N},
    {"test-put-hold", required_argument, NULL, OPT_TEST_PUT_HOLD},
    {"rdma-devices", required_argument, NULL, OPT_RDMA_DEVS},
    {"rdma-gid-index", required_argument, NULL, OPT_RDMA_GID},
    {"log-level", required_argument, NULL, OPT_LOGLEVEL},
    {"pidfile", required_argument, NULL, OPT_PIDFILE},
    {"foreground", no_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The two secret keys: heap copies main owns (cfg points at them), wiped
   and freed at exit; and where each came from. */
struct keys {
  char *sk, *usk;
  enum gw_secret_from sk_from, usk_from;
};

static void keys_free(struct keys *k)
{
  secret_free(k->sk);
  secret_free(k->usk);
  k->sk = k->usk = NULL;
}

/*
 * The secret keys by gw_secret's precedence into k and cfg, and the
 * upstream access key's environment variable. Every secret given on the
 * command line is then scrubbed from argv (copied first).
 */
static int load_keys(struct gw_config *cfg, struct keys *k, char *sk_arg,
                     const char *sk_file, char *usk_arg, const char *usk_file)
{
  const struct gw_secret_src sk = {"--secret-key", sk_arg, sk_file,
                                   "AWS_SECRET_ACCESS_KEY"};
  const struct gw_secret_src usk = {"--upstream-secret-key", usk_arg,
                                    usk_file,
                                    "S3RDMA_UPSTREAM_SECRET_ACCESS_KEY"};
  const char *v;
  char err[512];
  int rc;

  rc = gw_secret_load(&sk, &k->sk, &k->sk_from, err, sizeof(err));
  if (!rc)
    rc = gw_secret_load(&usk, &k->usk, &k->usk_from, err, sizeof(err));
  secret_scrub_arg(sk_arg);
  secret_scrub_arg(usk_arg);
  if (rc) {
    fprintf(stderr, "s3rdma-gateway: %s\n", err);
    return rc;
  }
  cfg->secret_key = k->sk;
  cfg->up_secret_key = k->usk;
  v = getenv("S3RDMA_UPSTREAM_ACCESS_KEY_ID");
  if (!cfg->up_access_key && v && v[0])
    cfg->up_access_key = v;
  return 0;
}

/* The rc device (--rdma-devices, --rdma-gid-index): names point into
   list, a copy of the option's value that main frees. */
struct rc_dev {
  char *list;
  const char *names[RDX_RC_DEVS_MAX];
  struct rdx_rc_dev_cfg cfg;
};

/* "a,b,c" into d (the last --rdma-devices counts). 0 or -EINVAL. */
static int parse_devices(const char *v, struct rc_dev *d)
{
  char *save = NULL, *tok;

  free(d->list);
  d->cfg.ndevices = 0;
  d->cfg.devices = d->names;
  d->list = strdup(v);
  if (!d->list)
    return -ENOMEM;
  for (tok = strtok_r(d->list, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (d->cfg.ndevices == RDX_RC_DEVS_MAX) {
      fprintf(stderr, "s3rdma-gateway: --rdma-devices: more than %d\n",
              RDX_RC_DEVS_MAX);
      return -EINVAL;
    }
    d->names[d->cfg.ndevices++] = tok;
  }
  if (!d->cfg.ndevices) {
    fprintf(stderr, "s3rdma-gateway: --rdma-devices: '%s' names no device\n",
            v);
    return -EINVAL;
  }
  return 0;
}

/* Parse argv into cfg and k. Returns 0, 1 (--help shown) or -EINVAL; k may
   hold keys either way (keys_free). */
static int parse_args(int argc, char **argv, struct gw_config *cfg,
                      struct keys *k, struct rc_dev *dev, const char **pidfile,
                      bool *fg)
{
  char *sk_arg = NULL, *usk_arg = NULL;
  const char *sk_file = NULL, *usk_file = NULL;
  unsigned long long n;
  bool uploads_set = false;
  int c, lvl;

  opterr = 0;
  while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
    switch (c) {
    case OPT_LISTEN: cfg->listen = optarg; break;
    case OPT_UPSTREAM: cfg->upstream = optarg; break;
    case OPT_AK: cfg->access_key = optarg; break;
    case OPT_SK: /* the last one counts: scrub the one it replaces */
      secret_scrub_arg(sk_arg);
      sk_arg = optarg;
      break;
    case OPT_UAK: cfg->up_access_key = optarg; break;
    case OPT_USK:
      secret_scrub_arg(usk_arg);
      usk_arg = optarg;
      break;
    case OPT_SK_FILE: sk_file = optarg; break;
    case OPT_USK_FILE: usk_file = optarg; break;
    case OPT_REGION: cfg->region = optarg; break;
    case OPT_TOKHDR:
      if (!optarg[0] || strpbrk(optarg, " :\t\r\n")) {
        fprintf(stderr, "s3rdma-gateway: --token-header: bad header name '%s'\n",
                optarg);
        return -EINVAL;
      }
      cfg->token_header = optarg;
      break;
    case OPT_MAXCONNS:
      if (parse_uint("--max-conns", optarg, 1, 10000, &n))
        return -EINVAL;
      cfg->max_conns = (unsigned)n;
      break;
    case OPT_THREADS:
      if (parse_uint("--threads", optarg, 1, 1024, &n))
        return -EINVAL;
      cfg->threads = (unsigned)n;
      break;
    case OPT_CHUNK:
      if (parse_uint("--chunk-size", optarg, 4096, 64ULL << 20, &n))
        return -EINVAL;
      cfg->chunk_size = (size_t)n;
      break;
    case OPT_TIMEOUT:
      if (parse_uint("--timeout", optarg, 1, 86400, &n))
        return -EINVAL;
      cfg->timeout_s = (unsigned)n;
      break;
    case OPT_AUTH_TIMEOUT:
      if (parse_uint("--auth-timeout", optarg, 1, 86400, &n))
        return -EINVAL;
      cfg->auth_timeout_s = (unsigned)n;
      break;
    case OPT_CONNS_ADDR:
      if (parse_uint("--max-conns-per-addr", optarg, 0, 10000, &n))
        return -EINVAL;
      cfg->conns_per_addr = (unsigned)n;
      break;
    case OPT_UPLOADS_ADDR:
      if (parse_uint("--max-uploads-per-addr", optarg, 0, 1024, &n))
        return -EINVAL;
      cfg->uploads_per_addr = (unsigned)n;
      uploads_set = true;
      break;
    case OPT_SERVE:
      if (strcmp(optarg, "all") != 0 && strcmp(optarg, "none") != 0) {
        fprintf(stderr, "s3rdma-gateway: --serve: '%s' is not all or none\n",
                optarg);
        return -EINVAL;
      }
      cfg->serve_none = strcmp(optarg, "none") == 0;
      break;
    case OPT_TEST_DELAY:
      if (parse_uint("--test-token-delay", optarg, 0, 3600000, &n))
        return -EINVAL;
      cfg->test_token_delay_ms = (unsigned)n;
      break;
    case OPT_TEST_DELAY_N:
      if (parse_uint("--test-token-delay-count", optarg, 0, 1000000, &n))
        return -EINVAL;
      cfg->test_token_delay_n = (unsigned)n;
      break;
    case OPT_TEST_PUT_HOLD:
      if (parse_uint("--test-put-hold", optarg, 0, 3600000, &n))
        return -EINVAL;
      cfg->test_put_hold_ms = (unsigned)n;
      break;
    case OPT_RDMA_DEVS:
      if (parse_devices(optarg, dev))
        return -EINVAL;
      break;
    case OPT_RDMA_GID:
      if (parse_uint("--rdma-gid-index", optarg, 0, 255, &n))
        return -EINVAL;
      dev->cfg.gid_index = (int)n;
      break;
    case OPT_LOGLEVEL:
      lvl = slog_parse_level(optarg);
      if (lvl < 0) {
        fprintf(stderr, "s3rdma-gateway: --log-level: unknown level '%s'\n",
                optarg);
        return -EINVAL;
      }
      slog_set_level(lvl);
      break;
    case OPT_PIDFILE: *pidfile = optarg; break;
    case 'f': *fg = true; break;
    case 'h': usage(stdout); return 1;
    case ':':
      fprintf(stderr, "s3rdma-gateway: %s needs a value\n", argv[optind - 1]);
      return -EINVAL;
    default:
      fprintf(stderr, "s3rdma-gateway: unknown option '%s' (see --help)\n",
              argv[optind - 1]);
      return -EINVAL;
    }
  }
  if (!uploads_set)
    cfg->uploads_per_addr = cfg->threads > 1 ? cfg->threads / 2 : 1;
  if (optind < argc) {
    fprintf(stderr, "s3rdma-gateway: unexpected argument '%s'\n", argv[optind]);
    return -EINVAL;
  }
  if (load_keys(cfg, k, sk_arg, sk_file, usk_arg, usk_file))
    return -EINVAL;
  if (!cfg->access_key)
    cfg->access_key = getenv("AWS_ACCESS_KEY_ID");
  if (!cfg->listen || !cfg->upstream) {
    fprintf(stderr, "s3rdma-gateway: %s is required (see --help)\n",
            !cfg->listen ? "--listen" : "--upstream");
    return -EINVAL;
  }
  if (!cfg->access_key || !cfg->secret_key || !cfg->access_key[0] ||
      !cfg->secret_key[0]) {
    fprintf(stderr, "s3rdma-gateway: missing keys: give --access-key and "
                    "--secret-key-file (or AWS_ACCESS_KEY_ID/"
                    "AWS_SECRET_ACCESS_KEY)\n");
    return -EINVAL;
  }
  if (!cfg->up_access_key != !cfg->up_secret_key) {
    fprintf(stderr, "s3rdma-gateway: upstream's keys go together: %s\n",
            cfg->up_access_key
                ? "an access key without a secret key (give "
                  "--upstream-secret-key-file or "
                  "$S3RDMA_UPSTREAM_SECRET_ACCESS_KEY)"
                : "a secret key without an access key (give "
                  "--upstream-access-key or $S3RDMA_UPSTREAM_ACCESS_KEY_ID)");
    return -EINVAL;
  }
  if (!cfg->up_access_key) {
    cfg->up_access_key = cfg->access_key;
    cfg->up_secret_key = cfg->secret_key;
  }
  return 0;
}

/* Where the secret keys came from (never the keys), and the warning about
   any given on the command line. */
static void log_keys(const struct keys *k)
{
  static const char *const from[] = {
      [GW_SECRET_NONE] = "the same as the clients'",
      [GW_SECRET_ARG] = "from the command line",
      [GW_SECRET_FILE] = "from its key file",
      [GW_SECRET_ENV] = "from the environment"};
  bool sk = k->sk_from == GW_SECRET_ARG, usk = k->usk_from == GW_SECRET_ARG;

  if (sk || usk)
    log_warn("%s%s%s given on the command line: every local user can read "
             "command lines (/proc/PID/cmdline, ps), so it was visible at "
             "start (it is scrubbed now) and may be in shell history; use "
             "%s or the environment instead (see --help)",
             sk ? "--secret-key" : "", sk && usk ? " and " : "",
             usk ? "--upstream-secret-key" : "",
             sk && usk ? "the -file options" : sk ? "--secret-key-file"
                                                  : "--upstream-secret-key-file");
  log_info("secret keys: the clients' %s, upstream's %s",
           from[k->sk_from], from[k->usk_from]);
}

static void print_stats(struct gw_stats *stats, bool fg)
{
  char buf[2048];

  gw_stats_format(stats, buf, sizeof(buf));
  if (fg) {
    fprintf(stderr, "s3rdma-gateway: stats at exit:\n%s", buf);
    return;
  }
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
    log_notice("stats: %s", line);
}

/*
 * Into the background, as daemon(3), but the starting process stays until
 * the daemon listens: it exits 0 once the daemon writes a byte to the
 * returned fd, 1 when the daemon closes it unwritten (it failed to start;
 * the reason is in syslog). -errno when the fork fails.
 */
static int daemonise(void)
{
  int p[2], null;
  pid_t pid;
  char c;

  if (pipe2(p, O_CLOEXEC))
    return -errno;
  pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return -e;
  }
  if (pid > 0) {
    ssize_t n;
    close(p[1]);
    do
      n = read(p[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      fprintf(stderr, "s3rdma-gateway: failed to start (the reason is in "
                      "syslog)\n");
    _exit(n == 1 ? 0 : 1);
  }
  close(p[0]);
  setsid();
  if (chdir("/")) /* "/" exists: nothing to do if not */
    null = -1;
  null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2)
      close(null);
  }
  return p[1];
}

int main(int argc, char **argv)
{
  struct gw_config cfg = {
      .token_header = "x-amz-rdma-token", .max_conns = 64, .threads = 16,
      .chunk_size = 1 << 20, .pipe_size = 256 << 10, .timeout_s = 120,
      .auth_timeout_s = 10, .conns_per_addr = 16,
      .max_put = 5ULL << 30,
  };
  static struct gw_stats stats;
  struct keys keys = {0};
  struct rc_dev dev = {.cfg = {.gid_index = -1}};
  struct rdx_server *rdx = NULL;
  struct gw_proxy *proxy = NULL;
  struct gw_http *http = NULL;
  int ready_fd = -1;          /* daemonised: the starting process waits */
  const char *pidfile = NULL;
  char err[512] = "";
  bool fg = false;
  sigset_t set;
  int rc, sig;

  slog_set_level(LOG_NOTICE);
  rc = parse_args(argc, argv, &cfg, &keys, &dev, &pidfile, &fg);
  if (!rc && rdx_rc_server_set_cfg(&dev.cfg)) {
    fprintf(stderr, "s3rdma-gateway: --rdma-devices: a name is too long\n");
    rc = -EINVAL;
  }
  if (rc) {
    keys_free(&keys);
    free(dev.list);
    return rc > 0 ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (!fg) {
    if ((ready_fd = daemonise()) < 0) {
      fprintf(stderr, "s3rdma-gateway: daemon: %s\n", strerror(-ready_fd));
      rc = 1;
      goto free_keys;
    }
    slog_use_syslog("s3rdma-gateway");
  }
  log_keys(&keys);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
    log_err("curl_global_init failed");
    rc = 1;
    goto free_keys;
  }
  rc = rdx_server_create(&(struct rdx_server_cfg){cfg.chunk_size, cfg.threads,
                                                  cfg.timeout_s},
                         &rdx, err, sizeof(err));
  if (rc) {
    log_err("rdma server: %s", err);
    goto cleanup_curl;
  }
  rc = gw_proxy_create(&cfg, &stats, rdx, &proxy, err, sizeof(err));
  if (rc) {
    log_err("%s", err);
    goto destroy_rdx;
  }
  rc = gw_http_start(&cfg, &stats, proxy, rdx, &http, err, sizeof(err));
  if (rc) {
    log_err("%s", err);
    goto destroy_proxy;
  }
  if (pidfile) {
    FILE *f = fopen(pidfile, "we");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
      log_err("--pidfile: cannot write %s: %s", pidfile, strerror(errno));
      rc = -EIO;
      goto stop_http;
    }
  }
  log_notice("listening on %s (port %u), upstream %s, %u threads, %u conns",
             cfg.listen, gw_http_port(http), cfg.upstream, cfg.threads,
             cfg.max_conns);
  if (ready_fd >= 0) { /* the parent exits 0 now */
    if (write(ready_fd, "", 1) != 1)
      log_warn("telling the starting process we listen: %s", strerror(errno));
    close(ready_fd);
    ready_fd = -1;
  }
  if (cfg.test_token_delay_ms || cfg.test_put_hold_ms)
    log_warn("test hooks on: token requests delayed %u ms (the first %u; 0: "
             "all), token PUTs held %u ms",
             cfg.test_token_delay_ms, cfg.test_token_delay_n,
             cfg.test_put_hold_ms);
  do {
    if (sigwait(&set, &sig))
      break;
  } while (sig != SIGINT && sig != SIGTERM);
  log_notice("signal %d: stopping", sig);
  rc = 0;
  if (pidfile)
    unlink(pidfile);
stop_http:
  gw_http_stop(http);
destroy_proxy:
  gw_proxy_destroy(proxy);
destroy_rdx:
  rdx_server_destroy(rdx);
cleanup_curl:
  curl_global_cleanup();
  if (proxy)
    print_stats(&stats, fg);
free_keys:
  keys_free(&keys);
  free(dev.list);
  if (ready_fd >= 0)
    close(ready_fd); /* not listening: the parent exits 1 */
  return rc ? 1 : 0;
}
