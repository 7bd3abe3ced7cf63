/*
 * fsx_inode: the inode table. Inode numbers are never reused within a mount
 * (a counter), so an inode number is also a safe page-cache file id.
 *
 * DESIGN
 * - The inode record and the table lock are private to the module
 *   (fsx_inode.c, fsx_inode_move.c, fsx_inode_use.c; fsx_inode_i.h): the
 *   rest of fs/ holds struct fsx_inode as a handle and asks in terms of
 *   what it means to do (a view of the attributes, open/close counting,
 *   attach/detach of write-back state, the kernel's ETag).
 * - One table lock protects both hash tables (by ino, by parent+name),
 *   every inode's references, name/parent linkage and attributes, its
 *   write-back attachment and which listing snapshot a directory holds
 *   (the snapshot itself is fsx_dirsnap.h's).
 * - The kernel's references (lookup counts) keep an inode alive; FUSE
 *   forget drops them; an inode with no references and no children is freed.
 *   Internal users take a temporary reference with fsx_inode_get/put.
 * - A write-back state (fsx_wb.h) attached to an inode is reference
 *   counted here, under the same lock, so that finding it and taking a
 *   reference are one step (fsx_inode_wb_get) and the last reference
 *   detaches it. A state whose count reached 0 may still be on the
 *   mount's list, its inode holding a new one already: calls that start
 *   from a state rather than the inode name it (wb_ref_live, wb_reset)
 *   and do nothing unless it is the one attached.
 */
#ifndef S3R_FSX_INODE_H
#define S3R_FSX_INODE_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/meta/fsx_attr.h"
#include "fs/meta/fsx_dirsnap.h"

#define FSX_ROOT_INO 1
#define FSX_STATS_INO 2  /* the stats file; not in the table */

struct fsx_inode;
struct fsx_wb;

/* What an inode's record says now (a copy, taken under the lock). */
struct fsx_inode_view {
  struct fsx_attr attr;       /* as last learned (see fsx_attr_of for the
                                 write-back state's, which wins) */
  bool stale;                 /* older than its time to live */
  bool meta_known;            /* a HEAD filled mode/uid/gid */
  bool writing;               /* write-back state attached */
  uint64_t parent;
  bool named;                 /* has a name now */
  bool unlinked;              /* its name removed by unlink, rmdir or a
                                 rename over it (fsx_inode_detach) */
  time_t entries_at;          /* a directory: when this mount last made or
                                 removed a name in it (0: never) */
};

/* What opening the object (etag) tells of the kernel's page cache. */
struct fsx_kernel_seen {
  bool changed;               /* the kernel held another object */
  bool reopened;              /* the kernel held one at all */
  bool stale;                 /* our page cache holds another object */
  bool unsure;                /* a drop was still settling (a writer came
                                 within KERNEL_DROP_SETTLE_MS of it) */
};

struct fsx_table;

struct fsx_table *fsx_table_create(const char *root_bucket,
                                   const char *root_prefix);
void fsx_table_destroy(struct fsx_table *t);

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

/* Set at creation, never changed: no lock. The bucket is NULL for the
   all-buckets root. */
uint64_t fsx_inode_ino(const struct fsx_inode *in);
const char *fsx_inode_bucket(const struct fsx_inode *in);
/* The current key of in: an object key (files) or a prefix ending in '/'
   (directories; "" or the mount prefix for a bucket root). A rename
   replaces it; the string stays valid while in is referenced. */
const char *fsx_inode_key(struct fsx_table *t, struct fsx_inode *in);
/* The key name would have in dir (a directory's ends in '/'), malloc'd;
   NULL on ENOMEM. The one place keys are joined. */
char *fsx_inode_key_of(struct fsx_table *t, struct fsx_inode *dir,
                       const char *name, enum fsx_kind kind);
/* This mount made or removed a name in dir now (POSIX: its mtime and
   ctime move; kept while the mount runs). */
void fsx_inode_dir_touch(struct fsx_table *t, struct fsx_inode *dir);
/* dir's mtime was set (utimensat): only changes after it move it again. */
void fsx_inode_dir_times_set(struct fsx_table *t, struct fsx_inode *dir);
#define FSX_KEY_MAX 1024 /* bytes of an object key: S3's limit */
/* Can name be in dir as kind? 0, or -ENAMETOOLONG: a component over 255
   bytes (NAME_MAX), or a key over S3's 1,024 bytes (FSX_KEY_MAX). */
int fsx_inode_name_fits(struct fsx_table *t, struct fsx_inode *dir,
                        const char *name, enum fsx_kind kind);
/* A view of in's record now. */
void fsx_inode_view(struct fsx_table *t, struct fsx_inode *in,
                    struct fsx_inode_view *v);

