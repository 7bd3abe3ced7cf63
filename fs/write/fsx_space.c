/* fsx_space: the staging space limit and its accounting (fsx_space.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/write/fsx_space.h"

#define BLOCK (64u * 1024u)   /* the write-back's fetch unit (FSX_WB_BLOCK) */
#define MAX_EXTENTS 64        /* holes looked at per write; past: all hole */
#define RECHECK_MS 1000       /* a waiter looks at the filesystem again */
#define FRESH_MS 1000         /* a statvfs this recent is trusted... */
#define COMFORT (64ull << 20) /* ...when it leaves this much to spare */

struct fsx_space {
  char *dir;
  uint64_t limit;
  uint64_t margin;            /* kept free on the filesystem */
  uint64_t wait_ms;
  pthread_mutex_t lock;
  pthread_cond_t cond;        /* lock: the count went down */
  uint64_t *count;            /* lock: bytes on disk of the file at fd i */
  size_t ncount;              /* lock: entries of count */
  uint64_t used;              /* lock: the sum of count */
  uint64_t reserved;          /* lock */
  unsigned waiting;           /* lock */
  uint64_t waited;            /* lock: writes that waited, since mount */
  uint64_t enospc;            /* lock */
  uint64_t avail;             /* lock: the last statvfs's free bytes, */
  uint64_t avail_ms;          /* lock: taken then (CLOCK_MONOTONIC), */
  uint64_t since;             /* lock: less what was reserved since */
  bool full;                  /* lock: a refusal was logged; until there is
                                 room again */
};

/* ---- the arithmetic ---- */

uint64_t fsx_space_default_max(uint64_t fs_avail)
{
  return fs_avail / 2;
}

uint64_t fsx_space_margin(uint64_t fs_size)
{
  uint64_t m = fs_size / 100, cap = 256ull << 20;

  return m < cap ? m : cap;
}

uint64_t fsx_space_disk_room(uint64_t fs_avail, uint64_t margin,
                             uint64_t reserved)
{
  uint64_t keep = margin + reserved;

  return fs_avail > keep ? fs_avail - keep : 0;
}

bool fsx_space_fits(uint64_t limit, uint64_t used, uint64_t reserved,
                    uint64_t need, uint64_t disk_room)
{
  uint64_t busy = used + reserved;

  if (need > disk_room)
    return false;
  return busy == 0 || (busy <= limit && need <= limit - busy);
}

/* ---- the filesystem ---- */

/* Bytes free to us on dir's filesystem (UINT64_MAX if statvfs fails: the
   writes themselves will tell). Called without the lock: statvfs may
   block (a network filesystem). */
static uint64_t fs_avail(const struct fsx_space *sp)
{
  struct statvfs v;

  if (statvfs(sp->dir, &v))
    return UINT64_MAX;
  return (uint64_t)v.f_bavail * v.f_frsize;
}

/* Note a fresh statvfs (lock held). */
static void note_avail(struct fsx_space *sp, uint64_t avail)
{
  sp->avail = avail;
  sp->avail_ms = clock_mono_ms();
  sp->since = 0;
}

/* Is the last statvfs too old to trust (lock held)? */
static bool stale(const struct fsx_space *sp)
{
  return !sp->avail_ms || clock_mono_ms() - sp->avail_ms > FRESH_MS;
}

/* Room on the filesystem into *disk from the last statvfs, if that is
   recent and leaves need and plenty to spare (lock held); else false:
   look again. */
static bool cached_room(const struct fsx_space *sp, uint64_t need,
                        uint64_t *disk)
{
  uint64_t avail;

  if (stale(sp))
    return false;
  avail = sp->avail > sp->since ? sp->avail - sp->since : 0;
  *disk = fsx_space_disk_room(avail, sp->margin, sp->reserved);
  return *disk >= need && *disk - need >= COMFORT;
}

