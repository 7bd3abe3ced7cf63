/*
 * fsx_read_group: groups of dense blocks fetched ahead into the kernel's
 * page cache (fsx_kstore), for the read path (fsx_read.c): a dense file's
 * next groups (fsx_group_ahead) and a lone random reader's file with the
 * capacity it leaves idle (fsx_group_idle); a miss inside a group on its
 * way waits for it (fsx_group_read). See fsx_read.h for the threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "fs/mem/fsx_bufs.h"
#include "fs/read/fsx_kstore.h"
#include "fs/read/fsx_read.h"
#include "fs/read/fsx_read_i.h"

/* Dense groups fetched ahead per random miss, at most. */
#define FSX_DENSE_AHEAD 4
/* Groups fetched with capacity no reader uses, in flight at most
   (fsx_group_idle), and how long a file must be the only one read at
   random, in ms, and the blocks its misses must have touched, before
   that happens. */
#define FSX_IDLE_DEPTH 4
#define FSX_IDLE_ALONE_MS 100
#define FSX_IDLE_MIN 8

/*
 * A group fetched ahead for the kernel's cache (in an HTTP body), in
 * fh->pends from its GET until the kernel's store of it is over: a random
 * read that misses inside it waits for it and is answered from a copy of
 * its bytes instead of fetching them again.
 */
struct fsx_pend {
  struct fsx_pend *next;      /* fh->lock */
  int state;                  /* fh->lock: 0 on its way, 1 landed, -errno */
  unsigned refs;              /* fh->lock: its fetch then its store, and
                                 each reader copying from it */
  struct fsx_mount *m;
  struct fsx_fh *fh;          /* a reference */
  uint64_t from, to, commits, reserved;
  void *buf;
  bool idle;                  /* fetched with capacity no reader used */
};

/* Drop a reference to p: the last unlinks it and frees it. */
static void pend_put(struct fsx_pend *p)
{
  struct fsx_fh *fh = p->fh;
  struct fsx_pend **pp = &fh->pends;

  pthread_mutex_lock(&fh->lock);
  if (--p->refs) {
    pthread_mutex_unlock(&fh->lock);
    return;
  }
  while (*pp && *pp != p)
    pp = &(*pp)->next;
  if (*pp)
    *pp = p->next;
  pthread_mutex_unlock(&fh->lock);
  fsx_bufs_put(p->m->bufs, p->buf);
  atomic_fetch_sub(&p->m->reads->ahead_bytes, p->reserved);
  fsx_fh_destroy(p->m, fh);
  free(p);
}

/* p landed (1) or failed (-errno): its readers woken */
static void pend_landed(struct fsx_pend *p, int state)
{
  pthread_mutex_lock(&p->fh->lock);
  p->state = state;
  pthread_cond_broadcast(&p->fh->landed);
  pthread_mutex_unlock(&p->fh->lock);
}

/* p's blocks never reached the kernel: fetched again when missed */
static void pend_forget(struct fsx_pend *p)
{
  pthread_mutex_lock(&p->fh->lock);
  fsx_density_forget(&p->fh->dense, p->from, p->to);
  pthread_mutex_unlock(&p->fh->lock);
}

/* the kernel store of a group is over (its reference) */
static void pend_stored(void *arg, bool stored)
{
  if (!stored)
    pend_forget(arg);
  pend_put(arg);
}

static void pend_done(struct s3_req *r, void *arg)
{
  struct fsx_pend *p = arg;
  struct fsx_mount *m = p->m;
  struct fsx_fh *fh = p->fh;
  size_t got = 0, len = (size_t)(p->to - p->from);
  int rc = s3_get_object_result(r, &got);
  bool ok = !rc && got == len;

  atomic_fetch_add(&m->st.get_bytes, got);
  atomic_fetch_sub(p->idle ? &m->reads->idle_gets : &m->reads->read_gets, 1);
  atomic_fetch_sub(&fh->inflight, 1);
  s3_req_destroy(r);
  pend_landed(p, ok ? 1 : (rc ? rc : -EIO));
  if (ok) /* the fetch's reference goes to the store */
    fsx_kstore_queue(m->kstore, fsx_inode_ino(fh->in), fh->gen, p->commits,
                     p->from, p->buf, len, p->from, 0, pend_stored, p);
  else {
    pend_forget(p);
    pend_put(p);
  }
}

/*
 * One group fetched ahead into the kernel's cache: the next not fetched at
 * or after *after (fsx_density_ahead, or with idle fsx_density_next over
 * the whole file), within the file's fetch budget and fsx_kstore_limit in
 * all; *after moves past it. Chosen and put in fh->pends at once, so a
 * read never finds its blocks taken but not on their way. false: none
 * started.
 */
