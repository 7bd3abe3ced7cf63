/* fsx_attr: what a listing or a HEAD says of one name (a value type). */
#ifndef S3R_FSX_ATTR_H
#define S3R_FSX_ATTR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define FSX_ETAG_MAX 80

enum fsx_kind { FSX_DIR = 1, FSX_FILE, FSX_SYMLINK, FSX_SPECIAL };

struct fsx_attr {
  enum fsx_kind kind;
  uint64_t size;
  struct timespec mtime;
  char etag[FSX_ETAG_MAX];
  bool from_head;                    /* a HEAD, not a listing, said so */
  uint64_t as_of_ms;                 /* when it was learned (monotonic): an
                                        older listing never overwrites a
                                        newer HEAD */
  bool has_mode, has_uid, has_gid;   /* from x-amz-meta-* (a HEAD) */
  mode_t mode;
  uid_t uid;
  gid_t gid;
};

/* 64-bit FNV-1a of an ETag (or any string): the page-cache generation. */
uint64_t fsx_etag_gen(const char *etag);

#endif
