/*
 * libs3rdmafs: registered buffers, direct reads and writes (API in
 * s3rdmafs.h, the ioctls in s3rdmafs_ioctl.h, the daemon's side in
 * fs/fsx_direct.c and fs/fsx_direct_write.c).
 *
 * DESIGN
 * - A buffer is a memfd (sealed against shrinking, as the daemon demands)
 *   mapped shared here; the daemon maps the same pages. Registrations are
 *   per open file on the daemon's side, so a buffer holds one handle per
 *   open file it was used with (fd number and the file's device and inode:
 *   a descriptor closed and reused for another file registers anew; one
 *   reused for the same file gets EBADF from the daemon once, and
 *   registers anew).
 * - Any other memory reads (writes) through the calling thread's bounce
 *   buffer (BOUNCE bytes, made on first use, freed when the thread
 *   exits): a part's worth, so that a write of it can go straight to the
 *   server as a whole part (write.part_size 8M, the default).
 * - Threads: one mutex (lock) protects the list of buffers and their
 *   handles; the ioctls that move data run outside it.
 */
#include "libs3rdmafs/s3rdmafs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs_cuda.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

#define BOUNCE (8u << 20)
#define MAX_REGS 16 /* open files one buffer remembers its handle for */

struct lreg {
  int fd;
  dev_t dev;
  ino_t ino;
  uint64_t handle;
};

struct lbuf {
  struct lbuf *next;          /* lock */
  char *ptr;
  size_t size;
  int memfd;
  struct lreg regs[MAX_REGS]; /* lock */
  unsigned nregs;             /* lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct lbuf *bufs; /* lock */
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

/* UNREGISTER r, where its descriptor still names that file (else the
   registration went with the open file). */
static void unregister(const struct lreg *r)
{
  struct s3rdmafs_ioc_unregister a = {.handle = r->handle};
  struct stat st;

  if (!fstat(r->fd, &st) && st.st_dev == r->dev && st.st_ino == r->ino)
    ioctl(r->fd, S3RDMAFS_IOC_UNREGISTER, &a);
}

/* The daemon's handle for b on fd's open file (lock held): registered
   when unknown, or when stale. 0 or -errno. */
static int handle_for(struct lbuf *b, int fd, bool stale, uint64_t *out)
{
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION,
                                    .fd = b->memfd, .len = b->size};
  struct stat st;
  unsigned i;

  if (fstat(fd, &st))
    return -errno;
  for (i = 0; i < b->nregs; i++)
    if (b->regs[i].fd == fd && b->regs[i].dev == st.st_dev &&
        b->regs[i].ino == st.st_ino)
      break;
  if (i < b->nregs && !stale) {
    *out = b->regs[i].handle;
    return 0;
  }
  if (ioctl(fd, S3RDMAFS_IOC_REGISTER, &a))
    return -errno;
  if (i == b->nregs) {
    if (b->nregs == MAX_REGS) { /* the oldest given up */
      unregister(&b->regs[0]);
      memmove(b->regs, b->regs + 1, sizeof(b->regs[0]) * (MAX_REGS - 1));
      i = MAX_REGS - 1;
    } else {
      b->nregs++;
    }
  } else {
    unregister(&b->regs[i]); /* stale: gone already, or replaced now */
  }
  b->regs[i] = (struct lreg){fd, st.st_dev, st.st_ino, a.handle};
  *out = a.handle;
  return 0;
}

/* fd < 0: registered on no file yet (each read registers it on its file
   as it needs, as for any buffer of ours) */
static struct lbuf *lbuf_make(int fd, size_t size, int *err)
{
  struct lbuf *b = calloc(1, sizeof(*b));
  long page = sysconf(_SC_PAGESIZE);
  uint64_t h;
  int rc = -ENOMEM;

