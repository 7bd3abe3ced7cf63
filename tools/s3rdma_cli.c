/*
 * s3rdma-cli: the S3 client from the command line. Used by tests and
 * benchmarks as "our client", and handy for poking at a bucket.
 *
 *   s3rdma-cli [options] ls [BUCKET[/PREFIX]] | mb BUCKET | rb BUCKET
 *              | put FILE BUCKET/KEY | get BUCKET/KEY FILE|- | head BUCKET/KEY
 *              | rm BUCKET/KEY... | cp BUCKET/KEY BUCKET/KEY
 *              | fill BUCKET/PREFIX COUNT SIZE | uploads BUCKET [PREFIX]
 *              | abort BUCKET KEY UPLOADID
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "s3/s3_client.h"

struct cli {
  struct s3_client *c;
  unsigned parallel;
  size_t part_size;
  bool recursive;
};

static void usage(FILE *f)
{
  fprintf(f,
          "usage: s3rdma-cli [options] COMMAND [ARGS]\n"
          "commands:\n"
          "  ls [BUCKET[/PREFIX]]     list buckets, or objects (-r: no "
          "delimiter)\n"
          "  mb BUCKET | rb BUCKET    create / delete a bucket\n"
          "  put FILE BUCKET/KEY      upload (multipart above --part-size)\n"
          "  get BUCKET/KEY FILE|-    download with --parallel ranged GETs\n"
          "  head BUCKET/KEY          size, etag, mtime, metadata\n"
          "  rm BUCKET/KEY...         delete objects\n"
          "  cp SRC_BUCKET/KEY DST_BUCKET/KEY   server-side copy\n"
          "  fill BUCKET/PREFIX COUNT SIZE      COUNT objects PREFIX00000...\n"
          "  uploads BUCKET [PREFIX]  multipart uploads in progress: "
          "KEY<TAB>UPLOADID<TAB>INITIATED\n"
          "  abort BUCKET KEY UPLOADID          abort a multipart upload\n"
          "options:\n"
          "  --endpoint URL     (default $S3R_ENDPOINT, $AWS_ENDPOINT_URL)\n"
          "  --region R  --profile P  --anonymous  --virtual-host  "
          "--insecure\n"
          "  --parallel N       requests in flight (default 16)\n"
          "  --part-size BYTES  range / part size (default 8M)\n"
          "  -r                 recursive listing\n"
          "  --stats            print client stats to stderr at the end\n"
          "  -v                 verbose (debug log)\n");
}

static int split_path(const char *arg, char **bucket, const char **key)
{
  const char *slash = strchr(arg, '/');

  *bucket = slash ? strndup(arg, (size_t)(slash - arg)) : strdup(arg);
  *key = slash ? slash + 1 : "";
  return *bucket ? 0 : -ENOMEM;
}

static size_t parse_size(const char *s)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);

  switch (*end) {
  case 'k': case 'K': v <<= 10; break;
  case 'm': case 'M': v <<= 20; break;
  case 'g': case 'G': v <<= 30; break;
  default: break;
  }
  return (size_t)v;
}

static int cmd_ls(struct cli *cl, const char *arg)
{
  struct s3_list_params p = {.delimiter = cl->recursive ? NULL : "/"};
  struct s3_list_result res;
  char *bucket, *token = NULL, tbuf[32];
  const char *prefix;
  int rc;

  if (!arg) {
    struct s3_buckets_result b;
    rc = s3_list_buckets(cl->c, &b);
    if (rc)
      return rc;
    for (size_t i = 0; i < b.n_buckets; i++)
      printf("%s\n", b.buckets[i].name);
    s3_buckets_result_cleanup(&b);
    return 0;
  }
  rc = split_path(arg, &bucket, &prefix);
  if (rc)
    return rc;
  p.prefix = prefix;
  do {
    p.continuation = token;
    rc = s3_list_objects(cl->c, bucket, &p, &res);
    free(token);
    token = NULL;
    if (rc)
      break;
    for (size_t i = 0; i < res.n_prefixes; i++)
      printf("%30s %s\n", "PRE", res.prefixes[i]);
    for (size_t i = 0; i < res.n_objects; i++) {
      struct tm tm;
      gmtime_r(&res.objects[i].mtime, &tm);
      strftime(tbuf, sizeof(tbuf), "%Y-%m-%d %H:%M:%S", &tm);
      printf("%s %10" PRId64 " %s\n", tbuf, res.objects[i].size,
             res.objects[i].key);
    }
    if (res.truncated && res.next_token)
      token = strdup(res.next_token);
    s3_list_result_cleanup(&res);
  } while (token);
  free(bucket);
  return rc;
}

struct slot {
  struct s3_req *req;
  unsigned char *buf;
  uint64_t off;
  size_t len;
  int part;
};

static int write_all(int fd, const unsigned char *p, size_t n, off_t off,
                     bool seq)
{
  while (n) {
    ssize_t w = seq ? write(fd, p, n) : pwrite(fd, p, n, off);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
    off += w;
  }
  return 0;
}

/* Parallel ranged GETs, written out in order. */
static int cmd_get(struct cli *cl, const char *src, const char *dst)
{
  struct s3_object_meta m;
  struct slot *slots;
  const char *key;
  char *bucket;
  uint64_t next = 0, done = 0;
  unsigned n = cl->parallel, head = 0, busy = 0;
  int fd, rc;
  bool seq;

  rc = split_path(src, &bucket, &key);
  if (rc)
    return rc;
  rc = s3_head_object(cl->c, bucket, key, &m);
  if (rc) {
    free(bucket);
    return rc;
  }
  fd = strcmp(dst, "-") ? open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644)
                        : STDOUT_FILENO;
  if (fd < 0) {
    rc = -errno;
    goto free_meta;
  }
  seq = fd == STDOUT_FILENO;
  slots = calloc(n, sizeof(*slots));
  for (unsigned i = 0; slots && i < n; i++)
    if (!(slots[i].buf = malloc(cl->part_size)))
      rc = -ENOMEM;
  if (!slots)
    rc = -ENOMEM;
  while (!rc && done < m.size) {
    /* fill the window, then retire the oldest range */
    while (busy < n && next < m.size) {
      struct slot *s = &slots[(head + busy) % n];
      s->off = next;
      s->len = m.size - next < cl->part_size ? (size_t)(m.size - next)
                                             : cl->part_size;
      s->req = s3_get_object_req(cl->c, bucket, key, s->off, s->len, s->buf);
      if (!s->req) {
        rc = -ENOMEM;
        break;
      }
      s3_req_submit(s->req, NULL, NULL);
      next += s->len;
      busy++;
    }
    if (!busy)
      break;
    struct slot *s = &slots[head];
    size_t got = 0;
    s3_req_wait(s->req);
    rc = s3_get_object_result(s->req, &got);
    s3_req_destroy(s->req);
    s->req = NULL;
    head = (head + 1) % n;
    busy--;
    if (!rc && got != s->len)
      rc = -EIO; /* the object changed under us */
    if (!rc)
      rc = write_all(fd, s->buf, got, (off_t)s->off, seq);
    done += got;
  }
  for (unsigned i = 0; slots && i < n; i++) {
    if (slots[i].req) {
      s3_req_cancel(slots[i].req);
      s3_req_wait(slots[i].req);
      s3_req_destroy(slots[i].req);
    }
    free(slots[i].buf);
  }
  free(slots);
  if (fd != STDOUT_FILENO && close(fd) && !rc)
    rc = -errno;
