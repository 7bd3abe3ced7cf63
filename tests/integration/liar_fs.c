/*
 * liar_fs: a FUSE file system that answers libs3rdmafs's ioctls with lies,
 * for test_lib_share.sh: one file, "f", 1 MiB of zeros, mode 0666; a
 * REGISTER gets a handle without the buffer ever being taken, a READ
 * claims a MiB more than it was asked for (nothing written), an
 * UNREGISTER succeeds. Each ioctl it gets is said on stdout ("ioctl
 * REGISTER", ...), so the test knows whether the library asked it at all.
 * Single-threaded.
 *
 *   liar_fs MOUNTPOINT        (foreground; ends when unmounted)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libs3rdmafs/s3rdmafs_ioctl.h"
#include "onefile_fs.h"

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
                     void *arg, struct fuse_file_info *fi, unsigned flags,
                     const void *in, size_t in_size, size_t out_size)
{
  union {
    struct s3rdmafs_ioc_register reg;
    struct s3rdmafs_ioc_read read;
  } u;

  (void)ino, (void)arg, (void)fi, (void)flags;
  memset(&u, 0, sizeof(u));
  if (in_size > sizeof(u) || out_size > sizeof(u)) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  memcpy(&u, in, in_size);
  switch (cmd) {
  case S3RDMAFS_IOC_REGISTER:
  case S3RDMAFS_IOC_REGISTER_DMABUF:
    printf("ioctl REGISTER\n");
    u.reg.handle = 7; /* the buffer never taken */
    break;
  case S3RDMAFS_IOC_READ:
    printf("ioctl READ\n");
    u.read.done = u.read.len + (1 << 20); /* more than asked */
    u.read.path = S3RDMAFS_PATH_CACHE;
    break;
  case S3RDMAFS_IOC_UNREGISTER:
    printf("ioctl UNREGISTER\n");
    break;
  default:
    fflush(stdout);
    fuse_reply_err(req, ENOTTY);
    return;
  }
  fflush(stdout);
  fuse_reply_ioctl(req, 0, &u, out_size);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = onefile_lookup, .getattr = onefile_getattr,
    .open = onefile_open, .read = onefile_read, .ioctl = op_ioctl,
    .release = onefile_release,
};

int main(int argc, char **argv)
{
  /* it says it is s3rdmafs: only its owner tells it apart */
  return onefile_main(argc, argv, &ops,
                      "allow_other,fsname=s3rdmafs,subtype=s3rdmafs",
                      1 << 20);
}
