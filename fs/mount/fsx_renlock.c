/* fsx_renlock: the mount's rename lock (see fsx_renlock.h). */
#include "fs/mount/fsx_renlock.h"

#include <assert.h>
#include <stdlib.h>

#include "common/slog.h"

/* this thread's takes of a rename lock: 0, or 1 (more only after a bug,
   in builds without assertions) */
static _Thread_local unsigned held;

int fsx_renlock_init(pthread_rwlock_t *l)
{
  return -pthread_rwlock_init(l, NULL);
}

void fsx_renlock_read(pthread_rwlock_t *l)
{
  assert(!held && "the rename lock taken twice by one thread");
  if (held++) /* (a bug: held already, nothing more to take) */
    return;
  pthread_rwlock_rdlock(l);
}

bool fsx_renlock_try_read(pthread_rwlock_t *l)
{
  assert(!held && "the rename lock taken twice by one thread");
  if (held || pthread_rwlock_tryrdlock(l))
    return false;
  held = 1;
  return true;
}

void fsx_renlock_write(pthread_rwlock_t *l)
{
  if (held) { /* a write under a read: no rwlock can give it */
    log_err("the rename lock taken for writing by a thread holding it");
    abort();
  }
  pthread_rwlock_wrlock(l);
  held = 1;
}

void fsx_renlock_unlock(pthread_rwlock_t *l)
{
  if (--held == 0)
    pthread_rwlock_unlock(l);
}

bool fsx_renlock_held(void)
{
  return held != 0;
}
