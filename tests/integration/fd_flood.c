/*
 * fd_flood: a hostile caller of the REGISTER ioctl (test_fs_fdtake.sh):
 * the descriptor of a file on a FUSE file system that never answers FLUSH
 * (hang_fs, mounted where its /proc link reads "/memfd:..."), handed in N
 * times. Prints how the REGISTERs ended ("errno-name count" lines), then
 * "done", and exits without closing it (that close would wait forever).
 *
 *   fd_flood MOUNT_FILE HANG_FILE N
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs_ioctl.h"

int main(int argc, char **argv)
{
  int counts[256] = {0}, ok = 0, fd, hang, n;

  if (argc != 4) {
    fprintf(stderr, "usage: fd_flood MOUNT_FILE HANG_FILE N\n");
    return 2;
  }
  fd = open(argv[1], O_RDONLY);
  hang = open(argv[2], O_RDWR);
  if (fd < 0 || hang < 0) {
    perror("open");
    return 1;
  }
  {
    char p[64], link[4096];
    ssize_t l;
    snprintf(p, sizeof(p), "/proc/self/fd/%d", hang);
    l = readlink(p, link, sizeof(link) - 1);
    link[l > 0 ? l : 0] = '\0';
    printf("link %s\n", link);
  }
  n = atoi(argv[3]);
  for (int i = 0; i < n; i++) {
    struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION,
                                      .fd = hang, .len = 4096};
    if (!ioctl(fd, S3RDMAFS_IOC_REGISTER, &a))
      ok++;
    else if (errno < 256)
      counts[errno]++;
  }
  printf("ok %d\n", ok);
  for (int e = 1; e < 256; e++)
    if (counts[e])
      printf("%s %d\n", strerrorname_np(e) ? strerrorname_np(e) : "?",
             counts[e]);
  printf("done\n");
  fflush(stdout);
  _exit(0); /* (hang stays open: its close would wait for the FLUSH) */
}
