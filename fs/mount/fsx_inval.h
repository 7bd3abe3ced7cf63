/*
 * fsx_inval: the kernel told to forget names (its dentries, positive or
 * negative: fuse_lowlevel_notify_inval_entry), from a thread of its own.
 * An operation cannot tell it itself: the kernel holds the directory's
 * lock until the operation is answered, and the notification waits for
 * that lock. Used where an operation failed with an outcome on the server
 * it cannot know (a rename whose copy may have landed): the next lookup of
 * either name asks again.
 *
 * Threads: one; any thread queues (at most FSX_INVAL_MAX waiting: past
 * that a name is dropped, its entry then ages out by its timeout).
 */
#ifndef S3R_FSX_INVAL_H
#define S3R_FSX_INVAL_H

#include <stdint.h>

struct fsx_mount;
struct fsx_inval;

#define FSX_INVAL_MAX 1024

/* The thread, for m's session: 0 or -errno. */
int fsx_inval_start(struct fsx_mount *m, struct fsx_inval **out);
/* What is queued is told first; NULL is fine. */
void fsx_inval_stop(struct fsx_inval *iv);
/* Queue name in directory parent (an inode number the kernel knows). */
void fsx_inval_entry(struct fsx_inval *iv, uint64_t parent,
                     const char *name);

#endif
