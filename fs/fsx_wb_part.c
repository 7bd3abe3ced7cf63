/*
 * fsx_wb_part: multipart part geometry, and the part uploads of a file's
 * write-back state (from its staging file, or copied from the base object
 * on the server); their callbacks run on the S3 engine thread and take only
 * wb->plock (design in fsx_wb.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/slog.h"
#include "fs/fsx_rdma.h"
#include "fs/fsx_wb_i.h"

#define GROUP_PARTS 1000u

/* ---- part geometry ---- */

static uint64_t round_block(uint64_t v)
{
  return (v + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK * FSX_WB_BLOCK;
}

static uint64_t group_len(uint64_t ps, unsigned g)
{
  uint64_t cap = FSX_WB_MAX_PART / FSX_WB_BLOCK * FSX_WB_BLOCK;
  uint64_t l = round_block(ps) << g;

  return l < cap ? l : cap;
}

void fsx_wb_part_span(uint64_t part_size, unsigned idx, uint64_t *start,
                      uint64_t *len)
{
  unsigned g = idx / GROUP_PARTS;
  uint64_t s = 0;

  for (unsigned i = 0; i < g; i++)
    s += GROUP_PARTS * group_len(part_size, i);
  *len = group_len(part_size, g);
  *start = s + (idx % GROUP_PARTS) * *len;
}

unsigned fsx_wb_part_of(uint64_t part_size, uint64_t off, uint64_t *start,
                        uint64_t *len)
{
  unsigned groups = FSX_WB_MAX_PARTS / GROUP_PARTS;
  uint64_t s = 0;

  for (unsigned g = 0;; g++) {
    uint64_t gl = group_len(part_size, g);
    uint64_t idx = (off - s) / gl;
    if (idx < GROUP_PARTS || g == groups - 1) {
      if (idx >= GROUP_PARTS)
        idx = GROUP_PARTS - 1; /* past the largest file: the last part */
      *len = gl;
      *start = s + idx * gl;
      return g * GROUP_PARTS + (unsigned)idx;
    }
    s += GROUP_PARTS * gl;
  }
}

uint64_t fsx_wb_max_size(uint64_t part_size)
{
  uint64_t s, l;

  fsx_wb_part_span(part_size, FSX_WB_MAX_PARTS - 1, &s, &l);
  return s + l;
}

/* ---- parts ---- */

int fsx_wb_grow_parts(struct fsx_wb *wb, unsigned n)
{
  struct fsx_part *p;
  int rc = 0;

  pthread_mutex_lock(&wb->plock);
  if (n <= wb->nparts)
    goto out;
  if (n < wb->nparts * 2)
    n = wb->nparts * 2;
  if (n > FSX_WB_MAX_PARTS)
    n = FSX_WB_MAX_PARTS;
  p = realloc(wb->parts, n * sizeof(*p));
  if (!p) {
    rc = -ENOMEM;
    goto out;
  }
  memset(p + wb->nparts, 0, (n - wb->nparts) * sizeof(*p));
  wb->parts = p;
  wb->nparts = n;
out:
  pthread_mutex_unlock(&wb->plock);
  return rc;
}

void fsx_wb_wait_sent(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->plock);
  while (wb->sending)
    pthread_cond_wait(&wb->pcond, &wb->plock);
  pthread_mutex_unlock(&wb->plock);
}

struct fsx_part fsx_wb_part(struct fsx_wb *wb, unsigned k)
{
  struct fsx_part p = {0};

  pthread_mutex_lock(&wb->plock);
  if (k < wb->nparts)
    p = wb->parts[k];
  pthread_mutex_unlock(&wb->plock);
  return p;
}

void fsx_wb_reset_parts(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; k < wb->nparts; k++)
    wb->parts[k] = (struct fsx_part){0};
  wb->part_err = 0;
  pthread_mutex_unlock(&wb->plock);
}

struct part_ctx {
  struct fsx_wb *wb;
  unsigned k;
  bool copy;                  /* UploadPartCopy (no data of ours) */
  void *map;
  size_t len;                 /* bytes counted against write.max_memory */
  uint64_t part_len;
  void *rdma_reg;             /* the map registered for a token */
};

