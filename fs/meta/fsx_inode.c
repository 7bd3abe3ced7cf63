/* fsx_inode: the inode table (see fsx_inode.h for the locking design). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_inode_i.h"

static size_t hash_ino(uint64_t ino, size_t n)
{
  return (size_t)((ino * 11400714819323198485ull) >> 20) & (n - 1);
}

static size_t hash_name(uint64_t parent, const char *name, size_t n)
{
  uint64_t h = fsx_etag_gen(name) ^ (parent * 11400714819323198485ull);

  return (size_t)(h ^ (h >> 29)) & (n - 1);
}

void fsx_tab_link_name(struct fsx_table *t, struct fsx_inode *in)
{
  size_t b;

  if (in->name) {
    b = hash_name(in->parent, in->name, t->nbuckets);
    in->next_name = t->by_name[b];
    t->by_name[b] = in;
  }
}

static void link_in(struct fsx_table *t, struct fsx_inode *in)
{
  size_t b = hash_ino(in->ino, t->nbuckets);

  in->next_ino = t->by_ino[b];
  t->by_ino[b] = in;
  fsx_tab_link_name(t, in);
}

static void unlink_name(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_inode **pp;

  if (!in->name)
    return;
  pp = &t->by_name[hash_name(in->parent, in->name, t->nbuckets)];
  for (; *pp; pp = &(*pp)->next_name)
    if (*pp == in) {
      *pp = in->next_name;
      break;
    }
  in->next_name = NULL;
}

void fsx_tab_drop_name(struct fsx_table *t, struct fsx_inode *in)
{
  unlink_name(t, in);
  free(in->name);
  in->name = NULL;
}

static void unlink_ino(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_inode **pp = &t->by_ino[hash_ino(in->ino, t->nbuckets)];

  for (; *pp; pp = &(*pp)->next_ino)
    if (*pp == in) {
      *pp = in->next_ino;
      break;
    }
}

/* Double the buckets when the table is full (lock held). */
static void maybe_grow(struct fsx_table *t)
{
  struct fsx_inode **bi, **bn, *in, *nx;
  size_t n = t->nbuckets * 2, old = t->nbuckets;
  struct fsx_inode **oi = t->by_ino;

  if (t->count < t->nbuckets)
    return;
  bi = calloc(n, sizeof(*bi));
  bn = calloc(n, sizeof(*bn));
  if (!bi || !bn) {
    free(bi);
    free(bn);
    return; /* keep the longer chains */
  }
  free(t->by_name);
  t->by_ino = bi;
  t->by_name = bn;
  t->nbuckets = n;
  for (size_t i = 0; i < old; i++)
    for (in = oi[i]; in; in = nx) {
      nx = in->next_ino;
      in->next_name = NULL;
      link_in(t, in);
    }
  free(oi);
}

static void inode_free(struct fsx_inode *in)
{
  for (size_t i = 0; i < in->n_old_keys; i++)
    free(in->old_keys[i]);
  free(in->old_keys);
  fsx_dirsnap_put(in->snap);
  free(in->name);
  free(in->bucket);
  free(in->key);
  free(in);
}

struct fsx_inode *fsx_tab_find_ino(struct fsx_table *t, uint64_t ino)
{
  struct fsx_inode *in = t->by_ino[hash_ino(ino, t->nbuckets)];

  while (in && in->ino != ino)
    in = in->next_ino;
  return in;
}

struct fsx_inode *fsx_tab_find_name(struct fsx_table *t, uint64_t parent,
                                    const char *name)
{
  struct fsx_inode *in = t->by_name[hash_name(parent, name, t->nbuckets)];

  while (in && (in->parent != parent || strcmp(in->name, name)))
    in = in->next_name;
  return in;
}

void fsx_tab_maybe_free(struct fsx_table *t, struct fsx_inode *in)
{
  while (in && in->ino != FSX_ROOT_INO && !in->nlookup && !in->refs &&
         !in->n_children) {
    struct fsx_inode *parent = fsx_tab_find_ino(t, in->parent);
    if (in->name && fsx_tab_find_name(t, in->parent, in->name) == in)
      unlink_name(t, in);
    unlink_ino(t, in);
    t->count--;
    inode_free(in);
    if (!parent)
      break;
    parent->n_children--;
    in = parent;
  }
}

