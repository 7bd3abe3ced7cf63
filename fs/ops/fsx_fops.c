/*
 * fsx_fops: open, read and release of files. A file open for reading reads
 * through the page cache (fsx_read); one with write-back state reads its
 * staging file (fsx_wb); the stats file is a snapshot taken at open. Runs
 * on FUSE worker threads.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache.h"
#include "fs/direct/fsx_direct.h"
#include "fs/ops/fsx_fops.h"
#include "fs/ops/fsx_node.h"
#include "fs/read/fsx_read.h"
#include "fs/mount/fsx_stats.h"

#define M fsx_req_mount

static void open_stats(fuse_req_t req, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_attr a;
  struct fsx_fh *fh;
  size_t len = 0;
  char *text;

  fsx_stats_attr(&a);
  text = fsx_stats_text(m, &len);
  fh = fsx_fh_create_text(m, &a, text, len);
  if (!fh) {
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
    if (!rc)
      fsx_inode_kernel_writer(m->tab, in);
  }
  fh = rc ? NULL : fsx_fh_create(m, in, &a);
  if (!fh) {
    if (!rc)
      fsx_wb_put(m, mine);
    fsx_reply_err(req, rc ? -rc : ENOMEM);
    return;
  }
  fsx_fh_set_open(fh, mine, fsx_fh_how(fi->flags, writing));
  fi->fh = (uintptr_t)fh;
  fi->keep_cache = 1; /* the kernel's pages are what was written here */
  if (fuse_reply_open(req, fi))
    fsx_fh_destroy(m, fh);
}

/* Attempts at an open whose HEAD keeps being overtaken by our own uploads. */
#define OPEN_TRIES 4

/* How long the bytes a cold lookup's GET brought serve the open that
   follows it (the same open(2), in practice): a later one reads with a
   GET that checks them (If-Match), as any first open does. */
#define PEEK_FRESH_MS 100

/*
 * An open for reading on attributes known without asking (a listing or a
 * lookup within cache.attr_ttl, fsx_inode_open_known): no HEAD, the first
 * GET's If-Match checks them (fsx_op_read); the whole file a cold lookup
 * GOT just now (PEEK_FRESH_MS) is read with no request. True when
 * answered.
 */
static bool open_known(fuse_req_t req, struct fsx_inode *in,
                       struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_kernel_seen seen = {0};
  struct fsx_attr a;
  struct fsx_fh *fh;
  bool drop = false;
  uint64_t peek;

  if (!fsx_inode_open_known(m->tab, in, m->o.attr_ttl_ms, &a) ||
      fsx_inode_kernel_open(m->tab, in, a.etag, fsx_inode_commits(m->tab, in),
                            m->o.kernel_cache, &seen, &drop))
    return false;
  peek = fsx_inode_take_peek(m->tab, in);
  if (peek && clock_mono_ms() - peek > PEEK_FRESH_MS)
    fsx_cache_invalidate(m->cache, fsx_inode_ino(in)); /* not fresh: asked */
  fh = fsx_fh_create(m, in, &a);
  if (!fh) {
    fsx_reply_err(req, ENOMEM);
    return true;
  }
  fsx_fh_set_unverified(fh, true);
  atomic_fetch_add(&m->st.opens_known, 1);
  fsx_fh_set_open(fh, NULL, FSX_FH_READABLE);
  fi->fh = (uintptr_t)fh;
  /* another open came in between (the kernel may hold pages of what it
     found): drop them, the GET checks */
  fi->keep_cache = !drop && !seen.reopened;
  if (fuse_reply_open(req, fi))
    fsx_fh_destroy(m, fh);
  return true;
}

void fsx_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in;
  struct fsx_wb *wb = NULL;
  struct fsx_fh *fh;
  struct fsx_attr a;
  struct fsx_kernel_seen seen = {0};
  bool writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
  bool drop = false;
  int rc = -EAGAIN;

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
  if (!writing && open_known(req, in, fi)) {
    fsx_inode_put(m->tab, in);
    return;
  }
  for (int tries = 0; rc == -EAGAIN && tries < OPEN_TRIES; tries++) {
    uint64_t commits = fsx_inode_commits(m->tab, in);

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
    rc = fsx_inode_kernel_open(m->tab, in, a.etag, commits, m->o.kernel_cache,
                               &seen, &drop);
  }
  if (rc) /* our uploads keep overtaking the HEAD: what we stored is newer */
    fsx_attr_of(m, in, &a);
  else
    fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  if (seen.stale) /* chunks are keyed by ETag: this only frees the old ones */
    fsx_cache_invalidate(m->cache, fsx_inode_ino(in));
  /* the kernel still holds the old object's attributes (its size, from a
     lookup up to attr_ttl ago): drop them, so the reads that follow ask
     getattr again (offset -1: attributes only, no page locks, safe here) */
  if (seen.changed && seen.reopened && m->se)
    fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
  /* after the fresh attributes are in (the state's own win from now on) */
  if (writing && (rc = fsx_open_for_write(m, in, &a, fi->flags, &wb))) {
    fsx_reply_err(req, -rc);
    fsx_inode_put(m->tab, in);
    return;
  }
  if (wb) {
    fsx_wb_attr(wb, &a); /* O_TRUNC: empty now */
    fsx_inode_kernel_writer(m->tab, in);
  }
  fh = fsx_fh_create(m, in, &a);
  fsx_inode_put(m->tab, in);
  if (!fh) {
    fsx_wb_put(m, wb);
    fsx_reply_err(req, ENOMEM);
    return;
  }
  fsx_fh_set_open(fh, wb, fsx_fh_how(fi->flags, wb != NULL));
  fi->fh = (uintptr_t)fh;
  fi->keep_cache = !drop;
  if (drop) /* (why: the kernel's pages are dropped at this open) */
    log_debug("open of inode %llu drops the kernel's pages: %s%s%s",
              (unsigned long long)ino, seen.changed ? "another ETag " : "",
              seen.unsure ? "unsure " : "", m->o.kernel_cache ? "" : "no cache");
  if (fuse_reply_open(req, fi))
    fsx_fh_destroy(m, fh);
}