/*
 * The kernel's page cache and this mount's writes. The kernel copies a
 * write into its pages before the daemon has it; pages dropped in between
 * (an open answered without keep_cache) and read again hold the old bytes
 * until the next drop. So a drop is never asked for while this mount has
 * write-back state on in, and a write begun soon after one (the kernel
 * drops when the opener runs again, not when we answer) leaves the pages
 * unsure: the next open that is not a write drops them again.
 *
 * fsx_inode_kernel_open: an open without write-back state saw object etag
 * on the server, having read fsx_inode_commits before asking; -EAGAIN
 * (nothing changed) when write-back state has appeared or an upload has
 * committed since (the answer may predate it: ask again). Else the kernel
 * now holds etag, *seen says what that changes, and *drop whether the
 * open must drop the kernel's pages (they held another object, they are
 * unsure, or keep is false: the mount keeps no pages across opens).
 */
uint64_t fsx_inode_commits(struct fsx_table *t, struct fsx_inode *in);
int fsx_inode_kernel_open(struct fsx_table *t, struct fsx_inode *in,
                          const char *etag, uint64_t commits, bool keep,
                          struct fsx_kernel_seen *seen, bool *drop);
/*
 * May an open for reading go without asking the server? True, with *a,
 * when in is a file whose attributes (an ETag among them) a listing or a
 * HEAD gave less than ttl_ms ago, it has no write-back state, and the
 * kernel holds no pages of it from an earlier open (so none of another
 * object can be served). The handle's first GET then checks the ETag.
 */
/* A cold lookup's GET put in's whole object in the page cache now; the
   first open that follows takes it (fsx_inode_take_peek: when it came,
   0: never), to serve its reads only while the GET is fresh. */
void fsx_inode_set_peek(struct fsx_table *t, struct fsx_inode *in);
uint64_t fsx_inode_take_peek(struct fsx_table *t, struct fsx_inode *in);
bool fsx_inode_open_known(struct fsx_table *t, struct fsx_inode *in,
                          uint64_t ttl_ms, struct fsx_attr *a);
/* What the kernel's pages hold is not known any more: the next open that
   is not a write drops them. */
void fsx_inode_kernel_doubt(struct fsx_table *t, struct fsx_inode *in);
/* The kernel is about to be handed bytes of object gen read after commits
   (fsx_kstore): true, with *epoch for fsx_inode_kernel_stored and *size
   the object's size (nothing past it may be stored), when the kernel's
   pages and the attributes hold that object and this mount is not writing
   the file and has uploaded nothing since; false: do not. From a true
   until fsx_inode_kernel_stored, which must follow it, no write-back
   state is attached to in (fsx_inode_wb_attach waits): a store into the
   kernel's pages while a WRITE is on its way would change the bytes the
   kernel hands the daemon for it (it takes them from its pages when the
   request is read, not when it is made). */
bool fsx_inode_kernel_store(struct fsx_table *t, struct fsx_inode *in,
                            uint64_t gen, uint64_t commits, uint64_t *epoch,
                            uint64_t *size);
/* The store is done: counted as a drop (a writer soon after leaves the
   pages unsure). False when a drop, a writer or an upload came in between
   (the bytes stored may be older than what the kernel had): the pages are
   then unsure, and the caller drops the range it stored. */
bool fsx_inode_kernel_stored(struct fsx_table *t, struct fsx_inode *in,
                             uint64_t epoch);
/* An open for writing was answered: unsure if a drop was asked for lately. */
void fsx_inode_kernel_writer(struct fsx_table *t, struct fsx_inode *in);
/* Our upload committed etag: the kernel's pages are what we wrote, unless
   unsure (then unknown: the next open drops them). */
void fsx_inode_kernel_wrote(struct fsx_table *t, struct fsx_inode *in,
                            const char *etag);

/*
 * Open file handles: fsx_inode_open takes an internal reference too (the
 * handle's); fsx_inode_close does not drop it, and hands back the write-back
 * state kept for the handles when in was unlinked (fsx_inode_keep_orphan)
 * once the last one closes: the caller drops that reference (fsx_wb_put).
 */
void fsx_inode_open(struct fsx_table *t, struct fsx_inode *in);
struct fsx_wb *fsx_inode_close(struct fsx_table *t, struct fsx_inode *in);
bool fsx_inode_in_use(struct fsx_table *t, struct fsx_inode *in);
/* How many handles are open on in (a handle counts until its last
   reference goes: fetches in flight hold it after its release). */
unsigned fsx_inode_opens(struct fsx_table *t, struct fsx_inode *in);
/* in goes away while open: its attached write-back state is kept (one
   reference more) until the last handle closes. False: not open, or
   kept already. */
bool fsx_inode_keep_orphan(struct fsx_table *t, struct fsx_inode *in);

