/* fsx_inode: the inode table (see fsx_inode.h for the locking design). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/slog.h"
#include "fs/fsx_inode.h"

struct fsx_table {
  pthread_mutex_t lock;
  struct fsx_inode **by_ino;   /* lock */
  struct fsx_inode **by_name;  /* lock */
  size_t nbuckets;             /* lock; power of two */
  uint64_t count;              /* lock */
  uint64_t next_ino;           /* lock */
};

uint64_t fsx_now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t fsx_etag_gen(const char *etag)
{
  uint64_t h = 1469598103934665603ull;

  for (; etag && *etag; etag++) {
    h ^= (unsigned char)*etag;
    h *= 1099511628211ull;
  }
  return h;
}

static size_t hash_ino(uint64_t ino, size_t n)
{
  return (size_t)((ino * 11400714819323198485ull) >> 20) & (n - 1);
}

static size_t hash_name(uint64_t parent, const char *name, size_t n)
{
  uint64_t h = fsx_etag_gen(name) ^ (parent * 11400714819323198485ull);

  return (size_t)(h ^ (h >> 29)) & (n - 1);
}

static void link_name(struct fsx_table *t, struct fsx_inode *in)
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
  link_name(t, in);
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

void fsx_dirsnap_free(struct fsx_dirsnap *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->ents[i].name);
  free(s->ents);
  free(s);
}

static void snap_release(struct fsx_dirsnap *s)
{
  if (s && --s->refs == 0)
    fsx_dirsnap_free(s);
}

static void inode_free(struct fsx_inode *in)
{
  for (size_t i = 0; i < in->n_old_keys; i++)
    free(in->old_keys[i]);
  free(in->old_keys);
  snap_release(in->snap);
  free(in->name);
  free(in->bucket);
  free(in->key);
  free(in);
}

static struct fsx_inode *find_ino(struct fsx_table *t, uint64_t ino)
{
  struct fsx_inode *in = t->by_ino[hash_ino(ino, t->nbuckets)];

  while (in && in->ino != ino)
    in = in->next_ino;
  return in;
}

static struct fsx_inode *find_name(struct fsx_table *t, uint64_t parent,
                                   const char *name)
{
  struct fsx_inode *in = t->by_name[hash_name(parent, name, t->nbuckets)];

  while (in && (in->parent != parent || strcmp(in->name, name)))
    in = in->next_name;
  return in;
}

/* Free in if nothing holds it, then walk up to its parent (lock held). */
static void maybe_free(struct fsx_table *t, struct fsx_inode *in)
{
  while (in && in->ino != FSX_ROOT_INO && !in->nlookup && !in->refs &&
         !in->n_children) {
    struct fsx_inode *parent = find_ino(t, in->parent);
    if (in->name && find_name(t, in->parent, in->name) == in)
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
  pthread_mutex_destroy(&t->lock);
  free(t);
}

void fsx_table_lock(struct fsx_table *t)
{
  pthread_mutex_lock(&t->lock);
}

void fsx_table_unlock(struct fsx_table *t)
{
  pthread_mutex_unlock(&t->lock);
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
  in = find_ino(t, ino);
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
  maybe_free(t, in);
  pthread_mutex_unlock(&t->lock);
}

struct fsx_inode *fsx_inode_find(struct fsx_table *t, uint64_t parent,
                                 const char *name)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = find_name(t, parent, name);
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
  } else {
    in->meta_known = meta;
  }
  in->gen = fsx_etag_gen(in->attr.etag);
  in->attr_expire_ms = fsx_now_ms() + ttl_ms;
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
  in->attr_expire_ms = fsx_now_ms() + ttl_ms;
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

void fsx_inode_detach(struct fsx_table *t, struct fsx_inode *in)
{
  pthread_mutex_lock(&t->lock);
  unlink_name(t, in);
  free(in->name);
  in->name = NULL;
  pthread_mutex_unlock(&t->lock);
}

/* Give in the key k, keeping the old one for unlocked readers (lock held;
   old_keys has room, see move_reserve). */
static void rekey(struct fsx_inode *in, char *k)
{
  in->old_keys[in->n_old_keys++] = in->key;
  in->key = k;
}

static int move_reserve(struct fsx_inode *in)
{
  char **ok = realloc(in->old_keys, (in->n_old_keys + 1) * sizeof(*ok));

  if (!ok)
    return -ENOMEM;
  in->old_keys = ok;
  return 0;
}

