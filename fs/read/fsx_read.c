/* fsx_read: open files and the read path (see fsx_read.h for the design). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_bufs.h"
#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_mlock.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/read/fsx_kstore.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/read/fsx_read.h"
#include "fs/read/fsx_read_i.h"
#include "fs/write/fsx_wb.h"

#define MAX_CHUNKS_PER_GET 16
#define MAX_READ_CHUNKS 64

struct fsx_read_ctx {
  struct fsx_chunk *chunks[MAX_READ_CHUNKS];
  int n;
  void *tmp;
  bool tmp_kept;              /* a server may still touch tmp: never freed */
  struct iovec iov[MAX_READ_CHUNKS];
  /* a dense block in tmp, for the kernel once the read is answered */
  uint64_t store_ino, store_gen, store_commits, store_from, store_skip;
  size_t store_len, store_skip_len; /* 0: nothing to store */
};

/* One GET filling consecutive chunks; lives until its callback. */
struct fetch {
  struct fsx_mount *m;
  struct fsx_fh *fh;
  struct s3_req *req;
  uint64_t first;             /* chunk index */
  int n;
  struct fsx_chunk *chunks[MAX_CHUNKS_PER_GET];
  size_t want[MAX_CHUNKS_PER_GET];
};

static size_t chunk_len(const struct fsx_fh *fh, size_t cs, uint64_t idx)
{
  uint64_t start = idx * cs;

  if (start >= fh->size)
    return 0;
  return fh->size - start < cs ? (size_t)(fh->size - start) : cs;
}

static void fetch_done(struct s3_req *r, void *arg)
{
  struct fetch *f = arg;
  struct fsx_mount *m = f->m;
  size_t got = 0, pos = 0;
  int rc = s3_get_object_result(r, &got);
  /* a handle opened without asking meets a changed object: expected, the
     read asks and goes on (fsx_op_read) */
  bool expected = rc == -ESTALE && atomic_load(&f->fh->unverified);
  bool held;

  if (rc == -ESTALE && !expected)
    log_warn("%s: the object changed while being read",
             fsx_inode_key(m->tab, f->fh->in));
  atomic_fetch_add(&m->st.get_bytes, got);
  for (int i = 0; i < f->n; i++) {
    size_t valid = got > pos ? got - pos : 0;
    int crc = rc;
    if (valid > f->want[i])
      valid = f->want[i];
    if (!crc && valid < f->want[i])
      crc = -EIO; /* shorter than the object we opened */
    fsx_chunk_fill_done(m->cache, f->chunks[i], crc, valid);
    pos += f->want[i];
  }
  /* a server that may still write into the chunks: the fetch's references
     go to the data plane, which drops them once it cannot */
  held = fsx_rdma_hold_chunks(m, r, f->chunks, f->n);
  for (int i = 0; i < f->n && !held; i++)
    fsx_cache_put(m->cache, f->chunks[i]);
  if (rc && !expected)
    atomic_fetch_add(&m->st.errors, 1);
  atomic_fetch_sub(&f->fh->inflight, 1);
  atomic_fetch_sub(&m->reads->read_gets, 1);
  fsx_fh_destroy(m, f->fh);
  s3_req_destroy(r);
  free(f);
}

/* Issue one GET for the chunks (references passed to the fetch); own:
   they are a reader's, which waits for them (its thread faults in their
   first pages while the request is on the wire). */
static int fetch_start(struct fsx_mount *m, struct fsx_fh *fh, uint64_t first,
                       struct fsx_chunk **chunks, int n, bool own)
{
  size_t cs = fsx_cache_chunk_size(m->cache), total = 0;
  struct iovec iov[MAX_CHUNKS_PER_GET], fault[MAX_CHUNKS_PER_GET];
  struct fsx_chunk *held[MAX_CHUNKS_PER_GET];
  struct fetch *f = calloc(1, sizeof(*f));
  int rc = -ENOMEM, nfault = 0, early;

