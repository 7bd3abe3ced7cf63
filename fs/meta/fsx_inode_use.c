/*
 * fsx_inode_use: what holds an inode besides names (see fsx_inode.h): open
 * file handles, the write-back state attached to it, and the object the
 * kernel's page cache holds. All under the table lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "fs/meta/fsx_inode_i.h"

/* how long after a drop was asked for the kernel may still be dropping:
   from our answer until the opener runs again (a loaded machine, a
   stopped process); past it a writer's pages are trusted */
#define KERNEL_DROP_SETTLE_MS 5000

uint64_t fsx_inode_commits(struct fsx_table *t, struct fsx_inode *in)
{
  uint64_t n;

  pthread_mutex_lock(&t->lock);
  n = in->commits;
  pthread_mutex_unlock(&t->lock);
  return n;
}

int fsx_inode_kernel_open(struct fsx_table *t, struct fsx_inode *in,
                          const char *etag, uint64_t commits, bool keep,
                          struct fsx_kernel_seen *seen, bool *drop)
{
  pthread_mutex_lock(&t->lock);
  if (in->wb || in->commits != commits) {
    pthread_mutex_unlock(&t->lock);
    return -EAGAIN;
  }
  seen->changed = strcmp(in->kernel_etag, etag) != 0;
  seen->reopened = in->kernel_etag[0] != '\0';
  seen->stale = in->gen != fsx_etag_gen(etag);
  seen->unsure = in->kernel_unsure;
  *drop = seen->changed || in->kernel_unsure || !keep;
  if (*drop) { /* no writer: what the kernel reads next is the object */
    in->kernel_drop_ms = clock_mono_ms();
    in->kernel_unsure = false;
    in->kernel_epoch++;
  }
  snprintf(in->kernel_etag, sizeof(in->kernel_etag), "%s", etag);
  pthread_mutex_unlock(&t->lock);
  return 0;
}

void fsx_inode_set_peek(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->peek_ms = clock_mono_ms();
  pthread_mutex_unlock(&t->lock);
}

uint64_t fsx_inode_take_peek(struct fsx_table *t, struct fsx_inode *in)
{
  uint64_t ms;

  pthread_mutex_lock(&t->lock);
  ms = in->peek_ms;
  in->peek_ms = 0;
  pthread_mutex_unlock(&t->lock);
  return ms;
}

bool fsx_inode_open_known(struct fsx_table *t, struct fsx_inode *in,
                          uint64_t ttl_ms, struct fsx_attr *a)
{
  bool ok;

  pthread_mutex_lock(&t->lock);
  ok = !in->wb && in->attr.kind == FSX_FILE && in->attr.etag[0] &&
       !in->kernel_etag[0] && !in->kernel_unsure &&
       clock_mono_ms() - in->attr.as_of_ms < ttl_ms;
  if (ok)
    *a = in->attr;
  pthread_mutex_unlock(&t->lock);
  return ok;
}

void fsx_inode_kernel_doubt(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->kernel_unsure = true;
  pthread_mutex_unlock(&t->lock);
}

bool fsx_inode_kernel_store(struct fsx_table *t, struct fsx_inode *in,
                            uint64_t gen, uint64_t commits, uint64_t *epoch,
                            uint64_t *size)
{
  bool ok;

  pthread_mutex_lock(&t->lock);
  ok = !in->wb && in->commits == commits && !in->kernel_unsure &&
       in->kernel_etag[0] && fsx_etag_gen(in->kernel_etag) == gen &&
       in->gen == gen;
  *epoch = in->kernel_epoch;
  *size = in->attr.size;
  if (ok) {
    in->kernel_drop_ms = clock_mono_ms();
    in->kstores++; /* until fsx_inode_kernel_stored: no writer meanwhile */
  }
  pthread_mutex_unlock(&t->lock);
  return ok;
}

bool fsx_inode_kernel_stored(struct fsx_table *t, struct fsx_inode *in,
                             uint64_t epoch)
{
  bool ok;

  pthread_mutex_lock(&t->lock);
  ok = !in->wb && in->kernel_epoch == epoch;
  if (!ok)
    in->kernel_unsure = true;
  in->kernel_drop_ms = clock_mono_ms();
  if (!--in->kstores)
    pthread_cond_broadcast(&t->store_cond);
  pthread_mutex_unlock(&t->lock);
  return ok;
}

