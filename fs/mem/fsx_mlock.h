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

#endif
