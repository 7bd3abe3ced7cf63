/*
 * fsx_read's private parts: the groups fetched ahead into the kernel's
 * cache (fsx_read_group.c), for fsx_read.c's random reads.
 */
#ifndef S3R_FSX_READ_I_H
#define S3R_FSX_READ_I_H

#include <stddef.h>
#include <stdint.h>

struct fsx_mount;
struct fsx_fh;

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
