/*
 * fsx_meta: a file's metadata as s3fs stores it on the object,
 * x-amz-meta-mode|uid|gid|mtime (decimal), both ways: the pairs a write
 * sends (and the options that carry them, keeping what other tools
 * stored), and what a HEAD's pairs say. Below write-back: it knows
 * objects and attributes, not staging files.
 */
#ifndef S3R_FSX_META_H
#define S3R_FSX_META_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "fs/fsx_i.h"

/* Metadata stored as s3fs's x-amz-meta-mode|uid|gid|mtime. */
struct fsx_wmeta {
  mode_t mode;                /* with the type bits */
  uid_t uid;
  gid_t gid;
  bool has_mtime;             /* set explicitly (utimens) since the last
                                 write; else the upload's time is it */
  struct timespec mtime;
};

/* mt as x-amz-meta-* pairs (values in v); returns how many (3 or 4). */
size_t fsx_wmeta_kv(const struct fsx_wmeta *mt, struct s3_kv kv[4],
                    char v[4][32]);
/* Do a and b store the same pairs (mtime in whole seconds)? */
bool fsx_meta_same(const struct fsx_wmeta *a, const struct fsx_wmeta *b);
/* Does the object (a HEAD) carry the pairs mt stores? */
bool fsx_meta_matches(const struct s3_object_meta *cur,
                      const struct fsx_wmeta *mt);

/*
 * What a HEAD's pairs say, into a: has_mode/has_uid/has_gid and mode, uid,
 * gid for each pair present and valid, and the mtime (whole seconds) when
 * x-amz-meta-mtime is; the rest of a is left as it was.
 */
void fsx_meta_decode(const struct s3_object_meta *o, struct fsx_attr *a);
/* mt into a: mode, uid and gid (all known), and its mtime if it has one. */
void fsx_meta_to_attr(struct fsx_attr *a, const struct fsx_wmeta *mt);

/*
 * Options for writing an object anew (PUT, multipart, copy onto itself
 * with REPLACE) with metadata mt. With keep, the object's current
 * Content-Type and other x-amz-meta-* (a HEAD) are carried over, so that
 * rewriting a file loses none of what other tools stored on it.
 */
struct fsx_wopts {
  struct s3_put_opts o;
  struct s3_kv *kv;
  char v[4][32];
  struct s3_object_meta cur;
  bool have_cur;
};
int fsx_wopts_make(struct fsx_mount *m, const char *bucket, const char *key,
                   bool keep, const struct fsx_wmeta *mt,
                   struct fsx_wopts *w);
void fsx_wopts_cleanup(struct fsx_wopts *w);
/* New metadata for an object as it is: copied onto itself (REPLACE),
   keeping what fsx_wopts_make keeps. */
int fsx_copy_meta(struct fsx_mount *m, const char *bucket, const char *key,
                  const struct fsx_wmeta *mt, char etag[S3_ETAG_MAX]);

#endif
