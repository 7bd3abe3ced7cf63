/*
 * fsx_ops: the FUSE low-level operations, on libfuse's multi-threaded loop.
 * Each op pins the inodes it uses (fsx_inode_get/put); slow work (S3
 * requests) runs on the S3 engine and the op thread waits for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/slog.h"
#include "fs/fsx_ops_i.h"
#include "fs/fsx_read.h"
#include "fs/fsx_space.h"
#include "fs/fsx_wb.h"

struct fsx_dirh {
  struct fsx_dirsnap *snap;
  uint64_t ino, parent;
};

#define M fsx_req_mount
#define secs fsx_secs

static void stats_attr(struct fsx_attr *a)
{
  memset(a, 0, sizeof(*a));
  a->kind = FSX_SPECIAL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
  struct fsx_mount *m = userdata;

  conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) /* O_TRUNC reaches open */
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  if (conn->capable & FUSE_CAP_READDIRPLUS)
    conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO; /* always plus: attrs are free */
  conn->max_read = (unsigned)m->o.max_read;
  conn->max_write = (unsigned)m->o.max_read;
  /* the kernel reads ahead up to this much (and the bdi's read_ahead_kb,
     which fsx_main raises to match): several max_read requests at once */
  conn->max_readahead = 4 * (unsigned)m->o.max_read;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
}

void fsx_attr_of(struct fsx_mount *m, struct fsx_inode *in,
                 struct fsx_attr *a)
{
  struct fsx_wb *wb;

  fsx_table_lock(m->tab);
  *a = in->attr;
  fsx_table_unlock(m->tab);
  wb = fsx_wb_get(m, in);
  if (wb) {
    fsx_wb_attr(wb, a);
    fsx_wb_put(m, wb);
  }
}

void fsx_entry_of(struct fsx_mount *m, struct fsx_inode *in,
                  struct fuse_entry_param *e)
{
  struct fsx_attr a;

  fsx_attr_of(m, in, &a);
  memset(e, 0, sizeof(*e));
  e->ino = in->ino;
  e->attr_timeout = secs(m->o.attr_ttl_ms);
  e->entry_timeout = secs(m->o.attr_ttl_ms);
  fsx_ns_stat(m, in->ino, &a, &e->attr);
}

struct fsx_inode *fsx_child_of(struct fsx_mount *m, struct fsx_inode *dir,
                               const char *name, const struct fsx_attr *a)
{
  /* in all-buckets mode the root's children are buckets */
  return fsx_inode_child(m->tab, dir, name, a, dir->bucket ? NULL : name,
                         m->o.attr_ttl_ms, true);
}

/* Has the directory name in dir been asked for its marker's metadata? */
static bool dir_meta_known(struct fsx_mount *m, struct fsx_inode *dir,
                           const char *name)
{
  struct fsx_inode *in = fsx_inode_find(m->tab, dir->ino, name);
  bool known = false;

  if (in) {
    fsx_table_lock(m->tab);
    known = in->meta_known && in->attr.kind == FSX_DIR;
    fsx_table_unlock(m->tab);
    fsx_inode_put(m->tab, in);
  }
  return known;
}

