/*
 * fsx_errno: the error an application is shown. Inside, errors say where
 * they came from (ECONNREFUSED, EBADMSG from a malformed reply, EAGAIN from
 * a server that cannot be asked now, EPROTO...); a filesystem call returns
 * the errors a filesystem has. Those pass as they are; any other is EIO,
 * the error of a device that failed to do what was asked.
 */
#ifndef S3R_FSX_ERRNO_H
#define S3R_FSX_ERRNO_H

/* err (positive, 0 for none) as an application should see it. */
int fsx_errno_shown(int err);

#endif
