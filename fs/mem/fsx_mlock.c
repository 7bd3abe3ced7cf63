/*
 * fsx_mlock: see fsx_mlock.h.
 */
#include "fs/mem/fsx_mlock.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

int fsx_mlock(void *addr, size_t len)
{
  return syscall(SYS_mlock, addr, len) ? -errno : 0;
}

int fsx_munlock(void *addr, size_t len)
{
  return syscall(SYS_munlock, addr, len) ? -errno : 0;
}
