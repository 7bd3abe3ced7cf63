/* fsx_inode_move: rename in the inode table (see fsx_inode.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/meta/fsx_inode_i.h"

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
  key = fsx_tab_child_key(newparent, newname, in->attr.kind);
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
  victim = fsx_tab_find_name(t, newparent->ino, newname);
  if (victim && victim != in) {
    victim->unlinked = true; /* replaced: its object is in's now */
    fsx_tab_drop_name(t, victim);
  }
  fsx_tab_drop_name(t, in);
  in->name = name;
  name = NULL;
  oldparent = fsx_tab_find_ino(t, in->parent);
  if (oldparent)
    oldparent->n_children--;
  newparent->n_children++;
  in->parent = newparent->ino;
  rekey(in, key);
  key = NULL;
  fsx_tab_link_name(t, in);
  if (oldparent)
    fsx_tab_maybe_free(t, oldparent);
  rc = 0;
out:
  pthread_mutex_unlock(&t->lock);
  free(name);
  free(key);
  return rc;
}
