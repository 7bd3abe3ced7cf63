/*
 * fsx_ns's own helpers, shared by its two files: fsx_ns.c (listings,
 * HEADs, attributes) and fsx_ns_lookup.c (a cold lookup's round).
 */
#ifndef S3R_FSX_NS_I_H
#define S3R_FSX_NS_I_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/meta/fsx_dirsnap.h"
#include "fs/mount/fsx_i.h"
#include "s3/s3_client.h"

/* Log a skipped key once (per hash slot, so a few may repeat). */
void fsx_ns_skip_once(struct fsx_mount *m, const char *key, const char *why);
/* Can this name be a directory entry? NULL if yes, else why not. */
const char *fsx_ns_bad_name(const char *name, size_t len);
/* Where a file and a directory share a name, the directory is shown. */
extern const char fsx_ns_both_names[];

/* fsx_dirsnap_seal's dup callback: the key under prefix logged once. */
struct fsx_ns_dup {
  struct fsx_mount *m;
  const char *prefix;
};
void fsx_ns_dup_name(void *arg, const char *name);

/* A listing page's names below prefix into b (root: the mount's root,
   where the stats file's name is taken); -ENOMEM. */
int fsx_ns_add_page(struct fsx_mount *m, struct fsx_dirsnap *b, bool root,
                    const char *prefix, const struct s3_list_result *res);

/* s3fs-compatible x-amz-meta-* into attributes. */
void fsx_ns_attr_from_meta(const struct s3_object_meta *mt,
                           struct fsx_attr *a);
/*
 * A directory's attributes from the answer to its marker's HEAD (hrc 0:
 * mt; -ENOENT: an implicit directory, the defaults); either way from_head:
 * nothing more to ask.
 */
void fsx_ns_dir_of_marker(int hrc, const struct s3_object_meta *mt,
                          struct fsx_attr *a);

#endif