/* A listed directory's attributes from its marker. */
static int dir_meta(struct fsx_mount *m, struct fsx_inode *dir,
                    const char *name, struct fsx_attr *a)
{
  const char *dk = fsx_inode_key(m->tab, dir);
  size_t l = strlen(dk) + strlen(name) + 2;
  char *key = malloc(l);
  int rc;

  if (!key)
    return -ENOMEM;
  snprintf(key, l, "%s%s/", dk, name);
  rc = fsx_ns_head_dir(m, dir->bucket, key, a);
  free(key);
  return rc;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct fsx_mount *m = M(req);
  struct fuse_entry_param e;
  struct fsx_inode *dir, *in;
  bool writing = false;
  struct fsx_attr a;
  int rc;

  atomic_fetch_add(&m->st.lookups, 1);
  if (parent == FSX_ROOT_INO && !strcmp(name, FSX_STATS_NAME)) {
    memset(&e, 0, sizeof(e));
    e.ino = FSX_STATS_INO;
    stats_attr(&a);
    fsx_ns_stat(m, FSX_STATS_INO, &a, &e.attr);
    fuse_reply_entry(req, &e);
    return;
  }
  dir = fsx_inode_get(m->tab, parent);
  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  /* a file being written is ours to describe, on the server or not */
  in = fsx_inode_find(m->tab, parent, name);
  if (in) {
    fsx_table_lock(m->tab);
    writing = in->wb != NULL;
    a = in->attr;
    fsx_table_unlock(m->tab);
    fsx_inode_put(m->tab, in);
  }
  rc = writing ? 0 : fsx_ns_lookup(m, dir, name, &a);
  if (!rc && !writing && a.kind == FSX_DIR && !a.from_head && dir->bucket &&
      !dir_meta_known(m, dir, name))
    rc = dir_meta(m, dir, name, &a);
  if (rc == -ENOENT) {
    memset(&e, 0, sizeof(e)); /* a negative entry the kernel caches */
    e.entry_timeout = secs(m->o.neg_ttl_ms);
    fuse_reply_entry(req, &e);
  } else if (rc) {
    fsx_reply_err(req, -rc);
  } else if (!(in = fsx_child_of(m, dir, name, &a))) {
    fsx_reply_err(req, ENOMEM);
  } else {
    fsx_entry_of(m, in, &e);
    if (fuse_reply_entry(req, &e))
      fsx_inode_forget(m->tab, in->ino, 1);
  }
  fsx_inode_put(m->tab, dir);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
  if (ino != FSX_STATS_INO)
    fsx_inode_forget(M(req)->tab, ino, nlookup);
  fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
  for (size_t i = 0; i < count; i++)
    if (forgets[i].ino != FSX_STATS_INO)
      fsx_inode_forget(M(req)->tab, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in;
  struct fsx_attr a;
  struct stat st;
  bool stale;
  int rc = 0;

  atomic_fetch_add(&m->st.getattrs, 1);
  if (ino == FSX_STATS_INO) {
    stats_attr(&a);
    fsx_ns_stat(m, ino, &a, &st);
    fuse_reply_attr(req, &st, 0);
    return;
  }
  in = fsx_inode_get(m->tab, ino);
  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  fsx_table_lock(m->tab);
  a = in->attr;
  stale = fsx_now_ms() >= in->attr_expire_ms && !in->wb;
  fsx_table_unlock(m->tab);
  fsx_attr_of(m, in, &a);
  if (stale && a.kind != FSX_DIR && in->bucket) {
    rc = fsx_ns_head(m, in, &a);
    if (!rc)
      fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  } else if (stale && a.kind == FSX_DIR && in->bucket) {
    rc = fsx_ns_head_dir(m, in->bucket, fsx_inode_key(m->tab, in), &a);
    if (!rc)
      fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  }
  if (rc) {
    fsx_reply_err(req, -rc);
  } else {
    fsx_ns_stat(m, ino, &a, &st);
    fuse_reply_attr(req, &st, secs(m->o.attr_ttl_ms));
  }
  fsx_inode_put(m->tab, in);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_dirh *dh = calloc(1, sizeof(*dh));
  struct fsx_inode *in = fsx_inode_get(m->tab, ino);
  struct fsx_dirsnap *s;
  int rc = 0;

  if (!in || !dh) {
    rc = in ? ENOMEM : ENOENT;
    goto out;
  }
  s = fsx_dir_get_snap(m->tab, in, true);
  if (!s) {
    rc = -fsx_ns_load_dir(m, in, &s);
    if (rc)
      goto out;
    fsx_dir_set_snap(m->tab, in, s, m->o.dir_ttl_ms);
    fsx_dirsnap_put(m->tab, s);
    /* files created here and not uploaded yet are listed too */
    fsx_wb_list_pending(m, in);
    s = fsx_dir_get_snap(m->tab, in, false);
    if (!s) {
      rc = ENOMEM;
      goto out;
    }
  }
  dh->snap = s;
  dh->ino = ino;
  fsx_table_lock(m->tab);
  dh->parent = in->parent;
  fsx_table_unlock(m->tab);
  fi->fh = (uintptr_t)dh;
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi)) {
    fsx_dirsnap_put(m->tab, s);
    free(dh);
  }
  fsx_inode_put(m->tab, in);
  return;
