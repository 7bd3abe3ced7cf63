/*
 * fsx_wops: the FUSE operations that change a file: create and write
 * (through fsx_wb), flush/fsync (the upload) and setattr (unlink, mkdir,
 * rmdir, symlink and rename: fsx_wns.c). Each runs on a FUSE worker thread
 * and waits for its S3 requests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/ops/fsx_dirtimes.h"
#include "fs/ops/fsx_node.h"
#include "fs/ops/fsx_wops.h"
#include "fs/read/fsx_read.h"
#include "fs/write/fsx_wb.h"

#define M fsx_req_mount

void fsx_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                   mode_t mode, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *dir = fsx_inode_get(m->tab, parent), *in = NULL;
  struct fuse_entry_param e;
  struct fsx_wb *wb = NULL;
  struct fsx_fh *fh = NULL;
  struct fsx_wmeta mt;
  struct fsx_attr a;
  int rc;

  atomic_fetch_add(&m->st.creates, 1);
  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  if ((rc = fsx_check_new_name(m, dir, name, FSX_FILE)))
    goto out;
  /* the kernel asks only after a negative lookup, which may be a cached
     listing's up to cache.dir_ttl old: unless the file is emptied anyway,
     ask the server whether something is there now */
  if (!(fi->flags & O_TRUNC) || (fi->flags & O_EXCL)) {
    rc = fsx_ns_head_child(m, dir, name, &a);
    if (!rc && (fi->flags & O_EXCL))
      rc = -EEXIST;
    if (rc && rc != -ENOENT)
      goto out;
    if (!rc) { /* it exists: open it as it is */
      in = fsx_child_of(m, dir, name, &a);
      rc = in ? fsx_open_for_write(m, in, &a, fi->flags, &wb) : -ENOMEM;
      goto made;
    }
  }
  fsx_new_meta(req, FSX_FILE, S_IFREG | (mode & 07777), false, &mt, &a);
  in = fsx_child_of(m, dir, name, &a);
  rc = in ? fsx_wb_open(m, in, NULL, true, &mt, &wb) : -ENOMEM;
  if (!rc)
    fsx_dir_changed(m, dir); /* a new name in it */
made:
  if (!rc && !(fh = fsx_fh_create(m, in, &a)))
    rc = -ENOMEM;
  if (rc) {
    fsx_wb_put(m, wb);
    if (in)
      fsx_inode_forget(m->tab, fsx_inode_ino(in), 1);
    goto out;
  }
  fsx_fh_set_open(fh, wb, fsx_fh_how(fi->flags, true));
  fi->fh = (uintptr_t)fh;
  fsx_inode_note_entry(m->tab, in); /* listed before its upload */
  fsx_entry_of(m, in, &e);
  if (fuse_reply_create(req, &e, fi)) {
    fsx_inode_forget(m->tab, fsx_inode_ino(in), 1);
    fsx_fh_destroy(m, fh);
  }
  fsx_inode_put(m->tab, dir);
  return;
out:
  fsx_inode_put(m->tab, dir);
  fsx_reply_err(req, -rc);
}

/* A write's bytes as FUSE hands them over: in memory, or in a pipe
   (splice from the device: copied once, straight to where they go). */
struct fuse_src {
  struct fsx_wsrc s;
  struct fuse_bufvec *bufv;
};

static int src_copy(struct fuse_src *f, struct fuse_bufvec *dst, size_t len)
{
  ssize_t n = fuse_buf_copy(dst, f->bufv, 0);

  return n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO;
}

static int src_to_mem(struct fsx_wsrc *s, void *dst, size_t len)
{
  struct fuse_bufvec d = FUSE_BUFVEC_INIT(len);

  d.buf[0].mem = dst;
  return src_copy((struct fuse_src *)s, &d, len);
}

static int src_to_fd(struct fsx_wsrc *s, int fd, uint64_t off, size_t len)
{
  struct fuse_bufvec d = FUSE_BUFVEC_INIT(len);

  d.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
  d.buf[0].fd = fd;
  d.buf[0].pos = (off_t)off;
  return src_copy((struct fuse_src *)s, &d, len);
}

void fsx_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
                      off_t off, struct fuse_file_info *fi)
{
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;
  struct fuse_src src = {{src_to_mem, src_to_fd}, bufv};
  ssize_t n;

  (void)ino;
  if (!fsx_fh_is(fh, FSX_FH_WRITER)) { /* (libfuse empties the pipe of
                                          what is not read) */
    fsx_reply_err(req, EBADF);
    return;
  }
  n = fsx_wb_write(M(req), fsx_fh_wb(fh), (uint64_t)off, &src.s,
                   fuse_buf_size(bufv), fsx_fh_is(fh, FSX_FH_APPEND));
  if (n < 0) {
    atomic_fetch_add(&M(req)->st.errors, 1);
    fsx_reply_err(req, (int)-n);
  } else {
    fuse_reply_write(req, (size_t)n);
  }
}

