/* fsx_fops: the FUSE operations on file handles (open, read, ioctl,
   release). */
#ifndef S3R_FSX_FOPS_H
#define S3R_FSX_FOPS_H

#include "fs/mount/fsx_fuse.h"

void fsx_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsx_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info *fi);
/* libs3rdmafs's ioctls (fsx_direct); anything else ENOTTY. */
void fsx_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
                  struct fuse_file_info *fi, unsigned flags,
                  const void *in_buf, size_t in_bufsz, size_t out_bufsz);
void fsx_op_release(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi);

#endif
