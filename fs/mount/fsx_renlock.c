/* fsx_renlock: the mount's rename lock (see fsx_renlock.h). */
#include "fs/mount/fsx_renlock.h"

#include <assert.h>

/* this thread's takes of a rename lock (0 or 1) */
static _Thread_local unsigned held;

int fsx_renlock_init(pthread_rwlock_t *l)
{
  pthread_rwlockattr_t at;
  int rc = pthread_rwlockattr_init(&at);

  if (rc)
    return -rc;
  rc = pthread_rwlockattr_setkind_np(
      &at, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  if (!rc)
    rc = pthread_rwlock_init(l, &at);
  pthread_rwlockattr_destroy(&at);
  return -rc;
}

void fsx_renlock_read(pthread_rwlock_t *l)
{
  assert(!held && "the rename lock taken twice by one thread");
  pthread_rwlock_rdlock(l);
  held++;
}

void fsx_renlock_write(pthread_rwlock_t *l)
{
  assert(!held && "the rename lock taken twice by one thread");
  pthread_rwlock_wrlock(l);
  held++;
}

void fsx_renlock_unlock(pthread_rwlock_t *l)
{
  held--;
  pthread_rwlock_unlock(l);
}

bool fsx_renlock_held(void)
{
  return held != 0;
}
