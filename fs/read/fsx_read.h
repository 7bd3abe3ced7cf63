/*
 * fsx_read: open files and the read path. Reads are served from the page
 * cache (fsx_cache); misses become ranged GETs that fill whole chunks, several
 * consecutive chunks per request; sequential access grows a readahead window
 * (from read.readahead_min, doubling up to read.readahead_max, reset on a
 * seek); a random read that misses fetches only the bytes asked for, or,
 * once its file is read densely, whole blocks for the kernel's cache
 * (fsx_density.h, fsx_read_group.c).
 *
 * DESIGN
 * - fh->lock protects the sequential-detection state of one open file.
 * - Fetches run on the S3 engine thread: their callback marks the chunks
 *   filled (waking readers) and drops the fetch's chunk references.
 * - A reader never holds fh->lock while it waits for a chunk; it waits on
 *   fh->landed (with fh->lock) for a group fetched ahead (fh->pends),
 *   which the engine thread's callback wakes, whatever the GET's end.
 * - A group fetched ahead is referenced by its fetch, then by the kernel
 *   store (fsx_kstore's callback, on its thread), and by each reader
 *   copying from it; the last reference frees it and its fh reference.
 * - Memory: chunks in flight per file are bounded by
 *   read.max_inflight_per_file requests; the cache bounds the total.
 */
#ifndef S3R_FSX_READ_H
#define S3R_FSX_READ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fs/read/fsx_density.h"
#include "fs/mount/fsx_i.h"

struct fsx_dreg;
struct fsx_pend;

struct fsx_fh {
  struct fsx_inode *in;       /* internal reference held while open */
  uint64_t file;              /* page-cache file id (the inode number) */
  uint64_t gen;               /* page-cache generation (ETag) at open */
  uint64_t size;              /* object size at open */
  char etag[FSX_ETAG_MAX + 2]; /* quoted, for If-Match; "" if unknown */
  pthread_mutex_t lock;
  uint64_t next_off;          /* lock: where a sequential read goes next */
  uint64_t window;            /* lock: readahead window, 0 = random */
  uint64_t ra_end;            /* lock: readahead issued up to here */
  struct fsx_density dense;   /* lock: random misses per block */
  uint64_t idle_next;         /* lock: where idle capacity fetches next */
  struct fsx_pend *pends;     /* lock: groups fetched ahead, not stored */
  pthread_cond_t landed;      /* lock: one of them landed or failed */
  _Atomic unsigned inflight;  /* fetches in flight for this file */
  struct fsx_fh *succ;        /* lock: the handle reads go to since this
                                 mount changed the object (a reference) */
  struct fsx_wb *wb;          /* write-back state (a reference), or NULL:
                                 reads and writes go through it */
  bool writer;                /* opened for writing: close uploads */
  bool append;                /* O_APPEND: every write at the end */
  bool readable;              /* not opened O_WRONLY (fsx_direct reads) */
  _Atomic bool unverified;    /* opened on attributes a listing or lookup
                                 gave, without asking the server: the
                                 first read that finds the object changed
                                 asks, and goes on with the new one */
  char *special;              /* the stats file's text, else NULL */
  size_t special_len;
  struct fsx_dreg *dregs;     /* lock: registered buffers (fsx_direct) */
};

/* A file handle for inode in (a reference is taken), with attributes a. */
struct fsx_fh *fsx_fh_create(struct fsx_mount *m, struct fsx_inode *in,
                             const struct fsx_attr *a);
/*
 * A ranged GET of [off, off + len) of fh's object into buf, If-Match the
 * version fh opened (a read never mixes versions); NULL: no memory.
 */
struct s3_req *fsx_fh_get(struct fsx_mount *m, struct fsx_fh *fh,
                          uint64_t off, size_t len, void *buf);
/* Drop a reference; freed with the last. */
void fsx_fh_destroy(struct fsx_mount *m, struct fsx_fh *fh);
/*
 * The release of the open file: fh and its successors stop counting as
 * open on their inode now (fsx_inode_in_use), though fetches and groups
 * fetched ahead may hold fh a while longer, and the open file's reference
 * is dropped. (An unlink right after a close must not take a fetch still
 * on its way for a reader: it would fetch the whole object to keep it.)
 */
void fsx_fh_release(struct fsx_mount *m, struct fsx_fh *fh);
/*
 * One more reference, for an op that uses fh past its reply: the kernel
 * may deliver the release as soon as it has the reply, while the replying
 * thread still holds pointers into fh (the stats file's text).
 */
void fsx_fh_hold(struct fsx_fh *fh);

/*
 * The handle to read through (held; drop with fsx_fh_destroy): fh, or,
 * once the object changed under it (this mount wrote a new one, or a
 * lookup saw one), a successor opened on the object as it is now, so a
 * reader never gets -ESTALE for what the same mount wrote.
 */
struct fsx_fh *fsx_fh_latest(struct fsx_mount *m, struct fsx_fh *fh);

/*
 * The readahead policy (exposed for its unit test): is a read of [off,
 * off+len) sequential? Updates fh's window (0 after a seek; readahead_min,
 * doubling to readahead_max while sequential) and returns it; when chunks
 * should be read ahead now, [*ra_from, *ra_to) are their indexes (else both
 * 0): topped up only once less than half the window is in flight, and never
 * past the end of the object.
 */
uint64_t fsx_read_plan(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                       size_t len, uint64_t *ra_from, uint64_t *ra_to);

/*
 * Read up to len bytes at off. On success *iov / *niov describe the bytes
 * (pointing into cache chunks or into *tmp), and *ctx must be handed to
 * fsx_read_done after the reply has been sent (on failure too). -ESTALE:
 * the object is no longer the handle's (If-Match failed).
 */
struct fsx_read_ctx;
/*
 * fh was opened without asking the server (fh->unverified) and its object
 * may have changed since: ask now, and when it did, take the new object's
 * attributes (fsx_fh_latest then gives the handle reads go to). 1: it
 * changed; 0: it is fh's; or a negative errno (-ENOENT: gone).
 */
int fsx_fh_reverify(struct fsx_mount *m, struct fsx_fh *fh);
int fsx_read(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
             size_t len, struct iovec **iov, int *niov,
             struct fsx_read_ctx **ctx);
void fsx_read_done(struct fsx_mount *m, struct fsx_read_ctx *ctx);

#endif
