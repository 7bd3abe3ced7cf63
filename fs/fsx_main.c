/*
 * s3rdmafs: mount an S3 bucket (or every bucket) as a directory.
 *
 *   s3rdmafs [options] BUCKET[:/PREFIX] MOUNTPOINT
 *   s3rdmafs [options] --all-buckets MOUNTPOINT
 *   s3rdmafs stats [--format text|prometheus] MOUNTPOINT
 *
 * main reads the configuration (configure), then builds the mount's parts
 * from one table, parts[], in its order, runs the FUSE loop, and takes
 * them down in the reverse order (build, teardown): the start-up order is
 * that table. Its rules, each a row's place: recovery's processes fork
 * before any thread exists; the bucket is checked with a short-lived
 * client while errors still reach a terminal; the process daemonises
 * (threads do not survive fork) before any part with a thread; what the
 * S3 client's callbacks use outlives the end of its requests (the downs
 * of the kernel store and the data plane end them first); and
 * registrations go before the data plane.
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
#include "fs/mount/fsx_setup.h"
#include "fs/read/fsx_read.h"
#include "fs/ops/fsx_dirtimes.h"
#include "fs/ops/fsx_ops.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/stage/fsx_recover_proc.h"
#include "fs/stage/fsx_recover_thread.h"
#include "fs/write/fsx_space.h"
#include "fs/mount/fsx_stats.h"
#include "fs/mem/fsx_pool.h"
#include "fs/mem/fsx_memory.h"
#include "fs/mem/fsx_memwatch.h"
#include "fs/mount/fsx_inval.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_geo.h"
#include "fs/write/fsx_wb.h"

#define PROG FSX_PROG
#define WARM_CONNS 4u /* connections made at mount (client_up) */


#ifdef S3R_FAILPOINTS
/* Every failpoint of the daemon (common/failpoint.h): armed names must be
   among them. tests/integration/crash_matrix.py lists them too. */
static const char *const failpoints[] = {
    "wb.write",     "wb.journal",      "stage.rec",    "stage.parts",
    "stage.sent",   "part.send",       "part.acked",   "commit.begin",
    "commit.put",   "commit.complete", "commit.done",  "unstream",
    "abort",        "leftover",        "unmount",      "pool.recover",
    "recover.file", "stage.parts_add",
    "recover.put",  "recover.complete", "recover.done", "mem.pressure",
    "pool.reserve", NULL};
#endif

/* What main builds and takes down (the parts' state). */
struct build {
  struct fsx_mount m;
  struct fsx_args a;
  struct cfg c;
  struct s3_client_config sc;
  struct fuse_args fargs;
  struct fuse_session *se;
  struct fsx_recover_proc rproc;
  struct fsx_recover_thread *recovery;
  char *real_mnt;
  uint64_t mem_target;        /* fsx_memory_target's; 0: none known */
  bool kstore_stuck;          /* its thread may still use the table, the
                                 session and the read buffers: left to
                                 the process's exit */
  char err[1024];
};

/* One part: up builds it (0, or non-zero with one line logged), down
   takes it down (also after a failed up of a later part). */
struct part {
  int (*up)(struct build *b);
  void (*down)(struct build *b);
};

/* recovery's processes: forked now, while no thread exists */
static int recovery_proc_up(struct build *b)
{
  if (b->c.mount.ro || !fsx_recover_proc_fork(&b->m, &b->c, &b->sc, &b->rproc))
    return 0;
  log_err("cannot fork the recovery process: %s", strerror(errno));
  return -1;
}

static void recovery_proc_down(struct build *b)
{
  if (b->rproc.pid > 0) { /* never handed to the recovery thread */
    fsx_recover_proc_say(&b->rproc, "N\n");
    fsx_recover_proc_end(&b->rproc);
  }
}

/* the checks, while errors still reach the terminal */
static int checks_up(struct build *b)
{
  struct s3_client *probe = s3_client_create(&b->sc, b->err, sizeof(b->err));
  int crc;

  if (!probe) {
    log_err("%s", b->err);
    return -1;
  }
  /* one line per failure: the client's own warnings stay quiet here */
  if (!b->a.debug)
    slog_set_level(LOG_ERR);
  crc = fsx_setup_check_source(probe, b->m.bucket, b->m.prefix, b->c.endpoint);
  s3_client_destroy(probe);
  slog_set_level(b->a.debug ? LOG_DEBUG : b->c.log.level);
  if (crc)
    return -1;
  if (fsx_rdma_probe(&b->c, b->err, sizeof(b->err))) {
    log_err("%s", b->err);
    return -1;
  }
  return 0;
}

