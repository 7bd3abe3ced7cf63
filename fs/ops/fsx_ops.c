/*
 * fsx_ops: the FUSE low-level operations table and init (the top tier of
 * fs/, see fsx_ops.h). The operations run on libfuse's multi-threaded
 * loop; each file below says what it owns.
 */
#include <stdio.h>

#include "fs/ops/fsx_fops.h"
#include "fs/mount/fsx_i.h"
#include "fs/ops/fsx_ops.h"
#include "fs/ops/fsx_rops.h"
#include "fs/ops/fsx_wns.h"
#include "fs/ops/fsx_wops.h"

/* fs.pipe-max-size, or 0 when it cannot be read. */
static unsigned long pipe_max_size(void)
{
  unsigned long v = 0;
  FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");

  if (f) {
    if (fscanf(f, "%lu", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
  const struct fsx_mount *m = userdata;

  conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) /* O_TRUNC reaches open */
    conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  if (conn->capable & FUSE_CAP_READDIRPLUS)
    conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO; /* always plus: attrs are free */
  /* a write's data spliced from the device into a pipe, then read once
     into its part buffer (fsx_op_write_buf), not copied twice */
  if (conn->capable & FUSE_CAP_SPLICE_READ)
    conn->want |= FUSE_CAP_SPLICE_READ;
  /* the kernel drops a file's pages only when an open says so (a new
     ETag, see fsx_op_open), never on a getattr showing another mtime:
     our writes move the mtime (in whole seconds), and a drop while a
     write is on its way here lets a read cache the old bytes for good */
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  conn->max_read = (unsigned)m->o.max_read;
  conn->max_write = (unsigned)m->o.max_read;
  /* spliced, a write must fit the pipe with its header (4 KiB), and a
     pipe cannot grow past fs.pipe-max-size (1 MiB by default) without
     CAP_SYS_RESOURCE: writes a page smaller then, rather than copied */
  if (conn->want & FUSE_CAP_SPLICE_READ) {
    unsigned long pmax = pipe_max_size();
    if (pmax > 8 * 4096 && conn->max_write + 4096 > pmax)
      conn->max_write = (unsigned)(pmax - 4096);
  }
  /* the kernel reads ahead up to this much (and the bdi's read_ahead_kb,
     which fsx_main raises to match): several max_read requests at once */
  conn->max_readahead = FSX_KERNEL_RA * (unsigned)m->o.max_read;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
}

const struct fuse_lowlevel_ops fsx_ops = {
    .init = op_init,
    .lookup = fsx_op_lookup,
    .forget = fsx_op_forget,
    .forget_multi = fsx_op_forget_multi,
    .getattr = fsx_op_getattr,
    .opendir = fsx_op_opendir,
    .readdir = fsx_op_readdir,
    .readdirplus = fsx_op_readdirplus,
    .releasedir = fsx_op_releasedir,
    .open = fsx_op_open,
    .read = fsx_op_read,
    .release = fsx_op_release,
    .statfs = fsx_op_statfs,
    .readlink = fsx_op_readlink,
    .create = fsx_op_create,
    .write_buf = fsx_op_write_buf,
    .flush = fsx_op_flush,
    .fsync = fsx_op_fsync,
    .setattr = fsx_op_setattr,
    .unlink = fsx_op_unlink,
    .link = fsx_op_link,
    .rmdir = fsx_op_rmdir,
    .mkdir = fsx_op_mkdir,
    .mknod = fsx_op_mknod,
    .symlink = fsx_op_symlink,
    .rename = fsx_op_rename,
    .ioctl = fsx_op_ioctl,
};
