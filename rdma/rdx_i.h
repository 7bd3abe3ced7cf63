/*
 * rdx_i: what the rdma/ modules share and nothing else sees: the transport
 * ops table each kind implements, the region layout, the cma halves, and
 * the /proc readers. Unit tests include it to reach the parsers.
 */
#ifndef S3R_RDX_I_H
#define S3R_RDX_I_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdma/rdx_server.h"
#include "rdma/rdx_token.h"
#include "rdma/rdx_transport.h"

/* One registered segment. */
struct rdx_seg {
  uint64_t addr;
  uint64_t len;  /* 1..RDX_SEG_MAX */
  void *priv;    /* the transport's (verbs: its struct ibv_mr *) */
};

struct rdx_region {
  struct rdx_transport *t;
  uint64_t base;
  uint64_t len;
  uint64_t seg_len;
  size_t nseg;
  struct rdx_seg seg[];
};

/*
 * What a kind implements. Each is called with arguments rdx_transport.c
 * has already checked. token() runs on any thread, concurrently with
 * itself and with reg/unreg of other segments (see rdx_transport.h); reg
 * and unreg of one region run on one thread.
 */
struct rdx_transport_ops {
  /* Register one segment (fill seg->priv): 0 or a negative errno. */
  int (*reg)(struct rdx_transport *t, struct rdx_seg *seg);
  /* Undo reg. */
  void (*unreg)(struct rdx_transport *t, struct rdx_seg *seg);
  /* Fill *tok for [addr, addr + len), inside seg, op RDX_GET or RDX_PUT:
     0 or a negative errno. */
  int (*token)(struct rdx_transport *t, const struct rdx_seg *seg,
               uint64_t addr, uint64_t len, enum rdx_op op,
               struct rdx_token *tok);
  /* Free t (the struct embedding it). */
  void (*close)(struct rdx_transport *t);
};

/* Embedded first in each kind's own struct. */
struct rdx_transport {
  const struct rdx_transport_ops *ops;
  enum rdx_transport_kind kind;
};

/* Set why to a formatted one-line reason (when why && whylen); return rc. */
int rdx_reason(char *why, size_t whylen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- cma (rdx_cma.c) ---------------------------------------------------- */

/* Open a cma transport for this process: 0, -ENODEV or -ENOMEM (+ err). */
int rdx_cma_open(struct rdx_transport **out, char *err, size_t errlen);

/* Can this process reach others with process_vm_*? 0, or -EOPNOTSUPP. */
int rdx_cma_server_probe(char *why, size_t whylen);

struct rdx_helpers;

/* Would a cma transfer be served (the process named, and the kernel's
   verdict for the peer, probed with one byte read)? 0 or as rdx_serve.
   Token and request are already checked; until: the request's deadline
   on CLOCK_MONOTONIC in ms (0: none). */
int rdx_cma_check(struct rdx_helpers *h, const struct rdx_token *tok,
                  const struct rdx_req *req, uint64_t until, char *why,
                  size_t whylen);

/* Move one cma chunk (local: a buffer of h), cut off at until as above;
   every argument but the process already checked. */
int rdx_cma_serve(struct rdx_helpers *h, const struct rdx_token *tok,
                  const struct rdx_req *req, uint64_t token_off, void *local,
                  size_t len, uint64_t until, char *why, size_t whylen);

/* ---- /proc (rdx_proc.c) ------------------------------------------------- */

/*
 * Parse a /proc/PID/stat text of n bytes: the state (field 3) and the start
 * time (field 22, clock ticks after boot). comm (field 2) may hold any
 * bytes, spaces and ')' included: the fields start after the last ')'.
 * Returns 0 or -EINVAL.
 */
int rdx_stat_parse(const char *buf, size_t n, char *state, uint64_t *start);

/* Read /proc/PID/stat (pid 0: this process): 0, -ESRCH (no such process)
   or another negative errno. */
int rdx_proc_stat(pid_t pid, char *state, uint64_t *start);

/*
 * Parse the line "NAME:" of a /proc/PID/status text of n bytes: its first
 * count (1..RDX_STATUS_MAX) decimal fields, e.g. "Uid" 4 (real, effective,
 * saved, filesystem) or "Tgid" 1. Returns 0 or -EINVAL.
 */
#define RDX_STATUS_MAX 4
int rdx_status_field(const char *buf, size_t n, const char *name,
                     uint64_t *vals, int count);

/* Read a line of /proc/PID/status (pid 0: this process): 0, -ESRCH or
   another negative errno. */
int rdx_proc_status(pid_t pid, const char *name, uint64_t *vals, int count);

#endif
