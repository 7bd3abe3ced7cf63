/*
 * fsx_wns: operations that change the namespace: unlink, mkdir, rmdir,
 * symlink, and rename's FUSE entry (its work: fsx_wns_rename.c). Runs on
 * FUSE worker threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_dirsnap.h"
#include "fs/ops/fsx_dirtimes.h"
#include "fs/ops/fsx_node.h"
#include "fs/stage/fsx_recover_thread.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/ops/fsx_wns.h"
#include "fs/ops/fsx_wns_i.h"
#include "fs/write/fsx_wb.h"

#define M fsx_req_mount

/* The inode of an existing name in dir (an internal reference). */
int fsx_wns_resolve(struct fsx_mount *m, struct fsx_inode *dir,
                    const char *name, struct fsx_inode **out,
                    struct fsx_attr *a)
{
  struct fsx_inode *in = fsx_inode_find(m->tab, fsx_inode_ino(dir), name);
  int rc;

  if (!in) {
    if ((rc = fsx_ns_lookup(m, dir, name, a, NULL)))
      return rc;
    in = fsx_inode_child(m->tab, dir, name, a,
                         fsx_inode_bucket(dir) ? NULL : name, m->o.attr_ttl_ms,
                         false);
    if (!in)
      return -ENOMEM;
  }
  fsx_attr_of(m, in, a);
  *out = in;
  return 0;
}

/* Does anything but the marker itself live below prefix? */
int fsx_wns_dir_is_empty(struct fsx_mount *m, const char *bucket,
                         const char *prefix)
{
  struct s3_list_params p = {.prefix = prefix, .delimiter = "/",
                             .max_keys = 2};
  struct s3_list_result r;
  int rc = s3_list_objects(m->s3, bucket, &p, &r);

  if (rc)
    return rc;
  if (r.n_prefixes || r.n_objects > 1 ||
      (r.n_objects == 1 && strcmp(r.objects[0].key, prefix)))
    rc = -ENOTEMPTY;
  s3_list_result_cleanup(&r);
  if (!rc && fsx_wb_pending_below(m, bucket, prefix))
    rc = -ENOTEMPTY;
  return rc;
}

/*
 * in is about to go (unlink, or replaced by a rename; m->rename_lock
 * held): the write-back state
 * that keeps its data for the handles still open (a reference in *wb, or
 * NULL), its base fetched, and held (fsx_wb_hold): no commit of it can
 * land between the delete or the copy over it and fsx_wns_gone(). Nothing is
 * discarded yet: see fsx_wns_gone(), or fsx_wns_kept(), which undoes this.
 */
int fsx_wns_going(struct fsx_mount *m, struct fsx_inode *in,
                  const struct fsx_attr *a, struct fsx_wb **wb)
{
  int rc = 0;

  *wb = fsx_wb_get(m, in);
  if (!*wb && fsx_inode_in_use(m->tab, in)) /* open for reading only */
    rc = fsx_open_for_write_held(m, in, a, 0, wb);
  if (rc || !*wb)
    return rc;
  /* held first: no commit may turn blocks it lacks into parts copied on
     the server (so never fetched) between the fetch and the delete */
  fsx_wb_hold(*wb);
  if ((rc = fsx_wb_fetch_all(m, *wb, true))) {
    fsx_wb_ungate(*wb);
    fsx_wb_put(m, *wb);
    *wb = NULL;
  }
  return rc;
}

/* in stays after all: what fsx_wns_going() held goes on as before. */
void fsx_wns_kept(struct fsx_mount *m, struct fsx_wb *wb)
{
  if (!wb)
    return;
  fsx_wb_ungate(wb);
  fsx_wb_put(m, wb);
}

/* The server's object is gone: what fsx_wns_going() kept is never
   uploaded again and stays for the open handles only. Drops the
   reference. */
