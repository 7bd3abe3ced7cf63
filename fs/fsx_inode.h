/*
 * fsx_inode: the inode table. Inode numbers are never reused within a mount
 * (a counter), so an inode number is also a safe page-cache file id.
 *
 * DESIGN
 * - One table lock (tab->lock) protects both hash tables (by ino, by
 *   parent+name), every inode's nlookup, its name/parent linkage and its
 *   attribute fields; the directory snapshot of a dir inode is protected by
 *   the same lock (copied out by readers).
 * - The kernel's references (lookup counts) keep an inode alive; FUSE
 *   forget drops them; an inode with no references and no children is freed.
 *   Internal users take a temporary reference with fsx_inode_get/put.
 */
#ifndef S3R_FSX_INODE_H
#define S3R_FSX_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define FSX_ROOT_INO 1
#define FSX_STATS_INO 2  /* the stats file; not in the table */
#define FSX_ETAG_MAX 80

enum fsx_kind { FSX_DIR = 1, FSX_FILE, FSX_SYMLINK, FSX_SPECIAL };

/* Attributes as known from a listing or a HEAD. */
struct fsx_attr {
  enum fsx_kind kind;
  uint64_t size;
  struct timespec mtime;
  char etag[FSX_ETAG_MAX];
  bool from_head;                    /* a HEAD, not a listing, said so */
  uint64_t as_of_ms;                 /* when it was learned (monotonic): an
                                        older listing never overwrites a
                                        newer HEAD */
  bool has_mode, has_uid, has_gid;   /* from x-amz-meta-* (a HEAD) */
  mode_t mode;
  uid_t uid;
  gid_t gid;
};

struct fsx_inode {
  uint64_t ino;
  uint64_t parent;            /* tab->lock */
  char *name;                 /* tab->lock */
  char *bucket;               /* the bucket this inode lives in (NULL for
                                 the all-buckets root) */
  char *key;                  /* object key (files) or prefix ending in '/'
                                 (directories; "" or the mount prefix for a
                                 bucket root). Replaced only by a rename,
                                 under tab->lock; read it with
                                 fsx_inode_key (the string stays valid
                                 while the caller holds a reference) */
  char **old_keys;            /* tab->lock: keys replaced by renames, freed
                                 with the inode */
  size_t n_old_keys;          /* tab->lock */
  struct fsx_attr attr;       /* tab->lock */
  uint64_t attr_expire_ms;    /* tab->lock; monotonic */
  bool meta_known;            /* tab->lock: a HEAD filled mode/uid/gid */
  char kernel_etag[FSX_ETAG_MAX]; /* tab->lock: the object the kernel's
                                     page cache holds (set by open) */
  uint64_t gen;               /* tab->lock: hash of the ETag, page cache */
  uint64_t nlookup;           /* tab->lock: kernel references */
  uint64_t refs;              /* tab->lock: internal references */
  unsigned n_children;        /* tab->lock */
  struct fsx_wb *wb;          /* tab->lock: write-back state (fsx_wb.h)
                                 while open for writing or not yet
                                 uploaded; its attributes win over any
                                 listing or HEAD */
  unsigned opens;             /* tab->lock: open file handles */
  struct fsx_wb *orphan_wb;   /* tab->lock: unlinked while open for reading
                                 only: its data, kept (a reference) until
                                 the last handle closes */
  struct fsx_inode *next_ino, *next_name; /* hash chains; tab->lock */
  /* directory listing cache; tab->lock */
  struct fsx_dirsnap *snap;
  uint64_t snap_expire_ms;
};

/* A directory listing snapshot: immutable once built, refcounted. */
struct fsx_dirent {
  char *name;
  struct fsx_attr attr;
};

struct fsx_dirsnap {
  unsigned refs;              /* tab->lock */
  size_t n;
  struct fsx_dirent *ents;    /* sorted by name */
};

struct fsx_table;

struct fsx_table *fsx_table_create(const char *root_bucket,
                                   const char *root_prefix);
void fsx_table_destroy(struct fsx_table *t);

