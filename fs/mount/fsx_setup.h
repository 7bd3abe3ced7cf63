/*
 * fsx_setup: what the daemon's start derives from its configuration: the
 * mount's options, the S3 client's settings, the check that the source
 * answers (while a terminal is there), the kernel's readahead on the
 * mount, libfuse's log through ours. Called by main only.
 */
#ifndef S3R_FSX_SETUP_H
#define S3R_FSX_SETUP_H

#include "config/cfg.h"
#include "fs/mount/fsx_i.h"
#include "s3/s3_client.h"

/* The mount's options from the configuration. */
void fsx_setup_opts(const struct cfg *c, struct fsx_opts *o);
/* The S3 client's settings from it (strings borrowed from c). */
void fsx_setup_s3(const struct cfg *c, struct s3_client_config *s);
/* Does the bucket (NULL: the endpoint's bucket list) answer, with these
   keys? 0, or a negative errno with one line logged that says why. */
int fsx_setup_check_source(struct s3_client *s3, const char *bucket,
                           const char *prefix, const char *endpoint);
/* The kernel reads ahead kb KiB at once on the mount at real (the path
   resolved before mounting): best effort, root only. */
void fsx_setup_readahead(const char *real, unsigned long kb);
/* libfuse's messages go to our log, at its level. */
void fsx_setup_fuse_log(void);

#endif
