/* Internals shared by the FUSE operations: fsx_ops.c (lookups, reads),
   fsx_wops.c (writes) and fsx_wns.c (changes to the namespace). */
#ifndef S3R_FSX_OPS_I_H
#define S3R_FSX_OPS_I_H

#include "fs/fsx_errno.h"
#include "fs/fsx_ops.h"

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

/* in's attributes now: its write-back state's if it has one. */
void fsx_attr_of(struct fsx_mount *m, struct fsx_inode *in,
                 struct fsx_attr *a);
/* A fuse_entry_param for inode in. */
void fsx_entry_of(struct fsx_mount *m, struct fsx_inode *in,
                  struct fuse_entry_param *e);
/* The child inode of dir for a resolved name; kernel reference taken. */
struct fsx_inode *fsx_child_of(struct fsx_mount *m, struct fsx_inode *dir,
                               const char *name, const struct fsx_attr *a);

struct fsx_wmeta;
/* fsx_wns.c: a PUT of body (NULL: empty) carrying s3fs's metadata. */
int fsx_put_with_meta(struct fsx_mount *m, const char *bucket,
                      const char *key, const char *body,
                      const struct fsx_wmeta *mt, char *etag);

/* fsx_wops.c */
void fsx_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                   mode_t mode, struct fuse_file_info *fi);
void fsx_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                  size_t size, off_t off, struct fuse_file_info *fi);
void fsx_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsx_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                  struct fuse_file_info *fi);
void fsx_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                    int to_set, struct fuse_file_info *fi);
/* fsx_wns.c */
void fsx_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsx_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsx_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode);
void fsx_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                    const char *name);
void fsx_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                   fuse_ino_t newparent, const char *newname,
                   unsigned int flags);
/* Open for writing: the write-back state for fh (O_TRUNC: emptied). */
int fsx_open_for_write(struct fsx_mount *m, struct fsx_inode *in,
                       const struct fsx_attr *a, int flags,
                       struct fsx_wb **wb);

#endif
