/*
 * fsx_node: the helpers every FUSE operation uses (the tier between the
 * operation files and the modules below, see fsx_ops.h): the mount of a
 * request, error replies, an inode's attributes and entry as the kernel
 * sees them, new objects' metadata, and open for write.
 */
#ifndef S3R_FSX_NODE_H
#define S3R_FSX_NODE_H

#include "fs/mount/fsx_errno.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/mount/fsx_i.h"
#include "fs/write/fsx_wb.h"

static inline struct fsx_mount *fsx_req_mount(fuse_req_t req)
{
  return fuse_req_userdata(req);
}

/* Every error reply: err (positive) as an application should see it. */
static inline void fsx_reply_err(fuse_req_t req, int err)
{
  fuse_reply_err(req, fsx_errno_shown(err));
}

static inline double fsx_secs(uint64_t ms)
{
  return (double)ms / 1000.0;
}

/* The stats file's attributes (its size is unknown until it is read). */
void fsx_stats_attr(struct fsx_attr *a);

/* in's attributes now: its write-back state's if it has one. */
void fsx_attr_of(struct fsx_mount *m, struct fsx_inode *in,
                 struct fsx_attr *a);
/* in's stat from a: a directory's link count 2 and its subdirectories
   where a listing of it is known (else 2), an unlinked file's 0. */
void fsx_stat_of(struct fsx_mount *m, struct fsx_inode *in,
                 const struct fsx_attr *a, struct stat *st);
/* A fuse_entry_param for inode in. */
void fsx_entry_of(struct fsx_mount *m, struct fsx_inode *in,
                  struct fuse_entry_param *e);
/* The child inode of dir for a resolved name; kernel reference taken. */
struct fsx_inode *fsx_child_of(struct fsx_mount *m, struct fsx_inode *dir,
                               const char *name, const struct fsx_attr *a);

/*
 * Can req's caller create name in dir? 0, or -EROFS, -ENAMETOOLONG,
 * -EEXIST (the stats file's name), -EPERM (the root of an all-buckets
 * mount holds buckets only).
 */
int fsx_check_new_name(struct fsx_mount *m, struct fsx_inode *dir,
                       const char *name, enum fsx_kind kind);
/*
 * What an object req's caller creates now as kind with mode (type bits
 * included) carries: its s3fs metadata (*mt; atime now; with_mtime: mtime
 * and ctime now too, for markers, symlinks and nodes; a file's come from
 * its write-back state) and its attributes (*a).
 */
void fsx_new_meta(fuse_req_t req, enum fsx_kind kind, mode_t mode,
                  bool with_mtime, struct fsx_wmeta *mt, struct fsx_attr *a);
/* The metadata an object shows now (its stat), to be stored. */
void fsx_shown_meta(struct fsx_mount *m, uint64_t ino,
                    const struct fsx_attr *a, struct fsx_wmeta *mt);
/* A PUT of body (NULL: empty) carrying s3fs's metadata. */
int fsx_put_with_meta(struct fsx_mount *m, const char *bucket,
                      const char *key, const char *body,
                      const struct fsx_wmeta *mt, char *etag);
/*
 * New metadata mt for in (attributes a, updated) with no write-back
 * state: a directory's marker rewritten, an object copied onto itself.
 */
int fsx_store_meta(struct fsx_mount *m, struct fsx_inode *in,
                   struct fsx_attr *a, const struct fsx_wmeta *mt);
/* After the release of a handle that could read ino: its atime stored if
   the mount's atime policy (mount.atime) says so, unless others: other
   handles were open on it then (the copy would change the object under
   them; the last one's close stores it). */
void fsx_atime_closed(struct fsx_mount *m, fuse_ino_t ino, bool others);
/* Open for writing: the write-back state for fh (O_TRUNC: emptied). */
int fsx_open_for_write(struct fsx_mount *m, struct fsx_inode *in,
                       const struct fsx_attr *a, int flags,
                       struct fsx_wb **wb);
/* The same, the caller holding m->rename_lock (fsx_renlock.h). */
int fsx_open_for_write_held(struct fsx_mount *m, struct fsx_inode *in,
                            const struct fsx_attr *a, int flags,
                            struct fsx_wb **wb);

#endif
