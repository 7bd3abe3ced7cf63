/* fsx_stats: the stats view, read from FSX_STATS_NAME in the mount root. */
#ifndef S3R_FSX_STATS_H
#define S3R_FSX_STATS_H

#include <stddef.h>

struct fsx_mount;

/* The stats file's content, malloc'd (NULL on ENOMEM); caller frees. */
char *fsx_stats_text(struct fsx_mount *m, size_t *len);

#endif