out:
  free(dh);
  fsx_inode_put(m->tab, in);
  fsx_reply_err(req, rc);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi, bool plus)
{
  struct fsx_mount *m = M(req);
  struct fsx_dirh *dh = (struct fsx_dirh *)(uintptr_t)fi->fh;
  struct fsx_inode *dir = fsx_inode_get(m->tab, ino);
  char *buf = malloc(size);
  size_t used = 0;
  off_t i;

  atomic_fetch_add(&m->st.readdirs, 1);
  if (!buf || !dir) {
    fsx_reply_err(req, buf ? ENOENT : ENOMEM);
    goto out;
  }
  for (i = off; (size_t)i < dh->snap->n + 2; i++) {
    struct fuse_entry_param e;
    struct fsx_inode *in = NULL;
    const char *name;
    size_t need;
    memset(&e, 0, sizeof(e));
    if (i < 2) {
      name = i == 0 ? "." : "..";
      e.attr.st_ino = i == 0 ? dh->ino : dh->parent;
      e.attr.st_mode = S_IFDIR;
    } else {
      const struct fsx_dirent *d = &dh->snap->ents[i - 2];
      name = d->name;
      fsx_ns_stat(m, 0, &d->attr, &e.attr);
    }
    need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)
                : fuse_add_direntry(req, NULL, 0, name, NULL, 0);
    if (used + need > size)
      break;
    if (i >= 2) {
      in = fsx_child_of(m, dir, name, &dh->snap->ents[i - 2].attr);
      if (!in) {
        if (!used) { /* an empty reply would read as the end */
          fsx_reply_err(req, ENOMEM);
          goto out;
        }
        break;
      }
      fsx_entry_of(m, in, &e);
      if (!plus) {
        e.attr.st_ino = in->ino;
        fsx_inode_forget(m->tab, in->ino, 1); /* no lookup for plain */
      }
    }
    if (plus)
      used += fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
                                     i + 1);
    else
      used += fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
                                i + 1);
  }
  fuse_reply_buf(req, buf, used);
out:
  fsx_inode_put(m->tab, dir);
  free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
  do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                           off_t off, struct fuse_file_info *fi)
{
  do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
  struct fsx_dirh *dh = (struct fsx_dirh *)(uintptr_t)fi->fh;

  fsx_dirsnap_put(M(req)->tab, dh->snap);
  free(dh);
  fsx_reply_err(req, 0);
}

static void open_stats(fuse_req_t req, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_attr a;
  struct fsx_fh *fh;

  stats_attr(&a);
  fh = fsx_fh_create(m, NULL, &a);
  if (fh)
    fh->special = fsx_stats_text(m, &fh->special_len);
  if (!fh || !fh->special) {
    fsx_fh_destroy(m, fh);
    fsx_reply_err(req, ENOMEM);
    return;
  }
  fi->fh = (uintptr_t)fh;
  fi->direct_io = 1;
  fuse_reply_open(req, fi);
}

