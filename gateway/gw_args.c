/*
 * gw_args: s3rdma-gateway's flags, secret keys and the checks between
 * them (gw_args.h). One getopt_long row per flag; numbers through
 * parse_uint (decimal, bounded), the DC access key through parse_key
 * (0x-prefixed hex or decimal, 32-bit).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"
#include "common/slog.h"
#include "gateway/gw_args.h"
#include "gateway/gw_dcallow.h"
#include "rdma/rdx_transport.h" /* RDX_DC_ACCESS_KEY_DEFAULT */

static void usage(FILE *f)
{
  fprintf(f,
"usage: s3rdma-gateway --listen ADDR:PORT --upstream http://HOST:PORT\n"
"                      [--access-key AK] [--secret-key-file FILE] [options]\n"
"  --listen ADDR:PORT          address to serve (e.g. 127.0.0.1:7481, [::1]:7481)\n"
"  --upstream URL              upstream S3 endpoint (path-style); several\n"
"                              serving the same buckets: URL;URL, or the flag\n"
"                              again (spread, a dead one taken out)\n"
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
"  --auth-timeout S            a connection's time in all (not idle) until\n"
"                              a request of it is verified; then it is\n"
"                              closed (default 10)\n"
"  --max-conns-per-addr N      connections from one non-loopback address\n"
"                              (default 16; 0: no limit)\n"
"  --max-strangers N           connections not yet verified, in all; the\n"
"                              rest of --max-conns stays for clients that\n"
"                              proved their key (default max-conns/2;\n"
"                              0: no limit)\n"
"  --max-strangers-per-peer N  the same for one peer (a local user, by its\n"
"                              socket's uid, or a remote address) while it\n"
"                              holds no verified connection (default 16;\n"
"                              0: no limit)\n"
"  --max-uploads-per-addr N    request bodies one peer (a local user or a\n"
"                              remote address) streams upstream at once;\n"
"                              more get 503 SlowDown (default threads/2;\n"
"                              0: no limit)\n"
"  --serve all|none            serve RDMA tokens (all: every kind this host\n"
"                              can), or decline them all with 501 (a plain\n"
"                              proxy; default all)\n"
"  --rdma-devices LIST         rc and dc: the device to serve on, as comma-\n"
"                              separated names (mlx5_0, rxe0) or addresses of\n"
"                              their netdevs (10.0.0.5); each must exist, the\n"
"                              first is used (default: the first device there\n"
"                              is; dc: the first mlx5 device)\n"
"  --rdma-gid-index N          rc and dc: the GID index (default: the RoCE v2\n"
"                              IPv4-mapped GID, or the address's)\n"
"                              Without a device rc is declined (501): tokens\n"
"                              and POST /.s3rdma-rc/connect (SigV4-signed,\n"
"                              like every request; disconnect always 204).\n"
"                              Without an mlx5 device dc tokens are declined.\n"
"  --rdma-dc-access-key KEY    dc: the DCT access key clients' tokens are\n"
"                              reached with, 32-bit, 0x-prefixed hex or\n"
"                              decimal (default 0xffeeddcc, cuObject's; 0\n"
"                              means the default)\n"
"  --rdma-dc-targets RULE      dc: which targets a client's tokens may name:\n"
"                              peer (the GID must be the client's own\n"
"                              address; from loopback, one of this host's),\n"
"                              a comma-separated list of IPv4/IPv6\n"
"                              prefixes and lid:N or lid:N-M ranges, or any\n"
"                              (the whole fabric; default peer)\n"
"  --log-level LEVEL           error|warn|notice|info|debug (default notice)\n"
"  --pidfile FILE              write the pid there\n"
"  -f, --foreground            do not daemonise (log to stderr)\n"
"  -h, --help\n"
"Test hooks (for the tests): --test-token-delay MS (a token\n"
"request waits MS before it moves a byte), --test-token-delay-count N (only\n"
"the first N do; 0: all), --test-put-hold MS (a token PUT waits MS after\n"
"reading the client's last bytes, before the last of them go upstream),\n"
"--test-put-no-reply (a PUT served by rdma is answered without\n"
"x-amz-rdma-reply and x-amz-rdma-bytes-transferred, as some servers do).\n"
"A client's x-amz-rdma-expires (signed, CLOCK_REALTIME ms) bounds its token:\n"
"no byte of its memory moves after it; a connection closed by its client\n"
"abandons its request (and the upstream request, a PUT not stored).\n"
"Secret keys: the command line wins over a key file, a key file over the\n"
"environment; a key and its -file together are an error. A key file must be\n"
"a regular file owned by this user or root with mode 0600 or stricter (no\n"
"group or other bits), else the gateway refuses to start. A key given on\n"
"the command line is scrubbed from it at start, with a warning.\n"
"GET /_s3rdma/stats (loopback peers, no auth) shows the counters;\n"
"?format=prometheus in Prometheus's text format.\n");
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

/* A 32-bit key: "0x" and 1..8 hex digits (leading zeros aside), or
   decimal digits. Nothing else: no sign, no blank, no other prefix. 0 or
   -EINVAL with one line on stderr naming flag. */
static int parse_key(const char *flag, const char *v, uint32_t *out)
{
  const char *digits = "0123456789";
  const char *d = v;
  unsigned long long n;
  int base = 10;

  if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    d = v + 2;
    digits = "0123456789abcdefABCDEF";
    base = 16;
  }
  if (!d[0] || d[strspn(d, digits)])
    goto bad;
  errno = 0;
  n = strtoull(d, NULL, base);
  if (errno || n > UINT32_MAX)
    goto bad;
  *out = (uint32_t)n;
  return 0;
bad:
  fprintf(stderr, "s3rdma-gateway: %s: '%s' is not a 32-bit number (0x and "
                  "hex digits, or decimal)\n", flag, v);
  return -EINVAL;
}

