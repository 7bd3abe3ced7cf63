/*
 * direct_bw: one sequential pass over a file on an s3rdmafs mount, in
 * chunks, by s3rdmafs_read_direct into a registered buffer ("direct") or
 * by read(2) ("read"); or a new file of SIZE_MiB written in chunks from a
 * registered buffer by s3rdmafs_write_direct ("wdirect") or by write(2)
 * ("write"), its close (the upload's end) timed too. For
 * bench/fs_direct.sh. Prints one line:
 *   bytes=N seconds=S cpu=C crc=X
 * (C: this process's user+system seconds; X: a checksum of the bytes
 * read, so that both modes can be compared; 0 for writes).
 *
 *   direct_bw FILE CHUNK_MiB direct|read
 *   direct_bw FILE CHUNK_MiB wdirect|write SIZE_MiB
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The write modes: 0, or 1 with the reason said. */
static int write_pass(const char *path, size_t chunk, int direct,
                      uint64_t size)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *buf = fd < 0 ? NULL
              : direct ? s3rdmafs_buf_alloc(fd, chunk)
                       : aligned_alloc(4096, chunk);
  uint64_t total = 0;
  double t0, c0;

  if (!buf) {
    fprintf(stderr, "direct_bw: %s: %s\n", path, strerror(errno));
    return 1;
  }
  for (size_t i = 0; i < chunk; i++)
    buf[i] = (char)(i * 131 + i / 4093);
  t0 = now();
  c0 = cpu();
  while (total < size) {
    size_t piece = size - total < chunk ? (size_t)(size - total) : chunk;
    ssize_t n = direct ? s3rdmafs_write_direct(fd, buf, piece, (off_t)total)
                       : write(fd, buf, piece);
    if (n <= 0) {
      fprintf(stderr, "direct_bw: %s\n",
              n < 0 ? s3rdmafs_strerror(direct ? (int)n : errno) : "no progress");
      return 1;
    }
    total += (uint64_t)n;
  }
  if (close(fd)) {
    fprintf(stderr, "direct_bw: close: %s\n", strerror(errno));
    return 1;
  }
  printf("bytes=%llu seconds=%.3f cpu=%.3f crc=0\n",
         (unsigned long long)total, now() - t0, cpu() - c0);
  return 0;
}

int main(int argc, char **argv)
{
  size_t chunk = argc == 4 ? (size_t)atoi(argv[2]) << 20 : 0;
  int direct = argc == 4 && !strcmp(argv[3], "direct");
  int fd = argc == 4 ? open(argv[1], O_RDONLY) : -1;
  uint64_t total = 0, crc = 0;
  double t0, c0;
  char *buf;

  if (argc == 5 && (!strcmp(argv[3], "wdirect") || !strcmp(argv[3], "write")))
    return write_pass(argv[1], (size_t)atoi(argv[2]) << 20,
                      !strcmp(argv[3], "wdirect"),
                      (uint64_t)atoi(argv[4]) << 20);
  if (!chunk || fd < 0 || (!direct && strcmp(argv[3], "read"))) {
    fprintf(stderr, "usage: direct_bw FILE CHUNK_MiB direct|read\n"
                    "       direct_bw FILE CHUNK_MiB wdirect|write SIZE_MiB\n");
    return 2;
  }
  buf = direct ? s3rdmafs_buf_alloc(fd, chunk) : aligned_alloc(4096, chunk);
  if (!buf) {
    fprintf(stderr, "direct_bw: %s\n", s3rdmafs_strerror(errno));
    return 1;
  }
  t0 = now();
  c0 = cpu();
  for (;;) {
    ssize_t n = direct ? s3rdmafs_read_direct(fd, buf, chunk, (off_t)total)
                       : read(fd, buf, chunk);
    if (n < 0) {
      fprintf(stderr, "direct_bw: %s\n",
              s3rdmafs_strerror(direct ? (int)n : errno));
      return 1;
    }
    if (n == 0)
      break;
    for (ssize_t i = 0; i < n; i += 4096) /* touch, as a consumer would */
      crc = crc * 31 + (unsigned char)buf[i];
    total += (uint64_t)n;
  }
  printf("bytes=%llu seconds=%.3f cpu=%.3f crc=%llx\n",
         (unsigned long long)total, now() - t0, cpu() - c0,
         (unsigned long long)crc);
  return 0;
}