  if (!f)
    goto fail;
  f->m = m;
  f->fh = fh;
  f->first = first;
  f->n = n;
  for (int i = 0; i < n; i++) {
    f->chunks[i] = chunks[i];
    f->want[i] = chunk_len(fh, cs, first + (uint64_t)i);
    iov[i].iov_base = fsx_chunk_data(chunks[i]);
    iov[i].iov_len = f->want[i];
    total += f->want[i];
  }
  f->req = fsx_fh_get(m, fh, first * cs, total, fsx_chunk_data(chunks[0]));
  if (!f->req)
    goto fail;
  if (s3_req_set_sink_iov(f->req, iov, n) ||
      fsx_rdma_get(m, f->req, chunks[0], total))
    goto fail;
  /* (a readahead's are left to the copy: its reader answers first) */
  for (int i = 0; i < n && own; i++)
    if (fsx_chunk_take_populate(m->cache, chunks[i])) {
      fsx_chunk_hold(m->cache, chunks[i]); /* (the fetch's may go first) */
      held[nfault] = chunks[i];
      fault[nfault++] = iov[i];
    }
  /* the first chunk's pages before the request goes, the rest in order
     while its answer comes: ahead of the event loop's copy (a chunk is
     faulted in several times faster than a body fills it), which then
     meets no fault, and the request waits for one chunk's, not all */
  early = nfault && fault[0].iov_base == iov[0].iov_base;
  if (early)
    fsx_populate(fault[0].iov_base, fault[0].iov_len);
  fsx_fh_hold(fh);
  atomic_fetch_add(&fh->inflight, 1);
  atomic_fetch_add(&m->reads->read_gets, 1);
  atomic_fetch_add(&m->st.gets, 1);
  s3_req_submit(f->req, fetch_done, f);
  for (int i = 0; i < nfault; i++) {
    if (i >= early) /* (f may be gone) */
      fsx_populate(fault[i].iov_base, fault[i].iov_len);
    fsx_cache_put(m->cache, held[i]);
  }
  return 0;

fail:
  for (int i = 0; i < n; i++) {
    fsx_chunk_fill_done(m->cache, chunks[i], rc, 0);
    fsx_cache_put(m->cache, chunks[i]);
  }
  if (f)
    s3_req_destroy(f->req);
  free(f);
  return rc;
}

/*
 * Make sure chunks [from, to) are cached or on their way. With keep, the
 * references are stored in keep[] (the reader's chunks); otherwise
 * dropped at once (readahead). Returns the index where it stopped: short of
 * `to` when the cache is full or the file's fetch budget is spent.
 */
static uint64_t ensure(struct fsx_mount *m, struct fsx_fh *fh, uint64_t from,
                       uint64_t to, struct fsx_chunk **keep, int *err)
{
  struct fsx_chunk *run[MAX_CHUNKS_PER_GET];
  uint64_t idx, run_first = 0;
  int nrun = 0, rc;

  *err = 0;
  for (idx = from; idx < to; idx++) {
    struct fsx_chunk *ch;
    bool fill;
    if (!keep && atomic_load(&fh->inflight) >= m->o.max_inflight_per_file)
      break;
    rc = fsx_cache_get(m->cache, fh->file, fh->gen, idx, true, &ch, &fill);
    if (rc) {
      *err = rc;
      break;
    }
    if (keep) {
      keep[idx - from] = ch;
      if (fill)
        fsx_chunk_hold(m->cache, ch); /* one for us, one for the fetch */
    }
    if (!fill) {
      if (!keep)
        fsx_cache_put(m->cache, ch);
      if (nrun) {
        fetch_start(m, fh, run_first, run, nrun, keep != NULL);
        nrun = 0;
      }
      continue;
    }
    if (!keep)
      atomic_fetch_add(&m->st.readahead_chunks, 1);
    if (nrun && fsx_rdma_active(m) &&
        !fsx_rdma_adjacent(m, run[nrun - 1], ch)) {
      /* one token names one contiguous range of the arena */
      fetch_start(m, fh, run_first, run, nrun, keep != NULL);
      nrun = 0;
    }
    if (!nrun)
      run_first = idx;
    run[nrun++] = ch;
    if (nrun == MAX_CHUNKS_PER_GET) {
      fetch_start(m, fh, run_first, run, nrun, keep != NULL);
      nrun = 0;
    }
  }
  if (nrun)
    fetch_start(m, fh, run_first, run, nrun, keep != NULL);
  return idx;
}