void fsx_wns_gone(struct fsx_mount *m, struct fsx_inode *in,
                  struct fsx_wb *wb)
{
  if (!wb)
    return;
  fsx_wb_discard(m, wb, true);
  fsx_inode_keep_orphan(m->tab, in);
  fsx_wb_put(m, wb);
}

/* A directory made here: empty as far as this mount knows (the kernel
   asked only after a lookup found nothing, which may be a stale answer),
   so names only: what this mount makes in it is counted (its link count),
   and a name not in it is still asked for (another client may have made
   it). */
static void known_empty(struct fsx_mount *m, struct fsx_inode *in)
{
  struct fsx_dirsnap *s = fsx_dirsnap_new();

  if (!s)
    return;
  s->names_only = true;
  fsx_dirsnap_seal(s, clock_mono_ms(), NULL, NULL);
  fsx_dir_set_snap(m->tab, in, s, m->o.dir_ttl_ms);
  fsx_dirsnap_put(s);
}

/* No hard links in S3: the conventional answer of such a filesystem. */
void fsx_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                 const char *newname)
{
  (void)ino, (void)newparent, (void)newname;
  fsx_reply_err(req, EOPNOTSUPP);
}

void fsx_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *dir = fsx_inode_get(m->tab, parent), *in = NULL;
  struct fsx_wb *wb = NULL;
  struct fsx_recover_hold hold;
  struct fsx_attr a;
  int rc;

  atomic_fetch_add(&m->st.unlinks, 1);
  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  rc = m->o.ro ? -EROFS : fsx_wns_resolve(m, dir, name, &in, &a);
  if (!rc && a.kind == FSX_DIR)
    rc = -EISDIR;
  if (!rc && !fsx_inode_bucket(in))
    rc = -EPERM;
  if (rc)
    goto out;
  /* not while a directory rename moves what is below it (its key) */
  fsx_renlock_read(&m->rename_lock);
  fsx_inode_store_block(m->tab, in); /* no store lands after the delete */
  fsx_recover_name_hold(m, &hold, fsx_inode_bucket(in),
                        fsx_inode_key(m->tab, in));
  rc = fsx_wns_going(m, in, &a, &wb);
  if (!rc)
    rc = s3_delete_object(m->s3, fsx_inode_bucket(in),
                          fsx_inode_key(m->tab, in));
  if (rc == -ENOENT && wb)
    rc = 0; /* it had not been uploaded yet */
  if (!rc) {
    fsx_wns_gone(m, in, wb);
    fsx_inode_detach(m->tab, in);
    fsx_dir_snap_remove(m->tab, dir, name);
    fsx_dir_changed(m, dir);
  } else {
    fsx_wns_kept(m, wb); /* still there: its data goes up as it would */
  }
  fsx_recover_name_release(m, &hold);
  fsx_inode_store_unblock(m->tab, in);
  fsx_renlock_unlock(&m->rename_lock);
out:
  fsx_inode_put(m->tab, in);
  fsx_inode_put(m->tab, dir);
  fsx_reply_err(req, -rc);
}

void fsx_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *dir = fsx_inode_get(m->tab, parent), *in = NULL;
  struct fsx_attr a;
  const char *key;
  int rc;

  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  rc = m->o.ro ? -EROFS : fsx_wns_resolve(m, dir, name, &in, &a);
  if (!rc && a.kind != FSX_DIR)
    rc = -ENOTDIR;
  if (rc)
    goto out;
  if (!fsx_inode_bucket(dir)) { /* a bucket of an all-buckets mount */
    rc = s3_delete_bucket(m->s3, name);
    if (rc == -EEXIST || rc == -EBUSY)
      rc = -ENOTEMPTY;
  } else {
    fsx_inode_store_block(m->tab, in); /* no times stored after it */
    key = fsx_inode_key(m->tab, in);
    rc = fsx_wns_dir_is_empty(m, fsx_inode_bucket(in), key);
    if (!rc)
      rc = s3_delete_object(m->s3, fsx_inode_bucket(in), key);
    if (rc == -ENOENT)
      rc = 0; /* an implicit directory: its marker never existed */
  }
  if (!rc) {
    fsx_inode_detach(m->tab, in); /* (before stores may begin again) */
    fsx_dir_snap_remove(m->tab, dir, name);
    fsx_dir_changed(m, dir);
  }
  if (fsx_inode_bucket(dir))
    fsx_inode_store_unblock(m->tab, in);
