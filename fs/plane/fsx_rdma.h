/*
 * fsx_rdma: the mount's RDMA data plane. It opens the configured transport
 * (rdma.transport), registers the page-cache arena with it (unit = the
 * chunk size, so no chunk straddles a segment), and attaches tokens to the
 * GETs that fill chunks and to the PUTs and UploadParts of the write path.
 * Whatever it cannot do (no transport, a range across segments, a server
 * that ignores tokens) goes in the HTTP body instead: RDMA is never needed
 * for correctness.
 *
 * Memory named by a token must not be reused while a server may still
 * use it. An attempt that ends without an HTTP reply (timeout, connection
 * lost, cancellation) leaves that in doubt until the attempt's deadline,
 * which the server was given with the token (x-amz-rdma-expires, see
 * s3_req_set_rdma): such memory is held, not reused, until both clocks
 * have passed that deadline plus FSX_HELD_MARGIN_MS, then given back
 * (fsx_held): page-cache chunks by its thread (fsx_rdma_hold_chunks), buffers
 * by the call that moved them, which waits (fsx_rdma_run) or hands them
 * over (fsx_rdma_hold_buf). Counted in rdma.retired_chunks/_bufs (held,
 * ever), rdma.reclaimed_chunks/_bufs (given back) and rdma.held_chunks
 * (held now). fsx_rdma_close waits for the held memory (bounded by its
 * deadlines) before the cache's arena may go.
 *
 * DESIGN (threads): the state is set up before the FUSE loop starts and
 * torn down after it ends; in between every function may run on any thread
 * (the transport's token maker is thread-safe, counters are atomics); the
 * held memory has fsx_held's lock and thread.
 */
#ifndef S3R_FSX_RDMA_H
#define S3R_FSX_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

struct fsx_mount;
struct fsx_chunk;
struct s3_req;

/*
 * Can the configured transport run here? Called before the daemon forks,
 * so an explicit kind that cannot run fails the mount with its reason on
 * the terminal. off and auto never fail (auto reports what it will do when
 * the mount opens it). 0 or a negative errno with the reason in err.
 */
int fsx_rdma_probe(const struct cfg *c, char *err, size_t errlen);

/*
 * Open the transport and register the cache arena (after fork: a cma
 * token names the daemon's pid). off: nothing. auto finding nothing: one
 * log line, HTTP bodies. 0 or a negative errno with the reason in err.
 */
int fsx_rdma_open(struct fsx_mount *m, const struct cfg *c, char *err,
                  size_t errlen);
/*
 * After the S3 client has stopped (no request in flight): waits until the
 * memory held for a server (fsx_rdma_hold_*) may be given back, bounded by
 * its deadlines, gives it back, then closes. Before the cache goes.
 */
void fsx_rdma_close(struct fsx_mount *m);

/* Is a transport open and the server not known to ignore tokens? */
bool fsx_rdma_active(struct fsx_mount *m);

/*
 * Attach a GET token for len bytes at the chunk's data (the request's
 * single sink buffer; later chunks must follow it in the arena, see
 * fsx_rdma_adjacent). 0 when attached or when RDMA is not active (the GET
 * then goes over HTTP); a negative errno only for ENOMEM.
 */
int fsx_rdma_get(struct fsx_mount *m, struct s3_req *r,
                 struct fsx_chunk *first, size_t len);
/* Does chunk b follow chunk a in the arena, within one segment? */
bool fsx_rdma_adjacent(struct fsx_mount *m, struct fsx_chunk *a,
                       struct fsx_chunk *b);

/*
 * A request moving [buf, buf + len) outside the page cache (get: a GET
 * into it; else a PUT or UploadPart from it): registers the buffer and
 * attaches a token. *reg (NULL when nothing was registered) goes to
 * fsx_rdma_buf_done once the request has finished. 0, or -ENOMEM; no
 * transport: 0 and nothing attached.
 */
int fsx_rdma_buf(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, void **reg);
void fsx_rdma_buf_done(struct fsx_mount *m, void *reg);
/*
 * The same for a request run synchronously: attach, submit, wait, release.
 * When the request's memory is in doubt, waits (sleeping) until the server
 * can no longer touch buf (the deadline of the attempt in doubt, plus the
 * margin, on both clocks). Returns 0 once it has finished (read its
 * outcome with the s3 result functions), or -ENOMEM without submitting.
 * *retired: buf must never be freed or reused; only when the wall clock
 * stays behind the deadline long after the monotonic one has passed it
 * (set back by hours): logged.
 */
