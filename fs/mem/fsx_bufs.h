/*
 * fsx_bufs: the large buffers reads fetch into outside the page cache (a
 * read that bypasses it, a dense block or group, a group fetched ahead),
 * reused instead of mapped and unmapped each time. Each such buffer is
 * fresh anonymous memory from malloc (past glibc's mmap threshold), so
 * every page of it faulted and was zeroed on its first write and was
 * unmapped at free: about a third of the daemon's CPU on dense random
 * reads. Here a buffer given back is kept, mapped and already faulted
 * in, for the next one of its size, up to keep_max bytes in all.
 *
 * Sizes are rounded up to 64 KiB; a buffer is its own mapping with one
 * page in front holding its size. Threads: any thread may get and put;
 * one mutex protects the free list.
 */
#ifndef S3R_FSX_BUFS_H
#define S3R_FSX_BUFS_H

#include <stddef.h>

struct fsx_bufs;

/* Keep at most keep_max bytes of free buffers. NULL: no memory. */
struct fsx_bufs *fsx_bufs_create(size_t keep_max);
/* Unmaps what is kept (buffers still out stay theirs to put or leak). */
void fsx_bufs_destroy(struct fsx_bufs *b);

/* A buffer of at least len bytes (len > 0), page-aligned; NULL: ENOMEM. */
void *fsx_bufs_get(struct fsx_bufs *b, size_t len);
/* Give p back (NULL: nothing): kept for reuse, or unmapped past keep_max. */
void fsx_bufs_put(struct fsx_bufs *b, void *p);

/* "read.bufs_* name value" lines for the stats file; the length. */
size_t fsx_bufs_stats(struct fsx_bufs *b, char *buf, size_t len);

#endif
