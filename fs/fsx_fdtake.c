/*
 * fsx_fdtake: a caller's descriptor made one of ours (design in
 * fsx_fdtake.h).
 */
#include "fs/fsx_fdtake.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/slog.h"

/* Rejected descriptors are closed on threads of their own, at most
   REAPERS at once (one blocked in a flush holds only itself); past that
   they stay open: a leak, never a blocked FUSE thread. */
#define REAPERS 8
static _Atomic int reapers;

static void *reap(void *arg)
{
  close((int)(intptr_t)arg);
  atomic_fetch_sub(&reapers, 1);
  return NULL;
}

void fsx_fdtake_close_later(int fd)
{
  pthread_attr_t at;
  pthread_t t;

  if (atomic_fetch_add(&reapers, 1) >= REAPERS) {
    atomic_fetch_sub(&reapers, 1);
    log_warn("direct: a rejected descriptor left open (closers busy)");
    return;
  }
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &at, reap, (void *)(intptr_t)fd)) {
    atomic_fetch_sub(&reapers, 1);
    log_warn("direct: a rejected descriptor left open (no thread)");
  }
  pthread_attr_destroy(&at);
}

/*
 * A dma-buf's link text can be had by anyone who mounts a file system of
 * their own at "/dmabuf:..." in a namespace of theirs; its fdinfo cannot:
 * only the dma-buf code prints exp_name (and reading fdinfo never reaches
 * a file system's server). 0, or -EINVAL.
 */
static int dmabuf_fdinfo(pid_t tgid, int fd)
{
  char path[64], line[256];
  bool exp = false;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tgid, fd);
  if (!(f = fopen(path, "re")))
    return errno == ENOENT ? -EBADF : -EINVAL;
  while (!exp && fgets(line, sizeof(line), f))
    exp = strncmp(line, "exp_name:", 9) == 0;
  fclose(f);
  return exp ? 0 : -EINVAL;
}

int fsx_fdtake_is(pid_t tgid, int fd, const char *kind)
{
  char path[64], target[64];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)tgid, fd);
  n = readlink(path, target, sizeof(target) - 1);
  if (n < 0) /* (the link needs the same access as pidfd_getfd) */
    return errno == ENOENT ? -EBADF
           : errno == EACCES || errno == EPERM ? -EPERM : -EINVAL;
  target[n] = '\0';
  if (strncmp(target, kind, strlen(kind)))
    return -EINVAL;
  return strcmp(kind, FSX_FD_DMABUF) ? 0 : dmabuf_fdinfo(tgid, fd);
}

/* The caller's fd as one of ours, if it is of the kind asked: the kernel
   decides whether we may. */
static int take_fd_here(pid_t tgid, int fd, const char *kind)
{
  int pidfd, ours, rc = fsx_fdtake_is(tgid, fd, kind);

  if (rc)
    return rc;
  pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
  if (pidfd < 0)
    return -errno;
  ours = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  rc = ours < 0 ? -errno : ours;
  close(pidfd);
  return rc;
}

struct fsx_fdtake {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* lock: a job came, or one is done */
  bool stop;                    /* lock */
  bool busy;                    /* lock: a job is posted and not taken */
  pid_t tgid;                   /* lock: the job */
  int fd;
  const char *kind;
  int result;                   /* lock: the job's answer */
  unsigned long posted, done;   /* lock: jobs posted, and answered */
};

static void *taker_main(void *arg)
{
  struct fsx_fdtake *t = arg;

  pthread_mutex_lock(&t->lock);
  while (!t->stop || t->done < t->posted) { /* a job posted is done */
    if (t->done == t->posted) {
      pthread_cond_wait(&t->cond, &t->lock);
      continue;
    }
    pid_t tgid = t->tgid;
    int fd = t->fd;
    const char *kind = t->kind;
    pthread_mutex_unlock(&t->lock);
    int rc = take_fd_here(tgid, fd, kind);
    pthread_mutex_lock(&t->lock);
    t->result = rc;
    t->done++;
    pthread_cond_broadcast(&t->cond);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

int fsx_fdtake_start(struct fsx_fdtake **out)
{
  struct fsx_fdtake *t = calloc(1, sizeof(*t));

  if (!t)
    return -ENOMEM;
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->cond, NULL);
  if (pthread_create(&t->thread, NULL, taker_main, t)) {
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return -EAGAIN;
  }
  *out = t;
  return 0;
}

void fsx_fdtake_stop(struct fsx_fdtake *t)
{
  if (!t)
    return;
  pthread_mutex_lock(&t->lock);
  t->stop = true;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

int fsx_fdtake(struct fsx_fdtake *t, pid_t tgid, int fd, const char *kind)
{
  unsigned long mine;
  int rc;

  if (!t)
    return take_fd_here(tgid, fd, kind);
  pthread_mutex_lock(&t->lock);
  while (t->busy && !t->stop)
    pthread_cond_wait(&t->cond, &t->lock);
  if (t->stop) {
    pthread_mutex_unlock(&t->lock);
    return -ESHUTDOWN;
  }
  t->busy = true;
  t->tgid = tgid;
  t->fd = fd;
  t->kind = kind;
  mine = ++t->posted;
  pthread_cond_broadcast(&t->cond);
  while (t->done < mine) /* (the taker does it even when stopping) */
    pthread_cond_wait(&t->cond, &t->lock);
  rc = t->result;
  t->busy = false;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
  return rc;
}
