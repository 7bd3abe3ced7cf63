/* fsx_wops: the FUSE operations that change a file (create, write, flush,
   fsync, setattr). */
#ifndef S3R_FSX_WOPS_H
#define S3R_FSX_WOPS_H

#include "fs/mount/fsx_fuse.h"

void fsx_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                   mode_t mode, struct fuse_file_info *fi);
/* FUSE_WRITE; its data in memory or, spliced from the device, in a pipe */
void fsx_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
                      off_t off, struct fuse_file_info *fi);
void fsx_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsx_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                  struct fuse_file_info *fi);
void fsx_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                    int to_set, struct fuse_file_info *fi);

#endif