void fsx_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;

  fsx_reply_err(req, fsx_fh_is(fh, FSX_FH_WRITER)
                         ? -fsx_wb_commit(M(req), fsx_fh_wb(fh))
                         : 0);
}

void fsx_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                  struct fuse_file_info *fi)
{
  struct fsx_fh *fh = (struct fsx_fh *)(uintptr_t)fi->fh;

  (void)datasync; /* the object and its metadata go up together */
  fsx_reply_err(req, fsx_fh_wb(fh) ? -fsx_wb_commit(M(req), fsx_fh_wb(fh)) : 0);
}

static int setattr_size(struct fsx_mount *m, struct fsx_inode *in,
                        struct fsx_fh *fh, uint64_t size)
{
  struct fsx_wb *held = fh ? fsx_fh_wb(fh) : NULL;
  struct fsx_wb *wb = held ? held : fsx_wb_get(m, in);
  bool mine = !held, made = false;
  struct fsx_attr a;
  int rc = 0;

  if (!wb) { /* truncate(2) of a file nobody here writes */
    rc = fsx_ns_head(m, in, &a);
    if (!rc)
      rc = fsx_open_for_write(m, in, &a, size ? 0 : O_TRUNC, &wb);
    made = true;
  }
  if (!rc)
    rc = fsx_wb_truncate(m, wb, size);
  if (!rc && made) /* no close() will come: upload now */
    rc = fsx_wb_commit(m, wb);
  if (mine && wb)
    fsx_wb_put(m, wb);
  return rc;
}

void fsx_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                    int to_set, struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_fh *fh = fi ? (struct fsx_fh *)(uintptr_t)fi->fh : NULL;
  struct fsx_inode *in;
  struct fsx_wb *wb;
  struct fsx_attr a;
  struct stat st;
  int rc = 0;

  atomic_fetch_add(&m->st.setattrs, 1);
  if (ino == FSX_STATS_INO) {
    fsx_reply_err(req, EPERM);
    return;
  }
  if (m->o.ro) {
    fsx_reply_err(req, EROFS);
    return;
  }
  in = fsx_inode_get(m->tab, ino);
  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    fsx_attr_of(m, in, &a);
    rc = a.kind == FSX_DIR ? -EISDIR
                           : setattr_size(m, in, fh, (uint64_t)attr->st_size);
  }
  if (!rc && (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
                        FUSE_SET_ATTR_GID | FUSE_SET_ATTR_MTIME |
                        FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_ATIME |
                        FUSE_SET_ATTR_ATIME_NOW))) {
    struct fsx_wmeta mt;
    struct timespec now;
    bool dir;
    clock_gettime(CLOCK_REALTIME, &now);
    now.tv_nsec = 0; /* stored in whole seconds: shown as stored */
    fsx_attr_of(m, in, &a);
    /* a directory's marker: no background store of its times (taken
       before this) lands after this one */
    if ((dir = a.kind == FSX_DIR)) {
      fsx_inode_store_block(m->tab, in);
      fsx_attr_of(m, in, &a);
    }
    fsx_shown_meta(m, ino, &a, &mt);
    if (to_set & FUSE_SET_ATTR_MODE)
      mt.mode = (mt.mode & S_IFMT) | (attr->st_mode & 07777);
    if (to_set & FUSE_SET_ATTR_UID)
      mt.uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID)
      mt.gid = attr->st_gid;
    mt.has_mtime = true;
    mt.mtime = a.mtime;
    if (to_set & FUSE_SET_ATTR_MTIME_NOW)
      mt.mtime = now;
    else if (to_set & FUSE_SET_ATTR_MTIME)
      mt.mtime = attr->st_mtim; /* to the nanosecond, as given */
    if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
      mt.has_atime = true;
      mt.atime = to_set & FUSE_SET_ATTR_ATIME_NOW ? now : attr->st_atim;
    }
    /* a change of metadata moves the ctime, and only it (s3fs's utimens
       stores the new atime as the ctime; POSIX says now) */
    mt.has_ctime = true;
    mt.ctime = now;
    wb = fsx_wb_get(m, in);
    if (wb) {
      /* bytes already on the server: store the metadata now, else
         with them at close */
      if (!fsx_wb_set_meta(m, wb, &mt))
        rc = fsx_wb_commit(m, wb);
      fsx_wb_put(m, wb);
    } else {
      rc = fsx_store_meta(m, in, &a, &mt);
    }
    if (!rc && dir &&
        (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
      fsx_inode_dir_times_set(m->tab, in); /* (cp -a's, tar's: kept) */
    if (dir)
      fsx_inode_store_unblock(m->tab, in);
  }
  if (rc) {
    fsx_reply_err(req, -rc);
  } else {
    fsx_attr_of(m, in, &a);
    fsx_stat_of(m, in, &a, &st);
    fuse_reply_attr(req, &st, fsx_secs(m->o.attr_ttl_ms));
  }
  fsx_inode_put(m->tab, in);
}
