/*
 * hang_fs: a FUSE file system that never answers FLUSH, for the hostile
 * test of the daemon's descriptor taking (test_fs_fdtake.sh): one file,
 * "f", 4096 bytes of zeros, mode 0666. A close() of it waits until the
 * file system is unmounted or its connection aborted. Single-threaded.
 *
 *   hang_fs MOUNTPOINT        (foreground; ends when unmounted)
 */
#define FUSE_USE_VERSION 35
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define FILE_INO 2

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
    st->st_size = 4096;
  }
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  struct stat st;

  (void)fi;
  fill(ino, &st);
  fuse_reply_attr(req, &st, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  if (ino != FILE_INO)
    fuse_reply_err(req, EISDIR);
  else
    fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
  static char zeros[4096];

  (void)ino, (void)fi;
  if (off >= 4096)
    fuse_reply_buf(req, NULL, 0);
  else
    fuse_reply_buf(req, zeros, size < 4096 - (size_t)off
                                   ? size : 4096 - (size_t)off);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino,
                     struct fuse_file_info *fi)
{
  (void)req, (void)ino, (void)fi; /* never answered */
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  (void)ino, (void)fi;
  fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = op_lookup, .getattr = op_getattr, .open = op_open,
    .read = op_read, .flush = op_flush, .release = op_release,
};

int main(int argc, char **argv)
{
  struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
  struct fuse_session *se;
  int rc = 1;

  if (argc != 2) {
    fprintf(stderr, "usage: hang_fs MOUNTPOINT\n");
    return 2;
  }
  if (fuse_opt_add_arg(&args, argv[0]) ||
      fuse_opt_add_arg(&args, "-oallow_other,fsname=hang_fs"))
    return 1;
  se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
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
