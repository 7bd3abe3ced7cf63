/*
 * s3rdmafs: mount an S3 bucket (or every bucket) as a directory.
 *
 *   s3rdmafs [options] BUCKET[:/PREFIX] MOUNTPOINT
 *   s3rdmafs [options] --all-buckets MOUNTPOINT
 *   s3rdmafs stats [--format text|prometheus] MOUNTPOINT
 *
 * Start-up order matters: the configuration is validated and the bucket is
 * checked with a short-lived S3 client while we still have a terminal (so
 * a bad endpoint, key or bucket is one clear line and a non-zero exit);
 * then we mount, daemonise (threads do not survive fork), and only then
 * build the real client, page cache and inode table.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "config/cfg.h"
#include "fs/mount/fsx_args.h"
#include "fs/mem/fsx_bufs.h"
#include "fs/direct/fsx_direct.h"
#include "fs/read/fsx_kstore.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/read/fsx_read.h"
#include "fs/ops/fsx_ops.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/stage/fsx_recover_proc.h"
#include "fs/stage/fsx_recover_thread.h"
#include "fs/write/fsx_space.h"
#include "fs/mount/fsx_stats.h"
#include "fs/mem/fsx_pool.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_geo.h"
#include "fs/write/fsx_wb.h"

#define PROG FSX_PROG


static void s3_config_from(const struct cfg *c, struct s3_client_config *s)
{
  s3_client_config_default(s);
  s->endpoint = c->endpoint;
  s->virtual_host = c->style == CFG_STYLE_VIRTUAL;
  s->ca_bundle = c->ca_bundle;
  s->insecure = c->insecure;
  s->max_inflight = c->s3.max_inflight;
  s->connect_timeout_ms = c->s3.connect_timeout_ms;
  s->request_timeout_ms = c->s3.request_timeout_ms;
  s->low_speed_time_s = c->s3.low_speed_time_ms / 1000;
  s->rdma_timeout_ms = c->rdma.timeout_ms;
  s->retry.max_attempts = c->s3.retry.max_attempts;
  s->retry.base_ms = c->s3.retry.base_ms;
  s->retry.max_backoff_ms = c->s3.retry.max_backoff_ms;
  s->retry.budget_ms = c->s3.retry.budget_ms;
  s->rdma_header = c->rdma.token_header;
  s->creds.region = c->region;
  s->creds.profile = c->credentials.profile;
  switch (c->credentials.source) {
  case CFG_CREDS_ANONYMOUS:
    s->creds.anonymous = true;
    break;
  case CFG_CREDS_ENV:
  case CFG_CREDS_PROFILE:
    break; /* s3_creds looks there when no keys are given */
  default:
    s->creds.access_key = c->credentials.access_key;
    s->creds.secret_key = c->credentials.secret_key;
    s->creds.session_token = c->credentials.session_token;
  }
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_mountinfo(char *s)
{
  char *o = s;

  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
        s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
}

/*
 * Let the kernel read ahead kb KiB at once on this mount: its default (128
 * KiB) cuts every read into 128 KiB FUSE requests whatever max_read, and
 * each request costs the daemon a wake-up and a pinning of the reader's
 * pages. The knob is the mount's bdi, /sys/class/bdi/MAJOR:MINOR/
 * read_ahead_kb, found through /proc/self/mountinfo by the mountpoint's
 * real path, resolved before mounting (any look at the mountpoint now would
 * wait for our own loop, not running yet). Best effort: only root may
 * write it.
 */
static void kernel_readahead(const char *real, unsigned long kb)
{
  char line[4096], dev[32] = "", path[PATH_MAX];
  FILE *f;

  f = fopen("/proc/self/mountinfo", "re");
  if (!real || !f)
    goto out;
  while (fgets(line, sizeof(line), f)) {
    char d[32];
    if (sscanf(line, "%*s %*s %31s %*s %4095s", d, path) != 2)
      continue;
    unescape_mountinfo(path);
    if (strcmp(path, real) == 0)
      snprintf(dev, sizeof(dev), "%s", d); /* the last mount there wins */
  }
  if (dev[0]) {
    snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
    FILE *ra = fopen(path, "we");
    if (!ra || fprintf(ra, "%lu\n", kb) < 0 || fclose(ra) != 0)
      log_info("cannot set %s to %lu (kernel reads stay 128 KiB)", path, kb);
    else
      log_debug("%s: %lu", path, kb);
  }
out:
  if (f)
    fclose(f);
}