/* The lock, for callers that read inode fields. */
void fsx_table_lock(struct fsx_table *t);
void fsx_table_unlock(struct fsx_table *t);

/* Inode by number with an internal reference, or NULL. */
struct fsx_inode *fsx_inode_get(struct fsx_table *t, uint64_t ino);
void fsx_inode_put(struct fsx_table *t, struct fsx_inode *in);

/*
 * The child (parent, name): existing or created with the given attributes
 * (refreshed if it exists and kind matches; replaced by a new inode if the
 * kind changed). Returns it with one kernel reference (nlookup) added when
 * kernel_ref, else one internal reference. NULL on ENOMEM.
 */
struct fsx_inode *fsx_inode_child(struct fsx_table *t, struct fsx_inode *parent,
                                  const char *name, const struct fsx_attr *a,
                                  const char *bucket, uint64_t ttl_ms,
                                  bool kernel_ref);
/* Existing child by name (internal reference) or NULL. */
struct fsx_inode *fsx_inode_find(struct fsx_table *t, uint64_t parent,
                                 const char *name);

/* FUSE forget: drop n kernel references. */
void fsx_inode_forget(struct fsx_table *t, uint64_t ino, uint64_t n);

/*
 * Replace the attributes of in (e.g. after a HEAD); updates gen. Ignored
 * while the inode has write-back state (its own attributes are newer),
 * unless force (the write-back itself, after an upload).
 */
void fsx_inode_set_attr(struct fsx_table *t, struct fsx_inode *in,
                        const struct fsx_attr *a, bool meta, uint64_t ttl_ms);
void fsx_inode_set_attr_force(struct fsx_table *t, struct fsx_inode *in,
                              const struct fsx_attr *a, uint64_t ttl_ms);

/* The current key of in (see the field); valid while in is referenced. */
const char *fsx_inode_key(struct fsx_table *t, struct fsx_inode *in);

/* Unlink/rmdir: in loses its name (it lives on while referenced). */
void fsx_inode_detach(struct fsx_table *t, struct fsx_inode *in);

/*
 * Rename: in moves to (newparent, newname), taking the key the name gives
 * it there; an inode already under that name loses it. For a directory,
 * every inode below it gets its new key too. -ENOMEM leaves all as it was.
 */
int fsx_inode_move(struct fsx_table *t, struct fsx_inode *in,
                   struct fsx_inode *newparent, const char *newname);

/*
 * Directory snapshot: install one (the directory keeps a reference and the
 * caller keeps its own, to drop with fsx_dirsnap_put), take a reference to
 * the current one (NULL if none, or stale with fresh_only), drop one.
 */
void fsx_dir_set_snap(struct fsx_table *t, struct fsx_inode *dir,
                      struct fsx_dirsnap *s, uint64_t ttl_ms);
struct fsx_dirsnap *fsx_dir_get_snap(struct fsx_table *t,
                                     struct fsx_inode *dir, bool fresh_only);
void fsx_dirsnap_put(struct fsx_table *t, struct fsx_dirsnap *s);
void fsx_dir_invalidate(struct fsx_table *t, struct fsx_inode *dir);
/*
 * Our own change to a listed directory: put (or replace) name with a, or
 * remove it, in dir's snapshot if it has one, so lookups answered from it
 * stay right until it expires.
 */
void fsx_dir_snap_put_entry(struct fsx_table *t, struct fsx_inode *dir,
                            const char *name, const struct fsx_attr *a);
void fsx_dir_snap_remove(struct fsx_table *t, struct fsx_inode *dir,
                         const char *name);
/* Binary search in a snapshot; NULL if absent. */
const struct fsx_dirent *fsx_dirsnap_find(const struct fsx_dirsnap *s,
                                          const char *name);
void fsx_dirsnap_free(struct fsx_dirsnap *s);

/* 64-bit FNV-1a of an ETag: the page-cache generation. */
uint64_t fsx_etag_gen(const char *etag);

uint64_t fsx_now_ms(void);
uint64_t fsx_table_count(struct fsx_table *t);

#endif
