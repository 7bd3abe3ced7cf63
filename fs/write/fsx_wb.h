/*
 * fsx_wb: the write-back of one file. Every file open for writing, or
 * written and not yet uploaded, has one struct fsx_wb shared by all its
 * handles and hung on its inode (in->wb).
 *
 * DESIGN
 * - The file's bytes live in a sparse staging file (fsx_stage). Of the
 *   object the file started from (the base), only the 64 KiB blocks that
 *   are read or partly written are fetched (a bitmap says which); bytes
 *   past base_len (the base cut by truncates) are the staging file's own.
 * - A file with no base bytes (new, or opened with O_TRUNC) written in
 *   order streams from the mount's part-buffer pool (fsx_wb_stream.c,
 *   write.stream): its bytes go into pool runs, never into the staging
 *   file, each part uploaded from its run once the writer has passed it;
 *   anything else moves it to the staging path for good. Without a pool
 *   (or once moved, or for a file with a base), each part is uploaded from
 *   the staging file (mapped, no copy) as soon as a sequential writer has
 *   passed it. Either way at most write.max_parts_inflight per file; the
 *   writer waits beyond that. A part written again after its upload began
 *   is marked stale and sent again at commit. Part sizes grow with the
 *   part number (fsx_wb_geo).
 * - Commit (close, fsync, or the background retry): a single PUT up to one
 *   part, else the remaining parts (UploadPartCopy for whole parts the
 *   base still holds unchanged) and CompleteMultipartUpload. Until it
 *   succeeds the file stays dirty with all its data, and close()/fsync()
 *   get -EIO; a dirty file with no handles is retried every
 *   write.retry_interval, and kept in cache.dir/unsaved at unmount.
 * - Locking: wb->lock protects the fields marked so and serialises the
 *   file's writers, truncates and commits; it is held across staging-file
 *   I/O, base fetches and a commit's requests. wb->plock, taken after it
 *   and never across a wait for S3, protects the parts (updated by the
 *   upload callbacks on the S3 engine thread, which take nothing else of
 *   the file's) and doubles the size, times and metadata that getattr
 *   reads, so a stat never waits for an upload. Lock order: wb->lock,
 *   wb->plock, the inode table's.
 * - Lifetime: references, counted by the inode module under its table
 *   lock (fsx_inode_wb_*), are held by handles, temporary users, one for
 *   being dirty, one per part upload in flight and the inode's orphan
 *   keep; the last put detaches and frees it (wb_destroy, the one
 *   teardown).
 *
 * FILES (internals shared in fsx_wb_i.h)
 * - fsx_wb.c: the state: open, references, teardown, the staging record,
 *   dirtiness, metadata, attributes.
 * - fsx_wb_io.c: staging-file I/O: base fetches, the block map, write,
 *   read, truncate, eager parts.
 * - fsx_wb_part.c: the upload session: the parts table, the multipart
 *   upload's start and end (journaled in cache.dir), its part uploads.
 * - fsx_wb_upload.c: uploading the whole file: one conditional PutObject,
 *   or the rest of the parts and a conditional completion.
 * - fsx_wb_commit.c: commit, gates and holds, discard.
 * - fsx_wb_stream.c: streamed writes (pool runs) and the move to staging.
 * - fsx_wb_mount.c: the mount-wide side: finding states (directory
 *   renames, listings, rmdir), the retry thread, uploads left to abort,
 *   stop at unmount.
 * - Below this module, used by it: the part geometry (fsx_wb_geo.h, also
 *   fsx_etag's and recovery's), the part-buffer pool (fsx_pool.h) and the
 *   s3fs metadata codec (fsx_meta.h).
 */
#ifndef S3R_FSX_WB_H
#define S3R_FSX_WB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fs/mount/fsx_i.h"
#include "fs/meta/fsx_meta.h" /* struct fsx_wmeta, fsx_wopts, fsx_copy_meta */
#include "fs/write/fsx_wb_geo.h" /* part geometry, FSX_WB_BLOCK */

struct fsx_wb;

/*
 * The write-back state of in, created if it has none: base (NULL for a new
 * file) says what the object is now; trunc starts from empty. Takes a
 * reference for the caller (a handle: fsx_wb_put at release).
 */
int fsx_wb_open(struct fsx_mount *m, struct fsx_inode *in,
                const struct fsx_attr *base, bool trunc,
                const struct fsx_wmeta *meta, struct fsx_wb **out);
/* The same, the caller holding m->rename_lock (fsx_renlock.h: an unlink
   or a rename, for a name about to go). */
int fsx_wb_open_held(struct fsx_mount *m, struct fsx_inode *in,
                     const struct fsx_attr *base, bool trunc,
                     const struct fsx_wmeta *meta, struct fsx_wb **out);
/* A reference to in's write-back state, or NULL if it has none. */
struct fsx_wb *fsx_wb_get(struct fsx_mount *m, struct fsx_inode *in);
void fsx_wb_put(struct fsx_mount *m, struct fsx_wb *wb);

/*
 * Where a write's bytes come from, taken once and in order: copied into
 * memory (a part buffer) or into a file at an offset (the staging file).
 * A FUSE request's data may be in memory or in a pipe (fsx_wops.c): 0 or
 * -errno.
 */
struct fsx_wsrc {
  int (*to_mem)(struct fsx_wsrc *s, void *dst, size_t len);
  int (*to_fd)(struct fsx_wsrc *s, int fd, uint64_t off, size_t len);
};

