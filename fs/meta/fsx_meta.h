/*
 * fsx_meta: a file's metadata as s3fs stores it on the object,
 * x-amz-meta-mode|uid|gid|mtime|ctime|atime (decimal; times in seconds,
 * read with an optional ".nnnnnnnnn" of nanoseconds, as s3fs writes
 * them) and x-amz-meta-rdev (ours: s3fs keeps no device number), both
 * ways: the pairs a write
 * sends (and the options that carry them, keeping what other tools
 * stored), and what a HEAD's pairs say. Below write-back: it knows
 * objects and attributes, not staging files.
 */
#ifndef S3R_FSX_META_H
#define S3R_FSX_META_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "fs/mount/fsx_i.h"

/* Metadata stored as s3fs's x-amz-meta-*. */
struct fsx_wmeta {
  mode_t mode;                /* with the type bits */
  uid_t uid;
  gid_t gid;
  bool has_mtime;             /* set explicitly (utimens) since the last
                                 write; else the upload's time is it */
  struct timespec mtime;
  bool has_ctime;             /* a metadata change since the last write;
                                 else the ctime is the mtime */
  struct timespec ctime;
  bool has_atime;             /* stored on the object or set; else none
                                 is written (shown: when it was stored) */
  struct timespec atime;
  dev_t rdev;                 /* written for character and block devices */
};

#define FSX_META_MAX 7        /* pairs fsx_wmeta_kv writes at most */

/* mt as x-amz-meta-* pairs (values in v); returns how many (3 to 7). */
size_t fsx_wmeta_kv(const struct fsx_wmeta *mt,
                    struct s3_kv kv[FSX_META_MAX], char v[FSX_META_MAX][32]);
/* Do a and b store the same pairs (times to the nanosecond)? */
bool fsx_meta_same(const struct fsx_wmeta *a, const struct fsx_wmeta *b);
/* Does the object (a HEAD) carry the pairs mt stores? */
bool fsx_meta_matches(const struct s3_object_meta *cur,
                      const struct fsx_wmeta *mt);

/*
 * What a HEAD's pairs say, into a: has_mode/has_uid/has_gid and mode, uid,
 * gid for each pair present and valid, the mtime when x-amz-meta-mtime
 * is, has_ctime/has_atime and the times when theirs are, rdev; the rest
 * of a is left as it was.
 */
void fsx_meta_decode(const struct s3_object_meta *o, struct fsx_attr *a);
/*
 * mt into a: mode, uid and gid (all known), its mtime if it has one, its
 * ctime and atime (or 0, shown as the mtime, where it has none), rdev.
 */
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
  char v[FSX_META_MAX][32];
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
/*
 * A copy of src to dst (dst may be src) carrying everything src carries
 * (its x-amz-meta-* and Content-Type, from a HEAD) but the pair name,
 * which becomes now (*t): a rename's ctime, a read's atime, as s3fs
 * stores them. The other times src shows as its Last-Modified (none
 * stored) are stored so, to stay as they were. One CopyObject with REPLACE, conditional on the version
 * the HEAD saw (a change meanwhile fails it: 412); if_match: only if the
 * HEAD finds that ETag (else -ESTALE). -EFBIG above 5 GiB (the caller
 * copies otherwise). Content-Encoding, Cache-Control and the like are not
 * carried (s3_object_meta holds none).
 */
int fsx_copy_stamped(struct fsx_mount *m, const char *bucket, const char *src,
                     const char *dst, const char *name, const char *if_match,
                     char etag[S3_ETAG_MAX], time_t *t);

#endif
