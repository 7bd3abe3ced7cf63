/*
 * fsx_stage: the mount's staging directory under cache.dir, the journal of
 * what each staging file is for, and unsaved/, where data that could not
 * be uploaded is kept.
 *
 * DESIGN
 * - cache.dir, and every directory above it, must belong to the mount's
 *   user or root and be writable by no one else, else the mount refuses,
 *   naming the directory, its owner, its mode and the fix; a shared one
 *   (sticky, writable by all: /tmp) holds the user's own s3rdmafs-<uid>,
 *   mode 0700, and everything goes there (fsx_stage_safe.c). Files are
 *   created O_EXCL|O_NOFOLLOW, and every file opened by name again
 *   (records, maps, recovery's staging files, unsaved/ and MANIFEST) is
 *   taken only never through a symlink and as a regular file of the
 *   user's with one link; dead mounts' directories only when the user's
 *   and writable by no one else.
 * - Each mount owns <cache.dir>/mount-<pid>-<n>/, locked with flock for as
 *   long as the daemon lives, marked with a format file. In it:
 *   - staging files ino-<ino>-<n>, one per written file (sparse);
 *   - beside a staging file whose data the server lacks (dirty), its
 *     record <file>.rec: endpoint, bucket, key, the base object's ETag and
 *     length, the part size, the metadata. Written (write + rename) when
 *     the file becomes dirty and whenever one of those changes; removed
 *     once the server holds the file;
 *   - beside a staging file that holds only some blocks of its base, the
 *     block bitmap <file>.map (one bit per 64 KiB block, set as blocks are
 *     fetched or written);
 *   - uploads/<n>, one record per multipart upload in progress (endpoint,
 *     bucket, key, upload id), written before the first part is sent and
 *     removed when the upload is completed or aborted.
 *   Records are not fsync'd as they change (a killed daemon's page cache
 *   survives it); a failed upload, the moment close() or fsync() reports
 *   EIO and promises to keep the data, syncs the file, its record, its map
 *   and the directory (fsx_stage_sync), so they survive power loss too.
 * - A dead mount's directory (unlocked) is recovered by the next mount of
 *   the same endpoint with the same cache.dir: its multipart uploads are
 *   aborted, but for those a streamed file's <file>.parts names (taken up,
 *   or kept with the file); each staging file with a record is handed to a
 *   callback that uploads it if it can establish the key and base version,
 *   else it is moved to unsaved/; a staging file without a record held
 *   nothing the server lacked and is removed. A directory of an unknown
 *   format keeps every staging file. Nothing not confirmed on the server
 *   is deleted.
 * - Each attempt to recover a file is counted in <file>.try (synced
 *   before, removed after): a file whose recovery began 3 times and never
 *   ended (the daemon died in it) is set aside in unsaved/ untried, so
 *   that one file never keeps a mount from starting.
 * - unsaved/<mount id>-<n>-<name> (the mount id is random, the rename
 *   RENAME_NOREPLACE: unique across mounts and hosts sharing cache.dir),
 *   each with a line in unsaved/MANIFEST: time, file, size, bucket, key,
 *   reason. Failing to keep a file leaves it where it is.
 * - s->lock protects the name counters; the rest is set up once.
 */
#ifndef S3R_FSX_STAGE_H
#define S3R_FSX_STAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

struct s3_client;
struct s3_part_etag;
struct fsx_stage;

