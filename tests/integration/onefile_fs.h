/*
 * onefile_fs: the common part of the tests' hostile FUSE file systems
 * (hang_fs, liar_fs): one file, "f", of zeros, mode 0666, in the root.
 * Each fills a fuse_lowlevel_ops with these and its own hostile handler,
 * and calls onefile_main.
 */
#ifndef ONEFILE_FS_H
#define ONEFILE_FS_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

void onefile_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void onefile_getattr(fuse_req_t req, fuse_ino_t ino,
                     struct fuse_file_info *fi);
void onefile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void onefile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                  struct fuse_file_info *fi);
void onefile_release(fuse_req_t req, fuse_ino_t ino,
                     struct fuse_file_info *fi);

/* argv: NAME MOUNTPOINT. Mounts ops there with opts (-o), "f" being size
   bytes; says "ready" on stdout once mounted; returns when unmounted
   (the exit status: 0, 1 on failure, 2 on bad usage). Single-threaded. */
int onefile_main(int argc, char **argv, const struct fuse_lowlevel_ops *ops,
                 const char *opts, off_t size);

#endif