static bool pend_start(struct fsx_mount *m, struct fsx_fh *fh,
                       uint64_t *after, bool idle)
{
  uint64_t cap = fsx_kstore_limit(m->kstore), group;
  struct fsx_pend *p;
  struct s3_req *r;
  bool ok;

  pthread_mutex_lock(&fh->lock);
  group = fh->dense.block * FSX_DENSITY_GROUP; /* the most one fetch takes */
  pthread_mutex_unlock(&fh->lock);
  if (atomic_load(&fh->inflight) >= m->o.max_inflight_per_file)
    return false;
  /* reserved before it is known: no overshoot by racing readers */
  if (atomic_fetch_add(&m->reads->ahead_bytes, group) + group > cap ||
      !(p = calloc(1, sizeof(*p)))) {
    atomic_fetch_sub(&m->reads->ahead_bytes, group);
    return false;
  }
  *p = (struct fsx_pend){.refs = 1, .m = m, .fh = fh, .reserved = group,
                         .idle = idle,
                         .commits = fsx_inode_commits(m->tab, fh->in)};
  fsx_fh_hold(fh);
  pthread_mutex_lock(&fh->lock);
  ok = idle ? fsx_density_next(&fh->dense, fh->size, *after, UINT32_MAX,
                               &p->from, &p->to)
            : fsx_density_ahead(&fh->dense, fh->size, *after, &p->from,
                                &p->to);
  if (ok) {
    p->next = fh->pends;
    fh->pends = p;
  }
  pthread_mutex_unlock(&fh->lock);
  if (!ok) {
    pend_put(p);
    return false;
  }
  p->buf = fsx_bufs_get(m->bufs, (size_t)(p->to - p->from));
  r = p->buf ? fsx_fh_get(m, fh, p->from, (size_t)(p->to - p->from), p->buf)
             : NULL;
  if (!r) { /* its readers read exactly */
    pend_landed(p, -ENOMEM);
    pend_forget(p);
    pend_put(p);
    return false;
  }
  *after = p->to;
  atomic_fetch_add(&fh->inflight, 1);
  atomic_fetch_add(idle ? &m->reads->idle_gets : &m->reads->read_gets, 1);
  atomic_fetch_add(&m->st.gets, 1);
  atomic_fetch_add(idle ? &m->st.idle_groups : &m->st.dense_ahead, 1);
  s3_req_submit(r, pend_done, p);
  return true;
}

/* see fsx_read_i.h */
void fsx_group_ahead(struct fsx_mount *m, struct fsx_fh *fh, uint64_t after)
{
  for (int i = 0; i < FSX_DENSE_AHEAD && pend_start(m, fh, &after, false); i++)
    ;
}

/* see fsx_read_i.h */
void fsx_group_miss(struct fsx_mount *m, struct fsx_fh *fh)
{
  if (atomic_exchange(&m->reads->idle_owner, fh->file) != fh->file)
    atomic_store(&m->reads->idle_since_ms, clock_mono_ms());
}

/* see fsx_read_i.h */
void fsx_group_idle(struct fsx_mount *m, struct fsx_fh *fh)
{
  uint64_t after;
  uint32_t touched;

  /* (another reader may have moved the time since: signed) */
  if (!m->o.idle_fetch || fh->size > m->o.idle_fetch ||
      atomic_load(&m->reads->idle_owner) != fh->file ||
      (int64_t)(clock_mono_ms() - atomic_load(&m->reads->idle_since_ms)) <
          FSX_IDLE_ALONE_MS ||
      atomic_load(&m->reads->read_gets))
    return;
  pthread_mutex_lock(&fh->lock);
  after = fh->idle_next;
  touched = fh->dense.touched;
  pthread_mutex_unlock(&fh->lock);
  if (touched < FSX_IDLE_MIN)
    return;
  while (atomic_load(&m->reads->idle_gets) < FSX_IDLE_DEPTH &&
         pend_start(m, fh, &after, true))
    ;
  pthread_mutex_lock(&fh->lock);
  if (after > fh->idle_next)
    fh->idle_next = after;
  pthread_mutex_unlock(&fh->lock);
}

/* see fsx_read_i.h */
int fsx_group_read(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                   size_t len, void **copy)
{
  struct fsx_pend *p;
  int done = 0;

  *copy = NULL;
  pthread_mutex_lock(&fh->lock);
  for (p = fh->pends; p && !(p->from <= off && off + len <= p->to);)
    p = p->next;
  if (p) {
    p->refs++;
    while (!p->state)
      pthread_cond_wait(&fh->landed, &fh->lock);
  }
  pthread_mutex_unlock(&fh->lock);
  if (!p)
    return 0;
  if (p->state == 1 && (*copy = fsx_bufs_get(m->bufs, len))) {
    memcpy(*copy, (char *)p->buf + (off - p->from), len);
    done = 1;
    atomic_fetch_add(&m->st.ahead_waits, 1);
  }
  pend_put(p);
  return done;
}
