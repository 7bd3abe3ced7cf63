/*
 * fsx_pool: the mount's part buffers (design in fsx_pool.h).
 */
#include "fs/mem/fsx_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/mem/fsx_mlock.h"

#define POOL_MAGIC "s3rpool1"
#define POOL_FILE "pool"        /* in the mount's directory */
#define POOL_AT "pool.at"       /* or this names it, in write.pool_dir */
#define POOL_PREFIX "s3rdmafs-pool-"
#define HDR_SIZE 128u           /* the file's header, then one per slot */
#define RUN_USED 0x52554e31u    /* "RUN1": a lent run starts here */
#define POOL_WAIT_S 60          /* the longest wait for a run */
#define PAGE 4096u

struct pool_head {              /* the first HDR_SIZE bytes of the file */
  char magic[8];
  uint64_t slot;
  uint64_t nslots;
  uint64_t data_off;
};

struct run_hdr {                /* slot i's at (i + 1) * HDR_SIZE */
  uint32_t magic;               /* RUN_USED while lent (written last) */
  uint32_t nslots;
  uint64_t file_off;
  uint64_t len;                 /* valid bytes */
  char name[HDR_SIZE - 24];     /* the staging file's base name */
};

struct fsx_pool {
  char *path;                   /* the pool's file */
  char *at;                     /* dir/pool.at naming it, or NULL */
  char *map;                    /* the whole file */
  size_t map_len;
  char *data;                   /* the slots */
  size_t data_off;              /* where they start in the file */
  size_t slot, nslots;
  int fd;                       /* the file's, for the slots' blocks */
  _Atomic bool pinned;          /* no slot's lock refused so far */
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* lock: a run came back */
  unsigned *run_len;            /* lock: slots of the run starting here */
  unsigned char *used;          /* lock: the slot is lent */
  unsigned char *ready;         /* lock: the slot's blocks are reserved
                                   (and locked where allowed): done by
                                   the first get that lends it */
  size_t ready_slots;           /* lock */
  uint64_t *put_ms;             /* lock: when the slot was last given back */
  bool fixed;                   /* lock: registered by a verbs kind (its
                                   pages pinned there): never given back */
  unsigned long released;       /* lock: slots given back */
  size_t used_slots;            /* lock */
  unsigned on_wire;             /* lock: runs on the wire */
  unsigned long waits, refused; /* lock */
};

static struct run_hdr *hdr_of(struct fsx_pool *p, size_t i)
{
  return (struct run_hdr *)(p->map + (i + 1) * HDR_SIZE);
}

static size_t index_of(const struct fsx_pool *p, const void *buf)
{
  return (size_t)((const char *)buf - p->data) / p->slot;
}

/* text as a new file at path (never one that exists): 0 or -errno. */
static int write_new(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
  size_t len = strlen(text);
  int rc = 0;

  if (fd < 0)
    return -errno;
  if (write(fd, text, len) != (ssize_t)len)
    rc = errno ? -errno : -EIO;
  if (close(fd) && !rc)
    rc = -errno;
  if (rc)
    unlink(path);
  return rc;
}

/* The file len long, its first head bytes (the headers) reserved now (a
   full filesystem fails the mount, not a write through the mapping later:
   SIGBUS); the slots' as each is first lent (make_ready). Filesystems
   without fallocate are left sparse. */
static int reserve(int fd, size_t len, size_t head)
{
  if (ftruncate(fd, (off_t)len))
    return -errno;
  if (fallocate(fd, 0, 0, (off_t)head) && errno != EOPNOTSUPP)
    return -errno;
  return 0;
}