free_meta:
  s3_object_meta_cleanup(&m);
  free(bucket);
  return rc;
}

static int read_full(int fd, unsigned char *buf, size_t n, size_t *got)
{
  *got = 0;
  while (*got < n) {
    ssize_t r = read(fd, buf + *got, n - *got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      break;
    *got += (size_t)r;
  }
  return 0;
}

/* Upload: one PUT when small, else multipart with parts in flight. */
static int cmd_put(struct cli *cl, const char *src, const char *dst)
{
  struct s3_part_etag *parts = NULL;
  char (*etags)[S3_ETAG_MAX] = NULL, *bucket, *upload_id = NULL;
  struct slot *slots = NULL;
  unsigned n = cl->parallel, head = 0, busy = 0;
  int fd, rc, nparts = 0;
  const char *key;
  size_t got;
  bool eof = false, prefilled = true;

  rc = split_path(dst, &bucket, &key);
  if (rc)
    return rc;
  fd = strcmp(src, "-") ? open(src, O_RDONLY) : STDIN_FILENO;
  if (fd < 0) {
    rc = -errno;
    goto free_bucket;
  }
  slots = calloc(n, sizeof(*slots));
  etags = calloc(10000, sizeof(*etags));
  parts = calloc(10000, sizeof(*parts));
  if (!slots || !etags || !parts) {
    rc = -ENOMEM;
    goto close_fd;
  }
  for (unsigned i = 0; i < n; i++)
    if (!(slots[i].buf = malloc(cl->part_size))) {
      rc = -ENOMEM;
      goto free_slots;
    }
  rc = read_full(fd, slots[0].buf, cl->part_size, &got);
  if (rc)
    goto free_slots;
  if (got < cl->part_size) {
    rc = s3_put_object(cl->c, bucket, key, slots[0].buf, got, NULL, NULL);
    goto free_slots;
  }
  rc = s3_create_multipart(cl->c, bucket, key, NULL, &upload_id, NULL);
  if (rc)
    goto free_slots;
  slots[0].len = got;
  while (!rc) {
    while (busy < n && !eof) {
      struct slot *s = &slots[(head + busy) % n];
      if (!prefilled) { /* slot 0 holds the first part already */
        rc = read_full(fd, s->buf, cl->part_size, &s->len);
        if (rc)
          break;
      }
      prefilled = false;
      if (s->len == 0) {
        eof = true;
        break;
      }
      if (s->len < cl->part_size)
        eof = true;
      s->part = ++nparts;
      if (nparts > 10000) {
        rc = -EFBIG;
        break;
      }
      s->req = s3_upload_part_req(cl->c, bucket, key, upload_id, s->part,
                                  s->buf, s->len);
      if (!s->req) {
        rc = -ENOMEM;
        break;
      }
      s3_req_submit(s->req, NULL, NULL);
      busy++;
    }
    if (!busy)
      break;
    struct slot *s = &slots[head];
    s3_req_wait(s->req);
    if (!rc)
      rc = s3_upload_part_result(s->req, etags[s->part - 1]);
    s3_req_destroy(s->req);
    s->req = NULL;
    s->len = 0;
    head = (head + 1) % n;
    busy--;
  }
  for (unsigned i = 0; i < n; i++)
    if (slots[i].req) {
      s3_req_wait(slots[i].req);
      s3_req_destroy(slots[i].req);
    }
  if (!rc) {
    for (int i = 0; i < nparts; i++)
      parts[i] = (struct s3_part_etag){i + 1, etags[i]};
    rc = s3_complete_multipart(cl->c, bucket, key, upload_id, parts,
                               (size_t)nparts, NULL);
  }
  if (rc)
    s3_abort_multipart(cl->c, bucket, key, upload_id);
free_slots:
  for (unsigned i = 0; slots && i < n; i++)
    free(slots[i].buf);
close_fd:
  free(slots);
  free(etags);
  free(parts);
  free(upload_id);
  if (fd != STDIN_FILENO)
    close(fd);
free_bucket:
  free(bucket);
  return rc;
}

/* COUNT objects PREFIX00000.. of SIZE bytes each, --parallel at once. */
static int cmd_fill(struct cli *cl, const char *dst, const char *count_s,
                    const char *size_s)
{
  unsigned long count = strtoul(count_s, NULL, 10);
  size_t size = parse_size(size_s);
  unsigned n = cl->parallel, busy = 0, head = 0;
  struct s3_req **reqs = calloc(n, sizeof(*reqs));
  char *data = malloc(size ? size : 1), key[1200];
  const char *prefix;
  char *bucket = NULL;
  int rc = split_path(dst, &bucket, &prefix);

  if (!rc && (!reqs || !data))
    rc = -ENOMEM;
  for (size_t i = 0; data && i < size; i++)
    data[i] = (char)('a' + i % 26);
  for (unsigned long i = 0; !rc && (i < count || busy); ) {
    if (i < count && busy < n) {
      snprintf(key, sizeof(key), "%s%05lu", prefix, i);
      struct s3_req *r = s3_req_create(cl->c, "PUT", bucket, key);
      if (!r) {
        rc = -ENOMEM;
        break;
      }
      s3_req_set_body(r, data, size, false);
      s3_req_submit(r, NULL, NULL);
      reqs[(head + busy++) % n] = r;
      i++;
      continue;
    }
    rc = s3_req_wait(reqs[head]);
    s3_req_destroy(reqs[head]);
    head = (head + 1) % n;
    busy--;
  }
  while (busy) {
    s3_req_wait(reqs[head]);
    s3_req_destroy(reqs[head]);
    head = (head + 1) % n;
    busy--;
  }
  free(reqs);
  free(data);
  free(bucket);
  return rc;
}

static int cmd_head(struct cli *cl, const char *arg)
{
  struct s3_object_meta m;
  const char *key;
  char *bucket;
  int rc = split_path(arg, &bucket, &key);

  if (rc)
    return rc;
  rc = s3_head_object(cl->c, bucket, key, &m);
  if (!rc) {
    printf("size %" PRIu64 "\netag %s\nmtime %lld\ncontent-type %s\n",
           m.size, m.etag, (long long)m.mtime, m.content_type);
    for (size_t i = 0; i < m.n_meta; i++)
      printf("meta %s=%s\n", m.meta[i].key, m.meta[i].val);
    s3_object_meta_cleanup(&m);
  }
  free(bucket);
  return rc;
}

static int cmd_bucket(struct cli *cl, const char *cmd, const char *arg)
{
  return strcmp(cmd, "mb") == 0 ? s3_create_bucket(cl->c, arg)
                                : s3_delete_bucket(cl->c, arg);
}

static int cmd_rm(struct cli *cl, int argc, char **argv)
{
  int rc = 0;

  for (int i = 0; i < argc && !rc; i++) {
    const char *key;
    char *bucket;
    rc = split_path(argv[i], &bucket, &key);
    if (!rc)
      rc = s3_delete_object(cl->c, bucket, key);
    free(bucket);
  }
  return rc;
}

static int cmd_cp(struct cli *cl, const char *src, const char *dst)
{
  const char *skey, *dkey;
  char *sb = NULL, *db = NULL;
  int rc = split_path(src, &sb, &skey);

  if (!rc)
    rc = split_path(dst, &db, &dkey);
  if (!rc)
    rc = s3_copy_object(cl->c, sb, skey, db, dkey, false, NULL, NULL);
  free(sb);
  free(db);
  return rc;
}

/* Every page of ListMultipartUploads: KEY<TAB>UPLOADID<TAB>INITIATED. */
static int cmd_uploads(struct cli *cl, const char *bucket, const char *prefix)
{
  struct s3_uploads_result res;
  char *km = NULL, *im = NULL, tbuf[32];
  int rc;

  for (;;) {
    rc = s3_list_multipart_uploads(cl->c, bucket, prefix, km, im, &res);
    if (rc)
      break;
    for (size_t i = 0; i < res.n_uploads; i++) {
      struct tm tm;

      gmtime_r(&res.uploads[i].initiated, &tm);
      strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
      printf("%s\t%s\t%s\n", res.uploads[i].key, res.uploads[i].upload_id,
             tbuf);
    }
    if (!res.truncated) {
      s3_uploads_result_cleanup(&res);
      break;
    }
    /* a server that hands back the markers it was given would loop */
    if (km && !strcmp(km, res.next_key_marker) &&
        !strcmp(im, res.next_upload_id_marker)) {
      s3_uploads_result_cleanup(&res);
      rc = -EBADMSG;
      break;
    }
    free(km);
    free(im);
    km = strdup(res.next_key_marker);
    im = strdup(res.next_upload_id_marker);
    s3_uploads_result_cleanup(&res);
    if (!km || !im) {
      rc = -ENOMEM;
      break;
    }
  }
  free(km);
  free(im);
  return rc;
}

int main(int argc, char **argv)
{
  static const struct option opts[] = {
      {"endpoint", required_argument, NULL, 'e'},
      {"region", required_argument, NULL, 'R'},
      {"profile", required_argument, NULL, 'p'},
      {"anonymous", no_argument, NULL, 'a'},
      {"virtual-host", no_argument, NULL, 'V'},
      {"insecure", no_argument, NULL, 'k'},
      {"parallel", required_argument, NULL, 'P'},
      {"part-size", required_argument, NULL, 's'},
      {"stats", no_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct s3_client_config cfg;
  struct cli cl = {.parallel = 16, .part_size = 8u << 20};
  bool stats = false;
  char err[512];
  const char *cmd;
  int o, rc;

  s3_client_config_default(&cfg);
  cfg.endpoint = getenv("S3R_ENDPOINT");
  if (!cfg.endpoint)
    cfg.endpoint = getenv("AWS_ENDPOINT_URL");
  while ((o = getopt_long(argc, argv, "rvh", opts, NULL)) != -1) {
    switch (o) {
    case 'e': cfg.endpoint = optarg; break;
    case 'R': cfg.creds.region = optarg; break;
    case 'p': cfg.creds.profile = optarg; break;
    case 'a': cfg.creds.anonymous = true; break;
    case 'V': cfg.virtual_host = true; break;
    case 'k': cfg.insecure = true; break;
    case 'P': cl.parallel = (unsigned)atoi(optarg); break;
    case 's': cl.part_size = parse_size(optarg); break;
    case 'S': stats = true; break;
    case 'r': cl.recursive = true; break;
    case 'v': slog_set_level(LOG_DEBUG); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind >= argc || cl.parallel < 1 || cl.parallel > 1024 ||
      cl.part_size < 1 || cl.part_size > (5ull << 30)) {
    usage(stderr);
    return 2;
  }
  if (cl.parallel > cfg.max_inflight)
    cfg.max_inflight = cl.parallel;
  cmd = argv[optind++];
  argc -= optind;
  argv += optind;
  cl.c = s3_client_create(&cfg, err, sizeof(err));
  if (!cl.c) {
    fprintf(stderr, "s3rdma-cli: %s\n", err);
    return 1;
  }
  if (!strcmp(cmd, "ls") && argc <= 1)
    rc = cmd_ls(&cl, argc ? argv[0] : NULL);
  else if ((!strcmp(cmd, "mb") || !strcmp(cmd, "rb")) && argc == 1)
    rc = cmd_bucket(&cl, cmd, argv[0]);
  else if (!strcmp(cmd, "put") && argc == 2)
    rc = cmd_put(&cl, argv[0], argv[1]);
  else if (!strcmp(cmd, "get") && argc == 2)
    rc = cmd_get(&cl, argv[0], argv[1]);
  else if (!strcmp(cmd, "head") && argc == 1)
    rc = cmd_head(&cl, argv[0]);
  else if (!strcmp(cmd, "rm") && argc >= 1)
    rc = cmd_rm(&cl, argc, argv);
  else if (!strcmp(cmd, "fill") && argc == 3)
    rc = cmd_fill(&cl, argv[0], argv[1], argv[2]);
  else if (!strcmp(cmd, "cp") && argc == 2)
    rc = cmd_cp(&cl, argv[0], argv[1]);
  else if (!strcmp(cmd, "uploads") && (argc == 1 || argc == 2))
    rc = cmd_uploads(&cl, argv[0], argc == 2 ? argv[1] : NULL);
  else if (!strcmp(cmd, "abort") && argc == 3)
    rc = s3_abort_multipart(cl.c, argv[0], argv[1], argv[2]);
  else {
    usage(stderr);
    s3_client_destroy(cl.c);
    return 2;
  }
  if (rc)
    fprintf(stderr, "s3rdma-cli: %s: %s\n", cmd, strerror(-rc));
  if (stats) {
    struct s3_stats st;
    char buf[2048];
    s3_client_stats(cl.c, &st);
    s3_stats_format(&st, buf, sizeof(buf));
    fputs(buf, stderr);
  }
  s3_client_destroy(cl.c);
  return rc ? 1 : 0;
}
