/* Internals shared by the files of the write-back module (listed in
   fsx_wb.h): the state record and the calls between its files. */
#ifndef S3R_FSX_WB_I_H
#define S3R_FSX_WB_I_H

#include <pthread.h>

#include "fs/write/fsx_wb.h"
#include "s3/s3_client.h"

/* The mount-wide side (fsx_wb_mount.c; m->wbm, made by fsx_wb_start):
   every state, the part bytes on the wire, the retry thread. */
struct fsx_wbm {
  pthread_mutex_t lock;       /* ranks after wb->lock */
  pthread_cond_t cond;        /* mem went down, or stopping; on
                                 CLOCK_MONOTONIC */
  struct fsx_wb *wbs;         /* protected by lock: every state */
  uint64_t mem;               /* protected by lock: part bytes uploading */
  bool stopping;              /* protected by lock */
  pthread_t thread;           /* background retries */
  struct fsx_leftover *leftovers; /* protected by lock: multipart uploads
                                 whose abort failed, tried again by the
                                 retry thread and at unmount */
};

enum fsx_part_state { PART_NONE, PART_SENDING, PART_DONE, PART_FAILED };

struct fsx_part {
  unsigned char state;        /* enum fsx_part_state */
  bool stale;                 /* written since its upload began */
  uint64_t len;               /* bytes sent */
  char *run;                  /* streaming: the pool run holding its bytes
                                 (NULL: in the staging file, or sent and
                                 acknowledged: only in the upload) */
  char etag[S3_ETAG_MAX];
};

struct fsx_wb {
  struct fsx_mount *m;
  struct fsx_inode *in;       /* an internal reference, for the life of wb */
  struct fsx_wb *next, *prev; /* m->wbm->lock */
  int fd;                     /* the staging file */
  int map_fd;                 /* its block map (fsx_stage), or -1 */
  char path[4096];

  pthread_mutex_t lock;
  pthread_cond_t cond;        /* a commit ended */
  /* plock: the parts, which upload callbacks on the S3 engine thread
     update. Never held across a wait for S3; taken after lock, alone by
     the callbacks (which must never wait for lock: it is held across
     synchronous requests that need the engine thread). */
  pthread_mutex_t plock;
  pthread_cond_t pcond;       /* plock: a part finished */
  uint64_t size;              /* lock and plock to change, either to read
                                 (getattr takes plock only: it never waits
                                 for an upload); so are mtime, meta,
                                 base_etag, on_server and unlinked */
  uint64_t base_len;          /* lock: [0, base_len) of the base object may
                                 still be fetched where not present */
  char base_etag[FSX_ETAG_MAX]; /* lock: the base object; "" none */
  uint8_t *present;           /* lock: base blocks held by the staging file */
  uint64_t nblocks;           /* lock: blocks the bitmap covers */
  bool data_dirty, meta_dirty; /* lock: the server lacks our bytes / meta */
  bool dirty_ref;             /* lock: holds the reference for being dirty */
  bool unlinked;              /* lock: never upload again */
  bool committing;            /* lock */
  bool failed;                /* lock: the last commit failed: retry */
  bool on_server;             /* lock: an object exists (base or ours) */
  bool base_plain;            /* lock: the base is an object this file
                                 stored carrying nothing but s3fs's
                                 metadata (no Content-Type, no other
                                 tool's x-amz-meta-*): what a HEAD before
                                 the next upload would keep is known */
  bool upload_plain;          /* lock: so does the multipart upload begun */
  bool rec_on_disk;           /* lock: the staging record is written */
  bool unflushed;             /* lock: bytes written since the last close
                                 or fsync (a crash leaves them partial) */
  bool kept_in_place;         /* lock: could not be kept in unsaved/: the
                                 staging file must stay */
  bool map_bad;               /* lock: the map file may be wrong */
  uint64_t psize;             /* part size, a multiple of FSX_WB_BLOCK */
  uint64_t seq_end;           /* lock: where a sequential writer goes next */
  uint64_t stream_sent;       /* lock: parts up to here were sent from runs
                                 (in the record: see fsx_stage_rec.sent) */
  bool stream;                /* lock: written in order into pool runs,
                                 nothing in the staging file (fsx_wb_stream.c) */
  struct fsx_part *parts;     /* plock */
  unsigned nparts;            /* plock: allocated entries */
  unsigned sending;           /* plock: parts on the wire */
  int part_err;               /* plock: first failed part's error */
  bool list_warned;           /* plock: a failure to list a part said */
  bool parts_kept;            /* plock: <file>.parts lists the parts the
                                 upload holds (fsx_wb_keep_parts): a run
                                 goes back only once listed there */
  unsigned eager_next;        /* lock: first part not yet sent eagerly */
  char *upload_id;            /* lock */
  char *upload_key;           /* lock: the key upload_id was made for */
  long journal_id;            /* lock */
  bool complete_sent;         /* lock: a completion of upload_id was sent
                                 (it may have landed: aborted with care) */
  time_t upload_since;        /* lock: when upload_id was asked for */
  struct fsx_wmeta meta;      /* lock: what the object should carry */
  struct fsx_wmeta sent_meta; /* lock: what the open upload was created with */
  struct timespec mtime;      /* lock: the last change of the bytes */
};