/* Open a file this mount is writing: its state is the newest there is. */
static void open_written(fuse_req_t req, struct fsx_inode *in,
                         struct fsx_wb *wb, struct fuse_file_info *fi,
                         bool writing)
{
  struct fsx_mount *m = M(req);
  struct fsx_wb *mine = wb;
  struct fsx_fh *fh;
  struct fsx_attr a;
  int rc = 0;

  fsx_attr_of(m, in, &a);
  if (writing) {
    rc = fsx_open_for_write(m, in, &a, fi->flags, &mine);
    fsx_wb_put(m, wb);
  }
  fh = rc ? NULL : fsx_fh_create(m, in, &a);
  if (!fh) {
    if (!rc)
      fsx_wb_put(m, mine);
    fsx_reply_err(req, rc ? -rc : ENOMEM);
    return;
  }
  fh->wb = mine;
  fh->writer = writing;
  fh->append = (fi->flags & O_APPEND) != 0;
  fi->fh = (uintptr_t)fh;
  fi->keep_cache = 1; /* the kernel's pages are what was written here */
  if (fuse_reply_open(req, fi))
    fsx_fh_destroy(m, fh);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in;
  struct fsx_wb *wb = NULL;
  struct fsx_fh *fh;
  struct fsx_attr a;
  bool changed, stale, reopened;
  bool writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
  int rc;

  atomic_fetch_add(&m->st.opens, 1);
  if (writing && m->o.ro) {
    fsx_reply_err(req, EROFS);
    return;
  }
  if (ino == FSX_STATS_INO) {
    if (writing)
      fsx_reply_err(req, EACCES);
    else
      open_stats(req, fi);
    return;
  }
  in = fsx_inode_get(m->tab, ino);
  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  wb = fsx_wb_get(m, in);
  if (wb) {
    open_written(req, in, wb, fi, writing);
    fsx_inode_put(m->tab, in);
    return;
  }
  /* close-to-open: ask the server what the object is now */
  rc = fsx_ns_head(m, in, &a);
  if (rc) {
    fsx_reply_err(req, -rc);
    fsx_inode_put(m->tab, in);
    return;
  }
  /* compared with what the kernel's cache holds, not with the latest
     attributes (a lookup or getattr may have seen the new ETag first) */
  fsx_table_lock(m->tab);
  changed = strcmp(in->kernel_etag, a.etag) != 0;
  reopened = in->kernel_etag[0] != '\0';
  snprintf(in->kernel_etag, sizeof(in->kernel_etag), "%s", a.etag);
  stale = in->gen != fsx_etag_gen(a.etag);
  fsx_table_unlock(m->tab);
  fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  if (stale) /* chunks are keyed by ETag: this only frees the old ones */
    fsx_cache_invalidate(m->cache, in->ino);
  /* the kernel still holds the old object's attributes (its size, from a
     lookup up to attr_ttl ago): drop them, so the reads that follow ask
     getattr again (offset -1: attributes only, no page locks, safe here) */
  if (changed && reopened && m->se)
    fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
  /* after the fresh attributes are in (the state's own win from now on) */
  if (writing && (rc = fsx_open_for_write(m, in, &a, fi->flags, &wb))) {
    fsx_reply_err(req, -rc);
    fsx_inode_put(m->tab, in);
    return;
  }
  if (wb)
    fsx_wb_attr(wb, &a); /* O_TRUNC: empty now */
  fh = fsx_fh_create(m, in, &a);
  fsx_inode_put(m->tab, in);
  if (!fh) {
    fsx_wb_put(m, wb);
    fsx_reply_err(req, ENOMEM);
    return;
  }
  fh->wb = wb;
  fh->writer = wb != NULL;
  fh->append = (fi->flags & O_APPEND) != 0;
  fi->fh = (uintptr_t)fh;
  fi->keep_cache = m->o.kernel_cache && !changed;
  if (fuse_reply_open(req, fi))
    fsx_fh_destroy(m, fh);
}

