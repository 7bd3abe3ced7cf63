/*
 * fsx_recover_thread: the staging files of dead mounts recovered in the
 * background, so that the mount serves from its first moment.
 *
 * DESIGN
 * - main starts the thread once the mount is up and the inode table, page
 *   cache, client and write-back exist (before the session loop), and stops
 *   it at unmount, before the write-back and the client go. The thread
 *   walks the dead mounts' directories (fsx_stage_recover_until) and hands
 *   each staging file to fsx_recover_file, whose long requests (HEAD, GET,
 *   PUT, UploadPart) go through the thread's run() (handed in as struct
 *   fsx_recover_io).
 * - Stopping: t->stop is set and t->cond broadcast. The walk looks at it
 *   before each upload record and each file; a request the thread waits for in
 *   run() is cancelled, and the file it was for is left in place as when the
 *   server cannot be reached (-EAGAIN: the next mount retries it). What can
 *   still take time is a short blocking request (CreateMultipartUpload,
 *   Complete, Abort, the HEADs of fsx_wopts_make and of an uploaded key's
 *   refresh), each bounded by the client's own limits (s3.retry.budget_ms, the
 *   connect and low-speed timeouts).
 * - t->lock protects the done flags of the requests being waited for (set
 *   by the engine thread's callback) and goes with t->cond; it is a leaf
 *   lock, never held while calling anything. The mount's structures are
 *   used through their own locks.
 * - A key uploaded: what the running mount holds for it (attributes, page
 *   cache chunks, the parent's listing snapshot, the kernel's dentry and
 *   attributes) is refreshed or dropped, so that it does not go on serving
 *   what was there before; the kernel's pages go at the next open (a new
 *   ETag). No notification once told to stop: the loop may have ended.
 *   A key the mount never looked at has nothing to drop.
 * - Counters in the mount's stats: recovery.running (1 while the thread
 *   works), recovery.uploaded, recovery.kept.
 */
#ifndef S3R_FSX_RECOVER_THREAD_H
#define S3R_FSX_RECOVER_THREAD_H

struct fsx_mount;
struct fsx_recover_thread;
struct s3_req;

/*
 * Start recovering what dead mounts left in m->stage (cache_dir, for the
 * log lines: one when it starts, one when it ends). 0 and *out, NULL when
 * there is no dead mount's directory (no thread then); or -errno.
 */
int fsx_recover_thread_start(struct fsx_mount *m, const char *cache_dir,
                             struct fsx_recover_thread **out);
/* Tell the thread to stop, wait for it and free t (NULL: nothing). */
void fsx_recover_thread_stop(struct fsx_recover_thread *t);

#endif
