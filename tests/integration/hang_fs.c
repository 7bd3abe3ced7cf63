/*
 * hang_fs: a FUSE file system that never answers FLUSH, for the hostile
 * test of the daemon's descriptor taking (test_fs_fdtake.sh): one file,
 * "f", 4096 bytes of zeros, mode 0666. A close() of it waits until the
 * file system is unmounted or its connection aborted. Single-threaded.
 *
 *   hang_fs MOUNTPOINT        (foreground; ends when unmounted)
 */
#include "onefile_fs.h"

static void op_flush(fuse_req_t req, fuse_ino_t ino,
                     struct fuse_file_info *fi)
{
  (void)req, (void)ino, (void)fi; /* never answered */
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = onefile_lookup, .getattr = onefile_getattr,
    .open = onefile_open, .read = onefile_read, .flush = op_flush,
    .release = onefile_release,
};

int main(int argc, char **argv)
{
  return onefile_main(argc, argv, &ops, "allow_other,fsname=hang_fs", 4096);
}