/* What a dirty staging file is for (strings owned by the caller). */
struct fsx_stage_rec {
  const char *endpoint;       /* filled in by fsx_stage_rec_write */
  const char *bucket, *key;
  const char *base_etag;      /* "" for none: a new object */
  uint64_t base_len;          /* [0, base_len) of the base not held is in
                                 the base; the map says which blocks */
  uint64_t part_size;
  unsigned mode, uid, gid;
  bool has_mtime, has_ctime, has_atime;
  int64_t mtime, ctime, atime;
  long mtime_ns, ctime_ns, atime_ns; /* their nanoseconds (utimensat's:
                                 records before them lack them, 0) */
  bool partial;               /* written since its last close or fsync */
  bool map_ok;                /* the block map beside it is reliable */
  const struct fsx_stage_parts *resume; /* read, not written: the upload
                                 to take up (<file>.parts), or NULL */
  bool has_size;              /* size is known (records before it lack
                                 it: read, never written false) */
  uint64_t size;              /* the file's size when the record was
                                 written: with partial false, the size to
                                 upload (a streamed file's staging file
                                 lacks what only its upload holds) */
  uint64_t sent;              /* streamed (fsx_wb_stream.c): parts up to
                                 here went to an upload straight from write
                                 buffers; what no buffer still held of
                                 [0, sent) is not in the file */
  bool keep_only;             /* read, not written: the file is set aside;
                                 fsx_recover_file only fills in the old
                                 object's bytes it never read, never
                                 uploads */
};

/* Create and lock this mount's directory; err says what failed. */
int fsx_stage_open(const char *cache_dir, const char *endpoint,
                   struct fsx_stage **out, char *err, size_t errlen);
/* The mount's own directory (cache.dir/mount-PID-N). */
const char *fsx_stage_dir(const struct fsx_stage *s);
/* The directory its files go under: cache.dir, or the user's own
   subdirectory of a shared one (see below). */
const char *fsx_stage_root(const struct fsx_stage *s);
/* Remove the directory (unless a file is still kept in it) and unlock. */
void fsx_stage_close(struct fsx_stage *s);

/*
 * Recover a dead mount's staging file: 0 once the server holds it (it is
 * then removed); -EAGAIN when the server could not be reached (it is left
 * as it is, record and map, for the next mount); else -errno with why in
 * reason (it is then kept in unsaved/; -ENOTRECOVERABLE: its record and
 * what the server or the file holds disagree; -EIDRM: a streamed file's
 * upload is gone from the server). A streamed file's upload
 * that holds parts the server acknowledged is never aborted: kept with
 * the file, named in its MANIFEST line.
 */
typedef int (*fsx_stage_recover_fn)(void *arg, const struct fsx_stage_rec *r,
                                    const char *path, int fd, int map_fd,
                                    char *reason, size_t reasonlen);
struct fsx_recovery {
  int aborted;                /* multipart uploads aborted */
  int unknown;                /* creations whose answer was lost (left) */
  int uploaded;               /* staging files the server now holds */
  int kept;                   /* moved to unsaved/ */
  int left;                   /* left in place (another endpoint's...) */
};
/* Recover the directories of dead mounts of the same endpoint. */
void fsx_stage_recover(struct fsx_stage *s, struct s3_client *c,
                       fsx_stage_recover_fn fn, void *arg,
                       struct fsx_recovery *out);
/* The same, stopping early once *stop (looked at before each upload record
   and each staging file): what is not done yet stays, for the next mount. */
void fsx_stage_recover_until(struct fsx_stage *s, struct s3_client *c,
                             fsx_stage_recover_fn fn, void *arg,
                             const atomic_bool *stop,
                             struct fsx_recovery *out);
/* How many staging files the dead mounts' directories hold (the work of
   fsx_stage_recover), and in *dirs how many such directories there are. */
int fsx_stage_leftovers(struct fsx_stage *s, int *dirs);

/* A new, empty staging file for inode ino: its fd (O_RDWR), or -errno.
   Its path goes to path. */
int fsx_stage_create(struct fsx_stage *s, uint64_t ino, char *path,
                     size_t pathlen);
/* The block map beside path, nbytes long: its fd or -errno. */
int fsx_stage_map_open(const char *path, uint64_t nbytes);
/* Write (replace) or remove the record beside path. */
int fsx_stage_rec_write(struct fsx_stage *s, const char *path,
                        const struct fsx_stage_rec *r);
void fsx_stage_rec_remove(const char *path);
/*
 * The record's sent number rewritten in place (a streamed file's record
 * ends with it; one write of its fixed-width digits): no new file and no
 * rename each part. -ENODATA when the record has no such line (write it
 * whole then), -ENOENT when there is none.
 */
