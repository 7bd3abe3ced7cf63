/* fsx_fuse: the libfuse API version every fs/ file builds against. */
#ifndef S3R_FSX_FUSE_H
#define S3R_FSX_FUSE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#endif
