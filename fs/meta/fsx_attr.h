/* fsx_attr: what a listing or a HEAD says of one name (a value type). */
#ifndef S3R_FSX_ATTR_H
#define S3R_FSX_ATTR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define FSX_ETAG_MAX 80

/* FSX_NODE: a FIFO, socket or device node (mknod), an empty object whose
   x-amz-meta-mode carries the type; FSX_SPECIAL: the stats file */
enum fsx_kind { FSX_DIR = 1, FSX_FILE, FSX_SYMLINK, FSX_SPECIAL, FSX_NODE };

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
  /* x-amz-meta-ctime|atime when has_*; else (a HEAD) when the server
     stored the object, as s3fs shows them; 0 (a listing): the mtime */
  bool has_ctime, has_atime;
  struct timespec ctime, atime;
  dev_t rdev;                        /* x-amz-meta-rdev (device nodes) */
};

/* 64-bit FNV-1a of an ETag (or any string): the page-cache generation. */
uint64_t fsx_etag_gen(const char *etag);

#endif
