/*
 * fsx_held: memory a server may still touch after its request ended (a
 * token in doubt: an attempt that got no HTTP reply), kept from reuse
 * until the token's deadline has passed on both clocks, plus
 * FSX_HELD_MARGIN_MS. Page-cache chunks and buffers are handed over and
 * given back by a thread of the module's own; a synchronous caller waits
 * for its own buffer instead (fsx_held_wait). fsx_rdma owns one; its
 * counters are rdma.* in the stats.
 */
#ifndef S3R_FSX_HELD_H
#define S3R_FSX_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsx_mount;
struct fsx_chunk;
struct s3_req;
struct fsx_held;

/* After the deadline, how long a server's last call may still take. */
#define FSX_HELD_MARGIN_MS 1000

/* Its thread started: 0, or a negative errno (nothing made). */
int fsx_held_start(struct fsx_mount *m, struct fsx_held **out);
/* Waits until everything held is given back (each entry bounded by its
   monotonic due time: one whose wall clock still lags then is never
   reused), stops the thread and frees h. NULL is fine. */
void fsx_held_stop(struct fsx_held *h);

/* r's n chunk references (r in doubt), dropped when due; on no memory
   they stay taken (never reused). */
void fsx_held_chunks(struct fsx_held *h, const struct s3_req *r,
                     struct fsx_chunk *const *chunks, int n);
/* r's buffer (r in doubt) given back when due: a pool run (run), else
   munmap'ed (unmap) or freed. */
void fsx_held_mem(struct fsx_held *h, const struct s3_req *r, void *buf,
                  size_t len, bool unmap, bool run);
/* Sleeps until r's buffer (r in doubt, the caller's) is due back: true;
   false when the wall clock lags too far behind the monotonic one (the
   buffer must then never be reused). */
bool fsx_held_wait(struct fsx_held *h, const struct s3_req *r);

struct fsx_held_counts {
  uint64_t retired_chunks, reclaimed_chunks, retired_bufs, reclaimed_bufs;
};
/* Zeros for NULL. */
void fsx_held_counts(const struct fsx_held *h, struct fsx_held_counts *c);

#endif