static char *path_of(const char *dir, const char *name)
{
  char *s;

  return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

/* The file in home, named by dir/pool.at: its descriptor, or -1 (p->path
   and p->at left NULL: the caller tries dir). */
static int in_home(struct fsx_pool *p, const char *dir, const char *home)
{
  struct statvfs sv;
  char line[4200];
  int fd;

  if (statvfs(home, &sv) ||
      (uint64_t)sv.f_bavail * sv.f_frsize < p->map_len + p->map_len / 16 ||
      !(p->path = path_of(home, POOL_PREFIX "XXXXXX")))
    return -1;
  fd = mkostemp(p->path, O_CLOEXEC);
  if (fd < 0)
    goto free_path;
  if (reserve(fd, p->map_len, p->data_off) ||
      !(p->at = path_of(dir, POOL_AT)))
    goto remove_file;
  if ((size_t)snprintf(line, sizeof(line), "%s\n", p->path) < sizeof(line) &&
      !write_new(p->at, line))
    return fd;
  free(p->at);
  p->at = NULL;
remove_file:
  close(fd);
  unlink(p->path);
free_path:
  free(p->path);
  p->path = NULL;
  return -1;
}

/*
 * The pool's file in home (write.pool_dir, /dev/shm by default) when it
 * has room, named by dir/pool.at: on a tmpfs nothing writes the buffers
 * back to a disk and no write to them faults (on a disk filesystem every
 * page written back is write-protected again, and the next write to it
 * faults). Else, or when home is "", dir/pool. The descriptor, or -errno.
 */
static int make_file(struct fsx_pool *p, const char *dir, const char *home)
{
  int fd = home && *home ? in_home(p, dir, home) : -1, rc;

  if (fd >= 0)
    return fd;
  if (!(p->path = path_of(dir, POOL_FILE)))
    return -ENOMEM;
  fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return -errno;
  rc = reserve(fd, p->map_len, p->data_off);
  if (rc) {
    close(fd);
    unlink(p->path);
    return rc;
  }
  return fd;
}

int fsx_pool_open(const char *dir, const char *home, size_t size, size_t slot,
                  struct fsx_pool **out, char *err, size_t errlen)
{
  struct fsx_pool *p = calloc(1, sizeof(*p));
  struct pool_head *h;
  size_t data_off;
  int fd = -1, rc = -ENOMEM;

  *out = NULL;
  if (!p)
    goto fail;
  if (!slot || slot % PAGE) {
    rc = -EINVAL;
    goto fail;
  }
  p->slot = slot;
  p->fd = -1;
  p->nslots = size / slot ? size / slot : 1;
  data_off = ((p->nslots + 1) * HDR_SIZE + PAGE - 1) / PAGE * PAGE;
  p->data_off = data_off;
  p->map_len = data_off + p->nslots * slot;
  p->run_len = calloc(p->nslots, sizeof(*p->run_len));
  p->used = calloc(p->nslots, 1);
  p->ready = calloc(p->nslots, 1);
  p->put_ms = calloc(p->nslots, sizeof(*p->put_ms));
  if (!p->run_len || !p->used || !p->ready || !p->put_ms)
    goto fail;
  fd = make_file(p, dir, home);
  if (fd < 0) {
    rc = fd;
    goto fail;
  }
  p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p->map == MAP_FAILED) {
    p->map = NULL;
    rc = -errno;
    close(fd);
    goto remove_file;
  }
  p->fd = fd;
  p->data = p->map + data_off;
  h = (struct pool_head *)p->map;
  h->slot = slot;
  h->nslots = p->nslots;
  h->data_off = data_off;
  memcpy(h->magic, POOL_MAGIC, sizeof(h->magic));
  p->pinned = true; /* (each slot locked as it is first lent) */
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  *out = p;
  return 0;

remove_file:
  unlink(p->path);
  if (p->at)
    unlink(p->at);
fail:
  snprintf(err, errlen, "write buffer pool %s: %s", p && p->path ? p->path : dir,
           strerror(-rc));
  if (p) {
    free(p->run_len);
    free(p->used);
    free(p->ready);
    free(p->put_ms);
    free(p->path);
    free(p->at);
    free(p);
  }
  return rc;
}

const char *fsx_pool_path(const struct fsx_pool *p)
{
  return p->path;
}

