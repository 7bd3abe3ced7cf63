/*
 * s3rdmafs_mnt: may the daemon behind a file be handed the caller's
 * memory? Any FUSE filesystem can answer libs3rdmafs's ioctls; only an
 * s3rdmafs mount made by root or by the caller's own user is trusted
 * with a buffer, by the kernel's record of who made it.
 */
#ifndef S3RDMAFS_MNT_H
#define S3RDMAFS_MNT_H

#include <stdbool.h>
#include <sys/types.h>

#include "libs3rdmafs/s3rdmafs_cuda.h"

/*
 * 0: fd's file is on a mount of s3rdmafs (type fuse.s3rdmafs, or source
 * s3rdmafs) whose owner is root or the caller's effective user (root's
 * only, in a user namespace of its own); -EACCES: another user's FUSE
 * mount (s3rdmafs_strerror says so), or /proc could not tell; -ENOTTY:
 * not an s3rdmafs mount (or one this process cannot see); -EBADF: fd is
 * not open.
 */
S3R_HIDDEN int s3r_mnt_trusted(int fd);

/*
 * One line of /proc/self/mountinfo: 1 when it is mount mnt_id (*owner: the
 * user_id its FUSE superblock records, (uid_t)-1 when none;
 * *s3rdmafs: its type or source says s3rdmafs), 0 when another mount's,
 * -EINVAL when the line is not one. For the tests.
 */
S3R_HIDDEN int s3r_mnt_line(const char *line, long mnt_id, uid_t *owner,
                            bool *s3rdmafs);

#endif
