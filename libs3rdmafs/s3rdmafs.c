/*
 * libs3rdmafs: registered buffers, direct reads and writes (API in
 * s3rdmafs.h, the ioctls in s3rdmafs_ioctl.h, the daemon's side in
 * fs/direct/fsx_direct.c and fs/direct/fsx_direct_write.c).
 *
 * DESIGN
 * - A buffer is a memfd (sealed against shrinking, as the daemon demands)
 *   mapped shared here; the daemon maps the same pages. Registrations are
 *   per open file and per process on the daemon's side, so a buffer holds
 *   one handle per open file it is used with (fd number and the file's
 *   device and inode, and the process that registered it), up to MAX_REGS
 *   at once: a descriptor closed and reused for another file registers
 *   anew; one reused for the same file gets EBADF from the daemon once,
 *   and registers anew.
 * - A handle in use is never given up: each call counts itself on it
 *   (users); a buffer used with more open files than MAX_REGS gives up
 *   the least recently used idle one, and a call finding all MAX_REGS in
 *   use waits for one (reg_change). No lock is held across an ioctl: a
 *   slot is claimed (pending) under the lock, the daemon asked outside it.
 * - Any other memory reads (writes) through the calling thread's bounce
 *   buffer (BOUNCE bytes, made on first use, freed when the thread
 *   exits): a part's worth, so that a write of it can go straight to the
 *   server as a whole part (write.part_size 8M, the default).
 * - Trust: a file's daemon gets a buffer only where its mount is
 *   s3rdmafs's and root's or the caller's own (s3rdmafs_mnt.c), and no
 *   count it answers is believed past what was asked (-EIO).
 * - fork(): a buffer is shared memory, in the child too (by design: the
 *   daemon's view of it is shared as well); the child's calls register it
 *   for the child (registrations of another process are never used), and
 *   its bounce buffers and GPU rings are its own, made on first use: the
 *   parent's are dropped in the child (fork_child), never touched there.
 * - Threads: one mutex (lock) protects the list of buffers and their
 *   registrations; the ioctls run outside it.
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
#include "libs3rdmafs/s3rdmafs_mnt.h"

#define BOUNCE (8u << 20)
#define MAX_REGS 64 /* open files one buffer holds a handle for at once */

struct lreg {
  int fd;           /* -1: a free slot */
  dev_t dev;
  ino_t ino;
  pid_t pid;        /* the process that registered it (another's: free) */
  bool pending;     /* being registered: handle not known yet */
  uint64_t handle;
  unsigned users;   /* calls using handle now: never given up while > 0 */
  uint64_t last;    /* tick of its last use: the idle one least recently
                       used is given up first */
  uint64_t id;      /* tick of its making: a call's ticket names the slot
                       (handles of two mounts may be equal) */
};

/* A call's use of a registration (reg_take, reg_put) */
struct ticket {
  unsigned slot;
  uint64_t id;
  uint64_t handle;
};

struct lbuf {
  struct lbuf *next;          /* lock */
  char *ptr;
  size_t size;
  int memfd;
  bool internal;              /* a bounce buffer or a GPU ring: dropped in
                                 a forked child */
  struct lreg regs[MAX_REGS]; /* lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* lock: a registration finished, or a handle fell idle */
static pthread_cond_t reg_change = PTHREAD_COND_INITIALIZER;
static struct lbuf *bufs; /* lock */
static uint64_t tick;     /* lock */
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static bool bounce_made;  /* bounce_key exists */

/* UNREGISTER r, where its descriptor still names that file (else the
   registration went with the open file). */
static void unregister(const struct lreg *r)
{
  struct s3rdmafs_ioc_unregister a = {.handle = r->handle};
  struct stat st;

  if (!fstat(r->fd, &st) && st.st_dev == r->dev && st.st_ino == r->ino)
    ioctl(r->fd, S3RDMAFS_IOC_UNREGISTER, &a);
}

static bool reg_live(const struct lreg *r, pid_t me)
{
  return r->fd >= 0 && r->pid == me;
}

/* b's registration on fd's open file (st) by this process (lock held) */
static struct lreg *reg_find(struct lbuf *b, int fd, const struct stat *st,
                             pid_t me)
{
  for (unsigned i = 0; i < MAX_REGS; i++) {
    struct lreg *r = &b->regs[i];
    if (reg_live(r, me) && r->fd == fd && r->dev == st->st_dev &&
        r->ino == st->st_ino)
      return r;
  }
  return NULL;
}

/* A slot for a new registration (lock held): a free one, else the least
   recently used idle one (copied to *gone, to be given up), else NULL. */
static struct lreg *reg_slot(struct lbuf *b, pid_t me, struct lreg *gone)
{
  struct lreg *lru = NULL;