static size_t iov_bytes(const struct iovec *iov, int n)
{
  size_t b = 0;

  for (int i = 0; i < n; i++)
    b += iov[i].iov_len;
  return b;
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

void fsx_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info *fi)
{
  struct fsx_wb *wb;
  struct fsx_mount *m = M(req);
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh, *orig;
  struct fsx_read_ctx *ctx = NULL;
  struct iovec *iov = NULL;
  int niov = 0, rc, vrc;

  atomic_fetch_add(&m->st.reads, 1);
  if (fsx_fh_wb(fh)) {
    read_written(req, fsx_fh_wb(fh), size, off);
    return;
  }
  if (fsx_fh_inode(fh) && (wb = fsx_wb_get(m, fsx_fh_inode(fh)))) {
    /* written (or unlinked) since this handle was opened: the staged
       data is the file now */
    read_written(req, wb, size, off);
    fsx_wb_put(m, wb);
    return;
  }
  orig = fh;
  fh = fsx_fh_latest(m, orig); /* held: the reply below uses it */
  rc = fsx_read(m, fh, (uint64_t)off, size, &iov, &niov, &ctx);
  /* opened without asking: a changed object (412), or an end of file at
     the size a listing gave, is asked about now; the read goes on with
     the new object, as after an open that had asked (every read racing
     this one asks too: the flag goes once a read has the object) */
  if (fsx_fh_unverified(orig) &&
      (rc == -ESTALE || (!rc && !iov_bytes(iov, niov))) &&
      (vrc = fsx_fh_reverify(m, orig)) != 0) {
    fsx_read_done(m, ctx);
    ctx = NULL;
    fsx_fh_destroy(m, fh);
    fh = fsx_fh_latest(m, orig);
    rc = vrc < 0 ? vrc : fsx_read(m, fh, (uint64_t)off, size, &iov, &niov, &ctx);
  }
  if (rc == -ESTALE || rc == -ENOENT) /* changed (or gone) while read */
    rc = -EIO;
  if (!rc)
    fsx_fh_set_unverified(orig, false);
  if (rc) {
    atomic_fetch_add(&m->st.errors, 1);
    fsx_reply_err(req, -rc);
  } else if (niov == 0) {
    fuse_reply_buf(req, NULL, 0);
  } else {
    atomic_fetch_add(&m->st.read_bytes, iov_bytes(iov, niov));
    fuse_reply_iov(req, iov, niov);
  }
  fsx_read_done(m, ctx);
  fsx_fh_destroy(m, fh);
}

void fsx_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
                  struct fuse_file_info *fi, unsigned flags,
                  const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;
  _Alignas(8) unsigned char a[256];
  size_t size = _IOC_SIZE(cmd);
  bool out = (_IOC_DIR(cmd) & _IOC_READ) != 0;
  int rc;

  (void)ino;
  (void)arg;
  /* restricted ioctls only: the kernel moved exactly size bytes in */
  if ((flags & FUSE_IOCTL_DIR) || !fh || !fsx_fh_inode(fh) ||
      !fsx_direct_cmd(cmd) || size > sizeof(a)) {
    fsx_reply_err(req, ENOTTY);
    return;
  }
  if (in_bufsz != size || (out && out_bufsz != size)) {
    fsx_reply_err(req, EINVAL);
    return;
  }
  memcpy(a, in_buf, size);
  rc = fsx_direct_ioctl(M(req), fh, fuse_req_ctx(req)->pid,
                        fuse_req_ctx(req)->uid, cmd, a);
  if (rc)
    fsx_reply_err(req, -rc);
  else
    fuse_reply_ioctl(req, 0, out ? a : NULL, out ? size : 0);
}

void fsx_op_release(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req); /* (req is gone after the reply) */
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;
  struct fsx_inode *in = fsx_fh_inode(fh);
  bool writer = fsx_fh_is(fh, FSX_FH_WRITER);
  bool read = in && fsx_fh_is(fh, FSX_FH_READABLE) && !writer;
  /* other handles open on the file (this one stops counting at
     fsx_fh_release, though a fetch still in flight may hold it a while) */
  bool others = read && fsx_inode_opens(m->tab, in) > 1;

  fsx_direct_release(m, fh); /* its registered buffers */
  /* written after the last flush (a shared mapping's pages): upload now;
     if that fails the file stays dirty and is retried in the background
     (as is one whose flush failed: that was reported to close()) */
  if (writer && fsx_wb_unflushed(fsx_fh_wb(fh)))
    fsx_wb_commit(m, fsx_fh_wb(fh));
  if (in)
    atomic_fetch_add(&m->st.releases, 1);
  fsx_fh_release(m, fh);
  fsx_reply_err(req, 0);
  if (read) /* after the reply: the closing process does not wait */
    fsx_atime_closed(m, ino, others);
}
