/*
 * Internals of the inode module (fsx_inode.c, fsx_inode_move.c,
 * fsx_inode_use.c): the table and the inode record. Nothing outside these
 * files includes it.
 */
#ifndef S3R_FSX_INODE_I_H
#define S3R_FSX_INODE_I_H

#include <pthread.h>

#include "fs/meta/fsx_inode.h"

struct fsx_table {
  pthread_mutex_t lock;
  pthread_cond_t store_cond;   /* lock: a background store ended */
  struct fsx_inode **by_ino;   /* lock */
  struct fsx_inode **by_name;  /* lock */
  size_t nbuckets;             /* lock; power of two */
  uint64_t count;              /* lock */
  uint64_t next_ino;           /* lock */
};

struct fsx_inode {
  uint64_t ino;
  uint64_t parent;            /* lock */
  char *name;                 /* lock; NULL once unlinked */
  char *bucket;               /* fixed */
  char *key;                  /* lock (see fsx_inode_key) */
  char **old_keys;            /* lock: keys replaced by renames, freed
                                 with the inode */
  size_t n_old_keys;          /* lock */
  struct fsx_attr attr;       /* lock */
  uint64_t attr_expire_ms;    /* lock; monotonic */
  bool meta_known;            /* lock: a HEAD filled mode/uid/gid */
  char kernel_etag[FSX_ETAG_MAX]; /* lock: the object the kernel's page
                                     cache holds; "" unknown */
  uint64_t kernel_drop_ms;    /* lock: an open last told the kernel to drop
                                 its pages, or a store filled some
                                 (clock_mono_ms) */
  bool kernel_unsure;         /* lock: a write here may have raced such a
                                 drop: the pages may not be what we wrote */
  uint64_t peek_ms;           /* lock: when a cold lookup's GET brought
                                 the whole file into chunk 0 (0: never;
                                 fsx_inode_take_peek) */
  uint64_t commits;           /* lock: uploads this mount committed */
  uint64_t kernel_epoch;      /* lock: bumped by every drop, write-back
                                 attached and upload (fsx_kstore rechecks) */
  uint64_t gen;               /* lock: hash of the ETag, page cache */
  uint64_t nlookup;           /* lock: kernel references */
  uint64_t refs;              /* lock: internal references */
  unsigned n_children;        /* lock */
  struct fsx_wb *wb;          /* lock: write-back state (fsx_wb.h) while
                                 open for writing or not yet uploaded; its
                                 attributes win over any listing or HEAD */
  unsigned wb_refs;           /* lock: references to wb */
  unsigned opens;             /* lock: open file handles */
  unsigned stores;            /* lock: background stores on their way
                                 (fsx_inode_store_begin) */
  unsigned kstores;           /* lock: stores into the kernel's pages on
                                 their way (fsx_inode_kernel_store to
                                 _stored): no write-back state is attached
                                 meanwhile (wb_attach waits) */
  unsigned store_blocks;      /* lock: operations that replace or remove
                                 the object, under way: no store begins */
  bool orphan;                /* lock: wb is kept (one of wb_refs) for the
                                 handles of an unlinked inode */
  struct fsx_inode *next_ino, *next_name; /* hash chains; lock */
  struct fsx_dirsnap *snap;   /* lock: the directory's listing (a ref) */
  uint64_t snap_expire_ms;    /* lock */
  bool unlinked;              /* lock: fsx_inode_detach (no name, and no
                                 object either) */
  time_t entries_at;          /* lock: when this mount last made or
                                 removed a name in it (wall clock, whole
                                 seconds; 0: never): its mtime and ctime
                                 are at least that (fsx_attr_of) */
  uint64_t ns_changes;        /* lock: changes made here to its names
                                 (fsx_dir_set_snap_since) */
  uint64_t big_until_ms;      /* lock: a cold lookup found its listing
                                 longer than one page: cold lookups do not
                                 list it again before then */
};

/* With t->lock held: */
struct fsx_inode *fsx_tab_find_ino(struct fsx_table *t, uint64_t ino);
struct fsx_inode *fsx_tab_find_name(struct fsx_table *t, uint64_t parent,
                                    const char *name);
void fsx_tab_link_name(struct fsx_table *t, struct fsx_inode *in);
/* in loses its name: off the name hash, name freed (NULL). */
void fsx_tab_drop_name(struct fsx_table *t, struct fsx_inode *in);
/* Free in if nothing holds it, then walk up to its parent. */
void fsx_tab_maybe_free(struct fsx_table *t, struct fsx_inode *in);
/* The key of a child: the parent's key + name (+ '/' for a directory). */
char *fsx_tab_child_key(const struct fsx_inode *parent, const char *name,
                        enum fsx_kind kind);

#endif