/* fsx_wb.c: the state (lock held) */
void fsx_wb_set_dirty(struct fsx_wb *wb);
/* The staging record brought up to date: written while dirty (force:
   rewritten, something in it changed), removed once clean. */
int fsx_wb_journal(struct fsx_wb *wb, bool force);
/* Only wb->stream_sent changed: the record's number rewritten in place
   (fsx_stage_rec_set_sent), or the record written whole. */
int fsx_wb_journal_sent(struct fsx_wb *wb);
/* About to change the staging file's bytes or size: recorded as partial
   (written since the last close) first, so that a crash in the middle is
   never uploaded; -errno (the change refused) if it cannot be recorded. */
int fsx_wb_will_change(struct fsx_wb *wb);
/* The block map written out whole (after present was replaced). */
void fsx_wb_map_rewrite(struct fsx_wb *wb);

/* fsx_wb_io.c: staging-file I/O (lock held) */
/* The base's bytes [from, to) the staging file lacks, fetched. */
int fsx_wb_fetch(struct fsx_mount *m, struct fsx_wb *wb, uint64_t from,
                 uint64_t to);
bool fsx_wb_block_present(const struct fsx_wb *wb, uint64_t b);
/* All of [p, p + len) written at off (EINTR retried): 0 or -errno. */
int fsx_wb_pwrite_all(int fd, const char *p, size_t len, uint64_t off);
/* GET [off, off+len) of the base (exactly that object) into buf; with
   *retired, buf must never be freed or reused (fsx_rdma_run). */
int fsx_wb_get_base(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    size_t len, void *buf, bool *retired);

/* fsx_wb_part.c: the upload session */
int fsx_wb_grow_parts(struct fsx_wb *wb, unsigned n); /* lock held */
void fsx_wb_wait_sent(struct fsx_wb *wb);           /* lock held */
/* Part k as it is now (a copy; lock held). */
struct fsx_part fsx_wb_part(struct fsx_wb *wb, unsigned k);
/* Forget every part and error (lock held, nothing on the wire); the
   parts' runs stay. */
void fsx_wb_reset_parts(struct fsx_wb *wb);
/* The multipart upload begun (journaled first), with the metadata the
   file should carry now (lock held). */
int fsx_wb_start_upload(struct fsx_mount *m, struct fsx_wb *wb);
/* Must what the server holds be asked (a HEAD) before this file's object
   replaces it? Not when this file stored it itself with a known ETag and
   the server takes conditions (If-Match then says whether it is still
   there). Lock held. */