/* Bytes fd occupies on disk; false if fstat fails. */
static bool on_disk(int fd, uint64_t *bytes)
{
  struct stat st;

  if (fstat(fd, &st))
    return false;
  *bytes = (uint64_t)st.st_blocks * 512u;
  return true;
}

/*
 * What a write of [off, off+len) may allocate: the holes in the BLOCKs it
 * touches (the write-back fetches the edges of a block written in part).
 * Past the end of the file everything is a hole; a filesystem without
 * SEEK_HOLE shows the file as all data (then the recount corrects).
 */
uint64_t fsx_space_estimate(int fd, uint64_t off, size_t len, bool append)
{
  uint64_t a, e, pos, holes = 0;
  struct stat st;

  if (fstat(fd, &st))
    return (uint64_t)len + 2 * BLOCK;
  if (append)
    off = (uint64_t)st.st_size;
  a = off / BLOCK * BLOCK;
  e = (off + len + BLOCK - 1) / BLOCK * BLOCK;
  pos = a;
  for (int i = 0; pos < e; i++) {
    off_t d, h;
    if (i == MAX_EXTENTS) /* fragmented: take the rest as holes */
      return holes + (e - pos);
    d = lseek(fd, (off_t)pos, SEEK_DATA);
    if (d < 0 || (uint64_t)d >= e) /* ENXIO: no data from pos on */
      return holes + (e - pos);
    holes += (uint64_t)d - pos;
    h = lseek(fd, d, SEEK_HOLE);
    if (h < 0)
      return holes + (e - (uint64_t)d);
    pos = (uint64_t)h;
  }
  return holes;
}

/* ---- the counts ---- */

/* Set fd's count to bytes (lock held). False when out of memory (the
   count stays as it was). */
static bool set_count(struct fsx_space *sp, int fd, uint64_t bytes)
{
  size_t i = (size_t)fd;

  if (fd < 0)
    return false;
  if (i >= sp->ncount) {
    size_t n = sp->ncount ? sp->ncount : 64;
    uint64_t *c;
    while (n <= i)
      n *= 2;
    c = realloc(sp->count, n * sizeof(*c));
    if (!c)
      return false;
    memset(c + sp->ncount, 0, (n - sp->ncount) * sizeof(*c));
    sp->count = c;
    sp->ncount = n;
  }
  sp->used = sp->used - sp->count[i] + bytes;
  sp->count[i] = bytes;
  return true;
}

static void fmt_size(uint64_t v, char *buf, size_t len)
{
  if (v >= (10ull << 30))
    snprintf(buf, len, "%llu GiB", (unsigned long long)(v >> 30));
  else if (v >= (10ull << 20))
    snprintf(buf, len, "%llu MiB", (unsigned long long)(v >> 20));
  else
    snprintf(buf, len, "%llu KiB", (unsigned long long)(v >> 10));
}

/* A line to log once the lock is released (text "" for none). */
struct note {
  int level;
  char text[400];
};

static void say(const struct note *n)
{
  if (n->text[0])
    slog(n->level, "%s", n->text);
}

/* A refusal (lock held), by the filesystem (disk) or the limit: said if
   it starts an episode. */
static void refused(struct fsx_space *sp, bool disk, bool fetch,
                    struct note *n)
{
  char a[32], b[32];

  sp->enospc += !fetch;
  if (sp->full)
    return;
  sp->full = true;
  n->level = LOG_WARNING;
  if (disk) {
    fmt_size(sp->margin, a, sizeof(a));
    snprintf(n->text, sizeof(n->text),
             "cache.dir %s: its filesystem is nearly full (%s are kept "
             "free): %s ENOSPC until space is freed there", sp->dir, a,
             fetch ? "fetches for files being written get"
                   : "writes wait write.staging_wait, then get");
  } else {
    fmt_size(sp->used + sp->reserved, a, sizeof(a));
    fmt_size(sp->limit, b, sizeof(b));
    snprintf(n->text, sizeof(n->text),
             "cache.dir %s: staging full (%s of write.staging_max %s): "
             "writes wait write.staging_wait, then get ENOSPC until files "
             "are closed and uploaded", sp->dir, a, b);
  }
}