/* Drop the chunk references ctx holds. */
static void drop_chunks(struct fsx_mount *m, struct fsx_read_ctx *ctx)
{
  for (int i = 0; i < ctx->n; i++)
    fsx_cache_put(m->cache, ctx->chunks[i]);
  ctx->n = 0;
}

/*
 * A read that bypasses the cache: exactly [off, off+len), into ctx->tmp.
 * Drops the chunk references ctx holds first.
 */
static int read_direct(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                       size_t len, struct fsx_read_ctx *ctx, int *niov)
{
  struct s3_req *r;
  size_t got = 0;
  bool retired;
  int rc;

  drop_chunks(m, ctx);
  ctx->tmp = fsx_bufs_get(m->bufs, len);
  r = ctx->tmp ? fsx_fh_get(m, fh, off, len, ctx->tmp) : NULL;
  if (!r)
    return -ENOMEM;
  atomic_fetch_add(&m->st.gets, 1);
  atomic_fetch_add(&m->reads->read_gets, 1);
  /* waits, when the token was left in doubt, until no server can write
     into tmp any more */
  rc = fsx_rdma_run(m, r, true, ctx->tmp, len, &retired);
  atomic_fetch_sub(&m->reads->read_gets, 1);
  if (!rc)
    rc = s3_get_object_result(r, &got);
  s3_req_destroy(r);
  ctx->tmp_kept = retired; /* still readable, never freed */
  if (rc == -ESTALE && !atomic_load(&fh->unverified))
    log_warn("%s: the object changed while being read",
             fsx_inode_key(m->tab, fh->in));
  if (rc)
    return rc; /* -ESTALE: the object changed (the caller decides) */
  if (got < len)
    return -EIO; /* shorter than the object we opened: not an EOF */
  atomic_fetch_add(&m->st.get_bytes, got);
  atomic_fetch_add(&m->st.bytes_direct, got);
  ctx->iov[0] = (struct iovec){ctx->tmp, got};
  *niov = 1;
  return 0;
}

/*
 * A random read [off, off + len) that missed the cache, in a block that has
 * become dense (fsx_density.h): the block fetched whole in one GET (as
 * read_direct), this read answered from it, and the rest handed to the
 * kernel's page cache once the read is answered (fsx_read_done queues it
 * on fsx_kstore), so the block's other reads never reach us. 1: done
 * (*niov set); 0: not dense, read exactly; -errno.
 */
static int dense_read(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                      size_t len, struct fsx_read_ctx *ctx, int *niov)
{
  uint64_t from, to, commits;
  uint32_t again;
  void *copy;
  bool dense;
  int rc;

  if (!m->kstore)
    return 0;
  fsx_group_miss(m, fh);
  if (fsx_group_read(m, fh, off, len, &copy)) {
    drop_chunks(m, ctx);
    ctx->tmp = copy;
    ctx->iov[0] = (struct iovec){copy, len};
    *niov = 1;
    return 1;
  }
  pthread_mutex_lock(&fh->lock);
  again = fh->dense.again;
  dense = fsx_density_note(&fh->dense, fh->size, off, len, &from, &to);
  again = fh->dense.again - again;
  pthread_mutex_unlock(&fh->lock);
  atomic_fetch_add(&m->st.dense_again, again);
  if (!dense) {
    atomic_fetch_add(&m->st.dense_exact, 1);
    fsx_group_idle(m, fh);
    return 0;
  }
  if (from > off)
    from = off;
  if (to < off + len)
    to = off + len;
  if (to - from > fsx_kstore_limit(m->kstore)) /* never stored whole */
    return 0;
  commits = fsx_inode_commits(m->tab, fh->in);
  /* the next groups on their way while this one is fetched */
  fsx_group_ahead(m, fh, to);
  rc = read_direct(m, fh, from, (size_t)(to - from), ctx, niov);
  if (rc)
    return rc;
  atomic_fetch_add(&m->st.dense_blocks, 1);
  ctx->iov[0] = (struct iovec){(char *)ctx->tmp + (off - from), len};
  ctx->store_ino = fsx_inode_ino(fh->in);
  ctx->store_gen = fh->gen;
  ctx->store_commits = commits;
  ctx->store_from = from;
  ctx->store_len = (size_t)(to - from);
  ctx->store_skip = off;
  ctx->store_skip_len = len;
  return 1;
}