/* the staging directory (writes): locked here, kept by the daemon; and
   how much of cache.dir it may take (statfs tells) */
static int stage_up(struct build *b)
{
  const struct cfg *c = &b->c;

  if (c->mount.ro)
    return 0;
  if (fsx_stage_open(c->cache.dir, c->endpoint, &b->m.stage, b->err,
                     sizeof(b->err)) ||
      fsx_space_create(c->cache.dir, c->write.staging_max,
                       c->write.staging_wait_ms, &b->m.space, b->err,
                       sizeof(b->err))) {
    log_err("%s", b->err);
    return -1;
  }
  return 0;
}

static void stage_down(struct build *b)
{
  fsx_space_destroy(b->m.space); /* every staging file forgotten by now */
  fsx_stage_close(b->m.stage);
}

static int session_up(struct build *b)
{
  struct fuse_args *f = &b->fargs;
  char max_read[64];

  snprintf(max_read, sizeof(max_read), "max_read=%llu",
           (unsigned long long)b->c.read.max_read);
  if (fuse_opt_add_arg(f, PROG) || fuse_opt_add_arg(f, "-o") ||
      fuse_opt_add_arg(f, "default_permissions,fsname=s3rdmafs,"
                          "subtype=s3rdmafs") ||
      (b->a.fuse_opts && (fuse_opt_add_arg(f, "-o") ||
                          fuse_opt_add_arg(f, b->a.fuse_opts))) ||
      (b->a.debug && fuse_opt_add_arg(f, "-d")) ||
      (b->c.mount.ro &&
       (fuse_opt_add_arg(f, "-o") || fuse_opt_add_arg(f, "ro"))) ||
      fuse_opt_add_arg(f, "-o") || fuse_opt_add_arg(f, max_read))
    return -1;
  b->se = fuse_session_new(f, &fsx_ops, sizeof(fsx_ops), &b->m);
  if (!b->se || fuse_set_signal_handlers(b->se)) {
    log_err("cannot start the FUSE session");
    return -1;
  }
  b->m.se = b->se;
  return 0;
}

static void session_down(struct build *b)
{
  if (b->se) {
    fuse_remove_signal_handlers(b->se);
    if (!b->kstore_stuck)
      fuse_session_destroy(b->se);
  }
  fuse_opt_free_args(&b->fargs);
}

static int mount_up(struct build *b)
{
  b->real_mnt = realpath(b->a.mountpoint, NULL);
  if (fuse_session_mount(b->se, b->a.mountpoint)) {
    log_err("cannot mount on %s", b->a.mountpoint);
    return -1;
  }
  fsx_setup_readahead(b->real_mnt,
                      4 * (unsigned long)(b->c.read.max_read / 1024));
  return 0;
}

static void mount_down(struct build *b)
{
  fuse_session_unmount(b->se);
  free(b->real_mnt);
}

static int daemon_up(struct build *b)
{
  if (!b->a.foreground || b->c.log.syslog)
    slog_use_syslog(PROG); /* nothing on stderr once daemonised */
  return fuse_daemonize(b->a.foreground);
}

/* after daemon_up: a thread (a fork would leave it behind) */
static int inval_up(struct build *b)
{
  int rc = fsx_inval_start(&b->m, &b->m.inval);

  if (!rc)
    return 0;
  log_err("cannot start the invalidation thread: %s", strerror(-rc));
  return -1;
}

static void inval_down(struct build *b)
{
  fsx_inval_stop(b->m.inval);
  b->m.inval = NULL;
}

static int table_up(struct build *b)
{
  if ((b->m.tab = fsx_table_create(b->m.bucket, b->m.prefix)))
    return 0;
  log_err("out of memory");
  return -1;
}

static void table_down(struct build *b)
{
  if (!b->kstore_stuck)
    fsx_table_destroy(b->m.tab);
}

static int cache_up(struct build *b)
{
  const struct cfg *c = &b->c;

  b->m.cache = fsx_cache_create(c->cache.size, (size_t)c->cache.chunk_size,
                                c->cache.mlock, b->err, sizeof(b->err));
  if (b->m.cache)
    return 0;
  log_err("page cache: %s", b->err);
  return -1;
}

static void cache_down(struct build *b)
{
  fsx_cache_destroy(b->m.cache);
}

/* reads outside the cache: their buffers reused (an eighth of the cache
   kept at most: reuse needs only what circulates between a put and the
   next get, test_fs_load's peak RSS what is kept); the read path's state */