struct fsx_table *fsx_table_create(const char *root_bucket,
                                   const char *root_prefix)
{
  struct fsx_table *t = calloc(1, sizeof(*t));
  struct fsx_inode *root;

  if (!t)
    return NULL;
  t->nbuckets = 1024;
  t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
  t->by_name = calloc(t->nbuckets, sizeof(*t->by_name));
  root = calloc(1, sizeof(*root));
  if (!t->by_ino || !t->by_name || !root)
    goto free_table;
  root->ino = FSX_ROOT_INO;
  root->parent = FSX_ROOT_INO;
  root->bucket = root_bucket ? strdup(root_bucket) : NULL;
  root->key = strdup(root_prefix ? root_prefix : "");
  if ((root_bucket && !root->bucket) || !root->key)
    goto free_root;
  root->attr.kind = FSX_DIR;
  root->nlookup = 1;
  if (pthread_mutex_init(&t->lock, NULL))
    goto free_root;
  if (pthread_cond_init(&t->store_cond, NULL)) {
    pthread_mutex_destroy(&t->lock);
    goto free_root;
  }
  t->next_ino = FSX_STATS_INO + 1;
  link_in(t, root);
  t->count = 1;
  return t;

free_root:
  if (root)
    inode_free(root);
free_table:
  free(t->by_ino);
  free(t->by_name);
  free(t);
  return NULL;
}

void fsx_table_destroy(struct fsx_table *t)
{
  struct fsx_inode *in, *nx;

  if (!t)
    return;
  for (size_t i = 0; i < t->nbuckets; i++)
    for (in = t->by_ino[i]; in; in = nx) {
      nx = in->next_ino;
      inode_free(in);
    }
  free(t->by_ino);
  free(t->by_name);
  pthread_cond_destroy(&t->store_cond);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

uint64_t fsx_table_count(struct fsx_table *t)
{
  uint64_t n;

  pthread_mutex_lock(&t->lock);
  n = t->count;
  pthread_mutex_unlock(&t->lock);
  return n;
}

struct fsx_inode *fsx_inode_get(struct fsx_table *t, uint64_t ino)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = fsx_tab_find_ino(t, ino);
  if (in)
    in->refs++;
  pthread_mutex_unlock(&t->lock);
  return in;
}

void fsx_inode_put(struct fsx_table *t, struct fsx_inode *in)
{
  if (!in)
    return;
  pthread_mutex_lock(&t->lock);
  in->refs--;
  fsx_tab_maybe_free(t, in);
  pthread_mutex_unlock(&t->lock);
}

struct fsx_inode *fsx_inode_find(struct fsx_table *t, uint64_t parent,
                                 const char *name)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = fsx_tab_find_name(t, parent, name);
  if (in)
    in->refs++;
  pthread_mutex_unlock(&t->lock);
  return in;
}

static void set_attr_locked(struct fsx_inode *in, const struct fsx_attr *a,
                            bool meta, uint64_t ttl_ms)
{
  bool keep_meta, same = strcmp(in->attr.etag, a->etag) == 0;
  struct fsx_attr old = in->attr;

  if (old.as_of_ms > a->as_of_ms || in->wb)
    return; /* what we hold is newer */
  meta = meta || a->from_head;
  keep_meta = !meta && in->meta_known && same;
  in->attr = *a;
  /* the kernel marks an inode bad if its type changes under it: a file
     that became a symlink gets a new inode at the next lookup instead */
  if (old.kind)
    in->attr.kind = old.kind;
  if (keep_meta) {
    /* a listing says nothing of mode/uid/gid: keep what a HEAD told us
       while the object is the same */
    in->attr.has_mode = old.has_mode;
    in->attr.mode = old.mode;
    in->attr.has_uid = old.has_uid;
    in->attr.uid = old.uid;
    in->attr.has_gid = old.has_gid;
    in->attr.gid = old.gid;
    if (old.mtime.tv_sec)
      in->attr.mtime = old.mtime;
    in->attr.has_ctime = old.has_ctime;
    in->attr.ctime = old.ctime;
    in->attr.has_atime = old.has_atime;
    in->attr.atime = old.atime;
    in->attr.rdev = old.rdev;
  } else {
    in->meta_known = meta;
  }
  in->gen = fsx_etag_gen(in->attr.etag);
  in->attr_expire_ms = clock_mono_ms() + ttl_ms;
}