int fsx_stage_rec_set_sent(const char *path, uint64_t sent);
/*
 * The parts of a streamed file's unfinished multipart upload that only the
 * server holds (fsx_wb_stream.c): <file>.parts beside a dirty staging file
 * whose upload failed, so that the next mount resumes that upload (sends
 * the rest from the file, completes it) instead of aborting it. Lines: the
 * upload's journal id (uploads/<id>), its upload id (hex), then "N ETAG"
 * (hex) per part. Written whole (write, rename; with sync, fsync first).
 */
struct fsx_stage_parts {
  long journal_id;
  char *upload_id;
  unsigned n;
  struct s3_part_etag *pe;    /* n entries, pointing into text */
  char *text;
};
int fsx_stage_parts_write(const char *path, long journal_id,
                          const char *upload_id,
                          const struct s3_part_etag *pe, unsigned n,
                          bool sync);
/* One part acknowledged, appended (the file written whole with its header
   when there is none), not synced: O(1) as parts go; a part listed again
   counts as its last line says (fsx_stage_parts_read). */
int fsx_stage_parts_add(const char *path, long journal_id,
                        const char *upload_id, int part, const char *etag);
/* 0, -ENOENT (none) or -EBADMSG; fsx_stage_parts_free after 0. */
int fsx_stage_parts_read(const char *path, struct fsx_stage_parts *out);
void fsx_stage_parts_free(struct fsx_stage_parts *p);
void fsx_stage_parts_remove(const char *path);
/* Make path, its record and map, and their directory durable. */
int fsx_stage_sync(const char *path, int fd, int map_fd);
/* Remove a staging file with its record and map. */
void fsx_stage_remove(const char *path);

/* Record an upload before its first part; the record's id (> 0) or -errno. */
long fsx_stage_note_upload(struct fsx_stage *s, const char *bucket,
                           const char *key, const char *upload_id);
void fsx_stage_forget_upload(struct fsx_stage *s, long id);
/*
 * Before a CreateMultipartUpload: a record of an upload about to be made at
 * time since (its reply may be lost, the upload made all the same and known
 * to nobody). fsx_stage_set_upload names the upload once it is known; a
 * record still unnamed (the daemon died first) is said and counted
 * (fsx_stage_unknown) by the recovery that finds it.
 */
long fsx_stage_note_create(struct fsx_stage *s, const char *bucket,
                           const char *key, time_t since);
int fsx_stage_set_upload(struct fsx_stage *s, long id, const char *bucket,
                         const char *key, const char *upload_id);
/* Before a completion of the upload is first sent: so marked, a recovery
   that finds the record aborts it only after looking whether it is the
   object now (fsx_etag_abort_upload: RGW killed as it completed). */
int fsx_stage_mark_completing(struct fsx_stage *s, long id,
                              const char *bucket, const char *key,
                              const char *upload_id);
/*
 * A CreateMultipartUpload of key begun at since that failed with rc, that
 * was asked again after answers were lost (resent times:
 * s3_create_multipart's orphans, whatever rc), or whose daemon died before
 * its answer was recorded (rc 0, resent 0): uploads may have been made
 * that nothing can prove ours (a listing shows only the key and the time,
 * the same for another writer of the key, on another mount or host).
 * Never aborted: said in the log, for the bucket's lifecycle rule
 * (AbortIncompleteMultipartUpload) to remove. Called only for one of
 * those (a success never repeated is none). Returns how many may exist
 * (the caller counts them): one per repeated attempt, and one more when
 * the last attempt's outcome is unknown (not a success, not a refusal).
 */
unsigned fsx_stage_unknown(const char *bucket, const char *key, time_t since,
                           int rc, unsigned resent);

/*
 * Keep a staging file that could not be uploaded: moved to unsaved/ with a
 * manifest line and one log line naming the key, the place and why. 0, or
 * -errno when it could not be moved (then it stays where it is, said).
 */
int fsx_stage_keep(struct fsx_stage *s, const char *path, const char *bucket,
                   const char *key, const char *reason);

#endif