/* Does the bucket (or the endpoint) answer, with these keys? */
static int check_source(struct s3_client *s3, const char *bucket,
                        const char *prefix, const char *endpoint)
{
  struct s3_list_params p = {.prefix = prefix, .max_keys = 1};
  struct s3_list_result lr;
  struct s3_buckets_result br;
  int rc;

  if (bucket) {
    rc = s3_list_objects(s3, bucket, &p, &lr);
    if (!rc)
      s3_list_result_cleanup(&lr);
  } else {
    rc = s3_list_buckets(s3, &br);
    if (!rc)
      s3_buckets_result_cleanup(&br);
  }
  switch (-rc) {
  case 0:
    return 0;
  case ENOENT:
    log_err("bucket '%s' does not exist at %s", bucket, endpoint);
    break;
  case EACCES:
    log_err("access denied by %s%s%s: check the access key and secret key "
            "(and the bucket's policy)", endpoint,
            bucket ? " for bucket " : "", bucket ? bucket : "");
    break;
  case ECONNREFUSED:
  case EHOSTUNREACH:
  case ETIMEDOUT:
  case ECONNRESET:
    log_err("cannot reach the endpoint %s: %s", endpoint, strerror(-rc));
    break;
  default:
    log_err("%s at %s: %s", bucket ? bucket : "listing buckets", endpoint,
            strerror(-rc));
  }
  return rc;
}