uint64_t fsx_read_cap(uint64_t max, uint64_t far, uint64_t rtt_us,
                      uint64_t rate_bps)
{
  /* (no overflow: rates under 100 GB/s, round trips under 100 s) */
  uint64_t want = 4 * (rate_bps * rtt_us / 1000000);

  return want <= max ? max : want >= far ? far : want;
}

uint64_t fsx_read_plan(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
                       size_t len, uint64_t *ra_from, uint64_t *ra_to)
{
  size_t cs = fsx_cache_chunk_size(m->cache);
  uint64_t tol, end = off + len, window;
  uint64_t now, rtt = m->s3 ? s3_client_rtt_us(m->s3) : 0;
  bool seq;

  pthread_mutex_lock(&fh->lock);
  now = clock_mono_us(); /* (under the lock: never before run_t0_us) */
  /* within a run, the kernel's readahead comes as several reads at once,
     in any order; a read that would begin one is near where the last
     ended (a file's first read near its start) */
  tol = (fh->window ? FSX_KERNEL_RA + 1 : 2) * (uint64_t)m->o.max_read;
  seq = off >= fh->next_off ? off - fh->next_off <= tol
                            : fh->next_off - off <= tol;
  if (seq) {
    uint64_t rate = 0, cap;

    if (!fh->window) { /* a run begins */
      fh->run_from = off;
      fh->run_t0_us = now;
    } else if (now - fh->run_t0_us >= 2 * rtt + 1000 && end > fh->run_from) {
      /* (a rate once the run has had two round trips: never from a burst
         of the kernel's readahead alone) */
      rate = (end - fh->run_from) * 1000000 / (now - fh->run_t0_us);
    }
    cap = fsx_read_cap(m->o.readahead_max, m->o.readahead_far, rtt, rate);
    fh->window = fh->window ? fh->window * 2 : m->o.readahead_min;
    if (fh->window > cap)
      fh->window = cap;
    for (uint64_t p = atomic_load(&m->st.readahead_peak); fh->window > p;)
      if (atomic_compare_exchange_weak(&m->st.readahead_peak, &p, fh->window))
        break;
    if (end > fh->next_off)
      fh->next_off = end;
  } else {
    if (fh->window)
      atomic_fetch_add(&m->st.readahead_resets, 1);
    fh->window = 0;
    fh->ra_end = 0;
    fh->next_off = end;
  }
  window = fh->window;
  *ra_from = *ra_to = 0;
  if (window) {
    uint64_t from = (end + cs - 1) / cs, to = (end + window + cs - 1) / cs,
             last = (fh->size + cs - 1) / cs;
    uint64_t ahead = fh->ra_end > from ? fh->ra_end - from : 0;
    if (from < fh->ra_end)
      from = fh->ra_end;
    if (to > last)
      to = last;
    /* top up only when less than half the window is left in flight, so
       each top-up is a few large GETs rather than many one-chunk ones */
    if (ahead * cs * 2 >= window)
      from = to;
    if (from < to) {
      *ra_from = from;
      *ra_to = to;
    }
  }
  pthread_mutex_unlock(&fh->lock);
  return window;
}

