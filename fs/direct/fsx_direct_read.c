/*
 * fsx_direct_read: READ (struct s3rdmafs_ioc_read) into a registration:
 * from the write-back when the file is written here, by GETs whose
 * tokens name the caller's pages (a dma-buf's through a scratch buffer
 * when the plane cannot register it), or through the page cache with one
 * copy (design in fsx_direct.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/slog.h"
#include "fs/direct/fsx_direct_i.h"
#include "fs/mount/fsx_i.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/read/fsx_read.h"
#include "fs/write/fsx_wb.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

/* This mount's writes: the write-back's view. */
static int read_written(struct fsx_mount *m, struct fsx_wb *wb, char *dst,
                        uint64_t off, size_t len, size_t *done)
{
  while (*done < len) {
    size_t piece = len - *done < m->o.max_read ? len - *done : m->o.max_read;
    ssize_t n = fsx_wb_read(m, wb, off + *done, dst + *done, piece);
    if (n < 0)
      return (int)n;
    if (n == 0)
      break;
    *done += (size_t)n;
  }
  return 0;
}

/* Pieces of a direct GET, and how many go at once: one GET at a time
   waits out each round trip, several keep the server busy. */
#define PIECE (4u << 20)
#define PIECES 8

/*
 * GETs into dst, If-Match the open version, PIECES of PIECE bytes at a
 * time: each token names its piece of dst, so the server writes there.
 */
static int read_get(struct fsx_mount *m, struct fsx_fh *fh, struct fsx_dreg *d,
                    char *dst, uint64_t off, size_t len, size_t *done,
                    uint32_t *path)
{
  bool all_rdma = true;

  if (off >= fsx_fh_size(fh))
    return 0;
  if (len > fsx_fh_size(fh) - off)
    len = (size_t)(fsx_fh_size(fh) - off);
  while (*done < len) {
    struct s3_req *r[PIECES] = {NULL};
    void *buf[PIECES];
    size_t plen[PIECES];
    bool retired = false;
    int n = 0, rc = 0;

    for (; n < PIECES && *done + (size_t)n * PIECE < len; n++) {
      size_t at = *done + (size_t)n * PIECE;
      plen[n] = len - at < PIECE ? len - at : PIECE;
      buf[n] = dst + at;
      r[n] = fsx_fh_get(m, fh, off + at, plen[n], buf[n]);
      if (!r[n]) {
        rc = -ENOMEM;
        n++;
        break;
      }
    }
    if (!rc) {
      atomic_fetch_add(&m->st.gets, (uint64_t)n);
      rc = fsx_rdma_run_n(m, r, n, true, buf, plen, &retired);
    }
    if (retired)
      d->kept = true; /* a server may still write there: never unmapped */
    for (int i = 0; i < n; i++) {
      size_t got = 0;
      int prc = rc || !r[i] ? rc : s3_get_object_result(r[i], &got);
      if (!rc && prc == -ESTALE)
        log_warn("%s: the object changed while being read",
                 fsx_inode_key(m->tab, fsx_fh_inode(fh)));
      if (!rc && !prc && got != plen[i])
        prc = -EIO; /* shorter than the object opened: not an EOF */
      if (!rc)
        rc = prc == -ESTALE ? -EIO : prc;
      if (r[i] && s3_req_rdma_path(r[i]) != S3_RDMA_DONE)
        all_rdma = false;
      if (!rc)
        atomic_fetch_add(&m->st.get_bytes, got);
      s3_req_destroy(r[i]);
    }
    if (rc)
      return rc;
    for (int i = 0; i < n; i++)
      *done += plen[i];
  }
  *path = all_rdma ? S3RDMAFS_PATH_RDMA : S3RDMAFS_PATH_HTTP;
  return 0;
}

/*
 * GETs whose tokens name dma-buf registration d at buf_off on (GPUDirect:
 * the server writes into device memory), If-Match the open version, as
 * read_get. Nothing is sent without a token (-EAGAIN: no session now). A
 * body (a server that ignored the token) lands in scratch memory, never
 * touched otherwise (no pages; unmapped at the end: only curl writes
 * there, and it is done), and ends the read: *done counts the pieces
 * before it, -EOPNOTSUPP when there are none (the library stages the
 * rest). *doubt: a token's transfer is in doubt (the server may still
 * write into d): the caller must deregister d at once.
 */
