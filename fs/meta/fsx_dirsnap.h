/*
 * fsx_dirsnap: a directory listing snapshot, sorted by name. Built once
 * (new, add, seal), then shared read-only by reference count; a change of
 * our own (an entry put or removed) is made in place when the caller holds
 * the only reference, else on a copy. The count is atomic: a snapshot is
 * dropped without any other lock. Which snapshot a directory holds is the
 * inode table's business (fsx_inode.h).
 */
#ifndef S3R_FSX_DIRSNAP_H
#define S3R_FSX_DIRSNAP_H

#include <stddef.h>

#include "fs/meta/fsx_attr.h"

struct fsx_dirent {
  char *name;
  struct fsx_attr attr;
};

/* A table its users keep on a snapshot, by entry index (fsx_ahead's):
   the first member of theirs, freed through it. */
struct fsx_dirsnap_side {
  void (*free)(struct fsx_dirsnap_side *side);
};

struct fsx_dirsnap {
  _Atomic unsigned refs;
  size_t n;
  struct fsx_dirent *ents;    /* sorted by name once sealed */
  size_t cap;                 /* while building */
  size_t ndirs;               /* entries that are directories (sealed) */
  bool names_only;            /* a cold lookup's first page (fsx_ns): what
                                 is there, but a file's attributes are
                                 still asked of the server (its s3fs
                                 metadata), as before any listing */
  /* a side table (fsx_ahead: metadata asked for ahead of lookups), made
     once, freed with the snapshot, dropped when an entry is put or
     removed in place (the indices move) */
  struct fsx_dirsnap_side *_Atomic side;
};

/* An empty snapshot being built, one reference; NULL on ENOMEM. */
struct fsx_dirsnap *fsx_dirsnap_new(void);
/* Building: append name[0..len) with a; -ENOMEM. */
int fsx_dirsnap_add(struct fsx_dirsnap *s, const char *name, size_t len,
                    const struct fsx_attr *a);
/*
 * Building done: sorted; where two entries share a name (an object and a
 * prefix), the directory stays and dup(arg, name) is told. Every entry is
 * stamped as learned at as_of_ms.
 */
void fsx_dirsnap_seal(struct fsx_dirsnap *s, uint64_t as_of_ms,
                      void (*dup)(void *arg, const char *name), void *arg);

void fsx_dirsnap_hold(struct fsx_dirsnap *s);
/* Drop a reference (NULL: nothing); the last one frees. */
void fsx_dirsnap_put(struct fsx_dirsnap *s);

/* Binary search; NULL if absent. */
const struct fsx_dirent *fsx_dirsnap_find(const struct fsx_dirsnap *s,
                                          const char *name);

/*
 * Our own change, on the caller's reference to s: name put with a (added
 * or replaced), or removed. Returns the changed snapshot the reference now
 * stands for: s itself when the caller's is the only reference, else a
 * copy (s loses the caller's reference). NULL on ENOMEM, and s loses the
 * reference then too: the caller drops what it can no longer keep right.
 */
struct fsx_dirsnap *fsx_dirsnap_with(struct fsx_dirsnap *s, const char *name,
                                     const struct fsx_attr *a);
struct fsx_dirsnap *fsx_dirsnap_without(struct fsx_dirsnap *s,
                                        const char *name);

#endif