static void part_done(struct s3_req *r, void *arg)
{
  struct part_ctx *pc = arg;
  struct fsx_wb *wb = pc->wb;
  struct fsx_mount *m = wb->m;
  struct fsx_part *p;
  char etag[S3_ETAG_MAX];
  int rc = pc->copy ? s3_upload_part_copy_result(r, etag)
                    : s3_upload_part_result(r, etag);

  fsx_rdma_buf_done(m, pc->rdma_reg);
  /* a token still outstanding: the server may yet read the map, which
     the data plane unmaps once it cannot */
  if (pc->map && !fsx_rdma_hold_buf(m, r, pc->map, pc->len, true))
    munmap(pc->map, pc->len);
  /* memory first: a writer may wait for it holding wb->lock */
  pthread_mutex_lock(&m->wb_lock);
  m->wb_mem -= pc->len;
  pthread_cond_broadcast(&m->wb_cond);
  pthread_mutex_unlock(&m->wb_lock);
  pthread_mutex_lock(&wb->plock);
  p = &wb->parts[pc->k];
  if (rc) {
    p->state = PART_FAILED;
    if (!wb->part_err)
      wb->part_err = rc;
    log_warn("%s: part %u: %s", wb->in->key, pc->k + 1, strerror(-rc));
  } else {
    p->state = PART_DONE;
    memcpy(p->etag, etag, sizeof(p->etag));
    atomic_fetch_add(pc->copy ? &m->st.parts_copied : &m->st.parts_sent, 1);
  }
  wb->sending--;
  pthread_cond_broadcast(&wb->pcond);
  pthread_mutex_unlock(&wb->plock);
  s3_req_destroy(r);
  free(pc);
  fsx_wb_put(m, wb);
}

/*
 * Upload part k: from the staging file (mapped), or with copy from the
 * same range of the base object on the server. Lock held; waits, unlocked,
 * while the file or the mount has too much on the wire.
 */
static int start_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k,
                      bool copy)
{
  char quoted[FSX_ETAG_MAX + 2];
  const char *key = fsx_inode_key(m->tab, wb->in);
  struct part_ctx *pc;
  struct s3_req *r;
  uint64_t s, l, mem;
  int rc;

  fsx_wb_part_span(wb->psize, k, &s, &l);
  if (s + l > wb->size)
    l = wb->size - s;
  mem = copy ? 0 : l;
  pthread_mutex_lock(&wb->plock);
  while (wb->sending >= m->o.max_parts_inflight)
    pthread_cond_wait(&wb->pcond, &wb->plock);
  pthread_mutex_unlock(&wb->plock);
  pthread_mutex_lock(&m->wb_lock);
  while (mem && m->wb_mem && m->wb_mem + mem > m->o.max_memory)
    pthread_cond_wait(&m->wb_cond, &m->wb_lock);
  m->wb_mem += mem;
  pthread_mutex_unlock(&m->wb_lock);
  rc = -ENOMEM;
  pc = calloc(1, sizeof(*pc));
  if (!pc)
    goto unaccount;
  pc->wb = wb;
  pc->k = k;
  pc->copy = copy;
  pc->len = (size_t)mem;
  if (mem) {
    pc->map = mmap(NULL, (size_t)l, PROT_READ, MAP_SHARED, wb->fd, (off_t)s);
    if (pc->map == MAP_FAILED) {
      rc = -errno;
      pc->map = NULL;
      goto free_ctx;
    }
  }
  snprintf(quoted, sizeof(quoted), "\"%s\"", wb->base_etag);
  /* into the upload's key; a copy from the base, where it is now */
  r = copy ? s3_upload_part_copy_req(m->s3, wb->in->bucket, wb->upload_key,
                                     wb->upload_id, (int)k + 1,
                                     wb->in->bucket, key, s, l, quoted)
           : s3_upload_part_req(m->s3, wb->in->bucket, wb->upload_key,
                                wb->upload_id, (int)k + 1, pc->map,
                                (size_t)l);
  if (!r)
    goto unmap;
  if (!copy && fsx_rdma_buf(m, r, false, pc->map, (size_t)l, &pc->rdma_reg)) {
    s3_req_destroy(r);
    goto unmap;
  }
  pthread_mutex_lock(&wb->plock);
  wb->parts[k].state = PART_SENDING;
  wb->parts[k].stale = false;
  wb->parts[k].len = l;
  wb->sending++;
  pthread_mutex_unlock(&wb->plock);
  fsx_table_lock(m->tab); /* the upload's reference */
  wb->refs++;
  fsx_table_unlock(m->tab);
  s3_req_submit(r, part_done, pc);
  return 0;

unmap:
  if (pc->map)
    munmap(pc->map, (size_t)l);
free_ctx:
  free(pc);
unaccount:
  pthread_mutex_lock(&m->wb_lock);
  m->wb_mem -= mem;
  pthread_cond_broadcast(&m->wb_cond);
  pthread_mutex_unlock(&m->wb_lock);
  return rc;
}

int fsx_wb_send_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k)
{
  return start_part(m, wb, k, false);
}

int fsx_wb_copy_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k)
{
  return start_part(m, wb, k, true);
}