bool fsx_wb_must_look(struct fsx_mount *m, const struct fsx_wb *wb);
/* The open multipart upload forgotten: aborted on the server, or (abort
   false) known gone; nothing left on the wire (lock held). */
void fsx_wb_end_upload(struct fsx_mount *m, struct fsx_wb *wb, bool abort);
int fsx_wb_send_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k);
/*
 * Streamed, an upload open: the parts the server holds recorded beside the
 * staging file (fsx_stage_parts_write), for the next mount to take the
 * upload up if this one cannot (at a commit's start, after one failed, at
 * unmount); from then on a run goes back to the pool only once listed
 * (parts_kept). Lock held.
 */
int fsx_wb_keep_parts(struct fsx_wb *wb);
/* Part k acknowledged with etag: one line more in <file>.parts (not
   synced), before the only other copy of its bytes may go (its run, or
   the caller's buffer); -errno, said once per file. plock held. */
int fsx_wb_list_part(struct fsx_wb *wb, unsigned k, const char *etag);
/* The same range of the base object, copied on the server. */
int fsx_wb_copy_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k);

/* fsx_wb_upload.c (lock held): conditional uploads of the whole file */
/* The file in one PutObject under key; its ETag into etag. */
int fsx_wb_put_single(struct fsx_mount *m, struct fsx_wb *wb, const char *key,
                      char etag[S3_ETAG_MAX]);
/* The rest of a multipart upload under key, then its completion. */
int fsx_wb_put_multipart(struct fsx_mount *m, struct fsx_wb *wb,
                         const char *key, char etag[S3_ETAG_MAX]);

/* The first n parts, all done, completed as the object under key, on the
   condition of the object the file replaces (lock held). */
int fsx_wb_complete_parts(struct fsx_mount *m, struct fsx_wb *wb,
                          const char *key, unsigned n,
                          char etag[S3_ETAG_MAX]);

/* fsx_wb_stream.c (lock held): a file written in order into pool runs */
/* Write at off == wb->size: bytes taken (the rest, if any, to go through
   the staging file: stream is off then), or -errno. */
ssize_t fsx_wb_stream_write(struct fsx_mount *m, struct fsx_wb *wb,
                            uint64_t off, struct fsx_wsrc *src, size_t len);
/* A read the runs answer whole: true with *n set; false: unstream first. */
bool fsx_wb_stream_read(struct fsx_wb *wb, uint64_t off, void *buf,
                        size_t len, ssize_t *n);
/*
 * Leave the stream path: the runs' bytes written into the staging file,
 * and the parts already uploaded (their runs given back) completed as the
 * object under the file's key, which becomes the base (the rest of the
 * file stays dirty). Without materialize (unmount, nothing can be sent),
 * uploaded parts are left out and their end goes to *lost. 0 or -errno
 * (still streaming then).
 */
int fsx_wb_unstream(struct fsx_mount *m, struct fsx_wb *wb, bool materialize,
                    uint64_t *lost);
/* Every run given back (the file committed, discarded or torn down). */
void fsx_wb_stream_release(struct fsx_mount *m, struct fsx_wb *wb);

/* fsx_wb_commit.c */
/* What the object should carry now (the mtime always, in whole seconds). */
void fsx_wb_effective_meta(const struct fsx_wb *wb, struct fsx_wmeta *out);

/* fsx_wb_mount.c */
/* An upload whose abort failed, remembered to be tried again by the retry
   thread and at unmount; its record stays in cache.dir meanwhile. */
void fsx_wb_leftover(struct fsx_mount *m, const char *bucket, const char *key,
                     const char *upload_id, long journal_id,
                     bool completion_sent);

/* wb's bucket (fixed). */
static inline const char *fsx_wb_bucket(const struct fsx_wb *wb)
{
  return fsx_inode_bucket(wb->in);
}

/* wb's object key now (a rename may change it; valid while wb is held). */
static inline const char *fsx_wb_key(const struct fsx_wb *wb)
{
  return fsx_inode_key(wb->m->tab, wb->in);
}

#endif