/* The key of a child: prefix + name (+ '/' for a directory). */
static char *child_key(const struct fsx_inode *parent, const char *name,
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
  in = find_name(t, parent->ino, name);
  /* a listing cannot tell a symlink (known from a HEAD) from a file */
  if (in && in->attr.kind == FSX_SYMLINK && a->kind == FSX_FILE &&
      !a->from_head && !strcmp(in->attr.etag, a->etag))
    ;
  else if (in && in->attr.kind != a->kind) {
    /* a file became a directory or back: a new inode under the name */
    unlink_name(t, in);
    free(in->name);
    in->name = NULL;
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
    in->key = bucket ? strdup("") : child_key(parent, name, a->kind);
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

/* The new key of an inode below a renamed directory (lock held). */
static char *below_key(const char *key, size_t oldlen, const char *newpfx)
{
  size_t nl = strlen(newpfx), rl = strlen(key + oldlen);
  char *k = malloc(nl + rl + 1);

  if (k) {
    memcpy(k, newpfx, nl);
    memcpy(k + nl, key + oldlen, rl + 1);
  }
  return k;
}

static bool is_below(const struct fsx_inode *x, const struct fsx_inode *dir,
                     const char *pfx, size_t pl)
{
  return x != dir && x->bucket && dir->bucket &&
         !strcmp(x->bucket, dir->bucket) && !strncmp(x->key, pfx, pl);
}

int fsx_inode_move(struct fsx_table *t, struct fsx_inode *in,
                   struct fsx_inode *newparent, const char *newname)
{
  struct fsx_inode *victim, *oldparent, *x;
  char *name = strdup(newname), *key = NULL, *pfx = NULL;
  size_t pl = 0;
  int rc = -ENOMEM;

  pthread_mutex_lock(&t->lock);
  key = child_key(newparent, newname, in->attr.kind);
  if (!name || !key || move_reserve(in))
    goto out;
  if (in->attr.kind == FSX_DIR) {
    /* every new key and room for every old one first, so that nothing
       changes unless everything can */
    size_t n = 0, cap = 0;
    struct fsx_inode **who = NULL;
    char **keys = NULL;
    pfx = in->key;
    pl = strlen(pfx);
    for (size_t i = 0; i < t->nbuckets; i++)
      for (x = t->by_ino[i]; x; x = x->next_ino) {
        if (!is_below(x, in, pfx, pl))
          continue;
        if (n == cap) {
          size_t nc = cap ? cap * 2 : 16;
          struct fsx_inode **nw = realloc(who, nc * sizeof(*nw));
          char **nk = nw ? realloc(keys, nc * sizeof(*nk)) : NULL;
          if (nw)
            who = nw;
          if (!nk)
            goto free_keys;
          keys = nk;
          cap = nc;
        }
        if (move_reserve(x) || !(keys[n] = below_key(x->key, pl, key)))
          goto free_keys;
        who[n++] = x;
      }
    for (size_t i = 0; i < n; i++)
      rekey(who[i], keys[i]);
    free(who);
    free(keys);
    goto moved;
free_keys:
    for (size_t i = 0; i < n; i++)
      free(keys[i]);
    free(who);
    free(keys);
    goto out;
  }
moved:
  victim = find_name(t, newparent->ino, newname);
  if (victim && victim != in) {
    unlink_name(t, victim);
    free(victim->name);
    victim->name = NULL;
  }
  unlink_name(t, in);
  free(in->name);
  in->name = name;
  name = NULL;
  oldparent = find_ino(t, in->parent);
  if (oldparent)
    oldparent->n_children--;
  newparent->n_children++;
  in->parent = newparent->ino;
  rekey(in, key);
  key = NULL;
  link_name(t, in);
  if (oldparent)
    maybe_free(t, oldparent);
  rc = 0;
out:
  pthread_mutex_unlock(&t->lock);
  free(name);
  free(key);
  return rc;
}

void fsx_inode_forget(struct fsx_table *t, uint64_t ino, uint64_t n)
{
  struct fsx_inode *in;

  pthread_mutex_lock(&t->lock);
  in = find_ino(t, ino);
  if (in) {
    in->nlookup = in->nlookup > n ? in->nlookup - n : 0;
    maybe_free(t, in);
  }
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_set_snap(struct fsx_table *t, struct fsx_inode *dir,
                      struct fsx_dirsnap *s, uint64_t ttl_ms)
{
  pthread_mutex_lock(&t->lock);
  snap_release(dir->snap);
  s->refs = 2; /* the directory's and the caller's */
  dir->snap = s;
  dir->snap_expire_ms = fsx_now_ms() + ttl_ms;
  pthread_mutex_unlock(&t->lock);
}

struct fsx_dirsnap *fsx_dir_get_snap(struct fsx_table *t,
                                     struct fsx_inode *dir, bool fresh_only)
{
  struct fsx_dirsnap *s = NULL;

  pthread_mutex_lock(&t->lock);
  if (dir->snap && (!fresh_only || fsx_now_ms() < dir->snap_expire_ms)) {
    s = dir->snap;
    s->refs++;
  }
  pthread_mutex_unlock(&t->lock);
  return s;
}

void fsx_dirsnap_put(struct fsx_table *t, struct fsx_dirsnap *s)
{
  if (!s)
    return;
  pthread_mutex_lock(&t->lock);
  snap_release(s);
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_invalidate(struct fsx_table *t, struct fsx_inode *dir)
{
  pthread_mutex_lock(&t->lock);
  snap_release(dir->snap);
  dir->snap = NULL;
  pthread_mutex_unlock(&t->lock);
}

/* Where name is, or would go, in s (*found says which). */
static size_t snap_pos(const struct fsx_dirsnap *s, const char *name,
                       bool *found)
{
  size_t lo = 0, hi = s->n;

  *found = false;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(name, s->ents[mid].name);
    if (!c) {
      *found = true;
      return mid;
    }
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* dir's snapshot, ready to be changed (lock held): the same one when only
   the directory holds it, else a copy replacing it; NULL if none. */
static struct fsx_dirsnap *snap_private(struct fsx_inode *dir, size_t extra)
{
  struct fsx_dirsnap *s = dir->snap, *c;

  if (!s)
    return NULL;
  if (s->refs == 1) {
    struct fsx_dirent *e;
    if (!s->n && !extra)
      return s;
    e = realloc(s->ents, (s->n + extra) * sizeof(*e));
    if (!e && s->n + extra)
      return NULL;
    s->ents = e;
    return s;
  }
  c = calloc(1, sizeof(*c));
  if (!c || !(c->ents = calloc(s->n + extra, sizeof(*c->ents))))
    goto fail;
  for (; c->n < s->n; c->n++) {
    c->ents[c->n] = s->ents[c->n];
    if (!(c->ents[c->n].name = strdup(s->ents[c->n].name)))
      goto fail;
  }
  c->refs = 1;
  snap_release(s);
  dir->snap = c;
  return c;
fail:
  fsx_dirsnap_free(c);
  return NULL;
}

void fsx_dir_snap_put_entry(struct fsx_table *t, struct fsx_inode *dir,
                            const char *name, const struct fsx_attr *a)
{
  struct fsx_dirsnap *s;
  bool found;
  size_t i;
  char *nm = strdup(name);

  pthread_mutex_lock(&t->lock);
  s = nm ? snap_private(dir, 1) : NULL;
  if (!s) {
    snap_release(dir->snap); /* cannot keep it right: drop it */
    dir->snap = NULL;
    free(nm);
    goto out;
  }
  i = snap_pos(s, name, &found);
  if (found) {
    free(nm);
  } else {
    memmove(&s->ents[i + 1], &s->ents[i], (s->n - i) * sizeof(*s->ents));
    s->ents[i].name = nm;
    s->n++;
  }
  s->ents[i].attr = *a;
out:
  pthread_mutex_unlock(&t->lock);
}

void fsx_dir_snap_remove(struct fsx_table *t, struct fsx_inode *dir,
                         const char *name)
{
  struct fsx_dirsnap *s;
  bool found;
  size_t i;

  pthread_mutex_lock(&t->lock);
  if (dir->snap) {
    i = snap_pos(dir->snap, name, &found);
    s = found ? snap_private(dir, 0) : NULL;
    if (found && !s) {
      snap_release(dir->snap);
      dir->snap = NULL;
    } else if (found) {
      free(s->ents[i].name);
      memmove(&s->ents[i], &s->ents[i + 1], (s->n - i - 1) * sizeof(*s->ents));
      s->n--;
    }
  }
  pthread_mutex_unlock(&t->lock);
}

const struct fsx_dirent *fsx_dirsnap_find(const struct fsx_dirsnap *s,
                                          const char *name)
{
  size_t lo = 0, hi = s->n;

  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(name, s->ents[mid].name);
    if (!c)
      return &s->ents[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}
