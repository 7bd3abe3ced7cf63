/* fsx_dirsnap: directory listing snapshots (see fsx_dirsnap.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fs/meta/fsx_dirsnap.h"

static void side_free(struct fsx_dirsnap_side *side)
{
  if (side)
    side->free(side);
}

struct fsx_dirsnap *fsx_dirsnap_new(void)
{
  struct fsx_dirsnap *s = calloc(1, sizeof(*s));

  if (s)
    atomic_init(&s->refs, 1);
  return s;
}

static void snap_free(struct fsx_dirsnap *s)
{
  side_free(atomic_load(&s->side));
  for (size_t i = 0; i < s->n; i++)
    free(s->ents[i].name);
  free(s->ents);
  free(s);
}

/* Room for extra more entries. */
static int reserve(struct fsx_dirsnap *s, size_t extra)
{
  struct fsx_dirent *e;
  size_t cap;

  if (s->n + extra <= s->cap)
    return 0;
  cap = s->cap ? s->cap * 2 : 64;
  if (cap < s->n + extra)
    cap = s->n + extra;
  e = realloc(s->ents, cap * sizeof(*e));
  if (!e)
    return -ENOMEM;
  s->ents = e;
  s->cap = cap;
  return 0;
}

int fsx_dirsnap_add(struct fsx_dirsnap *s, const char *name, size_t len,
                    const struct fsx_attr *a)
{
  char *nm;

  if (reserve(s, 1) || !(nm = strndup(name, len)))
    return -ENOMEM;
  s->ents[s->n].name = nm;
  s->ents[s->n].attr = *a;
  s->n++;
  return 0;
}

static int ent_cmp(const void *x, const void *y)
{
  const struct fsx_dirent *a = x, *b = y;
  int c = strcmp(a->name, b->name);

  if (c)
    return c;
  return (a->attr.kind == FSX_DIR) - (b->attr.kind == FSX_DIR);
}

void fsx_dirsnap_seal(struct fsx_dirsnap *s, uint64_t as_of_ms,
                      void (*dup)(void *arg, const char *name), void *arg)
{
  size_t w = 0;

  if (s->n)
    qsort(s->ents, s->n, sizeof(*s->ents), ent_cmp);
  for (size_t i = 0; i < s->n; i++) {
    s->ents[i].attr.as_of_ms = as_of_ms;
    if (w && !strcmp(s->ents[w - 1].name, s->ents[i].name)) {
      if (dup)
        dup(arg, s->ents[i].name);
      free(s->ents[w - 1].name);
      s->ents[w - 1] = s->ents[i]; /* the directory sorts last */
      continue;
    }
    s->ents[w++] = s->ents[i];
  }
  s->n = w;
  s->ndirs = 0;
  for (size_t i = 0; i < s->n; i++)
    s->ndirs += s->ents[i].attr.kind == FSX_DIR;
}

void fsx_dirsnap_hold(struct fsx_dirsnap *s)
{
  atomic_fetch_add(&s->refs, 1);
}

void fsx_dirsnap_put(struct fsx_dirsnap *s)
{
  if (s && atomic_fetch_sub(&s->refs, 1) == 1)
    snap_free(s);
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

const struct fsx_dirent *fsx_dirsnap_find(const struct fsx_dirsnap *s,
                                          const char *name)
{
  bool found;
  size_t i = snap_pos(s, name, &found);

  return found ? &s->ents[i] : NULL;
}

/* s ready to be changed, with room for extra more entries: itself when the
   caller's reference is the only one, else a copy (see fsx_dirsnap_with). */
static struct fsx_dirsnap *snap_private(struct fsx_dirsnap *s, size_t extra)
{
  struct fsx_dirsnap *c;

  if (atomic_load(&s->refs) == 1) {
    /* (the caller's alone: nobody else reads the side table) */
    side_free(atomic_exchange(&s->side, NULL));
    if (!reserve(s, extra))
      return s;
    fsx_dirsnap_put(s);
    return NULL;
  }
  c = fsx_dirsnap_new();
  if (!c || reserve(c, s->n + extra))
    goto fail;
  c->names_only = s->names_only;
  c->ndirs = s->ndirs;
  for (; c->n < s->n; c->n++) {
    c->ents[c->n] = s->ents[c->n];
    if (!(c->ents[c->n].name = strdup(s->ents[c->n].name)))
      goto fail;
  }
  fsx_dirsnap_put(s);
  return c;
fail:
  if (c)
    snap_free(c);
  fsx_dirsnap_put(s);
  return NULL;
}

struct fsx_dirsnap *fsx_dirsnap_with(struct fsx_dirsnap *s, const char *name,
                                     const struct fsx_attr *a)
{
  bool found;
  size_t i;
  char *nm = strdup(name);

  s = nm ? snap_private(s, 1) : (fsx_dirsnap_put(s), NULL);
  if (!s) {
    free(nm);
    return NULL;
  }
  i = snap_pos(s, name, &found);
  if (found) {
    free(nm);
    s->ndirs -= s->ents[i].attr.kind == FSX_DIR;
  } else {
    memmove(&s->ents[i + 1], &s->ents[i], (s->n - i) * sizeof(*s->ents));
    s->ents[i].name = nm;
    s->n++;
  }
  s->ents[i].attr = *a;
  s->ndirs += a->kind == FSX_DIR;
  return s;
}

struct fsx_dirsnap *fsx_dirsnap_without(struct fsx_dirsnap *s,
                                        const char *name)
{
  bool found;
  size_t i = snap_pos(s, name, &found);

  if (!found)
    return s;
  s = snap_private(s, 0);
  if (s) {
    s->ndirs -= s->ents[i].attr.kind == FSX_DIR;
    free(s->ents[i].name);
    memmove(&s->ents[i], &s->ents[i + 1], (s->n - i - 1) * sizeof(*s->ents));
    s->n--;
  }
  return s;
}
