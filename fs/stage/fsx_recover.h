/*
 * fsx_recover: uploading a dead mount's staging file (fsx_stage_recover's
 * callback). The file goes up only where its key and base version can be
 * established: its base object is still the one it was made from (or, for
 * a new file, there is still none), checked by HEAD and again by the
 * upload itself (If-Match / If-None-Match on the PUT, or on the multipart
 * completion, which RGW 16 does not check: the HEAD is its check). Blocks
 * of the base it never held are read from exactly that version; a file
 * whose block map is unreliable is not uploaded. An object that already
 * holds exactly the staged bytes (the dead mount's upload had finished)
 * counts as uploaded. A request that fails without saying anything about
 * the object (the server unreachable or throttling, the mount stopping:
 * its requests are cancelled) leaves the file for the next mount
 * (-EAGAIN). Anything else is refused with the reason, and kept.
 */
#ifndef S3R_FSX_RECOVER_H
#define S3R_FSX_RECOVER_H

#include <stddef.h>

struct fsx_mount;
struct fsx_stage_rec;
struct s3_req;

/* What fsx_recover_file makes its requests with: the mount's client, and
   run(arg, q), which submits q and waits for it (cancelled, -ECANCELED,
   when the mount stops): fsx_recover_thread's. */
struct fsx_recover_io {
  struct fsx_mount *m;
  int (*run)(void *arg, struct s3_req *q);
  void *arg;
};

/* 0 when the server holds the file. */
int fsx_recover_file(const struct fsx_recover_io *io,
                     const struct fsx_stage_rec *r, const char *path, int fd,
                     int map_fd, char *reason, size_t reasonlen);

#endif
