/*
 * fsx_space: how much disk the mount's staging files may take in
 * cache.dir (write.staging_max), and what statfs reports.
 *
 * DESIGN
 * - Counted is what each staging file occupies on disk, st_blocks * 512
 *   (the files are sparse: their apparent size says little), as last
 *   recounted (fstat), kept per file by its open fd; plus the bytes
 *   reserved by writes under way.
 * - A write reserves, before it takes wb->lock, what it may allocate: the
 *   64 KiB blocks it touches (the edges are fetched from the base), or
 *   near a limit only their holes (SEEK_DATA/SEEK_HOLE). Past the limit,
 *   or when cache.dir's filesystem would keep less than a margin free, it
 *   waits (holding no lock of the file's) up to write.staging_wait for
 *   space to be freed, then fails with -ENOSPC; the first failure of an
 *   episode is logged, once. A write that allocates nothing (an
 *   overwrite) never waits. Space is freed when a file closed and
 *   uploaded is dropped (its staging file removed) and by truncates.
 * - The filesystem's free space (statvfs) is looked at again at most once
 *   a second while it leaves plenty, at every decision near its margin:
 *   far from both limits a write costs one fstat (the recount).
 * - Fetches of the base (reads through a writable file, uploads) never
 *   wait for the limit: the upload that needs them is what frees space
 *   in the end, and waiting there under wb->lock could stall the very
 *   commits that free it. They are counted after the fact (so the use can
 *   pass the limit by what they bring in) and refused only when the
 *   filesystem itself is nearly full.
 * - After every change (write, fetch, truncate) the caller recounts the
 *   file (fsx_space_settle) under wb->lock, which serialises the counts of
 *   one file; the file is forgotten just before its fd is closed.
 * - sp->lock protects the counts; it is taken after wb->lock and is never
 *   held across a system call that may block (statvfs runs outside it).
 *   Waiters sleep on sp->cond, woken when the count goes down, and wake
 *   every second to look at the filesystem again.
 * - At most FSX_SPACE_MAX_WAITERS writes wait at a time; any more fail at
 *   once. The FUSE loop's threads (fsx_main.c: 64) must not all sleep
 *   here: the close() and fsync() calls that free space need some.
 */
#ifndef S3R_FSX_SPACE_H
#define S3R_FSX_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsx_space;

/* writes that may wait for space at once: half the FUSE loop's threads */
#define FSX_SPACE_MAX_WAITERS 32

/*
 * The staging space of the mount's files under dir (cache.dir): max bytes
 * (0: half of what the filesystem has free now, fsx_space_default_max),
 * writes waiting up to wait_ms for space. err says what failed.
 */
int fsx_space_create(const char *dir, uint64_t max, uint64_t wait_ms,
                     struct fsx_space **out, char *err, size_t errlen);
/* NULL-tolerant; every staging file should have been forgotten. */
void fsx_space_destroy(struct fsx_space *sp);

/*
 * Every call below accepts sp NULL (a read-only mount): no limit.
 *
 * Before a write of len bytes at off (append: at the end) into the staging
 * file fd: reserve what it may allocate, waiting for it if need be.
 * 0 with *held set (hand it to fsx_space_settle once the write is done),
 * or -ENOSPC after write.staging_wait.
 */
int fsx_space_reserve(struct fsx_space *sp, int fd, uint64_t off, size_t len,
                      bool append, uint64_t *held);
/* After a write (held: its reservation), a fetch or a truncate of fd:
   recount what fd occupies and drop held. Calls for one fd serialised. */
void fsx_space_settle(struct fsx_space *sp, int fd, uint64_t held);
/* Before fetching len bytes of the base into fd: 0, or -ENOSPC when the
   filesystem is nearly full. Never waits. */
int fsx_space_fetch(struct fsx_space *sp, uint64_t len);
/* fd is about to be closed (its staging file dropped or kept in
   unsaved/): it counts no more. */
void fsx_space_forget(struct fsx_space *sp, int fd);

struct fsx_space_info {
  uint64_t limit;             /* write.staging_max, as computed at mount */
  uint64_t used;              /* staging files on disk, as last counted */
  uint64_t reserved;          /* writes under way */
  uint64_t cap;               /* the limit, or less when the filesystem
                                 has less room: what statfs calls the size */
  uint64_t room;              /* cap - used - reserved, or 0 */
  unsigned waiting;           /* writes waiting for space now */
  uint64_t waited;            /* writes that waited for space since mount
                                 (each counted once, however long) */
  uint64_t enospc;            /* writes refused since mount */
};
void fsx_space_info(struct fsx_space *sp, struct fsx_space_info *out);

/* ---- exposed for the unit test ---- */

/* What a write of len bytes at off (append: at the end) into fd may
   allocate: the holes (SEEK_DATA/SEEK_HOLE) of the 64 KiB blocks it
   touches; past the end of the file everything is a hole. */
uint64_t fsx_space_estimate(int fd, uint64_t off, size_t len, bool append);

/* The arithmetic (pure). */

/* The default limit: half of what cache.dir's filesystem has free. */
uint64_t fsx_space_default_max(uint64_t fs_avail);
/* What is kept free on a filesystem of fs_size bytes: 1%, at most 256M. */
uint64_t fsx_space_margin(uint64_t fs_size);
/* Room on the filesystem for staging: fs_avail less margin and what is
   reserved but maybe not yet on disk; 0 if none. */
uint64_t fsx_space_disk_room(uint64_t fs_avail, uint64_t margin,
                             uint64_t reserved);
/* Does need more fit: within the limit (a lone request always does, so one
   write larger than the limit is not refused forever) and disk_room? */
bool fsx_space_fits(uint64_t limit, uint64_t used, uint64_t reserved,
                    uint64_t need, uint64_t disk_room);

#endif