  for (unsigned i = 0; i < MAX_REGS; i++) {
    struct lreg *r = &b->regs[i];
    if (!reg_live(r, me))
      return r;
    if (!r->users && !r->pending && (!lru || r->last < lru->last))
      lru = r;
  }
  if (lru)
    *gone = *lru;
  return lru;
}

/* The daemon has no room for another registration of ours (ENOSPC: its
   cap per user): the least recently used idle one of any buffer of this
   process given up. false: none is idle. */
static bool give_up_idle(void)
{
  struct lreg *lru = NULL, gone;
  pid_t me = getpid();

  pthread_mutex_lock(&lock);
  for (struct lbuf *b = bufs; b; b = b->next)
    for (unsigned i = 0; i < MAX_REGS; i++) {
      struct lreg *r = &b->regs[i];
      if (reg_live(r, me) && !r->users && !r->pending &&
          (!lru || r->last < lru->last))
        lru = r;
    }
  if (lru) {
    gone = *lru;
    lru->fd = -1;
  }
  pthread_mutex_unlock(&lock);
  if (lru)
    unregister(&gone);
  return lru != NULL;
}

/*
 * The daemon's handle for b on fd's open file, taken for one call
 * (reg_put after it): known, or registered now. stale: the ticket of a
 * call that just got EBADF (its handle gone with its open file): its
 * slot registered anew, unless another thread already has. 0 or -errno.
 */
static int reg_take(struct lbuf *b, int fd, const struct ticket *stale,
                    struct ticket *out)
{
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION,
                                    .fd = b->memfd, .len = b->size};
  struct lreg *r, gone = {.fd = -1};
  pid_t me = getpid();
  struct stat st;
  int rc;

  if (fstat(fd, &st))
    return -errno;
  pthread_mutex_lock(&lock);
  for (;;) {
    r = reg_find(b, fd, &st, me);
    if (r && !r->pending && stale && r->id == stale->id) {
      r->fd = -1; /* dead (no UNREGISTER: the daemon dropped it) */
      r = NULL;
    }
    if (r && !r->pending) {
      r->users++;
      r->last = ++tick;
      *out = (struct ticket){(unsigned)(r - b->regs), r->id, r->handle};
      pthread_mutex_unlock(&lock);
      return 0;
    }
    if (!r && (r = reg_slot(b, me, &gone)))
      break;
    /* being registered by another thread, or every slot in use: wait */
    pthread_cond_wait(&reg_change, &lock);
  }
  tick++;
  *r = (struct lreg){.fd = fd, .dev = st.st_dev, .ino = st.st_ino,
                     .pid = me, .pending = true, .users = 1, .last = tick,
                     .id = tick};
  pthread_mutex_unlock(&lock);
  if (gone.fd >= 0)
    unregister(&gone);
  rc = s3r_mnt_trusted(fd);
  for (int tries = 0; !rc; tries++) {
    if (!ioctl(fd, S3RDMAFS_IOC_REGISTER, &a))
      break;
    rc = -errno;
    if (rc == -ENOSPC && tries < 8 && give_up_idle())
      rc = 0; /* room made: again */
  }
  pthread_mutex_lock(&lock);
  r->pending = false;
  r->handle = a.handle;
  if (rc)
    r->fd = -1;
  *out = (struct ticket){(unsigned)(r - b->regs), r->id, a.handle};
  pthread_cond_broadcast(&reg_change);
  pthread_mutex_unlock(&lock);
  return rc;
}

/* The call holding ticket t of b is done with it (its slot may have been
   given up meanwhile: a stale handle's). */
static void reg_put(struct lbuf *b, const struct ticket *t)
{
  struct lreg *r = &b->regs[t->slot];

  pthread_mutex_lock(&lock);
  if (reg_live(r, getpid()) && r->id == t->id && r->users &&
      !--r->users)
    pthread_cond_broadcast(&reg_change);
  pthread_mutex_unlock(&lock);
}

/* fd < 0: registered on no file yet (each read registers it on its file
   as it needs, as for any buffer of ours); internal: the library's own
   (a bounce buffer, a GPU ring) */
static struct lbuf *lbuf_make(int fd, size_t size, bool internal, int *err)
{
  struct lbuf *b = calloc(1, sizeof(*b));
  long page = sysconf(_SC_PAGESIZE);
  struct ticket t;
  int rc = -ENOMEM;

  if (!b)
    goto fail;
  b->size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
  b->internal = internal;
  for (unsigned i = 0; i < MAX_REGS; i++)
    b->regs[i].fd = -1;
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
  rc = fd < 0 ? 0 : reg_take(b, fd, NULL, &t);
  if (!rc) {
    if (fd >= 0)
      reg_put(b, &t);
    pthread_mutex_lock(&lock);
    b->next = bufs;
    bufs = b;
    pthread_mutex_unlock(&lock);
    return b;
  }
  munmap(b->ptr, b->size);
close_memfd:
  close(b->memfd);
free_buf:
  free(b);
fail:
  *err = rc;
  return NULL;
}

