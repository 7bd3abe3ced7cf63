/*
 * fsx_read_fh: the open file's handle (fsx_read.h): its life (references:
 * the open file's and each fetch's), what it was opened as, its
 * successors once the object changed under it; and the read path's
 * mount-wide state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "fs/mem/fsx_cache.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/read/fsx_read.h"
#include "fs/read/fsx_read_i.h"
#include "fs/write/fsx_wb.h"

/* fh lifetime: the open file and each fetch hold a reference. */
struct fh_box {
  struct fsx_fh fh;
  _Atomic unsigned refs;
  _Atomic bool closed;        /* its open given back to the inode */
};

/* fh's open given back to its inode, once: at release, or with its last
   reference (a successor, a handle never released) */
static void fh_close(struct fsx_mount *m, struct fsx_fh *fh)
{
  if (fh->in && !atomic_exchange(&((struct fh_box *)fh)->closed, true))
    fsx_wb_put(m, fsx_inode_close(m->tab, fh->in));
}

static void fh_unref(struct fsx_mount *m, struct fsx_fh *fh)
{
  struct fh_box *b = (struct fh_box *)fh;

  if (atomic_fetch_sub(&b->refs, 1) != 1)
    return;
  fh_close(m, fh);
  fsx_wb_put(m, fh->wb);
  if (fh->succ)
    fh_unref(m, fh->succ);
  fsx_inode_put(m->tab, fh->in);
  pthread_cond_destroy(&fh->landed);
  pthread_mutex_destroy(&fh->lock);
  fsx_density_free(&fh->dense);
  free(fh->special);
  free(b);
}