/* Room again after a refusal: a new episode may be logged (lock held). */
static void maybe_recovered(struct fsx_space *sp, uint64_t disk,
                            struct note *n)
{
  uint64_t busy = sp->used + sp->reserved;

  if (!sp->full || busy > sp->limit || sp->limit - busy < sp->limit / 8 ||
      disk < sp->margin)
    return;
  sp->full = false;
  n->level = LOG_INFO;
  snprintf(n->text, sizeof(n->text),
           "cache.dir %s: staging space available again", sp->dir);
}

/* Reserve need (lock held). */
static void take(struct fsx_space *sp, uint64_t need, uint64_t disk,
                 struct note *n)
{
  sp->reserved += need;
  sp->since += need;
  maybe_recovered(sp, disk, n);
}

int fsx_space_reserve(struct fsx_space *sp, int fd, uint64_t off, size_t len,
                      bool append, uint64_t *held)
{
  uint64_t need, disk, end, now, wake;
  struct note n = {0};
  struct timespec ts;
  bool waited = false;

  *held = 0;
  if (!sp || !len)
    return 0;
  /* far from both limits, the blocks the write spans are reserved as they
     are (the recount after it corrects that): no system call */
  need = append ? len + 2 * BLOCK
                : (off + len + BLOCK - 1) / BLOCK * BLOCK - off / BLOCK * BLOCK;
  pthread_mutex_lock(&sp->lock);
  for (int pass = 0;; pass++) {
    uint64_t avail;
    if (cached_room(sp, need, &disk) &&
        fsx_space_fits(sp->limit, sp->used, sp->reserved, need, disk)) {
      take(sp, need, disk, &n);
      pthread_mutex_unlock(&sp->lock);
      say(&n);
      *held = need;
      return 0;
    }
    if (pass || !stale(sp))
      break;
    pthread_mutex_unlock(&sp->lock); /* a look once a second at most */
    avail = fs_avail(sp);
    pthread_mutex_lock(&sp->lock);
    note_avail(sp, avail);
  }
  pthread_mutex_unlock(&sp->lock);
  /* near one: what it will really allocate, and a fresh look each time */
  need = fsx_space_estimate(fd, off, len, append);
  if (!need) /* an overwrite of what is there: nothing to wait for */
    return 0;
  end = clock_mono_ms() + sp->wait_ms;
  for (;;) {
    uint64_t avail = fs_avail(sp);
    pthread_mutex_lock(&sp->lock);
    note_avail(sp, avail);
    disk = fsx_space_disk_room(avail, sp->margin, sp->reserved);
    if (fsx_space_fits(sp->limit, sp->used, sp->reserved, need, disk)) {
      take(sp, need, disk, &n);
      pthread_mutex_unlock(&sp->lock);
      say(&n);
      *held = need;
      return 0;
    }
    now = clock_mono_ms();
    if (now >= end ||
        (!waited && sp->waiting >= FSX_SPACE_MAX_WAITERS)) {
      refused(sp, need > disk, false, &n);
      pthread_mutex_unlock(&sp->lock);
      say(&n);
      return -ENOSPC;
    }
    wake = now + RECHECK_MS < end ? now + RECHECK_MS : end;
    ts = clock_at(wake);
    sp->waited += !waited;
    waited = true;
    sp->waiting++;
    pthread_cond_timedwait(&sp->cond, &sp->lock, &ts);
    sp->waiting--;
    pthread_mutex_unlock(&sp->lock);
  }
}

void fsx_space_settle(struct fsx_space *sp, int fd, uint64_t held)
{
  uint64_t bytes = 0, was;
  bool counted;

  if (!sp)
    return;
  counted = on_disk(fd, &bytes);
  pthread_mutex_lock(&sp->lock);
  was = sp->used + sp->reserved;
  if (counted)
    set_count(sp, fd, bytes);
  sp->reserved -= held < sp->reserved ? held : sp->reserved;
  if (sp->used + sp->reserved < was)
    pthread_cond_broadcast(&sp->cond);
  pthread_mutex_unlock(&sp->lock);
}

