/*
 * fsx_direct: registrations of caller buffers (memfds and dma-bufs), their
 * counts per user and mount, and the ioctls' dispatch; READ is
 * fsx_direct_read.c's, WRITE fsx_direct_write.c's (design in
 * fsx_direct.h).
 */
#include "fs/direct/fsx_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/slog.h"
#include "fs/direct/fsx_direct_i.h"
#include "fs/direct/fsx_fdtake.h"
#include "fs/mount/fsx_i.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/read/fsx_read.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

/* The users with registrations at most: as many as registrations, so that
   no user is refused for others' taking the entries */
#define USERS FSX_DIRECT_MOUNT_REGS

/* Buckets of the open files holding registrations (by handle address). */
#define FILE_BUCKETS 256

/* An open file's registrations, from its first until its release. */
struct dfile {
  struct dfile *next;         /* fsx_direct.lock: its bucket's chain */
  const struct fsx_fh *fh;    /* fixed */
  struct fsx_dreg *regs;      /* fsx_direct.lock */
  unsigned n;                 /* fsx_direct.lock: how many */
};

struct fsx_direct {
  struct fsx_fdtake *take;
  pthread_mutex_t lock;
  struct {
    uid_t uid;
    unsigned regs;            /* 0: a free entry */
  } users[USERS];             /* protected by lock */
  struct dfile *files[FILE_BUCKETS]; /* protected by lock */
};

/* A registration for uid counted (at most FSX_DIRECT_USER_REGS), or
   -ENOSPC. */
static int user_take(struct fsx_direct *x, uid_t uid)
{
  int rc = -ENOSPC, free_at = -1;

  pthread_mutex_lock(&x->lock);
  for (int i = 0; i < USERS; i++) {
    if (x->users[i].regs && x->users[i].uid == uid) {
      if (x->users[i].regs < FSX_DIRECT_USER_REGS) {
        x->users[i].regs++;
        rc = 0;
      }
      free_at = -2; /* found */
      break;
    }
    if (!x->users[i].regs && free_at == -1)
      free_at = i;
  }
  if (free_at >= 0) {
    x->users[free_at].uid = uid;
    x->users[free_at].regs = 1;
    rc = 0;
  }
  pthread_mutex_unlock(&x->lock);
  return rc;
}

static void user_give(struct fsx_direct *x, uid_t uid)
{
  pthread_mutex_lock(&x->lock);
  for (int i = 0; i < USERS; i++)
    if (x->users[i].regs && x->users[i].uid == uid) {
      x->users[i].regs--;
      break;
    }
  pthread_mutex_unlock(&x->lock);
}

static void dreg_free(struct fsx_mount *m, struct fsx_dreg *d)
{
  if (d->counted)
    user_give(m->direct, d->uid);
  /* (deregistering a dma-buf revokes what a server could still do) */
  if (d->dmabuf)
    fsx_rdma_unreg_dmabuf(m, d->dmabuf);
  else if (!d->kept)
    munmap(d->map, d->len);
  atomic_fetch_sub(&m->st.direct_regs_now, 1);
  free(d);
}

/* The process of thread tid (a FUSE request names the thread, which waits
   in the ioctl: neither can go meanwhile): its pid and its start time. */
static int caller_of(pid_t tid, pid_t *tgid, unsigned long long *start)
{
  char path[64], line[1024], *p;
  FILE *f;
  int n;

  *tgid = -1;
  snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
  if (!(f = fopen(path, "re")))
    return -ESRCH;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "Tgid: %d", tgid) == 1)
      break;
  fclose(f);
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)*tgid);
  if (*tgid <= 0 || !(f = fopen(path, "re")))
    return -ESRCH;
  n = fgets(line, sizeof(line), f) ? 1 : 0;
  fclose(f);
  /* field 22, counted after the command's closing parenthesis (field 2) */
  p = n ? strrchr(line, ')') : NULL;
  for (n = 2; p && n < 22; n++)
    p = strchr(p + 1, ' ');
  if (!p || sscanf(p, " %llu", start) != 1)
    return -ESRCH;
  return 0;
}

/* (descriptors are taken by fsx_fdtake, on the thread that keeps the
   capabilities the daemon had at start) */

int fsx_direct_start(struct fsx_mount *m)
{
  struct fsx_direct *x = calloc(1, sizeof(*x));
  int rc;

  if (!x)
    return -ENOMEM;
  if ((rc = fsx_fdtake_start(&x->take))) {
    free(x);
    return rc;
  }
  pthread_mutex_init(&x->lock, NULL);
  m->direct = x;
  return 0;
}

