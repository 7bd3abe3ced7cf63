/*
 * fsx_read's private parts: the open file's handle, and the groups fetched
 * ahead into the kernel's cache (fsx_read_group.c), for fsx_read.c's
 * random reads.
 */
#ifndef S3R_FSX_READ_I_H
#define S3R_FSX_READ_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/meta/fsx_attr.h"
#include "fs/read/fsx_density.h"
#include "fs/read/fsx_read.h"

struct fsx_mount;
struct fsx_pend;

/* The read path's load on the whole mount (m->reads, fsx_read_start):
   what steers the groups fetched ahead and the idle capacity. */
struct fsx_reads {
  _Atomic uint64_t ahead_bytes; /* groups fetched ahead (dense, idle),
                                 until the kernel's store of them is over */
  _Atomic unsigned read_gets; /* the read path's GETs in flight */
  _Atomic unsigned idle_gets; /* groups fetched with capacity no reader
                                 uses, in flight (fsx_read_group.c) */
  _Atomic uint64_t idle_owner; /* the file of the last random miss */
  _Atomic uint64_t idle_since_ms; /* since when it has been that file */
};

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
  uint64_t run_from;          /* lock: where the sequential run began */
  uint64_t run_t0_us;         /* lock: and when (its rate: fsx_read_cap) */
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
};

/*
 * A dense file (fsx_density_ahead): the groups after byte `after` not
 * fetched yet, FSX_DENSE_AHEAD at most, on their way, so that several
 * GETs of one reader's random reads are on the way at once. They go in
 * HTTP bodies (a token would need a registered buffer per group) and
 * then to the kernel's store; within the file's fetch budget
 * (read.max_inflight_per_file) and fsx_kstore_limit in all.
 */
void fsx_group_ahead(struct fsx_mount *m, struct fsx_fh *fh, uint64_t after);

/* A random read of fh missed the cache: fh's file is the one read at
   random on the mount now (since when, if it was not). */
void fsx_group_miss(struct fsx_mount *m, struct fsx_fh *fh);

/*
 * A random read of fh that stays exact (read.idle_fetch): when fh's file,
 * at most read.idle_fetch bytes, is the only one read at random on the
 * mount for FSX_IDLE_ALONE_MS, its misses have touched FSX_IDLE_MIN
 * blocks, and no other read of the mount is on its way, the capacity that
 * lone reader leaves unused fetches its file into the kernel's cache, in
 * order from where it last stopped, FSX_IDLE_DEPTH groups at most in
 * flight on the mount. A dense reader then finds its blocks there (one
 * reader's random reads are one GET at a time, and a sparse and a dense
 * reader look the same for their first few hundred reads); a sparse one
 * costs up to the whole file fetched, in the background.
 */
void fsx_group_idle(struct fsx_mount *m, struct fsx_fh *fh);

/*
 * A random read [off, off + len) of fh that missed, inside a group
 * fetched ahead whose store is not over: waits for the group to land and
 * copies its bytes into *copy (from m->bufs, the caller's). 1: done; 0:
 * no such group, it failed, or no memory (read as any other miss).
 */
int fsx_group_read(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                   size_t len, void **copy);

#endif
