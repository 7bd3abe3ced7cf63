/*
 * fsx_renlock: the mount's rename lock (m->rename_lock). A directory
 * rename holds it for writing, from before it holds every write-back state
 * below the directory until the children are moved; file renames, unlinks
 * and new write-back states (fsx_wb_open) take it for reading. It prefers
 * writers (a directory rename waiting is not starved by a stream of file
 * operations), so no thread may take it twice: a read lock taken again
 * while a writer waits would wait for that writer, which waits for the
 * first. What runs under it calls the _held variants (fsx_wb_open_held);
 * a thread-local count makes a second take fail an assertion in debug
 * builds, so a test that reaches one fails there.
 */
#ifndef S3R_FSX_RENLOCK_H
#define S3R_FSX_RENLOCK_H

#include <pthread.h>
#include <stdbool.h>

/* Writer-preferring: 0 or a negative errno. */
int fsx_renlock_init(pthread_rwlock_t *l);
void fsx_renlock_read(pthread_rwlock_t *l);
void fsx_renlock_write(pthread_rwlock_t *l);
void fsx_renlock_unlock(pthread_rwlock_t *l);
/* Does this thread hold a rename lock? */
bool fsx_renlock_held(void);

#endif
