/*
 * fsx_mlock: see fsx_mlock.h.
 */
#include "fs/mem/fsx_mlock.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int fsx_mlock(void *addr, size_t len)
{
  return syscall(SYS_mlock, addr, len) ? -errno : 0;
}

int fsx_munlock(void *addr, size_t len)
{
  return syscall(SYS_munlock, addr, len) ? -errno : 0;
}

int fsx_mlock_onfault(void *addr, size_t len)
{
#ifdef SYS_mlock2
  if (!syscall(SYS_mlock2, addr, len, MLOCK_ONFAULT))
    return 0;
  if (errno != ENOSYS && errno != EINVAL)
    return -errno;
#endif
  return fsx_mlock(addr, len);
}

void fsx_populate(void *addr, size_t len)
{
  /* (a failure, an old kernel's EINVAL among them: the faults come with
     the first writes instead) */
  (void)madvise(addr, len, MADV_POPULATE_WRITE);
}
