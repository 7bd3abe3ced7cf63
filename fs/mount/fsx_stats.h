/* fsx_stats: the stats view, read from FSX_STATS_NAME in the mount root. */
#ifndef S3R_FSX_STATS_H
#define S3R_FSX_STATS_H

#include <stddef.h>

struct fsx_mount;

/* The stats file's content, malloc'd (NULL on ENOMEM); caller frees. */
char *fsx_stats_text(struct fsx_mount *m, size_t *len);

/*
 * `s3rdmafs stats [--format text|prometheus] MOUNTPOINT` (argv without the
 * program and "stats"): the mount's stats file to stdout as it is, or in
 * Prometheus's text format (common/stats_prom.h; metrics s3rdmafs_*);
 * -h or --help: the usage on stdout. The exit status.
 */
int fsx_stats_cmd(int argc, char **argv);

#endif