static void fuse_log_to_slog(enum fuse_log_level level, const char *fmt,
                             va_list ap)
{
  char line[1024];

  if ((int)level > slog_level)
    return;
  vsnprintf(line, sizeof(line), fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  slog_msg((int)level, "fuse: %s", line);
}

static void opts_from(const struct cfg *c, struct fsx_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->attr_ttl_ms = c->cache.attr_ttl_ms;
  o->dir_ttl_ms = c->cache.dir_ttl_ms;
  o->neg_ttl_ms = c->cache.negative_ttl_ms;
  o->burst_ttl_ms = c->cache.burst_ttl_ms;
  o->lookup_bytes = c->read.lookup_bytes;
  o->rdma_named = c->rdma.transport != CFG_RDMA_OFF &&
                  c->rdma.transport != CFG_RDMA_AUTO;
  o->kernel_cache = c->cache.kernel_cache;
  o->uid = c->mount.uid;
  o->gid = c->mount.gid;
  o->umask = c->mount.umask;
  o->file_mode = c->mount.file_mode == CFG_MODE_UNSET ? 0 : c->mount.file_mode;
  o->dir_mode = c->mount.dir_mode == CFG_MODE_UNSET ? 0 : c->mount.dir_mode;
  o->ro = c->mount.ro;
  o->all_buckets = c->mount.all_buckets;
  o->atime = c->mount.atime;
  /* other users' access is checked against what the kernel is shown: never
     a listing's guess */
  o->listing_attrs = c->mount.listing_attrs && !c->mount.allow_other;
  o->readahead_min = c->read.readahead_min;
  o->readahead_max = c->read.readahead_max;
  o->dense_block = c->read.dense_block;
  o->idle_fetch = c->read.idle_fetch;
  o->max_inflight_per_file = c->read.max_inflight_per_file;
  o->max_read = c->read.max_read;
  o->mount_time = time(NULL);
  o->part_size = c->write.part_size;
  o->max_parts_inflight = c->write.max_parts_inflight;
  o->max_memory = c->write.max_memory;
  o->rename_dir_max = c->write.rename_dir_max;
  o->retry_interval_ms = c->write.retry_interval_ms;
}

#ifdef S3R_FAILPOINTS
/* Every failpoint of the daemon (common/failpoint.h): armed names must be
   among them. tests/integration/crash_matrix.py lists them too. */
static const char *const failpoints[] = {
    "wb.write",     "wb.journal",      "stage.rec",    "stage.parts",
    "stage.sent",   "part.send",       "part.acked",   "commit.begin",
    "commit.put",   "commit.complete", "commit.done",  "unstream",
    "abort",        "leftover",        "unmount",      "pool.recover",
    "recover.file",
    "recover.put",  "recover.complete", "recover.done", NULL};
#endif

int main(int argc, char **argv)
{
  struct fsx_args a = {0};
  struct cfg c;
  struct fsx_mount m = {.recover_lock = PTHREAD_MUTEX_INITIALIZER,
                        .recover_cond = PTHREAD_COND_INITIALIZER};
  struct s3_client_config sc;
  struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
  struct fuse_session *se = NULL;
  struct fuse_loop_config *lc = NULL;
  struct fsx_recover_thread *recovery = NULL;
  struct fsx_recover_proc rproc = {0};
  char err[1024], **olists, *real_mnt = NULL;
  int nol = 0, rc = 1;
  bool kstore_stuck = false;

  /* (a bucket named "stats" mounts: BUCKET DIR -o ... is not these) */
  if (!strcmp(argc >= 2 ? argv[1] : "", "stats") &&
      (argc == 3 || (argc == 5 && !strcmp(argv[2], "--format"))))
    return fsx_stats_cmd(argc - 2, argv + 2);
  /* buffers of 128 KiB and more (read replies, base fetches) come from
     mmap and go back at free: glibc would otherwise raise the threshold
     after the first such free and keep them in per-thread arenas that
     never shrink (RSS growing past cache.size + write.max_memory under
     load, test_fs_load) */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  if (fsx_renlock_init(&m.rename_lock)) { /* (it lives as long as main) */
    fprintf(stderr, PROG ": cannot make the rename lock\n");
    return 1;
  }
#ifdef S3R_FAILPOINTS
  {
    const char *bad = NULL;
    if (fp_check(failpoints, &bad)) {
      fprintf(stderr, PROG ": S3R_FAILPOINTS: no failpoint, or an action "
                      "other than error or kill: %s\n", bad);
      return 2;
    }
  }
#endif
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fsx_args_usage(stdout);
      cfg_help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
      printf(PROG " 0.1.0 (libfuse %s)\n", fuse_pkgversion());
      return 0;
    }
  }
  cfg_init_defaults(&c);
  olists = calloc((size_t)argc, sizeof(*olists));
  if (!olists || fsx_args_parse(argc, argv, &a, &olists, &nol))
    goto free_cfg;
  /* config files first, then every other -o in order */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < nol; i++) {
      char *copy = strdup(olists[i]);
      int r = copy ? fsx_args_apply(&c, &a, copy, pass == 0, err, sizeof(err))
                   : -ENOMEM;
      free(copy);
      if (r) {
        fprintf(stderr, PROG ": %s\n", r == -ENOMEM ? "out of memory" : err);
        goto free_cfg;
      }
    }
  if (a.all_buckets)
    cfg_set(&c, "mount.all_buckets", "true", err, sizeof(err));
  if (cfg_validate(&c, err, sizeof(err))) {
    fprintf(stderr, PROG ": %s\n", err);
    goto free_cfg;
  }
  if (a.print_config) {
    size_t need = cfg_dump(&c, NULL, 0) + 1;
    char *buf = malloc(need);
    if (buf) {
      cfg_dump(&c, buf, need);
      fputs(buf, stdout);
    }
    free(buf);
    rc = 0;
    goto free_cfg;
  }
  if (!a.mountpoint || (!c.mount.all_buckets && !a.source)) {
    fsx_args_usage(stderr);
    goto free_cfg;
  }
  slog_set_level(a.debug ? LOG_DEBUG : c.log.level);
  fuse_set_log_func(fuse_log_to_slog);
  if (a.secret_opt[0])
    log_warn("%s given with -o: every local user can read command lines "
             "(/proc/PID/cmdline, ps: ours until it was scrubbed just now, "
             "mount(8)'s while it runs) and it may sit in shell history or "
             "/etc/fstab; use a config file of mode 0600 (-o config=FILE), "
             "the AWS_* environment or a profile",
             a.secret_opt);
  if (!c.mount.all_buckets &&
      fsx_args_split_source(a.source, &m.bucket, &m.prefix)) {
    fprintf(stderr, PROG ": '%s': expected BUCKET[:/PREFIX]\n", a.source);
    goto free_names;
  }
  opts_from(&c, &m.o);
  s3_config_from(&c, &sc);
  /* recovery's processes: forked now, while no thread exists */
  if (!c.mount.ro && fsx_recover_proc_fork(&m, &c, &sc, &rproc)) {
    log_err("cannot fork the recovery process: %s", strerror(errno));
    goto free_names;
  }

  /* the checks, while errors still reach the terminal */
  {
    struct s3_client *probe = s3_client_create(&sc, err, sizeof(err));
    int crc;
    if (!probe) {
      log_err("%s", err);
      goto free_names;
    }
    /* one line per failure: the client's own warnings stay quiet here */
    if (!a.debug)
      slog_set_level(LOG_ERR);
    crc = check_source(probe, m.bucket, m.prefix, c.endpoint);
    s3_client_destroy(probe);
    slog_set_level(a.debug ? LOG_DEBUG : c.log.level);
    if (crc)
      goto free_names;
    if (fsx_rdma_probe(&c, err, sizeof(err))) {
      log_err("%s", err);
      goto free_names;
    }
  }

  if (fuse_opt_add_arg(&fargs, argv[0]) ||
      fuse_opt_add_arg(&fargs, "-o") ||
      fuse_opt_add_arg(&fargs, "default_permissions,fsname=s3rdmafs,"
                               "subtype=s3rdmafs") ||
      (a.fuse_opts && (fuse_opt_add_arg(&fargs, "-o") ||
                       fuse_opt_add_arg(&fargs, a.fuse_opts))) ||
      (a.debug && fuse_opt_add_arg(&fargs, "-d")))
    goto free_names;
  if (c.mount.ro && (fuse_opt_add_arg(&fargs, "-o") ||
                     fuse_opt_add_arg(&fargs, "ro")))
    goto free_names;
  snprintf(err, sizeof(err), "max_read=%llu",
           (unsigned long long)c.read.max_read);
  if (fuse_opt_add_arg(&fargs, "-o") || fuse_opt_add_arg(&fargs, err))
    goto free_names;
  /* the staging directory (writes): locked here, kept by the daemon */
  if (!c.mount.ro &&
      fsx_stage_open(c.cache.dir, c.endpoint, &m.stage, err, sizeof(err))) {
    log_err("%s", err);
    goto free_names;
  }
  /* and how much of cache.dir it may take (statfs tells) */
  if (m.stage && fsx_space_create(c.cache.dir, c.write.staging_max,
                                  c.write.staging_wait_ms, &m.space, err,
                                  sizeof(err))) {
    log_err("%s", err);
    goto close_stage;
  }
  se = fuse_session_new(&fargs, &fsx_ops, sizeof(fsx_ops), &m);
  if (!se)
    goto close_stage;
  m.se = se;
  if (fuse_set_signal_handlers(se))
    goto destroy_session;
  real_mnt = realpath(a.mountpoint, NULL);
  if (fuse_session_mount(se, a.mountpoint)) {
    log_err("cannot mount on %s", a.mountpoint);
    goto remove_handlers;
  }
  kernel_readahead(real_mnt, 4 * (unsigned long)(c.read.max_read / 1024));
  if (!a.foreground || c.log.syslog)
    slog_use_syslog(PROG); /* nothing on stderr once daemonised */
  if (fuse_daemonize(a.foreground))
    goto unmount;

  /* after fork: the inode table, page cache and real client, in that
     order, so that teardown stops the client's engine (which runs every
     outstanding fetch callback) before the cache and table go */
  m.tab = fsx_table_create(m.bucket, m.prefix);
  if (!m.tab) {
    log_err("out of memory");
    goto unmount;
  }
  m.cache = fsx_cache_create(c.cache.size, (size_t)c.cache.chunk_size,
                             c.cache.mlock, err, sizeof(err));
  if (!m.cache) {
    log_err("page cache: %s", err);
    goto destroy_table;
  }
  /* reads outside the cache: their buffers reused (an eighth of the
     cache kept at most: reuse needs only what circulates between a put
     and the next get, test_fs_load's peak RSS what is kept) */
  {
    size_t arena_len;

    fsx_cache_arena(m.cache, &arena_len);
    if (!(m.bufs = fsx_bufs_create(arena_len / 8)) || fsx_read_start(&m)) {
      log_err("out of memory");
      goto destroy_cache;
    }
  }
  /* write buffers for files written in order (before the data plane,
     which registers them) */
  if (m.stage && c.write.stream) {
    size_t slot = (size_t)((c.write.part_size + FSX_WB_BLOCK - 1) /
                           FSX_WB_BLOCK * FSX_WB_BLOCK);
    const char *home = c.write.pool_dir ? c.write.pool_dir : "";

    if (fsx_pool_open(fsx_stage_dir(m.stage), home, c.write.max_memory, slot,
                      &m.pool, err, sizeof(err))) {
      log_err("%s", err);
      goto destroy_cache;
    }
    if (*home && strncmp(fsx_pool_path(m.pool), home, strlen(home)))
      log_notice("write buffers in %s: write.pool_dir %s has no room for "
                 "them", fsx_pool_path(m.pool), home);
    if (!fsx_pool_pinned(m.pool))
      log_notice("write buffers not locked in memory (RLIMIT_MEMLOCK)");
  }
  m.s3 = s3_client_create(&sc, err, sizeof(err));
  if (!m.s3) {
    log_err("%s", err);
    goto destroy_cache;
  }
  /* before the data plane, which may give up capabilities it keeps */
  if (fsx_direct_start(&m)) {
    log_err("cannot start the direct-read thread");
    goto destroy_client;
  }
  if (fsx_rdma_open(&m, &c, err, sizeof(err))) {
    log_err("%s", err);
    goto destroy_client;
  }
  /* dense random reads hand whole blocks to the kernel's cache, which
     only keeps them when it keeps pages across opens */
  if (m.o.kernel_cache && m.o.dense_block) {
    size_t arena_len;

    fsx_cache_arena(m.cache, &arena_len);
    if (!(m.kstore = fsx_kstore_create(&m, arena_len / 4))) {
      log_err("cannot start the kernel store thread");
      goto destroy_client;
    }
  }
  if (m.stage) {
    if (fsx_wb_start(&m)) {
      log_err("cannot start the write-back thread");
      goto destroy_client;
    }
    /* dead mounts' files, while the mount serves */
    if (fsx_recover_thread_start(&m, fsx_stage_root(m.stage), &rproc,
                                 &recovery)) {
      log_err("cannot start the recovery thread");
      goto destroy_client;
    }
  }
  log_notice("mounted %s%s%s on %s (endpoint %s)",
             m.bucket ? m.bucket : "all buckets", m.prefix && *m.prefix ? ":/"
                                                                      : "",
             m.prefix ? m.prefix : "", a.mountpoint, c.endpoint);
  /* the loops return 0, a negative error, or the signal that ended them */
  m.single_loop = a.single;
  if (a.single) {
    rc = fuse_session_loop(se) < 0 ? 1 : 0;
  } else {
    lc = fuse_loop_cfg_create();
    if (!lc)
      goto destroy_client;
    /* FSX_SPACE_MAX_WAITERS is half of it */
    fuse_loop_cfg_set_max_threads(lc, 2 * FSX_SPACE_MAX_WAITERS);
    fuse_loop_cfg_set_idle_threads(lc, 16);
    rc = fuse_session_loop_mt(se, lc) < 0 ? 1 : 0;
    fuse_loop_cfg_destroy(lc);
  }
  log_notice("unmounting %s", a.mountpoint);