/* Write len bytes of src at off (append: at the end); bytes written or
   -errno. */
ssize_t fsx_wb_write(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                     struct fsx_wsrc *src, size_t len, bool append);

/*
 * Bytes a caller's registered buffer holds (fsx_direct_write), sent as
 * whole parts straight from there: run gives n UploadParts r[i] (of
 * len[i] bytes, the caller's bytes at[i] bytes into the write) their
 * tokens, submits them and waits for them: 0, or -errno with none
 * submitted. body: the same bytes, readable here (sent in the HTTP body
 * where a server declines a token), or NULL: only the server can reach
 * them (device memory), and a part it did not move is not taken.
 */
struct s3_req;
struct fsx_wparts {
  int (*run)(struct fsx_wparts *w, struct s3_req **r, int n,
             const uint64_t *at, const size_t *len);
  const char *body;
};
/* The most UploadParts one run is given. */
#define FSX_WB_PARTS_AT_ONCE 8
/*
 * Write len bytes at off as whole parts from w: only where the file is
 * streamed (written in order from empty), not unlinked, off its end and a
 * part's start, and the file then longer than one part (a smaller one is
 * one PUT). Waits for the server. The bytes taken (whole parts, fewer
 * than len or 0 when no more can go so: the rest is the caller's to write
 * with fsx_wb_write), or -errno when none was taken. Counts the bytes
 * (write.bytes), not the write.
 */
ssize_t fsx_wb_write_parts(struct fsx_mount *m, struct fsx_wb *wb,
                           uint64_t off, size_t len, struct fsx_wparts *w);
/* Read up to len bytes at off into buf; bytes read (0 at the end). */
ssize_t fsx_wb_read(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    void *buf, size_t len);
int fsx_wb_truncate(struct fsx_mount *m, struct fsx_wb *wb, uint64_t size);
/* Change metadata, applied with the next commit. True while the bytes
   are still to be uploaded (the metadata can wait for them). */
bool fsx_wb_set_meta(struct fsx_mount *m, struct fsx_wb *wb,
                     const struct fsx_wmeta *meta);

/*
 * Upload if dirty; 0 when the object on the server is the file, else -EIO
 * (the reason logged) with everything kept for a retry.
 */
int fsx_wb_commit(struct fsx_mount *m, struct fsx_wb *wb);
bool fsx_wb_dirty(struct fsx_wb *wb);
/*
 * Commit, then hold every other commit and write of the file until
 * fsx_wb_ungate (a rename: nothing may land on the old name between its
 * copy and its delete). Gated only on success.
 */
int fsx_wb_gate(struct fsx_mount *m, struct fsx_wb *wb);
void fsx_wb_ungate(struct fsx_wb *wb);
/* Hold every commit and write of the file until fsx_wb_ungate (or
   fsx_wb_discard with held), without committing first. */
void fsx_wb_hold(struct fsx_wb *wb);
/*
 * Every write-back state of bucket whose key starts with prefix, committed
 * and gated (a directory rename: nothing below it may change or land on an
 * old name until its children are moved). On success *out holds *nout
 * references for fsx_wb_ungate_all; on the first failed commit, nothing is
 * left gated and its error is returned.
 */
int fsx_wb_gate_below(struct fsx_mount *m, const char *bucket,
                      const char *prefix, struct fsx_wb ***out, size_t *nout);
void fsx_wb_ungate_all(struct fsx_mount *m, struct fsx_wb **v, size_t n);
/* The one of v whose file has key now, or NULL. */
struct fsx_wb *fsx_wb_find(struct fsx_mount *m, struct fsx_wb **v, size_t n,
                           const char *key);
/* Dirty with no failed upload yet: written after the last flush. */
bool fsx_wb_unflushed(struct fsx_wb *wb);

/* The file's attributes now (size, mtime, mode...) over in's. */
void fsx_wb_attr(struct fsx_wb *wb, struct fsx_attr *a);

/*
 * Removing a file (unlink, or replaced by a rename): first fetch_all, so
 * the handles still open keep reading what only the object held; then,
 * once the server's object is gone, discard: nothing of it is uploaded
 * again (its upload aborted, its dirty state dropped). With held, wb was
 * held (fsx_wb_hold) by the caller: discard ends the hold. (What keeps wb
 * for the open handles then: fsx_inode_keep_orphan.)
 */
int fsx_wb_fetch_all(struct fsx_mount *m, struct fsx_wb *wb, bool held);
void fsx_wb_discard(struct fsx_mount *m, struct fsx_wb *wb, bool held);
/* The object was renamed by copy: the base is now new_etag. */
void fsx_wb_renamed(struct fsx_wb *wb, const char *new_etag);

/* The mount's write-back: start and stop the retry thread. */
int fsx_wb_start(struct fsx_mount *m);
/* Last commit attempts for every dirty file; the rest kept in unsaved/. */
void fsx_wb_stop(struct fsx_mount *m);
/* Dirty files whose key starts with prefix in bucket: committed now
   (before a directory rename). 0 or the first error. */
int fsx_wb_commit_below(struct fsx_mount *m, const char *bucket,
                        const char *prefix);
/* Put the files of dir not uploaded yet into its listing snapshot. */
void fsx_wb_list_pending(struct fsx_mount *m, struct fsx_inode *dir);
/* Is a file below prefix still waiting for its first upload (rmdir)? */
bool fsx_wb_pending_below(struct fsx_mount *m, const char *bucket,
                          const char *prefix);

#endif