static void read_written(fuse_req_t req, struct fsx_wb *wb, size_t size,
                         off_t off)
{
  struct fsx_mount *m = M(req);
  char *buf = malloc(size ? size : 1);
  ssize_t n;

  if (!buf) {
    fsx_reply_err(req, ENOMEM);
    return;
  }
  n = fsx_wb_read(m, wb, (uint64_t)off, buf, size);
  if (n < 0) {
    atomic_fetch_add(&m->st.errors, 1);
    fsx_reply_err(req, (int)-n);
  } else {
    atomic_fetch_add(&m->st.read_bytes, (uint64_t)n);
    fuse_reply_buf(req, buf, (size_t)n);
  }
  free(buf);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
  struct fsx_wb *wb;
  struct fsx_mount *m = M(req);
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;
  struct fsx_read_ctx *ctx = NULL;
  struct iovec *iov;
  int niov, rc;

  atomic_fetch_add(&m->st.reads, 1);
  if (fh->wb) {
    read_written(req, fh->wb, size, off);
    return;
  }
  if (fh->in && (wb = fsx_wb_get(m, fh->in))) {
    /* written (or unlinked) since this handle was opened: the staged
       data is the file now */
    read_written(req, wb, size, off);
    fsx_wb_put(m, wb);
    return;
  }
  fh = fsx_fh_latest(m, fh); /* held: the reply below uses it */
  rc = fsx_read(m, fh, (uint64_t)off, size, &iov, &niov, &ctx);
  if (rc) {
    atomic_fetch_add(&m->st.errors, 1);
    fsx_reply_err(req, -rc);
  } else if (niov == 0) {
    fuse_reply_buf(req, NULL, 0);
  } else {
    for (int i = 0; i < niov; i++)
      atomic_fetch_add(&m->st.read_bytes, iov[i].iov_len);
    fuse_reply_iov(req, iov, niov);
  }
  fsx_read_done(m, ctx);
  fsx_fh_destroy(m, fh);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;

  /* written after the last flush (a shared mapping's pages): upload now;
     if that fails the file stays dirty and is retried in the background
     (as is one whose flush failed: that was reported to close()) */
  if (fh->writer && fsx_wb_unflushed(fh->wb))
    fsx_wb_commit(M(req), fh->wb);
  fsx_fh_destroy(M(req), fh);
  fsx_reply_err(req, 0);
}

/*
 * S3 has no capacity to report; what runs out first is the staging space
 * in cache.dir (write.staging_max): its limit is the size, what is left of
 * it is free, so df tells how much more can be written before ENOSPC. A
 * read-only mount shows a large, constant, mostly free disk.
 */
static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
  struct fsx_mount *m = M(req);
  struct fsx_space_info si;
  struct statvfs sv;

  memset(&sv, 0, sizeof(sv));
  if (m->space) {
    fsx_space_info(m->space, &si);
    sv.f_bsize = sv.f_frsize = 4096;
    sv.f_blocks = si.cap / 4096;
    sv.f_bfree = sv.f_bavail = si.room / 4096;
  } else {
    sv.f_bsize = sv.f_frsize = 1 << 20;
    sv.f_blocks = 1ull << 30; /* 1 PiB */
    sv.f_bfree = sv.f_bavail = sv.f_blocks;
  }
  sv.f_files = 1ull << 32;
  sv.f_ffree = sv.f_files - fsx_table_count(m->tab);
  sv.f_favail = sv.f_ffree;
  sv.f_namemax = 255;
  fuse_reply_statfs(req, &sv);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in = fsx_inode_get(m->tab, ino);
  char buf[4097];
  size_t got = 0;
  int rc;

  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  rc = s3_get_object(m->s3, in->bucket, fsx_inode_key(m->tab, in), 0,
                     sizeof(buf) - 1, buf, &got);
  fsx_inode_put(m->tab, in);
  if (rc) {
    fsx_reply_err(req, -rc);
    return;
  }
  buf[got] = '\0';
  fuse_reply_readlink(req, buf);
}

const struct fuse_lowlevel_ops fsx_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .statfs = op_statfs,
    .readlink = op_readlink,
    .create = fsx_op_create,
    .write = fsx_op_write,
    .flush = fsx_op_flush,
    .fsync = fsx_op_fsync,
    .setattr = fsx_op_setattr,
    .unlink = fsx_op_unlink,
    .rmdir = fsx_op_rmdir,
    .mkdir = fsx_op_mkdir,
    .symlink = fsx_op_symlink,
    .rename = fsx_op_rename,
};
