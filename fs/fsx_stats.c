/* fsx_stats: the stats view, read from FSX_STATS_NAME in the mount root.
   One row a counter, in the order printed (tests grep the names). */
#include <stdlib.h>

#include "common/stats_fmt.h"
#include "fs/fsx_bufs.h"
#include "fs/fsx_i.h"
#include "fs/fsx_pool.h"
#include "fs/fsx_stats.h"
#include "fs/fsx_rdma.h"
#include "fs/fsx_space.h"

char *fsx_stats_text(struct fsx_mount *m, size_t *len)
{
  struct fsx_cache_stats cs;
  struct fsx_space_info si;
  struct s3_stats s3;
  size_t cap = 8192, n;
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
      {"fs.reads", m->st.reads},
      {"fs.read_bytes", m->st.read_bytes},
      {"fs.lists", m->st.lists},
      {"fs.heads", m->st.heads},
      {"fs.gets", m->st.gets},
      {"fs.get_bytes", m->st.get_bytes},
      {"fs.errors", m->st.errors},
      {"fs.skipped_keys", m->st.skipped_keys},
      {"fs.inodes", fsx_table_count(m->tab)},
      {"readahead.chunks", m->st.readahead_chunks},
      {"readahead.resets", m->st.readahead_resets},
      {"read.dense_blocks", m->st.dense_blocks},
      {"read.dense_exact", m->st.dense_exact},
      {"read.kstore_bytes", m->st.kstore_bytes},
      {"read.kstore_dropped", m->st.kstore_dropped},
      {"read.kstore_undone", m->st.kstore_undone},
      {"read.dense_ahead", m->st.dense_ahead},
      {"cache.hits", cs.hits},
      {"cache.misses", cs.misses},
      {"cache.evictions", cs.evictions},
      {"cache.fill_errors", cs.fill_errors},
      {"cache.nobufs", cs.nobufs},
      {"cache.chunks_used", cs.chunks_used},
      {"cache.chunks_total", cs.chunks_total},
      {"cache.chunk_size", cs.chunk_size},
      {"cache.pinned", cs.pinned},
      {"cache.bytes_from_cache", m->st.bytes_from_cache},
      {"cache.bytes_direct", m->st.bytes_direct},
      {"write.writes", m->st.writes},
      {"write.bytes", m->st.write_bytes},
      {"write.commits", m->st.commits},
      {"write.commit_errors", m->st.commit_errors},
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
  n += fsx_rdma_stats(m, buf + n, cap - n);
  if (m->pool)
    n += fsx_pool_stats(m->pool, buf + n, cap - n);
  if (m->bufs)
    n += fsx_bufs_stats(m->bufs, buf + n, cap - n);
  *len = n;
  return buf;
}
