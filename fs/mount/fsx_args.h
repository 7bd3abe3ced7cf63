/*
 * fsx_args: the command line of s3rdmafs: the arguments, the -o lists
 * (configuration keys, config=FILE, and the mount options handed on to
 * libfuse or ignored), and the BUCKET[:/PREFIX] source.
 */
#ifndef S3R_FSX_ARGS_H
#define S3R_FSX_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define FSX_PROG "s3rdmafs"

struct cfg;

struct fsx_args {
  const char *source;       /* BUCKET[:/PREFIX] */
  const char *mountpoint;
  bool all_buckets, foreground, debug, single, print_config;
  char *fuse_opts;          /* options handed on to libfuse */
  char secret_opt[64];      /* the first secret key given with -o, or "" */
};

void fsx_args_usage(FILE *f);
/*
 * argv into *a; each -o list is copied into (*olists)[(*nol)++] (room for
 * argc lists) and the secret keys in argv's copy are overwritten (so that
 * /proc/PID/cmdline no longer shows them). -EINVAL (said on stderr).
 */
int fsx_args_parse(int argc, char **argv, struct fsx_args *a, char ***olists,
                   int *nol);
/*
 * One -o list: with config, only its config=FILE (loaded first); without,
 * every key set in c, mount options collected in a->fuse_opts. Negative
 * errno with err filled.
 */
int fsx_args_apply(struct cfg *c, struct fsx_args *a, char *list, bool config,
                   char *err, size_t errlen);
/* "bucket[:/prefix]" into bucket and a prefix ending in '/' (or ""),
   malloc'd. -EINVAL: no bucket; -ENOMEM. */
int fsx_args_split_source(const char *src, char **bucket, char **prefix);

#endif