  if (!b)
    goto fail;
  b->size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
  b->memfd = memfd_create("s3rdmafs-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (b->memfd < 0) {
    rc = -errno;
    goto free_buf;
  }
  if (ftruncate(b->memfd, (off_t)b->size) ||
      fcntl(b->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
    rc = -errno;
    goto close_memfd;
  }
  b->ptr = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
  if (b->ptr == MAP_FAILED) {
    rc = -errno;
    goto close_memfd;
  }
  pthread_mutex_lock(&lock);
  rc = fd < 0 ? 0 : handle_for(b, fd, false, &h);
  if (!rc) {
    b->next = bufs;
    bufs = b;
  }
  pthread_mutex_unlock(&lock);
  if (!rc)
    return b;
  munmap(b->ptr, b->size);
close_memfd:
  close(b->memfd);
free_buf:
  free(b);
fail:
  *err = rc;
  return NULL;
}

static void lbuf_free(struct lbuf *b)
{
  for (unsigned i = 0; i < b->nregs; i++)
    unregister(&b->regs[i]);
  munmap(b->ptr, b->size);
  close(b->memfd);
  free(b);
}

/* lbuf_make for the API: its memory, or NULL with errno set. */
static void *alloc_buf(int fd, size_t size)
{
  struct lbuf *b;
  int rc;

  if (!size || size > SIZE_MAX / 2) {
    errno = EINVAL;
    return NULL;
  }
  b = lbuf_make(fd, size, &rc);
  if (!b)
    errno = -rc;
  return b ? b->ptr : NULL;
}

void *s3rdmafs_buf_alloc(int fd, size_t size)
{
  return alloc_buf(fd, size);
}

/* The buffer starting at ptr, unlinked from the list (the caller frees
   it); NULL: none. */
static struct lbuf *lbuf_take(const void *ptr)
{
  struct lbuf **pp, *b = NULL;

  pthread_mutex_lock(&lock);
  for (pp = &bufs; *pp; pp = &(*pp)->next)
    if ((*pp)->ptr == ptr) {
      b = *pp;
      *pp = b->next;
      break;
    }
  pthread_mutex_unlock(&lock);
  return b;
}

void *s3r_buf_alloc_lazy(size_t size)
{
  return alloc_buf(-1, size);
}

void s3rdmafs_buf_free(void *buf)
{
  struct lbuf *b = buf ? lbuf_take(buf) : NULL;

  if (b)
    lbuf_free(b);
}

static void bounce_free(void *p)
{
  struct lbuf *b = lbuf_take(p);

  if (b)
    lbuf_free(b);
}

static void bounce_init(void)
{
  pthread_key_create(&bounce_key, bounce_free);
}

int s3r_io(int fd, uint64_t h, size_t buf_off, size_t len, off_t off,
           uint32_t flags, bool write, size_t *done)
{
  *done = 0;
  while (*done < len) {
    struct s3rdmafs_ioc_read a = {.handle = h, .buf_off = buf_off + *done,
                                  .file_off = (uint64_t)off + *done,
                                  .len = len - *done, .flags = flags};
    struct s3rdmafs_ioc_write w = {.handle = h, .buf_off = buf_off + *done,
                                   .file_off = (uint64_t)off + *done,
                                   .len = len - *done, .flags = flags};
    if (write ? ioctl(fd, S3RDMAFS_IOC_WRITE, &w)
              : ioctl(fd, S3RDMAFS_IOC_READ, &a))
      return -errno;
    if (write && !w.done)
      return -EIO; /* no progress */
    if (!write && !a.done)
      break; /* the end of the file */
    *done += write ? w.done : a.done;
  }
  return 0;
}

/* s3r_io: done, or -errno when nothing moved. */
static ssize_t io_on(int fd, uint64_t h, size_t buf_off, size_t len,
                     off_t off, uint32_t flags, bool write)
{
  size_t done;
  int rc = s3r_io(fd, h, buf_off, len, off, flags, write, &done);

  return rc && !done ? rc : (ssize_t)done;
}

/* With registered buffer b (which holds [p, p + len)), registering it on
   fd's file first where needed, once more on a stale handle. */
static ssize_t io_registered(int fd, struct lbuf *b, char *p, size_t len,
                             off_t off, uint32_t flags, bool write)
{
  ssize_t n = -EBADF;
  uint64_t h;
  int rc;

  for (int attempt = 0; attempt < 2 && n == -EBADF; attempt++) {
    pthread_mutex_lock(&lock);
    rc = handle_for(b, fd, attempt > 0, &h);
    pthread_mutex_unlock(&lock);
    if (rc)
      return rc;
    n = io_on(fd, h, (size_t)(p - b->ptr), len, off, flags, write);
  }
  return n;
}

/* The calling thread's bounce buffer (made on first use): NULL, *rc. */
static struct lbuf *bounce_get(int fd, int *rc)
{
  void *mine;
  struct lbuf *b, *bounce = NULL;

