/*
 * fsx_memwatch: the thread that makes the mount's memory follow its use.
 * Once a second it gives back the page cache's segments and the write
 * buffers' slots idle for cache.idle_release, and, when the system reports
 * memory pressure (fsx_memory_pressure at or above FSX_MEMWATCH_SOME
 * percent), half of the cache's backed segments that may go (at most once
 * every FSX_MEMWATCH_COOL_S seconds: avg10 stays high for a while after).
 * Reads go on throughout and back segments again as they need them.
 */
#ifndef S3R_FSX_MEMWATCH_H
#define S3R_FSX_MEMWATCH_H

#include <stddef.h>
#include <stdint.h>

struct fsx_cache;
struct fsx_pool;
struct fsx_memwatch;

#define FSX_MEMWATCH_SOME 10.0 /* "some avg10" percent that is pressure */
#define FSX_MEMWATCH_COOL_S 10

struct fsx_memwatch_cfg {
  struct fsx_cache *cache;
  struct fsx_pool *pool;      /* NULL: none */
  uint64_t idle_ms;           /* 0: nothing given back for age */
  uint64_t target;            /* for the stats: the memory target */
  const char *root;           /* where /proc and /sys are: "/" */
};

/* 0 and *out, or -errno. */
int fsx_memwatch_start(const struct fsx_memwatch_cfg *cfg,
                       struct fsx_memwatch **out);
/* Stop the thread and free w (NULL: nothing). */
void fsx_memwatch_stop(struct fsx_memwatch *w);

/* Stats rows (mem.*), appended to buf: the bytes written. Reads the
   process's VmRSS and VmLck. */
size_t fsx_memwatch_stats(struct fsx_memwatch *w, char *buf, size_t len);

#endif
