/* fsx_stats: the stats view, read from FSX_STATS_NAME in the mount root.
   One row a counter, in the order printed (tests grep the names), then
   the S3 latency histograms; and the command that prints it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stats_fmt.h"
#include "common/stats_prom.h"
#include "fs/direct/fsx_fdtake.h"
#include "fs/mount/fsx_args.h"
#include "fs/mem/fsx_bufs.h"
#include "fs/mount/fsx_i.h"
#include "fs/mem/fsx_pool.h"
#include "fs/mem/fsx_memwatch.h"
#include "fs/mount/fsx_stats.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/write/fsx_space.h"

char *fsx_stats_text(struct fsx_mount *m, size_t *len)
{
  struct fsx_cache_stats cs;
  struct fsx_space_info si;
  struct s3_stats s3;
  size_t cap = 64 * 1024, n; /* (the histograms: about 2 KiB an op) */
  char *buf = malloc(cap);

  if (!buf)
    return NULL;
  s3_client_stats(m->s3, &s3);
  fsx_cache_stats(m->cache, &cs);
  fsx_space_info(m->space, &si); /* all 0 on a read-only mount */
  const struct stats_row rows[] = {
      {"fs.lookups", m->st.lookups},
      {"fs.getattrs", m->st.getattrs},
      {"fs.readdirs", m->st.readdirs},
      {"fs.opens", m->st.opens},
      {"fs.opens_known", m->st.opens_known},
      {"fs.opens_reverified", m->st.opens_reverified},
      {"fs.lookup_gets", m->st.lookup_gets},
      {"fs.lookup_whole", m->st.lookup_whole},
      {"fs.dir_times_stored", m->st.dir_times_stored},
      {"fs.dir_times_failed", m->st.dir_times_failed},
      {"fs.dir_times_storing", m->st.dir_times_storing},
      {"fs.releases", m->st.releases},
      {"fs.reads", m->st.reads},
      {"fs.read_bytes", m->st.read_bytes},
      {"fs.lists", m->st.lists},
      {"fs.heads", m->st.heads},
      {"fs.heads_ahead", m->st.heads_ahead},
      {"fs.gets", m->st.gets},
      {"fs.get_bytes", m->st.get_bytes},
      {"fs.errors", m->st.errors},
      {"fs.skipped_keys", m->st.skipped_keys},
      {"fs.inodes", fsx_table_count(m->tab)},
      {"readahead.chunks", m->st.readahead_chunks},
      {"readahead.resets", m->st.readahead_resets},
      {"readahead.window_peak", m->st.readahead_peak},
      {"read.dense_blocks", m->st.dense_blocks},
      {"read.dense_exact", m->st.dense_exact},
      {"read.kstore_bytes", m->st.kstore_bytes},
      {"read.kstore_dropped", m->st.kstore_dropped},
      {"read.kstore_undone", m->st.kstore_undone},
      {"read.dense_ahead", m->st.dense_ahead},
      {"read.idle_groups", m->st.idle_groups},
      {"read.ahead_waits", m->st.ahead_waits},
      {"read.dense_again", m->st.dense_again},
      {"cache.hits", cs.hits},
      {"cache.misses", cs.misses},
      {"cache.evictions", cs.evictions},
      {"cache.fill_errors", cs.fill_errors},
      {"cache.nobufs", cs.nobufs},
      {"cache.chunks_used", cs.chunks_used},
      {"cache.chunks_total", cs.chunks_total},
      {"cache.chunk_size", cs.chunk_size},
      {"cache.pinned", cs.pinned},
      {"cache.locked_bytes", cs.locked_bytes},
      {"cache.backed_bytes", cs.backed_bytes},
      {"cache.segments_added", cs.segments_added},
      {"cache.segments_released", cs.segments_released},
      {"cache.bytes_from_cache", m->st.bytes_from_cache},
      {"cache.bytes_direct", m->st.bytes_direct},
      {"write.writes", m->st.writes},
      {"write.bytes", m->st.write_bytes},
      {"write.commits", m->st.commits},
      {"write.commit_errors", m->st.commit_errors},
      {"write.uploads_unknown", m->st.uploads_unknown},
      {"write.parts_sent", m->st.parts_sent},
      {"write.parts_copied", m->st.parts_copied},
      {"write.stream_bytes", m->st.stream_bytes},
      {"write.unstreams", m->st.unstreams},
      {"write.base_fetches", m->st.base_fetches},
      {"write.base_fetch_bytes", m->st.base_fetch_bytes},
      {"fs.creates", m->st.creates},
      {"fs.unlinks", m->st.unlinks},
      {"fs.renames", m->st.renames},
      {"fs.objects_copied", m->st.objects_copied},
      {"fs.setattrs", m->st.setattrs},
      {"direct.reads", m->st.direct_reads},
      {"direct.bytes", m->st.direct_bytes},
      {"direct.registrations", m->st.direct_regs},
      {"direct.registered", m->st.direct_regs_now},
      {"direct.refused", m->st.direct_refused},
      {"direct.fds_closing", fsx_fdtake_closing()},
      {"direct.host_reads", m->st.direct_host_reads},
      {"direct.host_bytes", m->st.direct_host_bytes},
      {"direct.staged_reads", m->st.direct_staged_reads},
      {"direct.staged_bytes", m->st.direct_staged_bytes},
      {"direct.gpudirect_reads", m->st.direct_gpudirect_reads},
      {"direct.gpudirect_bytes", m->st.direct_gpudirect_bytes},
      {"direct.gpudirect_registrations", m->st.direct_gpudirect_regs},
      {"direct.gpudirect_refused", m->st.direct_gpudirect_refused},
      {"direct.writes", m->st.direct_writes},
      {"direct.write_bytes", m->st.direct_write_bytes},
      {"direct.write_parts", m->st.direct_write_parts},
      {"direct.host_writes", m->st.direct_host_writes},
      {"direct.host_write_bytes", m->st.direct_host_write_bytes},
      {"direct.staged_writes", m->st.direct_staged_writes},
      {"direct.staged_write_bytes", m->st.direct_staged_write_bytes},
      {"direct.gpudirect_writes", m->st.direct_gpudirect_writes},
      {"direct.gpudirect_write_bytes", m->st.direct_gpudirect_write_bytes},
      {"staging.bytes", si.used},
      {"staging.reserved", si.reserved},
      {"staging.limit", si.limit},
      {"staging.waiting", si.waiting},
      {"staging.waits", si.waited},
      {"staging.enospc", si.enospc},
      /* dead mounts' files (fsx_recover_thread) */
      {"recovery.running", m->st.recovery_running},
      {"recovery.uploaded", m->st.recovery_uploaded},
      {"recovery.kept", m->st.recovery_kept},
  };

  n = s3_stats_format(&s3, buf, cap);
  n = stats_fmt_rows(buf, cap, n, NULL, rows, STATS_NROWS(rows));
  n = s3_client_latency_format(m->s3, buf, cap, n);
  n = s3_client_endpoints_format(m->s3, buf, cap, n);
  n += fsx_rdma_stats(m, buf + n, cap - n);
  if (m->pool)
    n += fsx_pool_stats(m->pool, buf + n, cap - n);
  if (m->memwatch)
    n += fsx_memwatch_stats(m->memwatch, buf + n, cap - n);
  if (m->bufs)
    n += fsx_bufs_stats(m->bufs, buf + n, cap - n);
  *len = n;
  return buf;
}

