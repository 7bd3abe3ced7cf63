/*
 * fsx_recover_thread: the staging files of dead mounts recovered in the
 * background, so that the mount serves from its first moment.
 *
 * DESIGN
 * - The recovery itself runs in processes of their own (fsx_recover_proc:
 *   a fault in one file's recovery ends that process, not the mount). main
 *   forks their zygote before any thread exists, and starts this thread
 *   once the mount is up and the inode table, page cache, client and
 *   write-back exist (before the session loop); it tells the zygote to go
 *   (or that there is nothing to do) and reads its events: the name being
 *   uploaded, each key uploaded, the workers' summaries, a worker's death.
 * - Stopping (at unmount, before the write-back and the client go):
 *   t->stop is set and the zygote told to stop; its worker gets SIGTERM,
 *   cancels the request it waits for and leaves the file it was at in
 *   place as when the server cannot be reached (-EAGAIN: the next mount
 *   retries it). What can still take time is a short blocking request
 *   (CreateMultipartUpload, Complete, Abort, a HEAD), each bounded by the
 *   client's own limits (s3.retry.budget_ms, the connect and low-speed
 *   timeouts); the zygote kills a worker that has not ended a minute
 *   after.
 * - The thread uses the mount's structures through their own locks.
 * - A key uploaded: what the running mount holds for it (attributes, page
 *   cache chunks, the parent's listing snapshot, the kernel's dentry and
 *   attributes) is refreshed or dropped, so that it does not go on serving
 *   what was there before; the kernel's pages go at the next open (a new
 *   ETag). No notification once told to stop: the loop may have ended.
 *   A key the mount never looked at has nothing to drop.
 * - Its uploads land in order with the live mount's operations on the
 *   same name: a worker says which name it is about to upload and waits
 *   for the daemon's word; the daemon makes it the mount's recover_key
 *   (m->recover_lock), waits until no unlink or rename that holds that
 *   name is under way (fsx_recover_name_hold), and answers. An unlink or
 *   rename of the name from then on waits until the upload is over, then
 *   goes on (and so removes or moves what recovery stored); one that
 *   ended before the word is seen by the upload's own check (the HEAD,
 *   and the PUT's If-Match). A directory rename holds the directory's
 *   own key only, not those below it.
 * - Counters in the mount's stats: recovery.running (1 while the thread
 *   works), recovery.uploaded, recovery.kept.
 */
#ifndef S3R_FSX_RECOVER_THREAD_H
#define S3R_FSX_RECOVER_THREAD_H

struct fsx_mount;
struct fsx_recover_thread;
struct s3_req;

struct fsx_recover_proc;

/*
 * Start recovering what dead mounts left in m->stage (cache_dir, for the
 * log lines: one when it starts, one when it ends) with the zygote proc
 * (taken over: told to go, or that there is nothing to do, and ended in
 * either case). 0 and *out, NULL when there is no dead mount's directory
 * (no thread then); or -errno.
 */
int fsx_recover_thread_start(struct fsx_mount *m, const char *cache_dir,
                             struct fsx_recover_proc *proc,
                             struct fsx_recover_thread **out);
/* Tell the thread to stop, wait for it and free t (NULL: nothing). */
void fsx_recover_thread_stop(struct fsx_recover_thread *t);
/* An unlink's or rename's hold on a name (the caller's, on its stack). */
struct fsx_recover_hold {
  const char *bucket, *key;
  struct fsx_recover_hold *next; /* m->recover_lock */
};
/* Before an unlink or rename of bucket/key: wait while recovery uploads
   that very name, then hold it (recovery's next upload of it waits for
   the release); release once the operation is over. */
void fsx_recover_name_hold(struct fsx_mount *m, struct fsx_recover_hold *h,
                           const char *bucket, const char *key);
void fsx_recover_name_release(struct fsx_mount *m,
                              struct fsx_recover_hold *h);

#endif