static int reads_up(struct build *b)
{
  size_t arena_len;

  fsx_cache_arena(b->m.cache, &arena_len);
  if ((b->m.bufs = fsx_bufs_create(arena_len / 8)) && !fsx_read_start(&b->m))
    return 0;
  log_err("out of memory");
  return -1;
}

static void reads_down(struct build *b)
{
  if (b->kstore_stuck) /* (its thread may still give a buffer back) */
    return;
  fsx_bufs_destroy(b->m.bufs);
  fsx_read_stop(&b->m);
}

/* write buffers for files written in order (before the data plane,
   which registers them) */
static int pool_up(struct build *b)
{
  const struct cfg *c = &b->c;
  size_t slot = (size_t)((c->write.part_size + FSX_WB_BLOCK - 1) /
                         FSX_WB_BLOCK * FSX_WB_BLOCK);
  const char *home = c->write.pool_dir ? c->write.pool_dir : "";

  if (!b->m.stage || !c->write.stream)
    return 0;
  if (fsx_pool_open(fsx_stage_dir(b->m.stage), home, c->write.max_memory,
                    slot, &b->m.pool, b->err, sizeof(b->err))) {
    log_err("%s", b->err);
    return -1;
  }
  if (*home && strncmp(fsx_pool_path(b->m.pool), home, strlen(home)))
    log_notice("write buffers in %s: write.pool_dir %s has no room for them",
               fsx_pool_path(b->m.pool), home);
  return 0;
}

static void pool_down(struct build *b)
{
  fsx_pool_close(b->m.pool); /* every run given back: no state is left */
}

/* The client, and its first connections made at once (a lookup's round
   sends 3 requests, each of which would otherwise wait for a connection
   of its own to be made: a round trip far away) */
static int client_up(struct build *b)
{
  if ((b->m.s3 = s3_client_create(&b->sc, b->err, sizeof(b->err)))) {
    s3_client_warm(b->m.s3, b->m.bucket, /* (all buckets: none) */
                   b->sc.max_inflight < WARM_CONNS ? b->sc.max_inflight
                                                   : WARM_CONNS);
    return 0;
  }
  log_err("%s", b->err);
  return -1;
}

/* (its requests were ended by the first down after it that needs them
   over: s3_client_stop in kstore_down, rdma_down) */
static void client_down(struct build *b)
{
  s3_client_destroy(b->m.s3);
}

/* before the data plane, which may give up capabilities it keeps */
static int direct_up(struct build *b)
{
  if (!fsx_direct_start(&b->m))
    return 0;
  log_err("cannot start the direct-read thread");
  return -1;
}

static void direct_down(struct build *b)
{
  fsx_direct_stop(&b->m);
}

static int rdma_up(struct build *b)
{
  if (!fsx_rdma_open(&b->m, &b->c, b->err, sizeof(b->err)))
    return 0;
  log_err("%s", b->err);
  return -1;
}

static void rdma_down(struct build *b)
{
  s3_client_stop(b->m.s3); /* no request in flight names the arena now */
  fsx_rdma_close(&b->m);
}

/* idle cache segments and part buffers given back, and more under
   memory pressure (after rdma: its hook registers segments) */
static int memwatch_up(struct build *b)
{
  const struct fsx_memwatch_cfg wc = {
      .cache = b->m.cache, .pool = b->m.pool,
      .idle_ms = b->c.cache.idle_release_ms, .target = b->mem_target,
      .root = "/"};
  int rc = fsx_memwatch_start(&wc, &b->m.memwatch);

  if (!rc)
    return 0;
  log_err("cannot start the memory watcher: %s", strerror(-rc));
  return -1;
}

static void memwatch_down(struct build *b)
{
  fsx_memwatch_stop(b->m.memwatch);
  b->m.memwatch = NULL;
}

/* dense random reads hand whole blocks to the kernel's cache, which only
   keeps them when it keeps pages across opens; not with one loop thread
   (-s): a writer's open waits for the stores on their way, which wait for
   the pages of reads that thread would answer */
static int kstore_up(struct build *b)
{
  size_t arena_len;

  if (!b->m.o.kernel_cache || !b->m.o.dense_block || b->a.single)
    return 0;
  fsx_cache_arena(b->m.cache, &arena_len);
  if ((b->m.kstore = fsx_kstore_create(&b->m, arena_len / 4)))
    return 0;
  log_err("cannot start the kernel store thread");
  return -1;
}

