/*
 * fsx_fdtake: a caller's descriptor made one of ours (design in
 * fsx_fdtake.h).
 */
#include "fs/direct/fsx_fdtake.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/slog.h"

/*
 * Descriptors taken and turned down are closed on threads of their own
 * (a FUSE file's close waits for its server's FLUSH, which may never
 * come), and counted until closed: per user and in all, bounded; a user
 * at the bound is refused before anything more of theirs is taken, so
 * nothing piles up and nothing is left open. The table is small: the
 * bound in all caps the users in it.
 */
static pthread_mutex_t closing_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uid_t uid;
  unsigned n;                   /* closing_lock */
} closing[FSX_FDTAKE_CLOSING_MAX];
static unsigned closing_all;    /* closing_lock */

/* The user's slot (a free one made theirs with add); NULL: none. */
static unsigned *closing_of(uid_t uid, bool add)
{
  unsigned *free_slot = NULL;

  for (unsigned i = 0; i < FSX_FDTAKE_CLOSING_MAX; i++) {
    if (closing[i].n && closing[i].uid == uid)
      return &closing[i].n;
    if (!closing[i].n && !free_slot) {
      free_slot = &closing[i].n;
      if (add)
        closing[i].uid = uid;
    }
  }
  return add ? free_slot : NULL;
}

/* May uid have one more descriptor taken? */
static bool closing_room(uid_t uid)
{
  unsigned *n;
  bool room;

  pthread_mutex_lock(&closing_lock);
  n = closing_of(uid, false);
  room = closing_all < FSX_FDTAKE_CLOSING_MAX &&
         (!n || *n < FSX_FDTAKE_CLOSING_UID);
  pthread_mutex_unlock(&closing_lock);
  return room;
}

struct closer {
  uid_t uid;
  int fd;
};

static void *reap(void *arg)
{
  struct closer *c = arg;
  unsigned *n;

  close(c->fd);
  pthread_mutex_lock(&closing_lock);
  if ((n = closing_of(c->uid, false)))
    (*n)--;
  closing_all--;
  pthread_mutex_unlock(&closing_lock);
  free(c);
  return NULL;
}

void fsx_fdtake_close_later(uid_t uid, int fd)
{
  struct closer *c = malloc(sizeof(*c));
  pthread_attr_t at;
  pthread_t t;
  unsigned *n;

  pthread_mutex_lock(&closing_lock);
  n = closing_of(uid, true);
  if (c && n) {
    (*n)++;
    closing_all++;
  }
  pthread_mutex_unlock(&closing_lock);
  if (!c || !n) { /* (never: the room was asked for before the take) */
    free(c);
    close(fd);
    return;
  }
  *c = (struct closer){uid, fd};
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&at, 64 * 1024);
  if (pthread_create(&t, &at, reap, c)) {
    log_warn("direct: no thread to close a refused descriptor: closed "
             "here");
    reap(c);
  }
  pthread_attr_destroy(&at);
}

unsigned fsx_fdtake_closing(void)
{
  unsigned n;

  pthread_mutex_lock(&closing_lock);
  n = closing_all;
  pthread_mutex_unlock(&closing_lock);
  return n;
}

/* The mount id (fdinfo's mnt_id) of process tgid's descriptor fd: the
   kernel's own answer about the open file, which no file system's server
   is asked for; -EBADF (no such descriptor), -EPERM, or -EINVAL. */
static long fdinfo_mnt_id(pid_t tgid, int fd)
{
  char path[64], line[256];
  long id = -EINVAL;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tgid, fd);
  if (!(f = fopen(path, "re")))
    return errno == ENOENT ? -EBADF
           : errno == EACCES || errno == EPERM ? -EPERM : -EINVAL;
  while (id < 0 && fgets(line, sizeof(line), f))
    if (!strncmp(line, "mnt_id:", 7))
      id = strtol(line + 7, NULL, 10);
  fclose(f);
  return id;
}

/* Every memfd lives on the kernel's one internal shmem mount: its id, as a
   memfd of our own shows it; asked again until it is known (a memfd_create
   that failed once, EMFILE, must not turn every REGISTER down). */
static pthread_mutex_t shm_lock = PTHREAD_MUTEX_INITIALIZER;
static long shm_mnt_id = -1;    /* shm_lock */

static long shm_mnt(void)
{
  long id;

  pthread_mutex_lock(&shm_lock);
  if (shm_mnt_id < 0) {
    int fd = (int)syscall(SYS_memfd_create, "s3rdmafs-probe", MFD_CLOEXEC);
    if (fd >= 0) {
      shm_mnt_id = fdinfo_mnt_id(getpid(), fd);
      close(fd);
    }
  }
  id = shm_mnt_id;
  pthread_mutex_unlock(&shm_lock);
  return id;
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

  if (!strcmp(kind, FSX_FD_MEMFD)) { /* on the kernel's shmem mount */
    long id = fdinfo_mnt_id(tgid, fd), shm = shm_mnt();
    if (id < 0)
      return (int)id;
    return shm >= 0 && id == shm ? 0 : -EINVAL;
  }
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
static int take_fd_here(pid_t tgid, uid_t uid, int fd, const char *kind)
{
  int pidfd, ours, rc;

  /* (on the one taker thread: the room asked, the take, its check and a
     refusal's count follow one another, so the bounds hold exactly) */
  if (!closing_room(uid))
    return -EAGAIN; /* refused descriptors of theirs still closing */
  if ((rc = fsx_fdtake_is(tgid, fd, kind)))
    return rc;
  pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
  if (pidfd < 0)
    return -errno;
  ours = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  rc = ours < 0 ? -errno : ours;
  close(pidfd);
  /* asked again of the descriptor taken: the number may have been
     swapped since (our own fdinfo, which reaches no file system) */
  if (ours >= 0 && fsx_fdtake_is(getpid(), ours, kind)) {
    fsx_fdtake_close_later(uid, ours);
    rc = -EINVAL;
  }
  return rc;
}

struct fsx_fdtake {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* lock: a job came, or one is done */
  bool stop;                    /* lock */
  bool busy;                    /* lock: a job is posted and not taken */
  pid_t tgid;                   /* lock: the job */
  uid_t uid;
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
    uid_t uid = t->uid;
    int fd = t->fd;
    const char *kind = t->kind;
    pthread_mutex_unlock(&t->lock);
    int rc = take_fd_here(tgid, uid, fd, kind);
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

int fsx_fdtake(struct fsx_fdtake *t, pid_t tgid, uid_t uid, int fd,
               const char *kind)
{
  unsigned long mine;
  int rc;

  if (!t)
    return take_fd_here(tgid, uid, fd, kind);
  pthread_mutex_lock(&t->lock);
  while (t->busy && !t->stop)
    pthread_cond_wait(&t->cond, &t->lock);
  if (t->stop) {
    pthread_mutex_unlock(&t->lock);
    return -ESHUTDOWN;
  }
  t->busy = true;
  t->tgid = tgid;
  t->uid = uid;
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
