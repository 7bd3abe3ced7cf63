/*
 * fsx_ops: the FUSE low-level operations table (userdata: struct
 * fsx_mount). fs/ is in rooms (docs/ARCHITECTURE.md, "fs/ in rooms"),
 * and the folders are the tiers, each including only its own folder and
 * the tiers below: the daemon (fs/fsx_main.c); this folder: this table
 * and init (fsx_ops.c), the operations by concern (fsx_rops: names,
 * attributes, directories; fsx_fops: open, read, release; fsx_wops:
 * create, write, flush, setattr; fsx_wns: unlink, mkdir, rmdir, symlink,
 * rename) and the helpers every operation uses (fsx_node); then the
 * rooms (meta/, read/, write/, stage/, mem/, plane/, direct/, mount/).
 * scripts/check_includes.py checks the tiers and that no include cycle
 * exists.
 */
#ifndef S3R_FSX_OPS_H
#define S3R_FSX_OPS_H

#include "fs/mount/fsx_fuse.h"

extern const struct fuse_lowlevel_ops fsx_ops;

#endif