void fsx_direct_stop(struct fsx_mount *m)
{
  struct fsx_direct *x = m->direct;

  if (!x)
    return;
  fsx_direct_release_all(m);
  fsx_fdtake_stop(x->take);
  pthread_mutex_destroy(&x->lock);
  free(x);
  m->direct = NULL;
}

void fsx_direct_release_all(struct fsx_mount *m)
{
  struct fsx_direct *x = m->direct;

  for (int i = 0; x && i < FILE_BUCKETS; i++)
    while (x->files[i]) /* (each release takes its record off) */
      fsx_direct_release(m, x->files[i]->fh);
}

/* The link to fh's record in its bucket, or to the end of the bucket's
   chain when it has none (lock held). */
static struct dfile **file_slot(struct fsx_direct *x, const struct fsx_fh *fh)
{
  uint64_t h = (uint64_t)(uintptr_t)fh * 0x9e3779b97f4a7c15ull;
  struct dfile **pp = &x->files[(h >> 32) % FILE_BUCKETS];

  while (*pp && (*pp)->fh != fh)
    pp = &(*pp)->next;
  return pp;
}

/* Made d (mapped or registered) fh's registration of process tgid (user
   uid), its handle in *handle; else -ENOSPC (the file's, the user's or
   the mount's limit) or -ENOMEM, and d undone and freed. */
static int dreg_add(struct fsx_mount *m, struct fsx_fh *fh, pid_t tgid,
                    unsigned long long start, uid_t uid, struct fsx_dreg *d,
                    uint64_t *handle)
{
  static _Atomic uint64_t next_handle = 1;
  struct fsx_direct *x = m->direct;
  struct dfile **pp, *f;
  bool added = false;
  int rc = 0;

  /* the mount's, then the user's: one user may not take them all */
  if (atomic_fetch_add(&m->st.direct_regs_now, 1) >= FSX_DIRECT_MOUNT_REGS ||
      (rc = user_take(m->direct, uid))) {
    rc = rc ? rc : -ENOSPC; /* (dreg_free undoes the count) */
    dreg_free(m, d);
    return rc;
  }
  d->uid = uid;
  d->counted = true; /* (given back by dreg_free from here on) */
  d->tgid = tgid;
  d->start = start;
  d->handle = atomic_fetch_add(&next_handle, 1);
  pthread_mutex_lock(&x->lock);
  pp = file_slot(x, fh);
  if (!*pp && (*pp = calloc(1, sizeof(**pp))))
    (*pp)->fh = fh;
  if ((f = *pp) && f->n < FSX_DIRECT_REGS) {
    d->next = f->regs;
    f->regs = d;
    f->n++;
    added = true;
  }
  pthread_mutex_unlock(&x->lock);
  if (!added) {
    dreg_free(m, d);
    return f ? -ENOSPC : -ENOMEM;
  }
  atomic_fetch_add(&m->st.direct_regs, 1);
  *handle = d->handle;
  return 0;
}

static int do_register(struct fsx_mount *m, struct fsx_fh *fh, pid_t tgid,
                       unsigned long long start, uid_t uid,
                       struct s3rdmafs_ioc_register *a)
{
  struct fsx_dreg *d;
  struct statfs sf;
  struct stat st;
  int fd, seals;

  if (a->version != S3RDMAFS_IOC_VERSION)
    return -EOPNOTSUPP;
  if (!a->len || a->len > FSX_DIRECT_LEN_MAX || a->fd < 0 || a->flags)
    return -EINVAL;
  if (atomic_load(&m->st.direct_regs_now) >= FSX_DIRECT_MOUNT_REGS)
    return -ENOSPC;
  fd = fsx_fdtake(m->direct->take, tgid, uid, a->fd, FSX_FD_MEMFD);
  if (fd < 0) {
    atomic_fetch_add(&m->st.direct_refused, 1);
    return fd; /* EPERM: we may not ptrace the caller */
  }
  /* (fsx_fdtake asked the descriptor taken again: a memfd's) its seals
     (only shmem and hugetlbfs files have them), which reaches no file
     system's server, as an fstat of a FUSE file would */
  seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    fsx_fdtake_close_later(uid, fd);
    atomic_fetch_add(&m->st.direct_refused, 1);
    return -EINVAL;
  }
  /* tmpfs only: a hugetlbfs memfd may lose its pages to a hole punched
     (its reservation with them), and a write into it would SIGBUS us */
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fstatfs(fd, &sf) ||
      sf.f_type != TMPFS_MAGIC || !(seals & F_SEAL_SHRINK) ||
      (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) ||
      (uint64_t)st.st_size < a->len) {
    close(fd);
    atomic_fetch_add(&m->st.direct_refused, 1);
    return -EINVAL; /* not a memfd sealed against shrinking, or short */
  }
  d = calloc(1, sizeof(*d));
  if (!d) {
    close(fd);
    return -ENOMEM;
  }
  d->len = (size_t)a->len;
  d->map = mmap(NULL, d->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (d->map == MAP_FAILED) {
    int rc = -errno;
    free(d);
    return rc;
  }
  return dreg_add(m, fh, tgid, start, uid, d, &a->handle);
}

