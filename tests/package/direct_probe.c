/*
 * direct_probe FILE: libs3rdmafs as a program built against the installed
 * libs3rdmafs-dev uses it (tests/package/test_package.sh): the whole file
 * read with s3rdmafs_read_direct into a buffer of s3rdmafs_buf_alloc and
 * into a plain malloc one (the bounce path), both compared with read(2);
 * s3rdmafs_gpu_read without a GPU fails with -ENODEV and a reason.
 * Prints one line per check; exits 0 when all hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <s3rdmafs.h>

static int failed;

static void say(int ok, const char *what, long long got)
{
  printf("%s - %s (%lld)\n", ok ? "ok" : "not ok", what, got);
  failed |= !ok;
}

int main(int argc, char **argv)
{
  struct stat st;
  char *want, *plain, *reg;
  ssize_t n;
  int fd;

  if (argc != 2) {
    fprintf(stderr, "usage: direct_probe FILE\n");
    return 2;
  }
  fd = open(argv[1], O_RDONLY);
  if (fd < 0 || fstat(fd, &st) || st.st_size == 0) {
    perror(argv[1]);
    return 1;
  }
  want = malloc(st.st_size);
  plain = malloc(st.st_size);
  if (!want || !plain || pread(fd, want, st.st_size, 0) != st.st_size) {
    perror("read");
    return 1;
  }
  reg = s3rdmafs_buf_alloc(fd, st.st_size);
  say(reg != NULL, "s3rdmafs_buf_alloc", reg ? 0 : errno);
  if (reg) {
    n = s3rdmafs_read_direct(fd, reg, st.st_size, 0);
    say(n == st.st_size && !memcmp(reg, want, st.st_size),
        "s3rdmafs_read_direct into a registered buffer", n);
    s3rdmafs_buf_free(reg);
  }
  n = s3rdmafs_read_direct(fd, plain, st.st_size, 0);
  say(n == st.st_size && !memcmp(plain, want, st.st_size),
      "s3rdmafs_read_direct into malloc'd memory", n);
  n = s3rdmafs_gpu_read(fd, plain, 4096, 0);
  say(n == -ENODEV, "s3rdmafs_gpu_read without a GPU is -ENODEV", n);
  printf("# %s\n", s3rdmafs_strerror((int)n));
  free(want);
  free(plain);
  close(fd);
  return failed;
}
