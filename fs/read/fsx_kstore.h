/*
 * fsx_kstore: bytes handed to the kernel's page cache after the read that
 * fetched them was answered (fuse_lowlevel_notify_store), on a thread of
 * its own. A random read that fetched a whole dense block (fsx_density.h)
 * answers its own range and queues the rest here, so that the block's
 * later reads are served by the kernel without reaching the daemon.
 *
 * Threads: one store thread; any thread queues. A store waits for the
 * locks of the pages it fills, which reads in flight hold until their
 * answer: on the store thread that wait never holds up an answer. What is
 * queued is bounded (a quarter of cache.size, the memory the user gave
 * the cache): past it a store is dropped (the bytes are read again when
 * asked for). A store is made only while
 * the kernel's pages hold the object the bytes came from and this mount
 * is not writing the file (fsx_inode_kernel_store), the same rule as an
 * open's drop (fsx_inode.h), and no writer's state is attached to the
 * file until it is over: the kernel takes a WRITE's bytes from its pages
 * when the daemon reads the request (the pages unlocked by then), so a
 * store meanwhile would send the object's older bytes as the write's.
 * Not with one loop thread (-s; main does not start it): a writer's open
 * waits for the store, which waits for pages that thread would answer.
 */
#ifndef S3R_FSX_KSTORE_H
#define S3R_FSX_KSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsx_mount;
struct fsx_kstore;

/* At most max bytes queued; NULL on failure (no memory, no thread). */
struct fsx_kstore *fsx_kstore_create(struct fsx_mount *m, size_t max);
/* That max (0 for NULL): also what dense reads may fetch ahead at once. */
size_t fsx_kstore_limit(const struct fsx_kstore *ks);
/* Stops the thread; what is still queued is dropped (its callbacks run
   here). NULL is fine. False: a store still waits for a page lock after
   10 s (a read the stopped loop never answered): the thread, ks, the
   table and the session it uses must be left to the process's exit (the
   thread then calls nothing back). */
bool fsx_kstore_destroy(struct fsx_kstore *ks);

/*
 * Queue [off, off + len) of inode ino, object generation gen (what the
 * read's handle opened; commits: fsx_inode_commits before its GET), from
 * buf, leaving out [skip_off, skip_off + skip_len) (what the read answered).
 * Without done, the store owns buf, from m->bufs, from here (given back
 * when done, dropped or not); with it, buf is only read, and done(arg,
 * stored) is called once when the store is over: stored is false when it
 * was dropped, refused or undone (the kernel may not hold those bytes).
 * It runs with no lock of the store held: on the store thread, on the
 * caller's when dropped here, or on fsx_kstore_destroy's for what was
 * still queued (and it may drop the last references to open files and
 * inodes there). Never fails: a store that cannot be queued is dropped.
 * ks is not NULL (only dense reads queue, and only with a store).
 */
void fsx_kstore_queue(struct fsx_kstore *ks, uint64_t ino, uint64_t gen,
                      uint64_t commits, uint64_t off, void *buf, size_t len,
                      uint64_t skip_off, size_t skip_len,
                      void (*done)(void *arg, bool stored), void *arg);

#endif