int fsx_read(struct fsx_mount *m, struct fsx_fh *fh, uint64_t off,
             size_t len, struct iovec **iov, int *niov,
             struct fsx_read_ctx **out)
{
  size_t cs = fsx_cache_chunk_size(m->cache);
  struct fsx_read_ctx *ctx = calloc(1, sizeof(*ctx));
  uint64_t first, last, ra_from, ra_to, stop;
  int n, err;

  *out = ctx;
  *niov = 0;
  *iov = ctx ? ctx->iov : NULL;
  if (!ctx)
    return -ENOMEM;
  if (fh->special) {
    if (off < fh->special_len) {
      ctx->iov[0].iov_base = fh->special + off;
      ctx->iov[0].iov_len = len < fh->special_len - off
                                ? len : fh->special_len - off;
      *niov = 1;
    }
    return 0;
  }
  if (off >= fh->size || !len)
    return 0;
  if (len > fh->size - off)
    len = (size_t)(fh->size - off);
  first = off / cs;
  last = (off + len - 1) / cs;
  n = (int)(last - first + 1);
  if (n > MAX_READ_CHUNKS) /* small chunks, large reads */
    return read_direct(m, fh, off, len, ctx, niov);

  if (!fsx_read_plan(m, fh, off, len, &ra_from, &ra_to)) {
    /* random access: from the cache if all of it is there, else direct */
    bool all = true;
    for (int i = 0; i < n; i++) {
      bool fill;
      if (fsx_cache_get(m->cache, fh->file, fh->gen, first + (uint64_t)i,
                        false, &ctx->chunks[i], &fill)) {
        all = false;
        break;
      }
      ctx->n = i + 1;
      if (!fsx_chunk_ready(m->cache, ctx->chunks[i])) {
        all = false;
        break;
      }
    }
    if (!all) {
      int rc = dense_read(m, fh, off, len, ctx, niov);

      return rc ? (rc < 0 ? rc : 0) : read_direct(m, fh, off, len, ctx, niov);
    }
  } else {
    stop = ensure(m, fh, first, last + 1, ctx->chunks, &err);
    ctx->n = (int)(stop - first);
    if (stop <= last) /* no room in the cache for it: read it directly */
      return read_direct(m, fh, off, len, ctx, niov);
    if (ra_to > ra_from) {
      stop = ensure(m, fh, ra_from, ra_to, NULL, &err);
      pthread_mutex_lock(&fh->lock);
      if (stop > fh->ra_end)
        fh->ra_end = stop;
      pthread_mutex_unlock(&fh->lock);
    }
  }

  for (int i = 0; i < n; i++) {
    size_t valid, from, to;
    int wrc = fsx_chunk_wait(m->cache, ctx->chunks[i], &valid);
    if (wrc)
      return wrc; /* -ESTALE: the object changed (the caller decides) */
    from = i == 0 ? (size_t)(off % cs) : 0;
    to = i == n - 1 ? (size_t)((off + len - 1) % cs) + 1 : cs;
    if (valid < to)
      return -EIO;
    ctx->iov[i].iov_base = (char *)fsx_chunk_data(ctx->chunks[i]) + from;
    ctx->iov[i].iov_len = to - from;
  }
  atomic_fetch_add(&m->st.bytes_from_cache, len);
  *niov = n;
  return 0;
}

void fsx_read_done(struct fsx_mount *m, struct fsx_read_ctx *ctx)
{
  if (!ctx)
    return;
  for (int i = 0; i < ctx->n; i++)
    fsx_cache_put(m->cache, ctx->chunks[i]);
  if (ctx->store_len && !ctx->tmp_kept) { /* the store frees tmp */
    fsx_kstore_queue(m->kstore, ctx->store_ino, ctx->store_gen,
                     ctx->store_commits, ctx->store_from, ctx->tmp,
                     ctx->store_len, ctx->store_skip, ctx->store_skip_len,
                     NULL, NULL);
    ctx->tmp = NULL;
  }
  if (!ctx->tmp_kept)
    fsx_bufs_put(m->bufs, ctx->tmp);
  free(ctx);
}
