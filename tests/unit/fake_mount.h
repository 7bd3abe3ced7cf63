/*
 * fake_mount: a mount's parts for unit tests of the read and write paths,
 * built as the daemon builds them (fs/fsx_main.c's table) but with no
 * FUSE session, no kernel store and no data plane, its S3 client talking
 * to a fake_s3 in the test's process, its cache.dir a fresh temporary
 * directory. Runs as any user.
 */
#ifndef S3R_TEST_FAKE_MOUNT_H
#define S3R_TEST_FAKE_MOUNT_H

#include "config/cfg.h"
#include "fake_s3.h"
#include "fs/mount/fsx_i.h"

#define FAKE_BUCKET "fake"

struct fake_mount {
  struct fsx_mount m;
  struct fake_s3 *s3;
  struct cfg c;
  char dir[64];               /* cache.dir */
};

/*
 * Up: the fake server with FAKE_BUCKET, then the mount's parts; tune (may
 * be NULL) sets configuration keys first (cfg_set). 0, or -1 with the
 * reason printed.
 */
int fake_mount_up(struct fake_mount *fm, void (*tune)(struct cfg *c));
void fake_mount_down(struct fake_mount *fm);

/* The inode of key (a file at the bucket's root, as a lookup makes it:
   one internal reference, fsx_inode_put), attributes from a HEAD; NULL:
   none. */
struct fsx_inode *fake_mount_file(struct fake_mount *fm, const char *name);

struct fsx_wb;
/* fsx_wb_write of [p, p + len) at off, as a FUSE write brings it. */
ssize_t fake_mount_write(struct fake_mount *fm, struct fsx_wb *wb,
                         uint64_t off, const void *p, size_t len);

/* n bytes that say where they are (each 8-byte word its offset xor seed). */
void fake_fill(void *p, size_t n, uint64_t off, uint64_t seed);

#endif