void fsx_inode_kernel_writer(struct fsx_table *t, struct fsx_inode *in)
{
  uint64_t now = clock_mono_ms();

  pthread_mutex_lock(&t->lock);
  if (in->kernel_drop_ms && now - in->kernel_drop_ms < KERNEL_DROP_SETTLE_MS)
    in->kernel_unsure = true;
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_kernel_wrote(struct fsx_table *t, struct fsx_inode *in,
                            const char *etag)
{
  pthread_mutex_lock(&t->lock);
  in->commits++;
  in->kernel_epoch++;
  snprintf(in->kernel_etag, sizeof(in->kernel_etag), "%s",
           in->kernel_unsure ? "" : etag);
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_open(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->refs++;
  in->opens++;
  pthread_mutex_unlock(&t->lock);
}

struct fsx_wb *fsx_inode_close(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_wb *orphan = NULL;

  pthread_mutex_lock(&t->lock);
  if (!--in->opens && in->orphan) {
    orphan = in->wb;
    in->orphan = false;
  }
  pthread_mutex_unlock(&t->lock);
  return orphan;
}

bool fsx_inode_in_use(struct fsx_table *t, struct fsx_inode *in)
{
  return fsx_inode_opens(t, in) > 0;
}

unsigned fsx_inode_opens(struct fsx_table *t, struct fsx_inode *in)
{
  unsigned n;

  pthread_mutex_lock(&t->lock);
  n = in->opens;
  pthread_mutex_unlock(&t->lock);
  return n;
}

bool fsx_inode_keep_orphan(struct fsx_table *t, struct fsx_inode *in)
{
  bool kept = false;

  pthread_mutex_lock(&t->lock);
  if (in->opens && !in->orphan && in->wb) {
    in->orphan = true;
    in->wb_refs++;
    kept = true;
  }
  pthread_mutex_unlock(&t->lock);
  return kept;
}

struct fsx_wb *fsx_inode_wb_attach(struct fsx_table *t, struct fsx_inode *in,
                                   struct fsx_wb *mine, bool *removed)
{
  struct fsx_wb *wb;

  *removed = false;
  pthread_mutex_lock(&t->lock);
  /* a store began before this writer: a background one (whose copy must
     not land after our upload), or one into the kernel's pages, which
     would overwrite the pages our first writes are read from (the kernel
     takes a WRITE's bytes from its page cache when the daemon reads the
     request, the pages unlocked by then) */
  while (!in->wb && (in->stores || in->kstores))
    pthread_cond_wait(&t->store_cond, &t->lock);
  if (in->wb) { /* another open made one first: that one */
    in->wb_refs++;
  } else {
    in->wb = mine;
    in->wb_refs = 1;
    *removed = in->unlinked;
    in->kernel_epoch++; /* a writer: stores in flight must recheck */
    in->refs++; /* the state's, dropped when it is freed */
  }
  wb = in->wb;
  pthread_mutex_unlock(&t->lock);
  return wb;
}

struct fsx_wb *fsx_inode_wb_get(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_wb *wb;

  pthread_mutex_lock(&t->lock);
  wb = in->wb;
  if (wb)
    in->wb_refs++;
  pthread_mutex_unlock(&t->lock);
  return wb;
}

void fsx_inode_wb_ref(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->wb_refs++;
  pthread_mutex_unlock(&t->lock);
}

bool fsx_inode_wb_ref_live(struct fsx_table *t, struct fsx_inode *in,
                           const struct fsx_wb *wb)
{
  bool live;

  pthread_mutex_lock(&t->lock);
  live = in->wb == wb && in->wb_refs > 0;
  if (live)
    in->wb_refs++;
  pthread_mutex_unlock(&t->lock);
  return live;
}

struct fsx_wb *fsx_inode_wb_unref(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_wb *last = NULL;

  pthread_mutex_lock(&t->lock);
  if (!--in->wb_refs) {
    last = in->wb;
    in->wb = NULL;
    in->orphan = false;
  }
  pthread_mutex_unlock(&t->lock);
  return last;
}

void fsx_inode_wb_reset(struct fsx_table *t, struct fsx_inode *in,
                        const struct fsx_wb *wb)
{
  pthread_mutex_lock(&t->lock);
  if (in->wb == wb)
    in->wb_refs = 1;
  pthread_mutex_unlock(&t->lock);
}

bool fsx_inode_meta_known(struct fsx_table *t, struct fsx_inode *in,
                          const struct fsx_attr *a)
{
  struct fsx_inode_view v;

  fsx_inode_view(t, in, &v);
  /* a listing cannot tell a symlink or node from a file */
  return v.meta_known &&
         (v.attr.kind == a->kind ||
          (a->kind == FSX_FILE && v.attr.kind != FSX_DIR)) &&
         (a->kind == FSX_DIR || !strcmp(v.attr.etag, a->etag));
}

bool fsx_inode_child_meta_known(struct fsx_table *t, struct fsx_inode *dir,
                                const char *name, const struct fsx_attr *a)
{
  struct fsx_inode *in = fsx_inode_find(t, fsx_inode_ino(dir), name);
  bool known = false;

  if (in) {
    known = fsx_inode_meta_known(t, in, a);
    fsx_inode_put(t, in);
  }
  return known;
}

bool fsx_inode_store_begin(struct fsx_table *t, struct fsx_inode *in)
{
  bool ok;

  pthread_mutex_lock(&t->lock);
  ok = in->name && !in->wb && !in->store_blocks;
  if (ok)
    in->stores++;
  pthread_mutex_unlock(&t->lock);
  return ok;
}

void fsx_inode_store_end(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  if (!--in->stores)
    pthread_cond_broadcast(&t->store_cond);
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_store_block(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->store_blocks++;
  while (in->stores)
    pthread_cond_wait(&t->store_cond, &t->lock);
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_store_unblock(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->store_blocks--;
  pthread_mutex_unlock(&t->lock);
}