void fsx_pool_close(struct fsx_pool *p)
{
  if (!p)
    return;
  munmap(p->map, p->map_len);
  close(p->fd);
  unlink(p->path);
  if (p->at)
    unlink(p->at);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p->run_len);
  free(p->used);
  free(p->ready);
  free(p->put_ms);
  free(p->path);
  free(p->at);
  free(p);
}

void *fsx_pool_data(struct fsx_pool *p, size_t *len)
{
  *len = p->nslots * p->slot;
  return p->data;
}

size_t fsx_pool_slot_size(const struct fsx_pool *p)
{
  return p->slot;
}

/* The first of n adjacent free slots, or nslots (lock held). */
static size_t find_run(const struct fsx_pool *p, size_t n)
{
  for (size_t i = 0, len = 0; i < p->nslots; i++) {
    len = p->used[i] ? 0 : len + 1;
    if (len == n)
      return i + 1 - n;
  }
  return p->nslots;
}

/*
 * Slots [i, i + n), lent to the caller: the blocks of those never lent
 * before reserved (a write to a tmpfs page it cannot have would be a
 * SIGBUS) and locked where allowed (a refusal said once). -errno when the
 * blocks cannot be had.
 */
static int make_ready(struct fsx_pool *p, size_t i, size_t n)
{
  for (size_t k = i; k < i + n; k++) {
    bool ready;

    pthread_mutex_lock(&p->lock);
    ready = p->ready[k];
    pthread_mutex_unlock(&p->lock);
    if (ready)
      continue;
    if (FP("pool.reserve")) /* (tests: a full tmpfs) */
      return -ENOSPC;
    if (fallocate(p->fd, 0, (off_t)(p->data_off + k * p->slot),
                  (off_t)p->slot) && errno != EOPNOTSUPP)
      return -errno;
    if (fsx_mlock(p->data + k * p->slot, p->slot) &&
        atomic_exchange(&p->pinned, false))
      log_notice("write buffers: not all locked in memory (RLIMIT_MEMLOCK)");
    pthread_mutex_lock(&p->lock);
    p->ready[k] = 1;
    p->ready_slots++;
    pthread_mutex_unlock(&p->lock);
  }
  return 0;
}

int fsx_pool_get(struct fsx_pool *p, size_t len, const char *name,
                 uint64_t file_off, void **out)
{
  size_t n = len ? (len + p->slot - 1) / p->slot : 1, i;
  struct timespec until;
  struct run_hdr *h;
  bool waited = false;

  if (n > p->nslots || strlen(name) >= sizeof(h->name))
    return -EINVAL;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += POOL_WAIT_S;
  pthread_mutex_lock(&p->lock);
  while ((i = find_run(p, n)) == p->nslots) {
    if (!p->on_wire ||
        pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT) {
      p->refused++;
      pthread_mutex_unlock(&p->lock);
      return -EAGAIN;
    }
    waited = true;
  }
  memset(p->used + i, 1, n);
  p->run_len[i] = (unsigned)n;
  p->used_slots += n;
  p->waits += waited;
  pthread_mutex_unlock(&p->lock);
  if (make_ready(p, i, n)) { /* no room for its blocks: stage instead */
    pthread_mutex_lock(&p->lock);
    p->refused++;
    pthread_mutex_unlock(&p->lock);
    fsx_pool_put(p, p->data + i * p->slot);
    return -EAGAIN;
  }
  /* the header names the run's file before the run holds its bytes */
  h = hdr_of(p, i);
  h->nslots = (uint32_t)n;
  h->file_off = file_off;
  h->len = 0;
  snprintf(h->name, sizeof(h->name), "%s", name);
  __atomic_store_n(&h->magic, RUN_USED, __ATOMIC_RELEASE);
  *out = p->data + i * p->slot;
  return 0;
}

void fsx_pool_filled(struct fsx_pool *p, void *buf, uint64_t n)
{
  __atomic_store_n(&hdr_of(p, index_of(p, buf))->len, n, __ATOMIC_RELEASE);
}