static int read_dmabuf(struct fsx_mount *m, struct fsx_fh *fh,
                       struct fsx_dreg *d, uint64_t buf_off, uint64_t off,
                       size_t len, size_t *done, bool *doubt)
{
  size_t seg = fsx_rdma_dmabuf_seg(d->dmabuf), scratch_len = PIECES * PIECE;
  char *scratch;
  int rc = 0;

  if (off >= fsx_fh_size(fh))
    return 0;
  if (len > fsx_fh_size(fh) - off)
    len = (size_t)(fsx_fh_size(fh) - off);
  scratch = mmap(NULL, scratch_len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (scratch == MAP_FAILED)
    return -ENOMEM;
  while (*done < len && !rc) {
    struct s3_req *r[PIECES] = {NULL};
    uint64_t at[PIECES];
    size_t plen[PIECES], q = *done;
    bool retired = false;
    int n = 0;

    for (; n < PIECES && q < len; n++) {
      at[n] = buf_off + q;
      plen[n] = len - q < PIECE ? len - q : PIECE;
      if (at[n] / seg != (at[n] + plen[n] - 1) / seg)
        plen[n] = seg - at[n] % seg; /* a token names one segment */
      r[n] = fsx_fh_get(m, fh, off + q, plen[n], scratch + (size_t)n * PIECE);
      q += plen[n];
      if (!r[n]) {
        rc = -ENOMEM;
        n++;
        break;
      }
    }
    if (!rc) {
      atomic_fetch_add(&m->st.gets, (uint64_t)n);
      rc = fsx_rdma_run_dmabuf(m, r, n, true, d->dmabuf, at, plen, &retired);
    }
    *doubt |= retired;
    for (int i = 0; i < n; i++) {
      size_t got = 0;
      int prc = rc || !r[i] ? rc : s3_get_object_result(r[i], &got);
      if (!prc && got != plen[i])
        prc = -EIO; /* shorter than the object opened: not an EOF */
      if (!prc && s3_req_rdma_path(r[i]) != S3_RDMA_DONE)
        prc = -EOPNOTSUPP; /* the bytes are in scratch, not the device */
      if (!prc)
        atomic_fetch_add(&m->st.get_bytes, got);
      rc = rc ? rc : prc == -ESTALE ? -EIO : prc;
      if (!rc)
        *done += plen[i];
      s3_req_destroy(r[i]);
    }
  }
  munmap(scratch, scratch_len);
  if (rc == -EOPNOTSUPP && !*done) /* (a partial read counts as a read) */
    atomic_fetch_add(&m->st.direct_gpudirect_refused, 1);
  return rc && !((rc == -EOPNOTSUPP || rc == -EAGAIN) && *done) ? rc : 0;
}

/* Through the page cache, copied into dst, max_read at a time. */
static int read_cached(struct fsx_mount *m, struct fsx_fh *fh, char *dst,
                       uint64_t off, size_t len, size_t *done)
{
  while (*done < len) {
    size_t piece = len - *done < m->o.max_read ? len - *done : m->o.max_read;
    struct fsx_read_ctx *ctx = NULL;
    struct iovec *iov;
    size_t got = 0;
    int niov, rc;

    rc = fsx_read(m, fh, off + *done, piece, &iov, &niov, &ctx);
    for (int i = 0; !rc && i < niov; i++) {
      memcpy(dst + *done + got, iov[i].iov_base, iov[i].iov_len);
      got += iov[i].iov_len;
    }
    fsx_read_done(m, ctx);
    if (rc)
      return rc == -ESTALE ? -EIO : rc;
    *done += got;
    if (got < piece)
      break; /* the end of the file */
  }
  return 0;
}

void fsx_direct_count(struct fsx_mount *m, const struct fsx_dreg *d,
                      uint32_t flags, size_t done, bool write)
{
  struct fsx_stats *st = &m->st;
  _Atomic uint64_t *n, *b;

  if (d->dmabuf) {
    n = write ? &st->direct_gpudirect_writes : &st->direct_gpudirect_reads;
    b = write ? &st->direct_gpudirect_write_bytes
              : &st->direct_gpudirect_bytes;
  } else if (flags & S3RDMAFS_READ_STAGED) {
    n = write ? &st->direct_staged_writes : &st->direct_staged_reads;
    b = write ? &st->direct_staged_write_bytes : &st->direct_staged_bytes;
  } else {
    n = write ? &st->direct_host_writes : &st->direct_host_reads;
    b = write ? &st->direct_host_write_bytes : &st->direct_host_bytes;
  }
  atomic_fetch_add(n, 1);
  atomic_fetch_add(b, done);
  atomic_fetch_add(write ? &st->direct_writes : &st->direct_reads, 1);
  atomic_fetch_add(write ? &st->direct_write_bytes : &st->direct_bytes, done);
}

/* A dma-buf's read: only the server can write into device memory, so
   this mount's unflushed writes, or no data plane now, are EOPNOTSUPP
   (the library stages the read). */
static int read_device(struct fsx_mount *m, struct fsx_fh *fh0,
                       struct fsx_wb *wb, struct fsx_dreg *d,
                       struct s3rdmafs_ioc_read *a, size_t *done)
{
  struct fsx_fh *fh;
  bool doubt = false;
  int rc;

  if (wb || !fsx_rdma_active(m)) {
    atomic_fetch_add(&m->st.direct_gpudirect_refused, 1);
    return -EOPNOTSUPP;
  }
  a->path = S3RDMAFS_PATH_RDMA;
  fh = fsx_fh_latest(m, fh0);
  if (fsx_fh_inode(fh)) {
    rc = read_dmabuf(m, fh, d, a->buf_off, a->file_off, (size_t)a->len,
                     done, &doubt);
  } else {
    atomic_fetch_add(&m->st.direct_gpudirect_refused, 1);
    rc = -EOPNOTSUPP;
  }
  fsx_fh_destroy(m, fh);
  if (doubt) {
    /* revoke the server's access now (deregistered when the last user
       is done): its late writes must not land after we answered */
    log_warn("direct: a GPUDirect transfer is in doubt: its registration "
             "is dropped (the caller registers again)");
    fsx_dreg_drop(m, fh0, d);
  }
  return rc;
}

int fsx_direct_read(struct fsx_mount *m, struct fsx_fh *fh0, pid_t tgid,
                   unsigned long long start, struct s3rdmafs_ioc_read *a)
{
  struct fsx_dreg *d;
  struct fsx_wb *wb = NULL;
  struct fsx_fh *fh;
  size_t done = 0;
  char *dst;
  int rc;

  if (a->flags & ~S3RDMAFS_READ_FLAGS)
    return -EINVAL;
  /* opened without asking (fsx_op_open): the direct paths do not retry a
     GET that finds the object changed, so ask before the first of them */
  if (fsx_fh_inode(fh0) && fsx_fh_unverified(fh0)) {
    int vrc = fsx_fh_reverify(m, fh0);
    if (vrc < 0)
      return vrc == -ENOENT ? -EIO : vrc;
    fsx_fh_set_unverified(fh0, false);
  }
  d = fsx_dreg_use(m, fh0, a->handle, tgid, start, false);
  if (!d)
    return -EBADF;
  if (!a->len) {
    fsx_dreg_done(m, d);
    a->done = 0;
    return 0;
  }
  if (a->buf_off > d->len || a->len > d->len - a->buf_off ||
      a->file_off > INT64_MAX || (d->dmabuf && (a->flags || d->source))) {
    fsx_dreg_done(m, d);
    return -EINVAL;
  }
  if (fsx_fh_wb(fh0))
    wb = fsx_fh_wb(fh0);
  else if (fsx_fh_inode(fh0))
    wb = fsx_wb_get(m, fsx_fh_inode(fh0)); /* written since the open */
  if (d->dmabuf) {
    rc = read_device(m, fh0, wb, d, a, &done);
  } else if (wb) {
    dst = d->map + a->buf_off;
    a->path = S3RDMAFS_PATH_WRITTEN;
    rc = read_written(m, wb, dst, a->file_off, (size_t)a->len, &done);
  } else {
    dst = d->map + a->buf_off;
    fh = fsx_fh_latest(m, fh0);
    if (fsx_fh_inode(fh) && fsx_rdma_active(m)) {
      rc = read_get(m, fh, d, dst, a->file_off, (size_t)a->len, &done,
                    &a->path);
    } else {
      a->path = S3RDMAFS_PATH_CACHE;
      rc = read_cached(m, fh, dst, a->file_off, (size_t)a->len, &done);
    }
    fsx_fh_destroy(m, fh);
  }
  if (wb && wb != fsx_fh_wb(fh0))
    fsx_wb_put(m, wb);
  if (!rc) /* before done: d may be freed by it (dropped meanwhile) */
    fsx_direct_count(m, d, a->flags, done, false);
  fsx_dreg_done(m, d);
  if (rc)
    return rc;
  a->done = done;
  return 0;
}
