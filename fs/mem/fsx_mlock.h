/*
 * fsx_mlock: mlock(2) and munlock(2) by their system calls. The ASan and
 * TSan runtimes intercept mlock() as a no-op that reports success, which
 * would claim memory pinned in the sanitizer builds and hide the failure
 * paths from their tests. Both return 0 or -errno.
 */
#ifndef S3R_FSX_MLOCK_H
#define S3R_FSX_MLOCK_H

#include <stddef.h>

int fsx_mlock(void *addr, size_t len);
int fsx_munlock(void *addr, size_t len);

/* [addr, addr + len) locked as its pages are first touched, none faulted
   in now (mlock2 MLOCK_ONFAULT; before Linux 4.4, mlock: all of them). */
int fsx_mlock_onfault(void *addr, size_t len);

/* [addr, addr + len) of a private writable mapping faulted in now, in one
   call (MADV_POPULATE_WRITE: no byte changes, so it may race a write into
   the same pages; before Linux 5.14 nothing: the first writes fault). */
void fsx_populate(void *addr, size_t len);

#endif
