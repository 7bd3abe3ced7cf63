/* fake_mount: see fake_mount.h. */
#include "fake_mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/mem/fsx_bufs.h"
#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_pool.h"
#include "fs/meta/fsx_inode.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/mount/fsx_setup.h"
#include "fs/read/fsx_read.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_space.h"
#include "fs/write/fsx_wb.h"

/* The part buffers of streamed files (write.stream), as the daemon makes
   them: slots of write.part_size rounded up to whole blocks. */
static int pool_up(struct fake_mount *fm, char *err, size_t errlen)
{
  const struct cfg *c = &fm->c;
  size_t slot = (size_t)((c->write.part_size + FSX_WB_BLOCK - 1) /
                         FSX_WB_BLOCK * FSX_WB_BLOCK);

  if (!c->write.stream)
    return 0;
  return fsx_pool_open(fsx_stage_dir(fm->m.stage), "", c->write.max_memory,
                       slot, &fm->m.pool, err, errlen);
}

int fake_mount_up(struct fake_mount *fm, void (*tune)(struct cfg *c))
{
  struct fsx_mount *m = &fm->m;
  struct s3_client_config sc;
  char err[512];
  size_t arena;

  memset(fm, 0, sizeof(*fm));
  pthread_mutex_init(&m->recover_lock, NULL);
  pthread_cond_init(&m->recover_cond, NULL);
  fsx_renlock_init(&m->rename_lock);
  snprintf(fm->dir, sizeof(fm->dir), "/tmp/s3r-fake.XXXXXX");
  if (!mkdtemp(fm->dir) || !(fm->s3 = fake_s3_start(FAKE_BUCKET)))
    goto fail;
  cfg_init_defaults(&fm->c);
  cfg_set(&fm->c, "endpoint", fake_s3_endpoint(fm->s3), err, sizeof(err));
  cfg_set(&fm->c, "cache.dir", fm->dir, err, sizeof(err));
  cfg_set(&fm->c, "cache.size", "64M", err, sizeof(err));
  cfg_set(&fm->c, "read.readahead_max", "8M", err, sizeof(err));
  cfg_set(&fm->c, "cache.mlock", "false", err, sizeof(err));
  cfg_set(&fm->c, "write.max_memory", "64M", err, sizeof(err));
  cfg_set(&fm->c, "credentials.access_key", "fake", err, sizeof(err));
  cfg_set(&fm->c, "credentials.secret_key", "fake", err, sizeof(err));
  cfg_set(&fm->c, "s3.retry.base_ms", "1", err, sizeof(err));
  cfg_set(&fm->c, "s3.retry.max_backoff_ms", "5", err, sizeof(err));
  if (tune)
    tune(&fm->c);
  if (cfg_validate(&fm->c, err, sizeof(err))) {
    fprintf(stderr, "fake_mount: %s\n", err);
    goto fail;
  }
  fsx_setup_opts(&fm->c, &m->o);
  fsx_setup_s3(&fm->c, &sc);
  m->bucket = strdup(FAKE_BUCKET);
  m->prefix = strdup("");
  if (!(m->tab = fsx_table_create(m->bucket, m->prefix)) ||
      !(m->cache = fsx_cache_create(fm->c.cache.size,
                                    (size_t)fm->c.cache.chunk_size, false, err,
                                    sizeof(err))))
    goto fail;
  fsx_cache_arena(m->cache, &arena);
  if (!(m->bufs = fsx_bufs_create(arena / 8)) || fsx_read_start(m) ||
      fsx_stage_open(fm->dir, fm->c.endpoint, &m->stage, err, sizeof(err)) ||
      fsx_space_create(fm->dir, 0, 1000, &m->space, err, sizeof(err)) ||
      pool_up(fm, err, sizeof(err)) ||
      !(m->s3 = s3_client_create(&sc, err, sizeof(err))) || fsx_wb_start(m)) {
    fprintf(stderr, "fake_mount: %s\n", err);
    goto fail;
  }
  return 0;

fail:
  fake_mount_down(fm);
  return -1;
}

void fake_mount_down(struct fake_mount *fm)
{
  struct fsx_mount *m = &fm->m;
  char cmd[128];

  fsx_wb_stop(m); /* (last commits: the client still up) */
  s3_client_destroy(m->s3);
  fsx_bufs_destroy(m->bufs);
  fsx_read_stop(m);
  fsx_cache_destroy(m->cache);
  fsx_pool_close(m->pool); /* every run given back */
  fsx_table_destroy(m->tab);
  fsx_space_destroy(m->space);
  fsx_stage_close(m->stage);
  free(m->bucket);
  free(m->prefix);
  fake_s3_stop(fm->s3);
  cfg_cleanup(&fm->c);
  if (fm->dir[0]) {
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fm->dir);
    if (system(cmd)) {
    }
  }
  memset(fm, 0, sizeof(*fm));
}

struct fsx_inode *fake_mount_file(struct fake_mount *fm, const char *name)
{
  struct fsx_mount *m = &fm->m;
  struct fsx_inode *root = fsx_inode_get(m->tab, FSX_ROOT_INO), *in = NULL;
  struct fsx_attr a;

  if (root && !fsx_ns_head_child(m, root, name, &a))
    in = fsx_inode_child(m->tab, root, name, &a, NULL, m->o.attr_ttl_ms,
                         false);
  fsx_inode_put(m->tab, root);
  return in;
}

void fake_fill(void *p, size_t n, uint64_t off, uint64_t seed)
{
  unsigned char *c = p;

  for (size_t i = 0; i < n; i++) {
    uint64_t at = off + i, w = (at / 8) ^ seed;
    c[i] = (unsigned char)(w >> (8 * (at % 8)));
  }
}

/* A write's source: memory, taken once and in order. */
struct mem_src {
  struct fsx_wsrc s;
  const char *p;
};

static int to_mem(struct fsx_wsrc *s, void *dst, size_t len)
{
  memcpy(dst, ((struct mem_src *)s)->p, len);
  ((struct mem_src *)s)->p += len;
  return 0;
}

static int to_fd(struct fsx_wsrc *s, int fd, uint64_t off, size_t len)
{
  const char *p = ((struct mem_src *)s)->p;

  while (len) {
    ssize_t n = pwrite(fd, p, len, (off_t)off);
    if (n <= 0)
      return -EIO;
    p += n;
    off += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

ssize_t fake_mount_write(struct fake_mount *fm, struct fsx_wb *wb,
                         uint64_t off, const void *p, size_t len)
{
  struct mem_src src = {{to_mem, to_fd}, p};

  return fsx_wb_write(&fm->m, wb, off, &src.s, len, false);
}