void fsx_pool_sending(struct fsx_pool *p, void *buf, bool on)
{
  pthread_mutex_lock(&p->lock);
  if (on)
    p->on_wire++;
  else
    p->on_wire--;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  (void)buf;
}

void fsx_pool_put(struct fsx_pool *p, void *buf)
{
  size_t i = index_of(p, buf);

  /* cleared before the run can be lent again */
  __atomic_store_n(&hdr_of(p, i)->magic, 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&p->lock);
  p->used_slots -= p->run_len[i];
  memset(p->used + i, 0, p->run_len[i]);
  for (size_t k = i; k < i + p->run_len[i]; k++)
    p->put_ms[k] = clock_mono_ms();
  p->run_len[i] = 0;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

void fsx_pool_retire(struct fsx_pool *p, void *buf)
{
  __atomic_store_n(&hdr_of(p, index_of(p, buf))->magic, 0, __ATOMIC_RELEASE);
}

size_t fsx_pool_stats(struct fsx_pool *p, char *buf, size_t len)
{
  int n;

  pthread_mutex_lock(&p->lock);
  n = snprintf(buf, len,
               "write.pool_slots %zu\nwrite.pool_slots_used %zu\n"
               "write.pool_on_wire %u\nwrite.pool_waits %lu\n"
               "write.pool_refused %lu\nwrite.pool_slots_ready %zu\n"
               "write.pool_slots_released %lu\n",
               p->nslots, p->used_slots, p->on_wire, p->waits, p->refused,
               p->ready_slots, p->released);
  pthread_mutex_unlock(&p->lock);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
}

void fsx_pool_fix(struct fsx_pool *p)
{
  pthread_mutex_lock(&p->lock);
  p->fixed = true;
  pthread_mutex_unlock(&p->lock);
}

/* (the lock held throughout: a slot given back cannot be lent meanwhile;
   this runs once a second at most, on slots idle for long) */
size_t fsx_pool_release(struct fsx_pool *p, uint64_t idle_ms)
{
  uint64_t now = clock_mono_ms();
  size_t n = 0;

  pthread_mutex_lock(&p->lock);
  for (size_t k = 0; k < p->nslots && !p->fixed; k++) {
    char *base = p->data + k * p->slot;

    if (!p->ready[k] || p->used[k] || now - p->put_ms[k] < idle_ms)
      continue;
    fsx_munlock(base, p->slot);
    if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(p->data_off + k * p->slot), (off_t)p->slot))
      madvise(base, p->slot, MADV_DONTNEED); /* (at least not resident) */
    p->ready[k] = 0;
    p->ready_slots--;
    p->released++;
    n++;
  }
  pthread_mutex_unlock(&p->lock);
  return n;
}

/* ---- recovery of a dead mount's pool ---- */

/* A staging file's name (ino-<digits>-<digits>), NUL-ended: nothing else
   of the directory (records, the format, the lock) is ever written. */
static bool plain_name(const char *s, size_t max)
{
  size_t n = strnlen(s, max), dashes = 0;

  if (n < 7 || n >= max || strncmp(s, "ino-", 4))
    return false;
  for (size_t i = 4; i < n; i++) {
    if (s[i] == '-' && i > 4 && s[i - 1] != '-' && i + 1 < n)
      dashes++;
    else if (s[i] < '0' || s[i] > '9')
      return false;
  }
  return dashes == 1;
}

