/*
 * fsx_direct_write: WRITE, a registered buffer's bytes into the open file
 * (the protocol: libs3rdmafs/s3rdmafs_ioctl.h; the registrations:
 * fsx_direct.c). Runs on any FUSE thread; the registration is held busy
 * meanwhile (fsx_dreg_use), the file's write-back state locked by the
 * calls into it.
 *
 * - Whole parts at the end of a file written in order from empty go to the
 *   server straight from the buffer (fsx_wb_write_parts): UploadParts
 *   whose tokens name it, so the server reads the caller's memory itself
 *   (zero copy; a host buffer is registered per request, as the staging
 *   file's parts are; a dma-buf is registered already, for remote read).
 *   The call waits for them: the caller may reuse its buffer after.
 * - The rest of a host buffer is copied into the write-back, as write(2)
 *   would be (one copy instead of FUSE's two); a dma-buf's rest is the
 *   library's to stage (the count says how far it went, EOPNOTSUPP when
 *   nothing did).
 * - The kernel's view: its attributes (the size) are dropped so the next
 *   stat asks; where the write lands below the size it had (page-rounded:
 *   the last page holds zeros past the end), its cached pages from there
 *   on too (the kernel holds none past the size), except with -s (see
 *   below), where they stay until the file's next open drops them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/slog.h"
#include "fs/direct/fsx_direct_i.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/mount/fsx_i.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/read/fsx_read.h" /* struct fsx_fh */
#include "fs/write/fsx_wb.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"
#include "s3/s3_client.h"

/* The kernel's page size for its page cache (x86-64, arm64 4K kernels;
   a larger page only drops more). */
#define PAGE 4096u

/* A WRITE's parts, from registration d at buf_off. */
struct dparts {
  struct fsx_wparts w;
  struct fsx_mount *m;
  struct fsx_dreg *d;
  uint64_t buf_off;
  bool all_rdma;              /* every part moved by the server */
  bool doubt;                 /* a token's transfer is in doubt */
};

static int run_parts(struct fsx_wparts *w, struct s3_req **r, int n,
                     const uint64_t *at, const size_t *len)
{
  struct dparts *p = (struct dparts *)w;
  uint64_t off[FSX_WB_PARTS_AT_ONCE];
  void *buf[FSX_WB_PARTS_AT_ONCE];
  bool retired = false;
  int rc;

  for (int i = 0; i < n; i++) {
    off[i] = p->buf_off + at[i];
    buf[i] = p->d->map ? p->d->map + off[i] : NULL;
    s3_req_set_rdma_foreign(r[i]); /* the caller may change it meanwhile */
  }
  rc = p->d->dmabuf
           ? fsx_rdma_run_dmabuf(p->m, r, n, false, p->d->dmabuf, off, len,
                                 &retired)
           : fsx_rdma_run_n(p->m, r, n, false, buf, len, &retired);
  p->doubt |= retired;
  for (int i = 0; !rc && i < n; i++)
    if (s3_req_rdma_path(r[i]) != S3_RDMA_DONE)
      p->all_rdma = false;
  return rc;
}

/* A host buffer's bytes as a write's source. */
struct msrc {
  struct fsx_wsrc s;
  const char *p;
};

static int msrc_to_mem(struct fsx_wsrc *s, void *dst, size_t len)
{
  struct msrc *ms = (struct msrc *)s;

  memcpy(dst, ms->p, len);
  ms->p += len;
  return 0;
}

