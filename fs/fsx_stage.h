/*
 * fsx_stage: the mount's staging directory under cache.dir, and the journal
 * of the multipart uploads it has started.
 *
 * DESIGN
 * - Each mount owns <cache.dir>/mount-<pid>-<n>/, locked with flock for as
 *   long as the daemon lives: staging files (one per written file, sparse)
 *   and uploads/<n>, one record per multipart upload in progress (endpoint,
 *   bucket, key, upload id), written before the first part is sent and
 *   removed when the upload is completed or aborted.
 * - A daemon killed mid-write leaves its directory unlocked. The next mount
 *   with the same cache.dir aborts the uploads recorded there (those on its
 *   own endpoint; others are left for a mount of theirs) and removes the
 *   staging files it no longer needs: data that was never acknowledged by
 *   a successful close() or fsync().
 * - At unmount, a file that still could not be uploaded is moved to
 *   <cache.dir>/unsaved/ and logged, never deleted.
 * - s->lock protects the record counter; the rest is set up once.
 */
#ifndef S3R_FSX_STAGE_H
#define S3R_FSX_STAGE_H

#include <stdint.h>
#include <stddef.h>

struct s3_client;
struct fsx_stage;

/* Create and lock this mount's directory; err says what failed. */
int fsx_stage_open(const char *cache_dir, const char *endpoint,
                   struct fsx_stage **out, char *err, size_t errlen);
/* Remove the directory (it should hold nothing by now) and unlock. */
void fsx_stage_close(struct fsx_stage *s);

/*
 * Abort the uploads recorded by dead mounts of the same endpoint and remove
 * their directories. Returns how many uploads were aborted.
 */
int fsx_stage_recover(struct fsx_stage *s, struct s3_client *c);

/* A new, empty staging file for inode ino: its fd (O_RDWR), or -errno.
   Its path goes to path. */
int fsx_stage_create(struct fsx_stage *s, uint64_t ino, char *path,
                     size_t pathlen);

/* Record an upload before its first part; the record's id (> 0) or -errno. */
long fsx_stage_note_upload(struct fsx_stage *s, const char *bucket,
                           const char *key, const char *upload_id);
void fsx_stage_forget_upload(struct fsx_stage *s, long id);

/* Keep a staging file that could not be uploaded: moved to unsaved/, with
   a log line naming the key and where the data is. */
void fsx_stage_keep(struct fsx_stage *s, const char *path, const char *bucket,
                    const char *key);

#endif
