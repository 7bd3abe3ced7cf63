/* fsx_stats: the stats view, read from FSX_STATS_NAME in the mount root. */
#include <stdio.h>
#include <stdlib.h>

#include "fs/fsx_ops.h"
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
  n = s3_stats_format(&s3, buf, cap);
  fsx_cache_stats(m->cache, &cs);
#define U(x) ((unsigned long long)(x))
  n += (size_t)snprintf(
      buf + n, cap - n,
      "fs.lookups %llu\nfs.getattrs %llu\nfs.readdirs %llu\nfs.opens %llu\n"
      "fs.reads %llu\nfs.read_bytes %llu\nfs.lists %llu\nfs.heads %llu\n"
      "fs.gets %llu\nfs.get_bytes %llu\nfs.errors %llu\n"
      "fs.skipped_keys %llu\nfs.inodes %llu\n"
      "readahead.chunks %llu\nreadahead.resets %llu\n"
      "cache.hits %llu\ncache.misses %llu\ncache.evictions %llu\n"
      "cache.fill_errors %llu\ncache.nobufs %llu\ncache.chunks_used %llu\n"
      "cache.chunks_total %llu\ncache.chunk_size %llu\ncache.pinned %d\n"
      "cache.bytes_from_cache %llu\ncache.bytes_direct %llu\n",
      U(m->st.lookups), U(m->st.getattrs), U(m->st.readdirs), U(m->st.opens),
      U(m->st.reads), U(m->st.read_bytes), U(m->st.lists), U(m->st.heads),
      U(m->st.gets), U(m->st.get_bytes), U(m->st.errors),
      U(m->st.skipped_keys), U(fsx_table_count(m->tab)),
      U(m->st.readahead_chunks), U(m->st.readahead_resets), U(cs.hits),
      U(cs.misses), U(cs.evictions), U(cs.fill_errors), U(cs.nobufs),
      U(cs.chunks_used), U(cs.chunks_total), U(cs.chunk_size), cs.pinned,
      U(m->st.bytes_from_cache), U(m->st.bytes_direct));
  if (n < cap)
    n += (size_t)snprintf(
        buf + n, cap - n,
        "write.writes %llu\nwrite.bytes %llu\nwrite.commits %llu\n"
        "write.commit_errors %llu\nwrite.parts_sent %llu\n"
        "write.parts_copied %llu\nwrite.base_fetches %llu\n"
        "write.base_fetch_bytes %llu\nfs.creates %llu\nfs.unlinks %llu\n"
        "fs.renames %llu\nfs.objects_copied %llu\nfs.setattrs %llu\n",
        U(m->st.writes), U(m->st.write_bytes), U(m->st.commits),
        U(m->st.commit_errors), U(m->st.parts_sent), U(m->st.parts_copied),
        U(m->st.base_fetches), U(m->st.base_fetch_bytes), U(m->st.creates),
        U(m->st.unlinks), U(m->st.renames), U(m->st.objects_copied),
        U(m->st.setattrs));
  fsx_space_info(m->space, &si); /* all 0 on a read-only mount */
  if (n < cap)
    n += (size_t)snprintf(
        buf + n, cap - n,
        "staging.bytes %llu\nstaging.reserved %llu\nstaging.limit %llu\n"
        "staging.waiting %llu\nstaging.waits %llu\nstaging.enospc %llu\n",
        U(si.used), U(si.reserved), U(si.limit), U(si.waiting), U(si.waited),
        U(si.enospc));
  if (n < cap) /* dead mounts' files (fsx_recover_thread) */
    n += (size_t)snprintf(buf + n, cap - n,
                          "recovery.running %llu\nrecovery.uploaded %llu\n"
                          "recovery.kept %llu\n",
                          U(m->st.recovery_running),
                          U(m->st.recovery_uploaded), U(m->st.recovery_kept));
#undef U
  if (n < cap)
    n += fsx_rdma_stats(m, buf + n, cap - n);
  *len = n < cap ? n : cap - 1;
  return buf;
}