static void kstore_down(struct build *b)
{
  s3_client_stop(b->m.s3); /* (its last callbacks may queue stores) */
  if (!fsx_kstore_destroy(b->m.kstore))
    b->kstore_stuck = true; /* it still uses the table and the session */
  b->m.kstore = NULL;
}

static int wb_up(struct build *b)
{
  if (!b->m.stage || !fsx_wb_start(&b->m))
    return 0;
  log_err("cannot start the write-back thread");
  return -1;
}

static void wb_down(struct build *b)
{
  fsx_wb_stop(&b->m); /* last uploads, with the client still there */
}

/* dead mounts' files, while the mount serves */
static int recovery_up(struct build *b)
{
  if (!b->m.stage ||
      !fsx_recover_thread_start(&b->m, fsx_stage_root(b->m.stage), &b->rproc,
                                &b->recovery))
    return 0;
  log_err("cannot start the recovery thread");
  return -1;
}

static void recovery_down(struct build *b)
{
  fsx_recover_thread_stop(b->recovery); /* its requests cancelled */
}

/* open files' registrations (the loop is over: no ioctl waits on them),
   before the data plane closes (a dma-buf's must go first) */
static void registrations_down(struct build *b)
{
  fsx_direct_release_all(&b->m);
}

/* directories' times onto their markers: down (every one waiting stored)
   once no operation comes, before the write-back and the client stop */
static int dirtimes_up(struct build *b)
{
  int rc = fsx_dirtimes_start(&b->m, &b->m.dirtimes);

  if (!rc)
    return 0;
  log_err("cannot start the directory-times thread: %s", strerror(-rc));
  return -1;
}

static void dirtimes_down(struct build *b)
{
  fsx_dirtimes_stop(b->m.dirtimes);
  b->m.dirtimes = NULL;
}

/* The mount's parts, in the order they are built; taken down in reverse. */
static const struct part parts[] = {
    {recovery_proc_up, recovery_proc_down},
    {checks_up, NULL},
    {stage_up, stage_down},
    {session_up, session_down},
    {mount_up, mount_down},
    {daemon_up, NULL},
    {inval_up, inval_down},
    {table_up, table_down},
    {cache_up, cache_down},
    {reads_up, reads_down},
    {pool_up, pool_down},
    {client_up, client_down},
    {direct_up, direct_down},
    {rdma_up, rdma_down},
    {memwatch_up, memwatch_down},
    {kstore_up, kstore_down},
    {wb_up, wb_down},
    {recovery_up, recovery_down},
    {dirtimes_up, dirtimes_down},
    {NULL, registrations_down},
};
#define NPARTS (sizeof(parts) / sizeof(parts[0]))

/* Take down parts [0, n) in reverse. */
static void teardown(struct build *b, size_t n)
{
  while (n-- > 0)
    if (parts[n].down)
      parts[n].down(b);
}

/* Build every part: 0, or non-zero with those built taken down again. */
static int build(struct build *b)
{
  for (size_t i = 0; i < NPARTS; i++)
    if (parts[i].up && parts[i].up(b)) {
      teardown(b, i + 1); /* (a failed up's down undoes what it did) */
      return -1;
    }
  return 0;
}

/* The loops return 0, a negative error, or the signal that ended them. */
static int run(struct build *b)
{
  struct fuse_loop_config *lc;
  int rc;

  log_notice("mounted %s%s%s on %s (endpoint %s)",
             b->m.bucket ? b->m.bucket : "all buckets",
             b->m.prefix && *b->m.prefix ? ":/" : "",
             b->m.prefix ? b->m.prefix : "", b->a.mountpoint, b->c.endpoint);
  b->m.single_loop = b->a.single;
  if (b->a.single) {
    rc = fuse_session_loop(b->se) < 0 ? 1 : 0;
  } else {
    if (!(lc = fuse_loop_cfg_create()))
      return 1;
    /* FSX_SPACE_MAX_WAITERS is half of it */
    fuse_loop_cfg_set_max_threads(lc, 2 * FSX_SPACE_MAX_WAITERS);
    fuse_loop_cfg_set_idle_threads(lc, 16);
    rc = fuse_session_loop_mt(b->se, lc) < 0 ? 1 : 0;
    fuse_loop_cfg_destroy(lc);
  }
  log_notice("unmounting %s", b->a.mountpoint);
  return rc;
}

/* cache.size and write.max_memory cut to the memory target (said) */
static void fit_memory(struct build *b)
{
  char why[4200], msg[256];

  b->mem_target = fsx_memory_target("/", b->c.mount.memory_target, why,
                                    sizeof(why));
  if (fsx_memory_fit(&b->c, b->mem_target, msg, sizeof(msg)))
    log_notice("memory target %llu MiB (%s): %s",
               (unsigned long long)(b->mem_target >> 20), why, msg);
}