static int msrc_to_fd(struct fsx_wsrc *s, int fd, uint64_t off, size_t len)
{
  struct msrc *ms = (struct msrc *)s;

  while (len) {
    ssize_t n = pwrite(fd, ms->p, len, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;
    ms->p += n;
    off += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

/* Whole parts straight from d, where the file and the data plane allow:
   bytes taken, or -errno when none was. */
static ssize_t write_parts(struct fsx_mount *m, struct fsx_fh *fh,
                           struct fsx_dreg *d, struct s3rdmafs_ioc_write *a,
                           struct dparts *p)
{
  ssize_t n;

  *p = (struct dparts){{run_parts, d->map ? d->map + a->buf_off : NULL},
                       m, d, a->buf_off, true, false};
  if (fsx_fh_is(fh, FSX_FH_APPEND) || !fsx_rdma_active(m))
    return 0;
  n = fsx_wb_write_parts(m, fsx_fh_wb(fh), a->file_off, (size_t)a->len, &p->w);
  if (p->doubt) {
    if (d->dmabuf) { /* revoke the server's access now (as a READ's) */
      log_warn("direct: a GPUDirect transfer is in doubt: its "
               "registration is dropped (the caller registers again)");
      fsx_dreg_drop(m, fh, d);
    } else {
      d->kept = true; /* a server may still read there: never unmapped */
    }
  }
  return n;
}

int fsx_direct_write(struct fsx_mount *m, struct fsx_fh *fh, pid_t tgid,
                     unsigned long long start, struct s3rdmafs_ioc_write *a)
{
  struct fsx_attr a0 = {0};
  struct dparts p;
  struct fsx_dreg *d;
  size_t done = 0;
  bool copied = false;
  ssize_t n;
  int rc = 0;

  if (a->flags & ~S3RDMAFS_WRITE_FLAGS)
    return -EINVAL;
  d = fsx_dreg_use(m, fh, a->handle, tgid, start, false);
  if (!d)
    return -EBADF;
  if (a->buf_off > d->len || a->len > d->len - a->buf_off ||
      a->file_off > INT64_MAX || a->len > INT64_MAX - a->file_off ||
      (d->dmabuf && (a->flags || !d->source))) {
    fsx_dreg_done(m, d);
    return -EINVAL;
  }
  a->done = 0;
  a->path = S3RDMAFS_PATH_RDMA;
  if (!a->len)
    goto out;
  fsx_wb_attr(fsx_fh_wb(fh), &a0); /* the size before */
  n = write_parts(m, fh, d, a, &p);
  if (n > 0) {
    done = (size_t)n;
    a->path = p.all_rdma ? S3RDMAFS_PATH_RDMA : S3RDMAFS_PATH_HTTP;
  } else if (n < 0 && d->dmabuf) {
    /* (a token the transport cannot make now, a part across segments, a
       failed part: the library stages them, as any part not sent so) */
    log_info("direct: GPUDirect parts: %s (staged instead)",
             strerror((int)-n));
    rc = n == -ENOMEM ? -ENOMEM : -EOPNOTSUPP;
  } else if (n < 0) { /* the bytes are here: copied in instead */
    log_info("direct: parts from a registered buffer: %s (copied instead)",
             strerror((int)-n));
  }
  if (d->map && done < a->len) {
    copied = true;
    struct msrc src = {{msrc_to_mem, msrc_to_fd},
                       d->map + a->buf_off + done};
    n = fsx_wb_write(m, fsx_fh_wb(fh), a->file_off + done, &src.s,
                     (size_t)a->len - done, fsx_fh_is(fh, FSX_FH_APPEND));
    if (n < 0 && !done)
      rc = (int)n;
    else if (n > 0)
      done += (size_t)n;
    a->path = S3RDMAFS_PATH_WRITTEN;
  } else if (d->dmabuf && !done && !rc) {
    rc = -EOPNOTSUPP; /* nothing could go straight: the library stages */
  }
  if (done && !copied) /* (else fsx_wb_write counted it) */
    atomic_fetch_add(&m->st.writes, 1);
  if (done && m->se) {
    uint64_t from = a->file_off / PAGE * PAGE;
    /* the size: asked again (offset -1: attributes only, no page locks) */
    fuse_lowlevel_notify_inval_inode(m->se, fsx_inode_ino(fsx_fh_inode(fh)),
                                     -1, 0);
    /* pages the kernel may hold of what changed: from file_off's page to
       the end, where that starts below the old size (its last page holds
       zeros past the end). This waits for their locks, which a read in
       flight holds until its answer: never with one thread serving every
       request (-s), whose answer would wait for us */
    if (!m->single_loop && from < (a0.size + PAGE - 1) / PAGE * PAGE)
      fuse_lowlevel_notify_inval_inode(m->se, fsx_inode_ino(fsx_fh_inode(fh)),
                                       (off_t)from, 0);
  }
out:
  if (!rc)
    fsx_direct_count(m, d, a->flags, done, true);
  fsx_dreg_done(m, d); /* (d may be gone from here on) */
  if (rc && rc != -EOPNOTSUPP)
    atomic_fetch_add(&m->st.errors, 1);
  if (rc)
    return rc;
  a->done = done;
  return 0;
}