/* A dma-buf refused: counted, and said once (info after that). */
static int refuse_dmabuf(struct fsx_mount *m, const char *why)
{
  static _Atomic bool told;

  atomic_fetch_add(&m->st.direct_gpudirect_refused, 1);
  if (!atomic_exchange(&told, true))
    log_notice("direct: GPUDirect refused (%s): the library stages such "
               "reads through host memory (direct.gpudirect_refused)", why);
  else
    log_info("direct: GPUDirect refused: %s", why);
  return -EOPNOTSUPP;
}

/* REGISTER_DMABUF: the data plane asked first, so that a mount that
   cannot use it takes no descriptor. */
static int do_register_dmabuf(struct fsx_mount *m, struct fsx_fh *fh,
                              pid_t tgid, unsigned long long start,
                              uid_t uid, struct s3rdmafs_ioc_register *a)
{
  char why[256];
  struct fsx_dreg *d;
  void *reg;
  int fd, rc, acc;

  if (a->version != S3RDMAFS_IOC_VERSION)
    return -EOPNOTSUPP;
  if (!a->len || a->len > FSX_DIRECT_LEN_MAX || a->len % 4096 || a->fd < 0 ||
      (a->flags & ~S3RDMAFS_REG_FLAGS))
    return -EINVAL;
  if (fsx_rdma_dmabuf_ok(m, why, sizeof(why)))
    return refuse_dmabuf(m, why);
  if (atomic_load(&m->st.direct_regs_now) >= FSX_DIRECT_MOUNT_REGS)
    return -ENOSPC;
  fd = fsx_fdtake(m->direct->take, tgid, uid, a->fd, FSX_FD_DMABUF);
  if (fd < 0) {
    atomic_fetch_add(&m->st.direct_refused, 1);
    return fd;
  }
  /* (still a dma-buf, not swapped since the check: fsx_fdtake asked
     the descriptor taken again) */
  /* a READ's: the server writes into it, so the caller must hold it for
     writing; a WRITE's, that it reads from, for reading (the NIC's
     registration would not ask) */
  acc = fcntl(fd, F_GETFL) & O_ACCMODE;
  if ((a->flags & S3RDMAFS_REG_SOURCE) ? acc == O_WRONLY : acc != O_RDWR) {
    close(fd);
    atomic_fetch_add(&m->st.direct_refused, 1);
    return -EACCES;
  }
  rc = fsx_rdma_reg_dmabuf(m, fd, (size_t)a->len,
                           (a->flags & S3RDMAFS_REG_SOURCE) != 0, &reg, why,
                           sizeof(why));
  close(fd); /* (the registration holds the dma-buf) */
  if (rc == -EAGAIN)
    log_info("direct: GPUDirect registration failed (this call staged): %s",
             why);
  if (rc)
    return rc == -EOPNOTSUPP ? refuse_dmabuf(m, why) : rc;
  if (!(d = calloc(1, sizeof(*d)))) {
    fsx_rdma_unreg_dmabuf(m, reg);
    return -ENOMEM;
  }
  d->dmabuf = reg;
  d->source = (a->flags & S3RDMAFS_REG_SOURCE) != 0;
  d->len = (size_t)a->len;
  rc = dreg_add(m, fh, tgid, start, uid, d, &a->handle);
  if (!rc)
    atomic_fetch_add(&m->st.direct_gpudirect_regs, 1);
  return rc;
}

struct fsx_dreg *fsx_dreg_use(struct fsx_mount *m, const struct fsx_fh *fh,
                              uint64_t handle, pid_t tgid,
                              unsigned long long start, bool unlink)
{
  struct fsx_direct *x = m->direct;
  struct fsx_dreg **pp, *d = NULL;
  struct dfile *f;

  pthread_mutex_lock(&x->lock);
  f = *file_slot(x, fh);
  for (pp = f ? &f->regs : NULL; pp && *pp; pp = &(*pp)->next)
    if ((*pp)->handle == handle && (*pp)->tgid == tgid &&
        (*pp)->start == start) {
      d = *pp;
      if (unlink) {
        *pp = d->next;
        d->gone = true;
        f->n--;
      }
      d->busy++;
      break;
    }
  pthread_mutex_unlock(&x->lock);
  return d;
}

