/* fsx_wns: the FUSE operations that change the namespace (unlink, rmdir,
   mkdir, mknod, symlink; rename in fsx_wns_rename.c). */
#ifndef S3R_FSX_WNS_H
#define S3R_FSX_WNS_H

#include "fs/mount/fsx_fuse.h"

void fsx_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsx_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                 const char *newname);
void fsx_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsx_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode);
void fsx_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                  mode_t mode, dev_t rdev);
void fsx_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                    const char *name);
void fsx_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                   fuse_ino_t newparent, const char *newname,
                   unsigned int flags);

struct fsx_mount;
/* rename(2) of parent/name to newparent/newname (flags: RENAME_NOREPLACE
   only), what fsx_op_rename answers: 0 or -errno. */
int fsx_wns_rename(struct fsx_mount *m, fuse_ino_t parent, const char *name,
                   fuse_ino_t newparent, const char *newname, unsigned flags);

#endif