out:
  fsx_inode_put(m->tab, in);
  fsx_inode_put(m->tab, dir);
  fsx_reply_err(req, -rc);
}

/* Create name in dir as kind: a marker, a symlink, a bucket, or an empty
   file, FIFO, socket or device node (mknod). */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
                       enum fsx_kind kind, mode_t mode, const char *body,
                       dev_t rdev)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *dir = fsx_inode_get(m->tab, parent), *in;
  struct fuse_entry_param e;
  char etag[S3_ETAG_MAX] = "", *key = NULL;
  struct fsx_wmeta mt;
  struct fsx_attr a;
  int rc;

  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  fsx_new_meta(req, kind, mode, true, &mt, &a);
  mt.rdev = a.rdev = rdev;
  rc = fsx_check_new_name(m, dir, name, kind);
  if (rc == -EPERM && kind == FSX_DIR) /* the root of all buckets */
    rc = s3_create_bucket(m->s3, name);
  else if (!rc && !(key = fsx_inode_key_of(m->tab, dir, name, kind)))
    rc = -ENOMEM;
  else if (!rc)
    rc = fsx_put_with_meta(m, fsx_inode_bucket(dir), key, body, &mt, etag);
  free(key);
  if (rc) {
    fsx_inode_put(m->tab, dir);
    fsx_reply_err(req, -rc);
    return;
  }
  a.size = body ? strlen(body) : 0;
  snprintf(a.etag, sizeof(a.etag), "%s", etag);
  in = fsx_child_of(m, dir, name, &a);
  if (in)
    fsx_dir_changed(m, dir);
  fsx_inode_put(m->tab, dir);
  if (!in) {
    fsx_reply_err(req, ENOMEM);
    return;
  }
  fsx_inode_note_entry(m->tab, in);
  if (kind == FSX_DIR && fsx_inode_bucket(in))
    known_empty(m, in);
  fsx_entry_of(m, in, &e);
  if (fuse_reply_entry(req, &e))
    fsx_inode_forget(m->tab, fsx_inode_ino(in), 1);
}

void fsx_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode)
{
  make_entry(req, parent, name, FSX_DIR, S_IFDIR | (mode & 07777), NULL, 0);
}

/*
 * An empty object whose x-amz-meta-mode has the type, as s3fs makes them;
 * a device's number goes in x-amz-meta-rdev (s3fs keeps none). Who may
 * make a device node the kernel decided before asking (CAP_MKNOD); a
 * mount without allow_other and dev (FUSE's default: nodev) never opens
 * one as a device.
 */
void fsx_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode, dev_t rdev)
{
  switch (mode & S_IFMT) {
  case S_IFREG:
    make_entry(req, parent, name, FSX_FILE, mode & (S_IFMT | 07777), NULL, 0);
    break;
  case S_IFIFO:
  case S_IFSOCK:
    make_entry(req, parent, name, FSX_NODE, mode & (S_IFMT | 07777), NULL, 0);
    break;
  case S_IFCHR:
  case S_IFBLK:
    make_entry(req, parent, name, FSX_NODE, mode & (S_IFMT | 07777), NULL,
               rdev);
    break;
  default:
    fsx_reply_err(req, EINVAL);
  }
}

void fsx_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                    const char *name)
{
  make_entry(req, parent, name, FSX_SYMLINK, S_IFLNK | 0777, link, 0);
}

void fsx_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                   fuse_ino_t newparent, const char *newname,
                   unsigned int flags)
{
  fsx_reply_err(req, -fsx_wns_rename(M(req), parent, name, newparent,
                                     newname, flags));
}