/* b, off the list, given up (its owner's: no call uses it now) */
static void lbuf_free(struct lbuf *b)
{
  pid_t me = getpid();

  for (unsigned i = 0; i < MAX_REGS; i++)
    if (reg_live(&b->regs[i], me) && !b->regs[i].pending)
      unregister(&b->regs[i]);
  munmap(b->ptr, b->size);
  close(b->memfd);
  free(b);
}

/* lbuf_make for the API: its memory, or NULL with errno set. */
static void *alloc_buf(int fd, size_t size, bool internal)
{
  struct lbuf *b;
  int rc, was;

  if (!size || size > SIZE_MAX / 2) {
    errno = EINVAL;
    return NULL;
  }
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
  b = lbuf_make(fd, size, internal, &rc);
  pthread_setcancelstate(was, NULL);
  if (!b)
    errno = -rc;
  return b ? b->ptr : NULL;
}

void *s3rdmafs_buf_alloc(int fd, size_t size)
{
  return alloc_buf(fd, size, false);
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
  return alloc_buf(-1, size, true);
}

void s3rdmafs_buf_free(void *buf)
{
  struct lbuf *b = buf ? lbuf_take(buf) : NULL;

  if (b)
    lbuf_free(b);
}

static void bounce_init(void)
{
  /* (a thread's bounce buffer freed at its exit as any buffer is) */
  bounce_made = !pthread_key_create(&bounce_key, s3rdmafs_buf_free);
}

/* fork(2), while the calling thread holds lock: the lists are whole */
static void fork_prepare(void)
{
  pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
  pthread_mutex_unlock(&lock);
}

/* The child, one thread: the parent's bounce buffers and rings are its
   threads' (shared memory with the parent): dropped here (lbuf_free sends
   no UNREGISTER: the registrations carry the parent's pid, as do those of
   the other buffers, which are therefore not used here: each is
   registered anew on first use); the waits of threads that are not here
   forgotten. */
static void fork_child(void)
{
  struct lbuf **pp = &bufs, *b;

  while ((b = *pp)) {
    if (b->internal) {
      *pp = b->next;
      lbuf_free(b);
    } else {
      pp = &b->next;
    }
  }
  if (bounce_made)
    pthread_setspecific(bounce_key, NULL);
  pthread_cond_init(&reg_change, NULL);
  pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void lib_init(void)
{
  pthread_atfork(fork_prepare, fork_parent, fork_child);
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
    if ((write ? w.done : a.done) > len - *done) {
      *done = 0; /* a daemon that says more than it was asked: nothing
                    it said is believed, nothing copied */
      return -EIO;
    }
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
  struct ticket t, stale;
  ssize_t n = -EBADF;
  int rc;

  for (int attempt = 0; attempt < 2 && n == -EBADF; attempt++) {
    if ((rc = reg_take(b, fd, attempt ? &stale : NULL, &t)))
      return rc;
    n = io_on(fd, t.handle, (size_t)(p - b->ptr), len, off, flags, write);
    reg_put(b, &t);
    stale = t;
  }
  return n;
}

/* The calling thread's bounce buffer (made on first use): NULL, *rc. */
static struct lbuf *bounce_get(int fd, int *rc)
{
  void *mine;
  struct lbuf *b, *bounce = NULL;

  pthread_once(&bounce_once, bounce_init);
  if (!bounce_made) {
    *rc = -ENOMEM; /* (no thread-specific key could be made) */
    return NULL;
  }
  mine = pthread_getspecific(bounce_key);
  pthread_mutex_lock(&lock);
  for (b = bufs; mine && b; b = b->next)
    if (b->ptr == mine)
      bounce = b;
  pthread_mutex_unlock(&lock);
  if (!bounce && (bounce = lbuf_make(fd, BOUNCE, true, rc)))
    pthread_setspecific(bounce_key, bounce->ptr);
  return bounce;
}

/* read_direct and write_direct, with the ioctls' flags (not a
   cancellation point: a slot claimed or a wait under lock is never left
   behind by a cancelled thread). */
static ssize_t io_uncancelled(int fd, void *buf, size_t size, off_t off,
                              uint32_t flags, bool write)
{
  struct lbuf *b, *bounce;
  size_t done = 0;
  char *p = buf;
  int rc, mode;

  if (off < 0 || !buf)
    return -EINVAL;
  if (!size)
    return 0;
  /* as read(2) and write(2): the open file must allow it (the daemon
     says EBADF too, but only after a registration) */
  if ((mode = fcntl(fd, F_GETFL)) < 0)
    return -errno;
  mode &= O_ACCMODE;
  if (write ? mode == O_RDONLY : mode == O_WRONLY)
    return -EBADF;
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

static ssize_t io_flags(int fd, void *buf, size_t size, off_t off,
                        uint32_t flags, bool write)
{
  ssize_t n;
  int was;

  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
  n = io_uncancelled(fd, buf, size, off, flags, write);
  pthread_setcancelstate(was, NULL);
  return n;
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
  case -EACCES:
    return "the file's mount is another user's (not root's, not the "
           "caller's): its daemon is not trusted with the caller's memory";
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
