/*
 * fsx_renlock: the mount's rename lock (m->rename_lock). A directory
 * rename holds it for writing, from before it holds every write-back state
 * below the directory until the children are moved; file renames, unlinks
 * and new write-back states (fsx_wb_open) take it for reading. POSIX
 * leaves a waiting writer's priority to the implementation: under one that
 * prefers writers, a read lock taken again by a thread that holds one
 * waits for the writer, which waits for that thread. So no thread takes it
 * twice: what runs under it calls the _held variants (fsx_wb_open_held).
 * A second take is a bug: in debug builds it fails an assertion (a test
 * that reaches one fails there); in others a second read take is counted
 * and takes nothing, never a deadlock. Writes do not nest.
 */
#ifndef S3R_FSX_RENLOCK_H
#define S3R_FSX_RENLOCK_H

#include <pthread.h>
#include <stdbool.h>

/* 0 or a negative errno. */
int fsx_renlock_init(pthread_rwlock_t *l);
void fsx_renlock_read(pthread_rwlock_t *l);
/* The same without waiting: false when a rename holds it (or is waiting
   for it), nothing taken. */
bool fsx_renlock_try_read(pthread_rwlock_t *l);
void fsx_renlock_write(pthread_rwlock_t *l);
void fsx_renlock_unlock(pthread_rwlock_t *l);
/* Does this thread hold a rename lock? */
bool fsx_renlock_held(void);

#endif
