/*
 * fsx_ahead: a listing's metadata asked for ahead of its lookups (design
 * in fsx_ahead.h).
 */
#include "fs/meta/fsx_ahead.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "fs/meta/fsx_dirsnap.h"
#include "fs/mount/fsx_i.h"
#include "fs/meta/fsx_inode.h"

enum { NONE, ASKED, HAVE };

struct fsx_ahead {
  struct fsx_dirsnap_side side;      /* (first: the snapshot frees us) */
  pthread_mutex_t mu;
  size_t from, n;                    /* mu: the window [from, from + n) */
  size_t last;                       /* mu: the previous lookup's entry,
                                        plus one (0: none yet) */
  uint64_t gen;                      /* mu: bumped as the window moves */
  unsigned streak;                   /* mu: lookups in a row that followed
                                        the one before */
  unsigned char state[FSX_AHEAD_N];  /* mu: NONE, ASKED, HAVE */
  struct fsx_attr attr[FSX_AHEAD_N]; /* mu: where HAVE */
};

static void ahead_free(struct fsx_dirsnap_side *side)
{
  struct fsx_ahead *t = (struct fsx_ahead *)side;

  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* s's table, made by the first lookup that needs it. */
static struct fsx_ahead *table_of(struct fsx_dirsnap *s)
{
  struct fsx_dirsnap_side *none = NULL, *have = atomic_load(&s->side);
  struct fsx_ahead *t;

  if (have)
    return (struct fsx_ahead *)have;
  if (!(t = calloc(1, sizeof(*t))))
    return NULL;
  t->side.free = ahead_free;
  if (pthread_mutex_init(&t->mu, NULL)) {
    free(t);
    return NULL;
  }
  if (!atomic_compare_exchange_strong(&s->side, &none, &t->side)) {
    ahead_free(&t->side); /* another lookup's came first */
    return (struct fsx_ahead *)none;
  }
  return t;
}

/* How old an answer may be when a lookup takes it: the time a reader
   takes to come to it, never a cache of its own (the inode's attribute
   TTL starts when the lookup hands it to the kernel). */
static uint64_t fresh_ms(const struct fsx_mount *m)
{
  return m->o.attr_ttl_ms < FSX_AHEAD_FRESH_MS ? m->o.attr_ttl_ms
                                               : FSX_AHEAD_FRESH_MS;
}

int fsx_ahead_meta(struct fsx_mount *m, struct fsx_inode *dir,
                   struct fsx_dirsnap *s, size_t i, struct fsx_attr *a)
{
  struct fsx_ahead *t = table_of(s);
  const struct fsx_attr *listed[FSX_AHEAD_N];
  const char *names[FSX_AHEAD_N];
  bool ok[FSX_AHEAD_N], follows, inside;
  size_t at[FSX_AHEAD_N], n = 0;
  struct fsx_attr *got;
  uint64_t gen;
  int rc;

  if (!t || i >= s->n)
    return 1;
  pthread_mutex_lock(&t->mu);
  follows = t->last && i >= t->last && i - t->last < FSX_AHEAD_STEP;
  t->streak = follows ? t->streak + 1 : 0;
  t->last = i + 1;
  inside = i >= t->from && i < t->from + t->n;
  if (inside && t->state[i - t->from] == HAVE) {
    /* taken once, and only fresh */
    t->state[i - t->from] = NONE;
    if (clock_mono_ms() - t->attr[i - t->from].as_of_ms < fresh_ms(m)) {
      *a = t->attr[i - t->from];
      pthread_mutex_unlock(&t->mu);
      atomic_fetch_add(&m->st.heads_ahead, 1);
      return 0;
    }
  }
  /* a window only for a reader that has followed the listing twice in a
     row (two names stat'ed are not a listing read), and only past the
     current one: a name inside it that has no answer (asked by another
     lookup, failed, stale) is asked alone */
  if (inside || t->streak < 2) {
    pthread_mutex_unlock(&t->mu);
    return 1;
  }
  if (!(got = malloc(FSX_AHEAD_N * sizeof(*got)))) {
    pthread_mutex_unlock(&t->mu);
    return 1;
  }
  t->from = i;
  t->n = s->n - i < FSX_AHEAD_N ? s->n - i : FSX_AHEAD_N;
  gen = ++t->gen;
  memset(t->state, NONE, sizeof(t->state));
  for (size_t k = 0; k < t->n; k++) {
    const struct fsx_dirent *d = &s->ents[i + k];
    /* (lock order: mu, then the table's) */
    if (k && fsx_inode_child_meta_known(m->tab, dir, d->name, &d->attr))
      continue;
    t->state[k] = ASKED;
    names[n] = d->name;
    listed[n] = &d->attr;
    at[n++] = k;
  }
  pthread_mutex_unlock(&t->mu);

  rc = fsx_ns_head_many(m, dir, names, listed, n, got, ok);
  pthread_mutex_lock(&t->mu);
  if (t->gen == gen) /* (else another window took its place: dropped) */
    for (size_t j = 1; j < n; j++) {
      t->state[at[j]] = !rc && ok[j] ? HAVE : NONE;
      if (!rc && ok[j])
        t->attr[at[j]] = got[j];
    }
  pthread_mutex_unlock(&t->mu);
  if (!rc && ok[0]) /* (at[0] is i's own: always asked, used at once) */
    *a = got[0];
  free(got);
  return !rc && ok[0] ? 0 : 1;
}