void fsx_dreg_drop(struct fsx_mount *m, const struct fsx_fh *fh,
                   struct fsx_dreg *d)
{
  struct fsx_direct *x = m->direct;
  struct dfile *f;

  pthread_mutex_lock(&x->lock);
  f = *file_slot(x, fh);
  for (struct fsx_dreg **pp = f ? &f->regs : NULL; pp && *pp;
       pp = &(*pp)->next)
    if (*pp == d) {
      *pp = d->next;
      f->n--;
      break;
    }
  d->gone = true;
  pthread_mutex_unlock(&x->lock);
}

void fsx_dreg_done(struct fsx_mount *m, struct fsx_dreg *d)
{
  struct fsx_direct *x = m->direct;
  bool last;

  pthread_mutex_lock(&x->lock);
  last = --d->busy == 0 && d->gone;
  pthread_mutex_unlock(&x->lock);
  if (last)
    dreg_free(m, d);
}

/* Are an argument's reserved words all zero (for what a later version
   may give them a meaning)? */
static bool zero(const uint64_t *w, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (w[i])
      return false;
  return true;
}
#define RESERVED_ZERO(a) zero((a)->reserved, sizeof((a)->reserved) / 8)

int fsx_direct_ioctl(struct fsx_mount *m, struct fsx_fh *fh, pid_t tid,
                     uid_t uid, unsigned int cmd, void *arg)
{
  unsigned long long start;
  struct fsx_dreg *d;
  pid_t tgid;

  /* what the open allowed: no reading through a file opened to write,
     no writing through one opened to read */
  bool readable = fsx_fh_is(fh, FSX_FH_READABLE);
  bool writer = fsx_fh_is(fh, FSX_FH_WRITER);

  if ((cmd == S3RDMAFS_IOC_READ && !readable) ||
      (cmd == S3RDMAFS_IOC_WRITE && !writer) || (!readable && !writer))
    return -EBADF;
  if (caller_of(tid, &tgid, &start))
    return -ESRCH;
  switch (cmd) {
  case S3RDMAFS_IOC_REGISTER:
  case S3RDMAFS_IOC_REGISTER_DMABUF:
    if (!RESERVED_ZERO((struct s3rdmafs_ioc_register *)arg) ||
        ((struct s3rdmafs_ioc_register *)arg)->reserved32)
      return -EINVAL;
    return cmd == S3RDMAFS_IOC_REGISTER
               ? do_register(m, fh, tgid, start, uid, arg)
               : do_register_dmabuf(m, fh, tgid, start, uid, arg);
  case S3RDMAFS_IOC_READ:
    if (!RESERVED_ZERO((struct s3rdmafs_ioc_read *)arg))
      return -EINVAL;
    return fsx_direct_read(m, fh, tgid, start, arg);
  case S3RDMAFS_IOC_WRITE:
    if (!RESERVED_ZERO((struct s3rdmafs_ioc_write *)arg))
      return -EINVAL;
    return fsx_direct_write(m, fh, tgid, start, arg);
  case S3RDMAFS_IOC_UNREGISTER:
    if (!RESERVED_ZERO((struct s3rdmafs_ioc_unregister *)arg))
      return -EINVAL;
    d = fsx_dreg_use(m, fh, ((struct s3rdmafs_ioc_unregister *)arg)->handle,
                     tgid, start, true);
    if (!d)
      return -EBADF;
    fsx_dreg_done(m, d);
    return 0;
  default:
    return -ENOTTY;
  }
}

bool fsx_direct_cmd(unsigned int cmd)
{
  return cmd == S3RDMAFS_IOC_REGISTER || cmd == S3RDMAFS_IOC_UNREGISTER ||
         cmd == S3RDMAFS_IOC_READ || cmd == S3RDMAFS_IOC_REGISTER_DMABUF ||
         cmd == S3RDMAFS_IOC_WRITE;
}

void fsx_direct_release(struct fsx_mount *m, const struct fsx_fh *fh)
{
  struct fsx_direct *x = m->direct;
  struct dfile **pp, *f;

  /* the open file's release: no ioctl of it is running any more */
  pthread_mutex_lock(&x->lock);
  pp = file_slot(x, fh);
  if ((f = *pp))
    *pp = f->next;
  pthread_mutex_unlock(&x->lock);
  while (f && f->regs) {
    struct fsx_dreg *d = f->regs;
    f->regs = d->next;
    dreg_free(m, d);
  }
  free(f);
}