/*
 * The command line and the configuration into b. -1: go on and mount;
 * else the exit status (help, version, --print-config: 0; an error: 1 or
 * 2, said on stderr).
 */
static int configure(struct build *b, int argc, char **argv)
{
  char **olists;
  int nol = 0, rc = 1;

  /* buffers of 128 KiB and more (read replies, base fetches) come from
     mmap and go back at free: glibc would otherwise raise the threshold
     after the first such free and keep them in per-thread arenas that
     never shrink (RSS growing past cache.size + write.max_memory under
     load, test_fs_load) */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
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
  olists = calloc((size_t)argc, sizeof(*olists));
  if (!olists || fsx_args_parse(argc, argv, &b->a, &olists, &nol))
    goto free_lists;
  /* config files first, then every other -o in order */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < nol; i++) {
      char *copy = strdup(olists[i]);
      int r = copy ? fsx_args_apply(&b->c, &b->a, copy, pass == 0, b->err,
                                    sizeof(b->err))
                   : -ENOMEM;
      free(copy);
      if (r) {
        fprintf(stderr, PROG ": %s\n",
                r == -ENOMEM ? "out of memory" : b->err);
        goto free_lists;
      }
    }
  if (b->a.all_buckets)
    cfg_set(&b->c, "mount.all_buckets", "true", b->err, sizeof(b->err));
  if (cfg_validate(&b->c, b->err, sizeof(b->err))) {
    fprintf(stderr, PROG ": %s\n", b->err);
    goto free_lists;
  }
  if (b->a.print_config) {
    size_t need = cfg_dump(&b->c, NULL, 0) + 1;
    char *buf = malloc(need);
    if (buf) {
      cfg_dump(&b->c, buf, need);
      fputs(buf, stdout);
    }
    free(buf);
    rc = 0;
    goto free_lists;
  }
  if (!b->a.mountpoint || (!b->c.mount.all_buckets && !b->a.source)) {
    fsx_args_usage(stderr);
    goto free_lists;
  }
  slog_set_level(b->a.debug ? LOG_DEBUG : b->c.log.level);
  fsx_setup_fuse_log();
  if (b->a.secret_opt[0])
    log_warn("%s given with -o: every local user can read command lines "
             "(/proc/PID/cmdline, ps: ours until it was scrubbed just now, "
             "mount(8)'s while it runs) and it may sit in shell history or "
             "/etc/fstab; use a config file of mode 0600 (-o config=FILE), "
             "the AWS_* environment or a profile",
             b->a.secret_opt);
  if (!b->c.mount.all_buckets &&
      fsx_args_split_source(b->a.source, &b->m.bucket, &b->m.prefix)) {
    fprintf(stderr, PROG ": '%s': expected BUCKET[:/PREFIX]\n", b->a.source);
    goto free_lists;
  }
  fit_memory(b);
  fsx_setup_opts(&b->c, &b->m.o);
  fsx_setup_s3(&b->c, &b->sc);
  rc = -1;
free_lists:
  for (int i = 0; i < nol; i++)
    free(olists[i]);
  free(olists);
  return rc;
}

int main(int argc, char **argv)
{
  static struct build b = {
      .m = {.recover_lock = PTHREAD_MUTEX_INITIALIZER,
            .recover_cond = PTHREAD_COND_INITIALIZER},
      .fargs = FUSE_ARGS_INIT(0, NULL)};
  int rc;

  /* (a bucket named "stats" mounts: BUCKET DIR -o ... is not these) */
  if (!strcmp(argc >= 2 ? argv[1] : "", "stats") &&
      (argc == 3 || (argc == 5 && !strcmp(argv[2], "--format"))))
    return fsx_stats_cmd(argc - 2, argv + 2);
  if (fsx_renlock_init(&b.m.rename_lock)) { /* (it lives as long as main) */
    fprintf(stderr, PROG ": cannot make the rename lock\n");
    return 1;
  }
  cfg_init_defaults(&b.c);
  rc = configure(&b, argc, argv);
  if (rc < 0) {
    rc = 1;
    if (!build(&b)) {
      rc = run(&b);
      teardown(&b, NPARTS);
    }
  }
  free(b.m.bucket);
  free(b.m.prefix);
  free(b.a.fuse_opts);
  cfg_cleanup(&b.c);
  return rc;
}