void fsx_inode_set_attr(struct fsx_table *t, struct fsx_inode *in,
                        const struct fsx_attr *a, bool meta, uint64_t ttl_ms)
{
  pthread_mutex_lock(&t->lock);
  set_attr_locked(in, a, meta, ttl_ms);
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_set_attr_force(struct fsx_table *t, struct fsx_inode *in,
                              const struct fsx_attr *a, uint64_t ttl_ms)
{
  pthread_mutex_lock(&t->lock);
  in->attr = *a;
  in->meta_known = true;
  in->gen = fsx_etag_gen(a->etag);
  in->attr_expire_ms = clock_mono_ms() + ttl_ms;
  pthread_mutex_unlock(&t->lock);
}

const char *fsx_inode_key(struct fsx_table *t, struct fsx_inode *in)
{
  const char *k;

  pthread_mutex_lock(&t->lock);
  k = in->key;
  pthread_mutex_unlock(&t->lock);
  return k;
}

char *fsx_inode_key_of(struct fsx_table *t, struct fsx_inode *dir,
                       const char *name, enum fsx_kind kind)
{
  char *k;

  pthread_mutex_lock(&t->lock);
  k = fsx_tab_child_key(dir, name, kind);
  pthread_mutex_unlock(&t->lock);
  return k;
}

void fsx_inode_dir_touch(struct fsx_table *t, struct fsx_inode *dir)
{
  time_t now = time(NULL);

  pthread_mutex_lock(&t->lock);
  dir->entries_at = now;
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_dir_times_set(struct fsx_table *t, struct fsx_inode *dir)
{
  pthread_mutex_lock(&t->lock);
  dir->entries_at = 0;
  pthread_mutex_unlock(&t->lock);
}

int fsx_inode_name_fits(struct fsx_table *t, struct fsx_inode *dir,
                        const char *name, enum fsx_kind kind)
{
  size_t n = strlen(name), k;

  if (n > 255)
    return -ENAMETOOLONG;
  pthread_mutex_lock(&t->lock);
  k = strlen(dir->key) + n + (kind == FSX_DIR);
  pthread_mutex_unlock(&t->lock);
  return k > FSX_KEY_MAX ? -ENAMETOOLONG : 0;
}

uint64_t fsx_inode_ino(const struct fsx_inode *in)
{
  return in->ino;
}

const char *fsx_inode_bucket(const struct fsx_inode *in)
{
  return in->bucket;
}

void fsx_inode_view(struct fsx_table *t, struct fsx_inode *in,
                    struct fsx_inode_view *v)
{
  pthread_mutex_lock(&t->lock);
  v->attr = in->attr;
  v->stale = clock_mono_ms() >= in->attr_expire_ms;
  v->meta_known = in->meta_known;
  v->writing = in->wb != NULL;
  v->parent = in->parent;
  v->named = in->name != NULL;
  v->unlinked = in->unlinked;
  v->entries_at = in->entries_at;
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_detach(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  in->unlinked = true;
  fsx_tab_drop_name(t, in);
  pthread_mutex_unlock(&t->lock);
}

char *fsx_tab_child_key(const struct fsx_inode *parent, const char *name,
                        enum fsx_kind kind)
{
  size_t pl = strlen(parent->key), nl = strlen(name);
  char *k = malloc(pl + nl + 2);

  if (!k)
    return NULL;
  memcpy(k, parent->key, pl);
  memcpy(k + pl, name, nl);
  if (kind == FSX_DIR)
    k[pl + nl++] = '/';
  k[pl + nl] = '\0';
  return k;
}

struct fsx_inode *fsx_inode_child(struct fsx_table *t, struct fsx_inode *parent,
                                  const char *name, const struct fsx_attr *a,
                                  const char *bucket, uint64_t ttl_ms,
                                  bool kernel_ref)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = fsx_tab_find_name(t, parent->ino, name);
  /* a listing cannot tell a symlink (known from a HEAD) from a file */
  if (in && (in->attr.kind == FSX_SYMLINK || in->attr.kind == FSX_NODE) &&
      a->kind == FSX_FILE &&
      !a->from_head && !strcmp(in->attr.etag, a->etag))
    ;
  else if (in && in->attr.kind != a->kind) {
    /* a file became a directory or back: a new inode under the name */
    fsx_tab_drop_name(t, in);
    in = NULL;
  }
  if (in) {
    if (a->etag[0] || a->kind == FSX_DIR)
      set_attr_locked(in, a, false, ttl_ms);
  } else {
    in = calloc(1, sizeof(*in));
    if (!in)
      goto out;
    in->name = strdup(name);
    in->bucket = bucket ? strdup(bucket)
                        : (parent->bucket ? strdup(parent->bucket) : NULL);
    in->key = bucket ? strdup("") : fsx_tab_child_key(parent, name, a->kind);
    if (!in->name || !in->key || (!in->bucket && (bucket || parent->bucket))) {
      inode_free(in);
      in = NULL;
      goto out;
    }
    in->ino = t->next_ino++;
    in->parent = parent->ino;
    set_attr_locked(in, a, false, ttl_ms);
    link_in(t, in);
    t->count++;
    parent->n_children++;
    maybe_grow(t);
  }
  if (kernel_ref)
    in->nlookup++;
  else
    in->refs++;
out:
  pthread_mutex_unlock(&t->lock);
  return in;
}

void fsx_inode_forget(struct fsx_table *t, uint64_t ino, uint64_t n)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = fsx_tab_find_ino(t, ino);
  if (in) {
    in->nlookup = in->nlookup > n ? in->nlookup - n : 0;
    fsx_tab_maybe_free(t, in);
  }
  pthread_mutex_unlock(&t->lock);
}

/* Under t->lock: s as dir's snapshot for ttl_ms (a reference of its own;
   the caller keeps its). */
static void snap_install(struct fsx_inode *dir, struct fsx_dirsnap *s,
                         uint64_t ttl_ms)
{
  fsx_dirsnap_hold(s);
  fsx_dirsnap_put(dir->snap);
  dir->snap = s;
  dir->snap_expire_ms = clock_mono_ms() + ttl_ms;
}

void fsx_dir_set_snap(struct fsx_table *t, struct fsx_inode *dir,
                      struct fsx_dirsnap *s, uint64_t ttl_ms)
{
  pthread_mutex_lock(&t->lock);
  snap_install(dir, s, ttl_ms);
  pthread_mutex_unlock(&t->lock);
}

struct fsx_dirsnap *fsx_dir_get_snap(struct fsx_table *t,
                                     struct fsx_inode *dir, bool fresh_only)
{
  struct fsx_dirsnap *s = NULL;

  pthread_mutex_lock(&t->lock);
  if (dir->snap && (!fresh_only || clock_mono_ms() < dir->snap_expire_ms)) {
    s = dir->snap;
    fsx_dirsnap_hold(s);
  }
  pthread_mutex_unlock(&t->lock);
  return s;
}

uint64_t fsx_dir_changes(struct fsx_table *t, struct fsx_inode *dir)
{
  uint64_t n;

  pthread_mutex_lock(&t->lock);
  n = dir->ns_changes;
  pthread_mutex_unlock(&t->lock);
  return n;
}

bool fsx_dir_set_snap_since(struct fsx_table *t, struct fsx_inode *dir,
                            struct fsx_dirsnap *s, uint64_t ttl_ms,
                            uint64_t changes)
{
  bool ok;

  pthread_mutex_lock(&t->lock);
  ok = dir->ns_changes == changes &&
       !(dir->snap && !dir->snap->names_only &&
         clock_mono_ms() < dir->snap_expire_ms); /* a fresh listing stays */
  if (ok)
    snap_install(dir, s, ttl_ms);
  pthread_mutex_unlock(&t->lock);
  return ok;
}

bool fsx_dir_is_big(struct fsx_table *t, struct fsx_inode *dir)
{
  bool big;

  pthread_mutex_lock(&t->lock);
  big = clock_mono_ms() < dir->big_until_ms;
  pthread_mutex_unlock(&t->lock);
  return big;
}

void fsx_dir_set_big(struct fsx_table *t, struct fsx_inode *dir,
                     uint64_t ttl_ms)
{
  pthread_mutex_lock(&t->lock);
  dir->big_until_ms = clock_mono_ms() + ttl_ms;
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_invalidate(struct fsx_table *t, struct fsx_inode *dir)
{
  pthread_mutex_lock(&t->lock);
  fsx_dirsnap_put(dir->snap);
  dir->snap = NULL;
  dir->ns_changes++;
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_snap_put_entry(struct fsx_table *t, struct fsx_inode *dir,
                            const char *name, const struct fsx_attr *a)
{
  pthread_mutex_lock(&t->lock);
  if (dir->snap) /* NULL when it cannot be kept right */
    dir->snap = fsx_dirsnap_with(dir->snap, name, a);
  dir->ns_changes++;
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_snap_remove(struct fsx_table *t, struct fsx_inode *dir,
                         const char *name)
{
  pthread_mutex_lock(&t->lock);
  if (dir->snap)
    dir->snap = fsx_dirsnap_without(dir->snap, name);
  dir->ns_changes++;
  pthread_mutex_unlock(&t->lock);
}

void fsx_inode_note_entry(struct fsx_table *t, struct fsx_inode *in)
{
  struct fsx_inode *dir;

  pthread_mutex_lock(&t->lock);
  dir = in->name ? fsx_tab_find_ino(t, in->parent) : NULL;
  if (dir && dir->snap)
    dir->snap = fsx_dirsnap_with(dir->snap, in->name, &in->attr);
  if (dir)
    dir->ns_changes++;
  pthread_mutex_unlock(&t->lock);
}