struct fsx_fh *fsx_fh_create(struct fsx_mount *m, struct fsx_inode *in,
                             const struct fsx_attr *a)
{
  struct fh_box *b = calloc(1, sizeof(*b));
  struct fsx_fh *fh;

  if (!b)
    return NULL;
  fh = &b->fh;
  if (pthread_mutex_init(&fh->lock, NULL)) {
    free(b);
    return NULL;
  }
  if (pthread_cond_init(&fh->landed, NULL)) {
    pthread_mutex_destroy(&fh->lock);
    free(b);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  fh->in = in;
  if (in) {
    fsx_inode_open(m->tab, in);
    fh->file = fsx_inode_ino(in);
  }
  fh->gen = fsx_etag_gen(a->etag);
  fh->size = a->size;
  fsx_density_init(&fh->dense, fh->size, m->o.dense_block,
                   m->cache ? fsx_cache_chunk_size(m->cache) : 0);
  if (a->etag[0])
    snprintf(fh->etag, sizeof(fh->etag), "\"%s\"", a->etag);
  return fh;
}

struct fsx_fh *fsx_fh_create_text(struct fsx_mount *m,
                                  const struct fsx_attr *a, char *text,
                                  size_t len)
{
  struct fsx_fh *fh = text ? fsx_fh_create(m, NULL, a) : NULL;

  if (!fh) {
    free(text);
    return NULL;
  }
  fh->special = text;
  fh->special_len = len;
  fh->readable = true;
  return fh;
}

void fsx_fh_set_open(struct fsx_fh *fh, struct fsx_wb *wb, unsigned how)
{
  fh->wb = wb;
  fh->writer = (how & FSX_FH_WRITER) != 0;
  fh->append = (how & FSX_FH_APPEND) != 0;
  fh->readable = (how & FSX_FH_READABLE) != 0;
}

unsigned fsx_fh_how(int flags, bool writing)
{
  return (writing ? FSX_FH_WRITER : 0) |
         ((flags & O_APPEND) ? FSX_FH_APPEND : 0) |
         ((flags & O_ACCMODE) != O_WRONLY ? FSX_FH_READABLE : 0);
}

bool fsx_fh_is(const struct fsx_fh *fh, unsigned how)
{
  return (!(how & FSX_FH_WRITER) || fh->writer) &&
         (!(how & FSX_FH_APPEND) || fh->append) &&
         (!(how & FSX_FH_READABLE) || fh->readable);
}

struct fsx_inode *fsx_fh_inode(const struct fsx_fh *fh)
{
  return fh->in;
}

uint64_t fsx_fh_size(const struct fsx_fh *fh)
{
  return fh->size;
}

struct fsx_wb *fsx_fh_wb(const struct fsx_fh *fh)
{
  return fh->wb;
}

bool fsx_fh_is_text(const struct fsx_fh *fh)
{
  return fh->special != NULL;
}

void fsx_fh_set_unverified(struct fsx_fh *fh, bool unverified)
{
  atomic_store(&fh->unverified, unverified);
}

bool fsx_fh_unverified(const struct fsx_fh *fh)
{
  return atomic_load(&fh->unverified);
}

struct s3_req *fsx_fh_get(struct fsx_mount *m, struct fsx_fh *fh,
                          uint64_t off, size_t len, void *buf)
{
  struct s3_req *r = s3_get_object_req(m->s3, fsx_inode_bucket(fh->in),
                                       fsx_inode_key(m->tab, fh->in), off,
                                       len, buf);

  if (r && fh->etag[0] && s3_req_add_header(r, "if-match", fh->etag)) {
    s3_req_destroy(r);
    r = NULL;
  }
  return r;
}

void fsx_fh_release(struct fsx_mount *m, struct fsx_fh *fh)
{
  struct fsx_fh *f = fh, *next;

  /* (no op on the file is left, so no successor is added meanwhile) */
  for (; f; f = next) {
    fh_close(m, f);
    pthread_mutex_lock(&fh->lock);
    next = f->succ;
    pthread_mutex_unlock(&fh->lock);
  }
  fh_unref(m, fh);
}

void fsx_fh_destroy(struct fsx_mount *m, struct fsx_fh *fh)
{
  if (fh)
    fh_unref(m, fh);
}

void fsx_fh_hold(struct fsx_fh *fh)
{
  atomic_fetch_add(&((struct fh_box *)fh)->refs, 1);
}

struct fsx_fh *fsx_fh_latest(struct fsx_mount *m, struct fsx_fh *fh)
{
  struct fsx_fh *cur = fh, *next;
  struct fsx_inode_view v;
  struct fsx_attr a;

  if (!fh->in)
    goto out;
  fsx_inode_view(m->tab, fh->in, &v);
  a = v.attr;
  if (a.kind != FSX_FILE || !a.etag[0])
    goto out;
  pthread_mutex_lock(&fh->lock);
  while (cur->succ) /* successors are only ever added at the end */
    cur = cur->succ;
  if (cur->gen != fsx_etag_gen(a.etag) && (next = fsx_fh_create(m, fh->in, &a)))
    cur = cur->succ = next;
  pthread_mutex_unlock(&fh->lock);
out:
  fsx_fh_hold(cur);
  return cur;
}

/*
 * A handle opened without asking found its object changed (412): ask now
 * (what the open skipped), so that fsx_fh_latest moves it to the new
 * object; the kernel's pages, none of which this handle gave it, are left
 * unsure. The kernel's size of the file (the listing's) is dropped when
 * the object grew, so that reads past it ask getattr; one that shrank is
 * corrected by the short read itself (which a dropped size would stop:
 * the kernel then keeps its old size and reads zeros up to it).
 */
int fsx_fh_reverify(struct fsx_mount *m, struct fsx_fh *fh)
{
  struct fsx_inode *in = fh->in;
  struct fsx_attr a;
  int rc = fsx_ns_head(m, in, &a);

  if (rc)
    return rc;
  if (fsx_etag_gen(a.etag) == fh->gen)
    return 0; /* the object it was opened on */
  if (a.kind != FSX_FILE)
    return -EIO;
  atomic_fetch_add(&m->st.opens_reverified, 1);
  fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  fsx_inode_kernel_doubt(m->tab, in);
  fsx_cache_invalidate(m->cache, fsx_inode_ino(in));
  if (m->se && a.size > fh->size) /* attributes only (offset -1): no page
                                    locks, safe within a read */
    fuse_lowlevel_notify_inval_inode(m->se, fsx_inode_ino(in), -1, 0);
  return 1;
}

int fsx_read_start(struct fsx_mount *m)
{
  m->reads = calloc(1, sizeof(*m->reads));
  return m->reads ? 0 : -ENOMEM;
}

void fsx_read_stop(struct fsx_mount *m)
{
  free(m->reads);
  m->reads = NULL;
}
