/*
 * fsx_ops: the FUSE low-level operations table (userdata: struct
 * fsx_mount). fs/ is in three tiers, each including only the tiers below:
 * - the top: this table and init (fsx_ops.c), and the daemon (fsx_main.c);
 * - the operations, by concern: fsx_rops (names, attributes, directories),
 *   fsx_fops (open, read, release), fsx_wops (create, write, flush,
 *   setattr), fsx_wns (unlink, mkdir, rmdir, symlink, rename);
 * - the node helpers every operation uses (fsx_node: replies, entries,
 *   new objects' metadata, open for write), and below them the modules
 *   (inode table, namespace, read path, write-back, cache, staging, ...).
 * scripts/check_includes.py checks the tiers and that no include cycle
 * exists.
 */
#ifndef S3R_FSX_OPS_H
#define S3R_FSX_OPS_H

#include "fs/fsx_fuse.h"

extern const struct fuse_lowlevel_ops fsx_ops;

#endif