int fsx_space_fetch(struct fsx_space *sp, uint64_t len)
{
  struct note n = {0};
  uint64_t avail, disk;
  int rc = 0;

  if (!sp)
    return 0;
  pthread_mutex_lock(&sp->lock);
  if (cached_room(sp, len, &disk)) {
    sp->since += len;
    pthread_mutex_unlock(&sp->lock);
    return 0;
  }
  pthread_mutex_unlock(&sp->lock);
  avail = fs_avail(sp);
  pthread_mutex_lock(&sp->lock);
  note_avail(sp, avail);
  disk = fsx_space_disk_room(avail, sp->margin, sp->reserved);
  if (len > disk) {
    refused(sp, true, true, &n);
    rc = -ENOSPC;
  } else {
    sp->since += len;
  }
  pthread_mutex_unlock(&sp->lock);
  say(&n);
  return rc;
}

void fsx_space_forget(struct fsx_space *sp, int fd)
{
  if (!sp || fd < 0)
    return;
  pthread_mutex_lock(&sp->lock);
  if ((size_t)fd < sp->ncount && sp->count[fd]) {
    set_count(sp, fd, 0);
    pthread_cond_broadcast(&sp->cond);
  }
  pthread_mutex_unlock(&sp->lock);
}

void fsx_space_info(struct fsx_space *sp, struct fsx_space_info *out)
{
  uint64_t avail, disk, busy;

  memset(out, 0, sizeof(*out));
  if (!sp)
    return;
  avail = fs_avail(sp);
  pthread_mutex_lock(&sp->lock);
  note_avail(sp, avail);
  disk = fsx_space_disk_room(avail, sp->margin, sp->reserved);
  busy = sp->used + sp->reserved;
  out->limit = sp->limit;
  out->used = sp->used;
  out->reserved = sp->reserved;
  /* busy + disk, at most the limit (and no overflow: disk may be huge) */
  out->cap = busy >= sp->limit || disk >= sp->limit - busy ? sp->limit
                                                           : busy + disk;
  out->room = out->cap > busy ? out->cap - busy : 0;
  out->waiting = sp->waiting;
  out->waited = sp->waited;
  out->enospc = sp->enospc;
  pthread_mutex_unlock(&sp->lock);
}

/* ---- life cycle ---- */

int fsx_space_create(const char *dir, uint64_t max, uint64_t wait_ms,
                     struct fsx_space **out, char *err, size_t errlen)
{
  struct fsx_space *sp;
  struct statvfs v;
  char a[32];

  if (statvfs(dir, &v)) {
    int rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", dir, strerror(-rc));
    return rc;
  }
  sp = calloc(1, sizeof(*sp));
  if (!sp || !(sp->dir = strdup(dir))) {
    free(sp);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  sp->margin = fsx_space_margin((uint64_t)v.f_blocks * v.f_frsize);
  sp->limit = max ? max
                  : fsx_space_default_max((uint64_t)v.f_bavail * v.f_frsize);
  sp->wait_ms = wait_ms;
  pthread_mutex_init(&sp->lock, NULL);
  clock_cond_init(&sp->cond);
  fmt_size(sp->limit, a, sizeof(a));
  log_info("cache.dir %s: staging files may take up to %s%s", dir, a,
           max ? "" : " (write.staging_max=0: half of what is free now)");
  *out = sp;
  return 0;
}

void fsx_space_destroy(struct fsx_space *sp)
{
  if (!sp)
    return;
  if (sp->used)
    log_debug("cache.dir %s: %llu staging bytes still counted at unmount",
              sp->dir, (unsigned long long)sp->used);
  pthread_cond_destroy(&sp->cond);
  pthread_mutex_destroy(&sp->lock);
  free(sp->count);
  free(sp->dir);
  free(sp);
}
