/*
 * fsx_pool: the mount's part buffers, for files written in order. One file,
 * in write.pool_dir (/dev/shm: a tmpfs, so that no buffer is written back
 * to a disk, and no write to one faults after the kernel wrote it back)
 * named by pool.at in the mount's staging directory (cache.dir/mount-*),
 * or, where that has no room, pool in that directory itself, mapped
 * shared, each slot's blocks reserved and its pages locked (where allowed)
 * when it is first lent (an idle mount holds none of it), and
 * registered with the data plane once (fsx_rdma: a PUT token names a slot
 * directly). A sequential writer copies its bytes into a run of slots (one
 * part) and the part is uploaded from there: no staging-file write.
 *
 * DESIGN
 * - Layout: a 128-byte header, then one 128-byte header per slot, then the
 *   slots, each write.part_size (a multiple of 64 KiB) long. A part longer
 *   than a slot (parts past 1000 grow) takes a run of adjacent slots.
 * - Crash: the headers live in the same shared file, so a killed daemon's
 *   buffers survive it (in tmpfs, or the page cache): a run in use names
 *   its staging file, the offset of its bytes in that file and how many
 *   are valid. The next mount's recovery (fsx_pool_recover) writes each
 *   run's bytes into its staging file before it looks at the staging
 *   files. A header is made before its run is lent and cleared before the
 *   run is reused. A pool in tmpfs does not outlive a restart of the
 *   machine (write.pool_dir "" keeps it beside the staging files).
 * - Waiting: a run on the wire (fsx_pool_sending) comes back by itself, so
 *   a writer that finds no free run waits while some are on the wire; when
 *   none is, every run is held by a writer filling it, and waiting could
 *   last forever: fsx_pool_get says -EAGAIN and the caller stages instead.
 *   The wait is bounded (POOL_WAIT_S) for the same reason.
 * - Threads: p->lock protects the slot map and the counters; the bytes of
 *   a run belong to whoever holds it. Any thread may call any function.
 */
#ifndef S3R_FSX_POOL_H
#define S3R_FSX_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsx_pool;

/*
 * Create the pool for size bytes of slots of slot bytes each (size is
 * rounded down to whole slots; at least one), its blocks reserved, mapped
 * and touched: a new file in home named by dir/pool.at when home is not ""
 * and has room, else dir/pool. 0 or -errno with the reason in err.
 */
int fsx_pool_open(const char *dir, const char *home, size_t size, size_t slot,
                  struct fsx_pool **out, char *err, size_t errlen);
/* Where its file is (for the log). */
const char *fsx_pool_path(const struct fsx_pool *p);
/* Unmap and remove the file (every run given back, none on the wire). */
void fsx_pool_close(struct fsx_pool *p);

/* The slots, for registration with the data plane. */
void *fsx_pool_data(struct fsx_pool *p, size_t *len);
size_t fsx_pool_slot_size(const struct fsx_pool *p);

/*
 * A run of slots for len bytes of the staging file named name (its base
 * name) at file_off: its address in *out. Waits while no run is free and
 * some are on the wire; -EAGAIN when none is free and none will come back
 * (or the wait passed its bound), -EINVAL for a len over the whole pool.
 */
int fsx_pool_get(struct fsx_pool *p, size_t len, const char *name,
                 uint64_t file_off, void **out);
/* The first n bytes of the run at buf hold the file's bytes now. */
void fsx_pool_filled(struct fsx_pool *p, void *buf, uint64_t n);
/* The run at buf goes on the wire (on) or is back from it (off). */
void fsx_pool_sending(struct fsx_pool *p, void *buf, bool on);
/* Give the run at buf back (its header cleared first). */
void fsx_pool_put(struct fsx_pool *p, void *buf);
/* The run at buf is never lent again (a server may still read it), and
   holds nothing of any file's: its header cleared. */
void fsx_pool_retire(struct fsx_pool *p, void *buf);

/* "write.pool_* name value" lines for the stats file; the length. */
size_t fsx_pool_stats(struct fsx_pool *p, char *buf, size_t len);

/*
 * Give back the blocks and pages of every slot not lent and given back
 * idle_ms ago or more (punched out of the file, unlocked): the first
 * lend after makes it ready again. Returns how many. Nothing, once
 * fsx_pool_fix was called: a verbs registration pins the pages, and new
 * ones would not be what the NIC reads.
 */
size_t fsx_pool_release(struct fsx_pool *p, uint64_t idle_ms);
void fsx_pool_fix(struct fsx_pool *p);

/*
 * A dead mount's directory: the bytes of every run in use in its pool
 * (dir/pool, or the file dir/pool.at names: a plain file of this user's,
 * mode 0600, else -EPERM) written into the staging file the run names (at
 * its offset; the file grows as needed), then the pool removed. Returns
 * the number of runs written back; -ENOENT when pool.at names a file that
 * is gone (its tmpfs did not outlive a restart; pool.at removed), or
 * another -errno (the pool is then left in place).
 */
int fsx_pool_recover(const char *dir);

#endif