  pthread_once(&bounce_once, bounce_init);
  mine = pthread_getspecific(bounce_key);
  pthread_mutex_lock(&lock);
  for (b = bufs; mine && b; b = b->next)
    if (b->ptr == mine)
      bounce = b;
  pthread_mutex_unlock(&lock);
  if (!bounce && (bounce = lbuf_make(fd, BOUNCE, rc)))
    pthread_setspecific(bounce_key, bounce->ptr);
  return bounce;
}

/* read_direct and write_direct, with the ioctls' flags. */
static ssize_t io_flags(int fd, void *buf, size_t size, off_t off,
                        uint32_t flags, bool write)
{
  struct lbuf *b, *bounce;
  size_t done = 0;
  char *p = buf;
  int rc;

  if (off < 0 || !buf)
    return -EINVAL;
  if (!size)
    return 0;
  s3r_gpu_clear_error(); /* (an EIO from here is not a CUDA call's) */
  if (size > (size_t)SSIZE_MAX)
    size = (size_t)SSIZE_MAX;
  pthread_mutex_lock(&lock);
  for (b = bufs; b; b = b->next)
    if (p >= b->ptr && size <= b->size && (size_t)(p - b->ptr) <= b->size - size)
      break;
  pthread_mutex_unlock(&lock);
  if (b) /* buffers are freed by their owner only: b stays while in use */
    return io_registered(fd, b, p, size, off, flags, write);
  if (!(bounce = bounce_get(fd, &rc)))
    return rc;
  while (done < size) {
    size_t piece = size - done < BOUNCE ? size - done : BOUNCE;
    ssize_t n;
    if (write)
      memcpy(bounce->ptr, p + done, piece);
    n = io_registered(fd, bounce, bounce->ptr, piece, off + (off_t)done,
                      flags, write);
    if (n < 0)
      return done ? (ssize_t)done : n;
    if (!write)
      memcpy(p + done, bounce->ptr, (size_t)n);
    done += (size_t)n;
    if ((size_t)n < piece)
      break;
  }
  return (ssize_t)done;
}

ssize_t s3rdmafs_read_direct(int fd, void *buf, size_t size, off_t off)
{
  return io_flags(fd, buf, size, off, 0, false);
}

ssize_t s3r_read_flags(int fd, void *buf, size_t size, off_t off,
                       uint32_t flags)
{
  return io_flags(fd, buf, size, off, flags, false);
}

ssize_t s3rdmafs_write_direct(int fd, const void *buf, size_t size, off_t off)
{
  return io_flags(fd, (void *)(uintptr_t)buf, size, off, 0, true);
}

ssize_t s3r_write_flags(int fd, const void *buf, size_t size, off_t off,
                        uint32_t flags)
{
  return io_flags(fd, (void *)(uintptr_t)buf, size, off, flags, true);
}

const char *s3rdmafs_strerror(int err)
{
  if (err > 0)
    err = -err;
  if ((err == -EIO || err == -ENOMEM) && s3r_gpu_last_error()[0])
    return s3r_gpu_last_error(); /* this thread's last failed CUDA call */
  switch (err) {
  case -ENODEV:
    return s3r_cuda_reason()[0] ? s3r_cuda_reason() : "no such device";
  case -ENOTTY:
    return "not a file on an s3rdmafs mount (or its daemon predates "
           "direct reads or writes)";
  case -EPERM:
    return "the daemon may not take the caller's file descriptor "
           "(pidfd_getfd): run it as the caller's user, or as root";
  case -EBADF:
    return "not an open file, or a buffer not registered for it";
  case -EOPNOTSUPP:
    return "the daemon speaks another version of libs3rdmafs's ioctls";
  case -ESTALE:
    return "the object changed on the server since the file was opened";
  default:
    return strerrordesc_np(-err) ? strerrordesc_np(-err) : "unknown error";
  }
}
