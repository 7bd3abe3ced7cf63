/* fsx_errno: the error an application is shown (see fsx_errno.h). */
#include <errno.h>

#include "fs/mount/fsx_errno.h"

int fsx_errno_shown(int err)
{
  switch (err) {
  case 0:
  case EPERM:        /* the operation is not one S3 can do */
  case ENOENT:
  case EIO:
  case E2BIG:
  case EBADF:
  case ENOMEM:
  case EACCES:       /* the server refused (403), or our own checks */
  case EBUSY:
  case EEXIST:
  case EXDEV:
  case ENOTDIR:
  case EISDIR:
  case EINVAL:
  case ENFILE:
  case EMFILE:
  case EFBIG:
  case ENOSPC:       /* staging space, after its wait */
  case EROFS:
  case EMLINK:
  case ERANGE:
  case ENAMETOOLONG:
  case ENOTEMPTY:
  case ELOOP:
  case ENODATA:
  case EOPNOTSUPP:
  case EOVERFLOW:
  case ESTALE:       /* the object changed under an open file */
  case EDQUOT:
  case ETIMEDOUT:    /* the server did not answer in time */
  case EINTR:
  case ENOTTY:       /* an ioctl that is not ours (fsx_direct) */
  case ESRCH:
    return err;
  default:           /* ECONNREFUSED, ECONNRESET, EBADMSG, EAGAIN, EPROTO;
                        ENOSYS too: from open, flush or fsync the kernel
                        takes it as "never call this again" */
    return EIO;
  }
}