static int copy_run(int pool_fd, const char *dir, const struct run_hdr *h,
                    uint64_t from)
{
  char path[4200], *buf;
  uint64_t done = 0;
  int fd, rc = 0;

  snprintf(path, sizeof(path), "%s/%s", dir, h->name);
  fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) /* gone: nothing of it was kept, so nothing to keep */
    return errno == ENOENT ? 0 : -errno;
  buf = malloc(1u << 20);
  if (!buf) {
    close(fd);
    return -ENOMEM;
  }
  while (!rc && done < h->len) {
    size_t n = h->len - done < (1u << 20) ? (size_t)(h->len - done) : 1u << 20;
    ssize_t k = pread(pool_fd, buf, n, (off_t)(from + done));
    if (k <= 0)
      rc = k < 0 ? -errno : -EIO;
    else if (pwrite(fd, buf, (size_t)k, (off_t)(h->file_off + done)) != k)
      rc = -EIO;
    else
      done += (uint64_t)k;
  }
  free(buf);
  if (close(fd) && !rc)
    rc = -errno;
  return rc;
}

/*
 * dir's pool: dir/pool, or the file dir/pool.at names (*at_path set: it is
 * removed with the pool). That file must be a plain file of ours that no
 * one else may read or write, named as fsx_pool_open names them: the name
 * comes from our own directory, but what it points into (/dev/shm) is
 * everybody's. A descriptor, -ENOENT (no pool, or its file is gone: a
 * tmpfs does not outlive a restart), or -errno.
 */
static int open_pool(const char *dir, char *path, size_t len, char *at_path)
{
  char line[4200];
  struct stat st;
  const char *base;
  ssize_t n;
  int fd;

  at_path[0] = '\0';
  snprintf(line, sizeof(line), "%s/" POOL_AT, dir);
  fd = open(line, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT)
    return -errno;
  if (fd < 0) {
    snprintf(path, len, "%s/" POOL_FILE, dir);
  } else {
    snprintf(at_path, len, "%s", line);
    n = read(fd, line, sizeof(line) - 1);
    close(fd);
    if (n <= 1 || line[n - 1] != '\n')
      return -ENODATA; /* cut short: its pool never lent a run */
    line[n - 1] = '\0';
    base = strrchr(line, '/');
    if (line[0] != '/' || strstr(line, "/../") || strlen(line) >= len ||
        !base || strncmp(base + 1, POOL_PREFIX, strlen(POOL_PREFIX)))
      return -EINVAL;
    snprintf(path, len, "%s", line);
  }
  /* (not blocking: a FIFO put there would hold recovery, and unmount) */
  fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) || st.st_nlink != 1) {
    close(fd);
    return -EPERM;
  }
  return fd;
}

int fsx_pool_recover(const char *dir)
{
  char path[4200], at[4200];
  struct pool_head h;
  struct stat st;
  int fd, rc = 0, runs = 0;

  fd = open_pool(dir, path, sizeof(path), at);
  if (fd == -ENODATA) {
    unlink(at);
    return 0;
  }
  if (fd == -ENOENT && at[0]) { /* its tmpfs was emptied since */
    unlink(at);
    return -ENOENT;
  }
  if (fd < 0)
    return fd == -ENOENT ? 0 : fd;
  if (fstat(fd, &st) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
      memcmp(h.magic, POOL_MAGIC, sizeof(h.magic)) || !h.slot ||
      h.data_off < (h.nslots + 1) * HDR_SIZE ||
      h.nslots > ((uint64_t)st.st_size - h.data_off) / h.slot) {
    close(fd);
    return -EINVAL; /* not ours, or cut short: left in place */
  }
  for (uint64_t i = 0; i < h.nslots && !rc; i++) {
    struct run_hdr r;
    if (pread(fd, &r, sizeof(r), (off_t)((i + 1) * HDR_SIZE)) !=
        (ssize_t)sizeof(r)) {
      rc = -EIO;
      break;
    }
    if (r.magic != RUN_USED)
      continue;
    if (!plain_name(r.name, sizeof(r.name)) || r.nslots > h.nslots - i ||
        r.len > r.nslots * h.slot) {
      rc = -EINVAL;
      break;
    }
    rc = copy_run(fd, dir, &r, h.data_off + i * h.slot);
    runs++;
  }
  close(fd);
  if (!rc) {
    unlink(path);
    if (at[0])
      unlink(at);
  }
  return rc ? rc : runs;
}
