/* fsx_ops: the FUSE low-level operations (userdata: struct fsx_mount). */
#ifndef S3R_FSX_OPS_H
#define S3R_FSX_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fs/fsx_i.h"

extern const struct fuse_lowlevel_ops fsx_ops;

/* The stats view (the stats file's content), malloc'd; caller frees. */
char *fsx_stats_text(struct fsx_mount *m, size_t *len);

#endif