enum {
  OPT_LISTEN = 256, OPT_UPSTREAM, OPT_AK, OPT_SK, OPT_UAK, OPT_USK,
  OPT_REGION, OPT_TOKHDR, OPT_MAXCONNS, OPT_THREADS, OPT_CHUNK, OPT_TIMEOUT, OPT_SERVE,
  OPT_LOGLEVEL, OPT_PIDFILE, OPT_SK_FILE, OPT_USK_FILE, OPT_AUTH_TIMEOUT,
  OPT_CONNS_ADDR, OPT_STRANGERS, OPT_STRANGERS_PEER, OPT_UPLOADS_ADDR, OPT_TEST_DELAY, OPT_TEST_DELAY_N,
  OPT_TEST_PUT_HOLD, OPT_TEST_PUT_NO_REPLY, OPT_RDMA_DEVS, OPT_RDMA_GID, OPT_RDMA_DC_KEY,
  OPT_RDMA_DC_TARGETS,
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
    {"max-strangers", required_argument, NULL, OPT_STRANGERS},
    {"max-strangers-per-peer", required_argument, NULL, OPT_STRANGERS_PEER},
    {"max-uploads-per-addr", required_argument, NULL, OPT_UPLOADS_ADDR},
    {"serve", required_argument, NULL, OPT_SERVE},
    {"test-token-delay", required_argument, NULL, OPT_TEST_DELAY},
    {"test-token-delay-count", required_argument, NULL, OPT_TEST_DELAY_N},
    {"test-put-hold", required_argument, NULL, OPT_TEST_PUT_HOLD},
    {"test-put-no-reply", no_argument, NULL, OPT_TEST_PUT_NO_REPLY},
    {"rdma-devices", required_argument, NULL, OPT_RDMA_DEVS},
    {"rdma-gid-index", required_argument, NULL, OPT_RDMA_GID},
    {"rdma-dc-access-key", required_argument, NULL, OPT_RDMA_DC_KEY},
    {"rdma-dc-targets", required_argument, NULL, OPT_RDMA_DC_TARGETS},
    {"log-level", required_argument, NULL, OPT_LOGLEVEL},
    {"pidfile", required_argument, NULL, OPT_PIDFILE},
    {"foreground", no_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/*
 * The secret keys by gw_secret's precedence into a and a->cfg, and the
 * upstream access key's environment variable. Every secret given on the
 * command line is then scrubbed from argv (copied first).
 */
static int load_keys(struct gw_args *a, char *sk_arg, const char *sk_file,
                     char *usk_arg, const char *usk_file)
{
  const struct gw_secret_src sk = {"--secret-key", sk_arg, sk_file,
                                   "AWS_SECRET_ACCESS_KEY"};
  const struct gw_secret_src usk = {"--upstream-secret-key", usk_arg,
                                    usk_file,
                                    "S3RDMA_UPSTREAM_SECRET_ACCESS_KEY"};
  const char *v;
  char err[512];
  int rc;

  rc = gw_secret_load(&sk, &a->sk, &a->sk_from, err, sizeof(err));
  if (!rc)
    rc = gw_secret_load(&usk, &a->usk, &a->usk_from, err, sizeof(err));
  secret_scrub_arg(sk_arg);
  secret_scrub_arg(usk_arg);
  if (rc) {
    fprintf(stderr, "s3rdma-gateway: %s\n", err);
    return rc;
  }
  a->cfg.secret_key = a->sk;
  a->cfg.up_secret_key = a->usk;
  v = getenv("S3RDMA_UPSTREAM_ACCESS_KEY_ID");
  if (!a->cfg.up_access_key && v && v[0])
    a->cfg.up_access_key = v;
  return 0;
}

/* "a,b,c" into d (the last --rdma-devices counts). 0 or -EINVAL. */
static int parse_devices(const char *v, struct gw_args_dev *d)
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

/* --upstream URL: the first as given, the next ones joined by ';'. */
static int add_upstream(struct gw_args *a, const char *url)
{
  char *s;

  if (!a->cfg.upstream) {
    a->cfg.upstream = url;
    return 0;
  }
  if (asprintf(&s, "%s;%s", a->cfg.upstream, url) < 0)
    return -ENOMEM;
  free(a->upstreams);
  a->cfg.upstream = a->upstreams = s;
  return 0;
}

int gw_args_parse(int argc, char **argv, struct gw_args *a)
{
  struct gw_config *cfg = &a->cfg;
  char *sk_arg = NULL, *usk_arg = NULL;
  const char *sk_file = NULL, *usk_file = NULL;
  unsigned long long n;
  bool uploads_set = false, strangers_set = false;
  const char *dc_targets = NULL;
  char err[256] = "";
  int c, lvl;

  *a = (struct gw_args){
      .cfg = {.token_header = "x-amz-rdma-token", .max_conns = 64,
              .threads = 16, .chunk_size = 1 << 20, .pipe_size = 256 << 10,
              .timeout_s = 120, .auth_timeout_s = 10, .conns_per_addr = 16,
              .strangers_per_peer = 16,
              .max_put = 5ULL << 30},
      .dev = {.cfg = {.gid_index = -1}},
      .dc_access_key = RDX_DC_ACCESS_KEY_DEFAULT,
  };

  opterr = 0;
  while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
    switch (c) {
    case OPT_LISTEN: cfg->listen = optarg; break;
    case OPT_UPSTREAM:
      if (add_upstream(a, optarg))
        return -ENOMEM;
      break;
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
    case OPT_STRANGERS:
      if (parse_uint("--max-strangers", optarg, 0, 10000, &n))
        return -EINVAL;
      cfg->strangers = (unsigned)n;
      strangers_set = true;
      break;
    case OPT_STRANGERS_PEER:
      if (parse_uint("--max-strangers-per-peer", optarg, 0, 10000, &n))
        return -EINVAL;
      cfg->strangers_per_peer = (unsigned)n;
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
    case OPT_TEST_PUT_NO_REPLY: cfg->test_put_no_reply = true; break;
    case OPT_TEST_PUT_HOLD:
      if (parse_uint("--test-put-hold", optarg, 0, 3600000, &n))
        return -EINVAL;
      cfg->test_put_hold_ms = (unsigned)n;
      break;
    case OPT_RDMA_DEVS:
      if (parse_devices(optarg, &a->dev))
        return -EINVAL;
      break;
    case OPT_RDMA_GID:
      if (parse_uint("--rdma-gid-index", optarg, 0, 255, &n))
        return -EINVAL;
      a->dev.cfg.gid_index = (int)n;
      break;
    case OPT_RDMA_DC_TARGETS: dc_targets = optarg; break;
    case OPT_RDMA_DC_KEY:
      if (parse_key("--rdma-dc-access-key", optarg, &a->dc_access_key))
        return -EINVAL;
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
    case OPT_PIDFILE: a->pidfile = optarg; break;
    case 'f': a->fg = true; break;
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
  if (!strangers_set)
    cfg->strangers = cfg->max_conns > 1 ? cfg->max_conns / 2 : 1;
  if (gw_dcallow_parse(dc_targets, &a->dc_targets, err, sizeof(err))) {
    fprintf(stderr, "s3rdma-gateway: %s\n",
            a->dc_targets || !err[0] ? "out of memory" : err);
    return -EINVAL;
  }
  cfg->dc_targets = a->dc_targets;
  if (optind < argc) {
    fprintf(stderr, "s3rdma-gateway: unexpected argument '%s'\n", argv[optind]);
    return -EINVAL;
  }
  if (load_keys(a, sk_arg, sk_file, usk_arg, usk_file))
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

void gw_args_free(struct gw_args *a)
{
  if (!a)
    return;
  secret_free(a->sk);
  secret_free(a->usk);
  a->sk = a->usk = NULL;
  a->cfg.secret_key = a->cfg.up_secret_key = NULL;
  free(a->dev.list);
  a->dev.list = NULL;
  free(a->upstreams);
  a->upstreams = NULL;
  a->dev.cfg.ndevices = 0;
  gw_dcallow_free(a->dc_targets);
  a->dc_targets = NULL;
  a->cfg.dc_targets = NULL;
}

void gw_args_log_keys(const struct gw_args *a)
{
  static const char *const from[] = {
      [GW_SECRET_NONE] = "the same as the clients'",
      [GW_SECRET_ARG] = "from the command line",
      [GW_SECRET_FILE] = "from its key file",
      [GW_SECRET_ENV] = "from the environment"};
  bool sk = a->sk_from == GW_SECRET_ARG, usk = a->usk_from == GW_SECRET_ARG;

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
           from[a->sk_from], from[a->usk_from]);
}
