/*
 * fsx_wns_i: what fsx_wns.c (unlink, rmdir, mkdir, symlink) and
 * fsx_wns_rename.c share and nothing else sees.
 */
#ifndef S3R_FSX_WNS_I_H
#define S3R_FSX_WNS_I_H

#include "fs/mount/fsx_i.h"

struct fsx_wb;

/* The inode of an existing name in dir (an internal reference) and its
   attributes. */
int fsx_wns_resolve(struct fsx_mount *m, struct fsx_inode *dir,
                    const char *name, struct fsx_inode **out,
                    struct fsx_attr *a);
/* 0 when nothing but the marker itself lives below prefix (nor is being
   written there), -ENOTEMPTY, or the listing's error. */
int fsx_wns_dir_is_empty(struct fsx_mount *m, const char *bucket,
                         const char *prefix);
/*
 * in is about to go (unlink, or replaced by a rename; m->rename_lock
 * held): its write-back state kept for the open handles (*wb, or NULL),
 * its base fetched, and held: see fsx_wns_gone, or fsx_wns_kept, which
 * undoes this.
 */
int fsx_wns_going(struct fsx_mount *m, struct fsx_inode *in,
                  const struct fsx_attr *a, struct fsx_wb **wb);
void fsx_wns_kept(struct fsx_mount *m, struct fsx_wb *wb);
void fsx_wns_gone(struct fsx_mount *m, struct fsx_inode *in,
                  struct fsx_wb *wb);

#endif