int fsx_rdma_run(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, bool *retired);
/* The same for n requests at once (at most FSX_RDMA_RUN_MAX), request i
   moving len[i] bytes at buf[i]: all submitted, all waited for; -ENOMEM
   (or -EINVAL for n) with none submitted. */
#define FSX_RDMA_RUN_MAX 16
int fsx_rdma_run_n(struct fsx_mount *m, struct s3_req **r, int n, bool get,
                   void *const *buf, const size_t *len, bool *retired);

/*
 * Device memory exported as a dma-buf (GPUDirect, fsx_direct): can the
 * data plane register it (rc or dc, active)? 0, or -EOPNOTSUPP with the
 * reason in why.
 */
int fsx_rdma_dmabuf_ok(struct fsx_mount *m, char *why, size_t whylen);
/*
 * Register bytes [0, len) of dma-buf fd (the caller keeps and closes fd;
 * the registration holds the dma-buf), for servers to write into (GETs),
 * or with src to read from (PUTs): *reg, freed with
 * fsx_rdma_unreg_dmabuf before fsx_rdma_close. 0, -ENOMEM,
 * -EOPNOTSUPP with the reason in why (as fsx_rdma_dmabuf_ok, or the
 * provider has no dma-buf registration: soft-RoCE), or -EAGAIN with the
 * reason (the registration failed otherwise: this buffer, this moment).
 */
int fsx_rdma_reg_dmabuf(struct fsx_mount *m, int fd, size_t len, bool src,
                        void **reg, char *why, size_t whylen);
void fsx_rdma_unreg_dmabuf(struct fsx_mount *m, void *reg);
/* Its segment length: a token's range must not cross a multiple of it. */
size_t fsx_rdma_dmabuf_seg(const void *reg);
/*
 * n GETs (get), or PUTs, at most FSX_RDMA_RUN_MAX, whose tokens name
 * bytes [off[i], off[i] + len[i]) of dma-buf registration reg: the server
 * writes there (reads from there). Sent only if every one has its token
 * (else none is: -EAGAIN when rc has no session now, or the token's
 * error). A GET whose server ignores its token gets its body in its own
 * sink buffer (the caller's, given to the request): check
 * s3_req_rdma_path. A PUT is never sent in an HTTP body
 * (s3_req_set_rdma_only: it fails with EOPNOTSUPP instead; its body
 * buffer must exist, never read). Submitted, waited for, memory in
 * doubt waited out as fsx_rdma_run does; *retired when that could not be
 * (the caller deregisters reg at once). 0, or -errno with none submitted.
 */
int fsx_rdma_run_dmabuf(struct fsx_mount *m, struct s3_req **r, int n,
                        bool get, void *reg, const uint64_t *off,
                        const size_t *len, bool *retired);

/*
 * After a request that filled chunks[0..n) finished: when its memory is in
 * doubt (s3_req_rdma_doubt), takes the caller's references to the chunks
 * (as filled: readable if the fill succeeded, not reusable) and drops them
 * once the server can no longer touch them; returns true, and the caller
 * must not put them. false: no doubt, the caller puts them as usual. Runs
 * on any thread without blocking (the engine's included).
 */
bool fsx_rdma_hold_chunks(struct fsx_mount *m, const struct s3_req *r,
                          struct fsx_chunk *const *chunks, int n);
/*
 * The same for a buffer of len bytes outside the cache: when in doubt,
 * takes it and frees it later (unmap: munmap(buf, len), else free(buf));
 * true. false: no doubt, the caller frees it.
 */
bool fsx_rdma_hold_buf(struct fsx_mount *m, const struct s3_req *r,
                       void *buf, size_t len, bool unmap);


/* "rdma.* name value" lines for the stats file; returns the length. */
/* The same for a run of the write buffers (fsx_pool): given back to the
   pool once the server can no longer read it. */
bool fsx_rdma_hold_run(struct fsx_mount *m, const struct s3_req *r,
                       void *run);

size_t fsx_rdma_stats(struct fsx_mount *m, char *buf, size_t len);

#endif
