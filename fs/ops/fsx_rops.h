/* fsx_rops: the FUSE operations on names, attributes and directories
   (lookup, forget, getattr, readdir, statfs, readlink). */
#ifndef S3R_FSX_ROPS_H
#define S3R_FSX_ROPS_H

#include "fs/mount/fsx_fuse.h"

void fsx_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsx_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fsx_op_forget_multi(fuse_req_t req, size_t count,
                         struct fuse_forget_data *forgets);
void fsx_op_getattr(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi);
void fsx_op_opendir(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi);
void fsx_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi);
void fsx_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                        off_t off, struct fuse_file_info *fi);
void fsx_op_releasedir(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi);
void fsx_op_statfs(fuse_req_t req, fuse_ino_t ino);
void fsx_op_readlink(fuse_req_t req, fuse_ino_t ino);

#endif