/*
 * Write-back state attachment, counted here (see DESIGN):
 * - attach: mine becomes in's (one reference; in gains an internal
 *   reference the state drops when freed) unless one is attached already:
 *   then that one, with a reference, and mine is the caller's to free;
 *   *removed: in was unlinked or replaced before mine became its state
 *   (an open racing the removal: the state never uploads);
 * - wb_get: the attached state with a reference, or NULL;
 * - wb_ref: one more reference, for a caller that holds one;
 * - wb_ref_live: one more reference to wb if it is in's attached state
 *   with a count above 0; false when it is being freed (the count reached
 *   0, whether or not a new state is attached since);
 * - wb_unref: drop one; the state when that was the last (detached now:
 *   the caller frees it), else NULL;
 * - wb_reset: the count of wb, if attached, is set to 1 (unmount, the
 *   kernel gone).
 */
struct fsx_wb *fsx_inode_wb_attach(struct fsx_table *t, struct fsx_inode *in,
                                   struct fsx_wb *mine, bool *removed);
struct fsx_wb *fsx_inode_wb_get(struct fsx_table *t, struct fsx_inode *in);
void fsx_inode_wb_ref(struct fsx_table *t, struct fsx_inode *in);
bool fsx_inode_wb_ref_live(struct fsx_table *t, struct fsx_inode *in,
                           const struct fsx_wb *wb);
struct fsx_wb *fsx_inode_wb_unref(struct fsx_table *t, struct fsx_inode *in);
void fsx_inode_wb_reset(struct fsx_table *t, struct fsx_inode *in,
                        const struct fsx_wb *wb);

/*
 * Background stores (the atime copied onto the object at a reader's close)
 * land in order with the operations on the name: a store runs between
 * store_begin, which refuses it while in has no name, a write-back state
 * or a blocking operation under way, and store_end. An operation that
 * replaces or removes the object (unlink, rename, a metadata store, an
 * upload) runs between store_block, which waits out the stores on their
 * way, and store_unblock; attaching a write-back state waits them out too.
 * Neither waits while holding anything a store needs.
 */
bool fsx_inode_store_begin(struct fsx_table *t, struct fsx_inode *in);
void fsx_inode_store_end(struct fsx_table *t, struct fsx_inode *in);
void fsx_inode_store_block(struct fsx_table *t, struct fsx_inode *in);
void fsx_inode_store_unblock(struct fsx_table *t, struct fsx_inode *in);

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
 * The directory's listing snapshot: install one (the directory takes a
 * reference of its own; the caller keeps its), take a reference to the
 * current one (NULL if none, or stale with fresh_only; drop it with
 * fsx_dirsnap_put), forget it.
 */
void fsx_dir_set_snap(struct fsx_table *t, struct fsx_inode *dir,
                      struct fsx_dirsnap *s, uint64_t ttl_ms);
struct fsx_dirsnap *fsx_dir_get_snap(struct fsx_table *t,
                                     struct fsx_inode *dir, bool fresh_only);
void fsx_dir_invalidate(struct fsx_table *t, struct fsx_inode *dir);
/*
 * A listing that began when fsx_dir_changes said changes: installed as
 * dir's snapshot (as fsx_dir_set_snap) only if this mount has changed no
 * name in dir since (a name it created meanwhile would be missing) and no
 * fresh full listing is there; false when not installed.
 */
uint64_t fsx_dir_changes(struct fsx_table *t, struct fsx_inode *dir);
bool fsx_dir_set_snap_since(struct fsx_table *t, struct fsx_inode *dir,
                            struct fsx_dirsnap *s, uint64_t ttl_ms,
                            uint64_t changes);
/* Is dir's listing known to be longer than one page (fsx_dir_set_big, for
   ttl_ms)? Cold lookups in it then ask for the name only. */
bool fsx_dir_is_big(struct fsx_table *t, struct fsx_inode *dir);
void fsx_dir_set_big(struct fsx_table *t, struct fsx_inode *dir,
                     uint64_t ttl_ms);
/*
 * Our own change to a listed directory: put (or replace) name with a, or
 * remove it, in dir's snapshot if it has one, so lookups answered from it
 * stay right until it expires.
 */
void fsx_dir_snap_put_entry(struct fsx_table *t, struct fsx_inode *dir,
                            const char *name, const struct fsx_attr *a);
void fsx_dir_snap_remove(struct fsx_table *t, struct fsx_inode *dir,
                         const char *name);
/* This mount changed in (created, uploaded, renamed): its entry in its
   parent's snapshot is made to match its attributes now. */
void fsx_inode_note_entry(struct fsx_table *t, struct fsx_inode *in);

uint64_t fsx_table_count(struct fsx_table *t);

/* Is the metadata of in, listed as a, known (a HEAD of the same object,
   or made here)? */
bool fsx_inode_meta_known(struct fsx_table *t, struct fsx_inode *in,
                          const struct fsx_attr *a);
/* Has name in dir, listed as a, had its metadata told (a HEAD of the
   same object, or made here)? A listing cannot tell a symlink or node
   from a file. */
bool fsx_inode_child_meta_known(struct fsx_table *t, struct fsx_inode *dir,
                                const char *name, const struct fsx_attr *a);

#endif