/* The rows that say how much there is now (the rest count events). */
static const char *const gauges[] = {
    "fs.inodes",         "cache.chunks_used",  "cache.chunks_total",
    "cache.chunk_size",  "cache.pinned",       "cache.locked_bytes",
    "direct.registered",
    "staging.bytes",     "staging.reserved",   "staging.limit",
    "staging.waiting",   "recovery.running",   "s3.inflight",
    "s3.max_inflight_seen", "s3.round_trip_us", "readahead.window_peak",
    "rdma.active",     "rdma.held_chunks",
    "write.pool_slots",  "write.pool_slots_used", "write.pool_on_wire",
    "write.pool_slots_ready", "cache.backed_bytes", "mem.resident_bytes",
    "mem.locked_bytes",  "mem.target_bytes",  "mem.pressure_some_permille",
    "read.bufs_kept",    "rdma.rc_usable",    "rdma.registered_bytes",
    "s3.endpoint_up",    NULL};

/* The usage of `s3rdmafs stats`: on stdout for -h, stderr for a mistake. */
static void stats_usage(FILE *f)
{
  fprintf(f,
          "usage: " FSX_PROG " stats [--format text|prometheus] MOUNTPOINT\n"
          "  the counters of the mount at MOUNTPOINT (its file\n"
          "  " FSX_STATS_NAME "): \"name value\" lines (text, the default),\n"
          "  or Prometheus's text format (metrics " FSX_PROG "_*)\n");
}

int fsx_stats_cmd(int argc, char **argv)
{
  const char *mnt = argc ? argv[argc - 1] : NULL;
  size_t cap = 256 * 1024, n = 0;
  bool prom = false;
  char path[4096], *text, *out;
  ssize_t r = 0;
  long pn;
  int fd;

  if (argc == 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
    stats_usage(stdout);
    return 0;
  }
  if (argc == 3 && !strcmp(argv[0], "--format") &&
      (!strcmp(argv[1], "text") || !strcmp(argv[1], "prometheus"))) {
    prom = !strcmp(argv[1], "prometheus");
  } else if (argc != 1 || argv[0][0] == '-') { /* (a mountpoint -x: ./-x) */
    stats_usage(stderr);
    return 2;
  }
  snprintf(path, sizeof(path), "%s/%s", mnt, FSX_STATS_NAME);
  fd = open(path, O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, FSX_PROG ": %s: %s (is it an s3rdmafs mount?)\n", mnt,
            strerror(errno));
    return 1;
  }
  text = malloc(cap);
  while (text && n + 1 < cap && (r = read(fd, text + n, cap - n - 1)) > 0)
    n += (size_t)r;
  close(fd);
  if (!text || r < 0) {
    fprintf(stderr, FSX_PROG ": %s: %s\n", path,
            strerror(text ? errno : ENOMEM));
    free(text);
    return 1;
  }
  text[n] = '\0';
  if (!prom) {
    fwrite(text, 1, n, stdout);
    free(text);
    return 0;
  }
  out = malloc(4 * cap);
  pn = out ? stats_prom(text, FSX_PROG, gauges, out, 4 * cap) : -ENOMEM;
  if (pn >= 0)
    fwrite(out, 1, (size_t)pn, stdout);
  else
    fprintf(stderr, FSX_PROG ": %s: %s\n", path, strerror((int)-pn));
  free(out);
  free(text);
  return pn >= 0 ? 0 : 1;
}