destroy_client:
  fsx_direct_stop(&m); /* (the FUSE loop is over: no ioctl waits on it) */
  fsx_recover_thread_stop(recovery); /* its requests cancelled */
  fsx_wb_stop(&m); /* last uploads, with the client still there */
  s3_client_destroy(m.s3);
  /* after the client (whose last callbacks may queue), before the table */
  if (!fsx_kstore_destroy(m.kstore))
    kstore_stuck = true; /* it still uses the table and the session */
  m.kstore = NULL;
  fsx_rdma_close(&m); /* no request in flight names the arena now */
destroy_cache:
  fsx_pool_close(m.pool); /* every run given back: no state is left */
  if (!kstore_stuck) { /* (else its thread may still give one back) */
    fsx_bufs_destroy(m.bufs);
    fsx_read_stop(&m);
  }
  fsx_cache_destroy(m.cache);
destroy_table:
  if (!kstore_stuck)
    fsx_table_destroy(m.tab);
unmount:
  fuse_session_unmount(se);
remove_handlers:
  fuse_remove_signal_handlers(se);
destroy_session:
  if (!kstore_stuck)
    fuse_session_destroy(se);
close_stage:
  fsx_space_destroy(m.space); /* every staging file forgotten by now */
  fsx_stage_close(m.stage);
free_names:
  if (rproc.pid > 0) { /* never handed to the recovery thread */
    fsx_recover_proc_say(&rproc, "N\n");
    fsx_recover_proc_end(&rproc);
  }
  free(real_mnt);
  fuse_opt_free_args(&fargs);
  free(m.bucket);
  free(m.prefix);
free_cfg:
  for (int i = 0; i < nol; i++)
    free(olists[i]);
  free(olists);
  free(a.fuse_opts);
  cfg_cleanup(&c);
  return rc;
}
