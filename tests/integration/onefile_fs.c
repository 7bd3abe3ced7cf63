/* onefile_fs: see onefile_fs.h */
#include "onefile_fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define FILE_INO 2

static off_t file_size;

static void fill(fuse_ino_t ino, struct stat *st)
{
  memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0666;
    st->st_nlink = 1;
    st->st_size = file_size;
  }
}

void onefile_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct fuse_entry_param e;

  if (parent != FUSE_ROOT_ID || strcmp(name, "f")) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  memset(&e, 0, sizeof(e));
  e.ino = FILE_INO;
  fill(FILE_INO, &e.attr);
  fuse_reply_entry(req, &e);
}

void onefile_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct stat st;

  (void)fi;
  fill(ino, &st);
  fuse_reply_attr(req, &st, 0);
}

void onefile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  if (ino != FILE_INO)
    fuse_reply_err(req, EISDIR);
  else
    fuse_reply_open(req, fi);
}

void onefile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                  struct fuse_file_info *fi)
{
  static char zeros[65536];

  (void)ino, (void)fi;
  if (off >= file_size)
    size = 0;
  else if (size > (size_t)(file_size - off))
    size = (size_t)(file_size - off);
  fuse_reply_buf(req, zeros, size < sizeof(zeros) ? size : sizeof(zeros));
}

void onefile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  (void)ino, (void)fi;
  fuse_reply_err(req, 0);
}

int onefile_main(int argc, char **argv, const struct fuse_lowlevel_ops *ops,
                 const char *opts, off_t size)
{
  struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
  struct fuse_session *se;
  int rc = 1;

  if (argc != 2) {
    fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
    return 2;
  }
  file_size = size;
  if (fuse_opt_add_arg(&args, argv[0]) || fuse_opt_add_arg(&args, "-o") ||
      fuse_opt_add_arg(&args, opts))
    return 1;
  se = fuse_session_new(&args, ops, sizeof(*ops), NULL);
  if (se && !fuse_session_mount(se, argv[1])) {
    printf("ready\n");
    fflush(stdout);
    rc = fuse_session_loop(se) < 0;
    fuse_session_unmount(se);
  }
  if (se)
    fuse_session_destroy(se);
  fuse_opt_free_args(&args);
  return rc;
}
