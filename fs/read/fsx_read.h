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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fs/mount/fsx_i.h"

struct fsx_pend;
/*
 * An open file's handle: private to this module (fsx_read_i.h); the
 * operations ask it by intent. The stats file's handle carries its text.
 */
struct fsx_fh;

/* How a handle was opened (fsx_fh_set_open; fsx_fh_is asks). */
#define FSX_FH_WRITER 1u   /* opened for writing: close uploads */
#define FSX_FH_APPEND 2u   /* O_APPEND: every write at the end */
#define FSX_FH_READABLE 4u /* not opened O_WRONLY (direct reads too) */


/* The read path's mount-wide state (m->reads): made before the first
   read, 0 or -ENOMEM; stopped once no read, fetch or store is left. */
int fsx_read_start(struct fsx_mount *m);
void fsx_read_stop(struct fsx_mount *m);

/* A file handle for inode in (a reference is taken), with attributes a. */
struct fsx_fh *fsx_fh_create(struct fsx_mount *m, struct fsx_inode *in,
                             const struct fsx_attr *a);
/*
 * A ranged GET of [off, off + len) of fh's object into buf, If-Match the
 * version fh opened (a read never mixes versions); NULL: no memory.
 */
struct s3_req *fsx_fh_get(struct fsx_mount *m, struct fsx_fh *fh,
                          uint64_t off, size_t len, void *buf);
/* The stats file's handle: text (malloc'ed, the handle's from now on, also
   on failure) is what its reads return; NULL: no memory. */
struct fsx_fh *fsx_fh_create_text(struct fsx_mount *m,
                                  const struct fsx_attr *a, char *text,
                                  size_t len);
/* How fh was opened (FSX_FH_*), and the write-back state it reads and
   writes through: wb's reference is the handle's from now on. */
void fsx_fh_set_open(struct fsx_fh *fh, struct fsx_wb *wb, unsigned how);
/* What an open with open(2)'s flags makes of its handle (FSX_FH_*): a
   writer when writing; O_APPEND; readable unless O_WRONLY. */
unsigned fsx_fh_how(int flags, bool writing);
/* Every bit of how set (FSX_FH_*)? */
bool fsx_fh_is(const struct fsx_fh *fh, unsigned how);
/* Its inode (NULL: the stats file), the object's size at open, and the
   write-back state it was opened with (NULL: none). */
struct fsx_inode *fsx_fh_inode(const struct fsx_fh *fh);
uint64_t fsx_fh_size(const struct fsx_fh *fh);
struct fsx_wb *fsx_fh_wb(const struct fsx_fh *fh);
/* The stats file's handle? */
bool fsx_fh_is_text(const struct fsx_fh *fh);
/* Opened on attributes a listing or a lookup gave, without asking the
   server: the first read that finds the object changed asks
   (fsx_fh_reverify), and goes on with the new one. Set at open; cleared
   once a read has the object. */
void fsx_fh_set_unverified(struct fsx_fh *fh, bool unverified);
bool fsx_fh_unverified(const struct fsx_fh *fh);
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
 * The window's cap for a sequential reader going at rate_bps (bytes a
 * second) from a server rtt_us away (s3_client_rtt_us): four round trips
 * of its bytes (the pipe kept full: a top-up goes once half the window is
 * used, and a GET's own transfer adds to its round trip), never under max
 * (read.readahead_max) nor over far (readahead_far).
 */
uint64_t fsx_read_cap(uint64_t max, uint64_t far, uint64_t rtt_us,
                      uint64_t rate_bps);

/*
 * The readahead policy (exposed for its unit test): is a read of [off,
 * off+len) sequential? Updates fh's window (0 after a seek; readahead_min,
 * doubling to its cap while sequential: fsx_read_cap, from the server's
 * round trip and the rate of the run so far) and returns it; when chunks
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
 * fh was opened without asking the server (fsx_fh_unverified) and its object
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
