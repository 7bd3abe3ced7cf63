/*
 * rdx_i: what the rdma/ modules share and nothing else sees: the two ops
 * tables each kind implements (client half: struct rdx_transport_ops;
 * server half: struct rdx_server_ops), the region layout, each kind's
 * entry points, and the /proc readers. Unit tests include it to reach the
 * parsers.
 *
 * A kind is one file (rdx_cma.c), or one family of files with its own
 * prefix (rdx_rc_*.c, rdx_dc_*.c), holding both halves behind these
 * tables, and includes no other kind's file or header, with one exception:
 * dc builds on rc's verbs layer (rdx_rc_verbs.h: devices, GIDs,
 * registration, completions; struct rdx_rc_dev_cfg), which is meant to
 * become a kind-neutral rdx_verbs. Adding one: its client open in
 * rdx_transport_open (the switch, and auto's order), its struct
 * rdx_server_ops as one row of the kinds
 * table in rdx_server.c, and its declarations below. Generic code never
 * names a kind otherwise. Reasons come from rdx_reason.h.
 */
#ifndef S3R_RDX_I_H
#define S3R_RDX_I_H

#include <stdatomic.h>
#include <stdbool.h>
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
  bool src;      /* a PUT source: servers only read it (rdx_register_src);
                    verbs kinds register it without local or remote write */
  bool dmabuf;   /* a dma-buf's (rdx_register_dmabuf): addr is the I/O
                    virtual address a token names, not ours */
  int fd;        /* dmabuf: the dma-buf, and this segment's offset in it */
  uint64_t fd_off;
  void *priv;    /* the transport's (verbs: its struct ibv_mr *) */
  _Atomic bool live; /* registered: set by its registration (a lazy
                        region's by rdx_region_seg_set, whose caller
                        makes no token for it meanwhile) */
};

struct rdx_region {
  struct rdx_transport *t;
  bool src;      /* rdx_register_src, or a dma-buf a server reads:
                    tokens for RDX_PUT only */
  bool dst;      /* a dma-buf a server writes: tokens for RDX_GET only */
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
  /* Register one segment (fill seg->priv): 0 or a negative errno. A
     seg->src segment needs remote read only (it may be a read-only
     mapping). */
  int (*reg)(struct rdx_transport *t, struct rdx_seg *seg);
  /* Register one segment of a dma-buf (seg->dmabuf): 0 or a negative
     errno. NULL: the kind cannot (rdx_register_dmabuf: -EOPNOTSUPP). */
  int (*reg_dmabuf)(struct rdx_transport *t, struct rdx_seg *seg);
  /* Undo reg or reg_dmabuf. */
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

/*
 * The server half of a kind. rdx_server.c opens every row of its kinds
 * table once per server, then dispatches each token by tok->kind; a kind
 * with no row is declined (-EOPNOTSUPP, "not built yet"). check and move
 * are called with arguments rdx_server.c has already checked: the token
 * against the request (rdx_token_check), the kind served, the request's
 * deadline not passed (until: it on CLOCK_MONOTONIC in ms, 0: none), and
 * for move the chunk within [0, req->len) and local within a chunk buffer.
 * Both run on any thread, concurrently with themselves.
 */
struct rdx_helpers;
struct rdx_server_kind;

struct rdx_server_ops {
  enum rdx_kind kind; /* the tokens it serves */
  /* Can this process serve the kind? 0 and *out, or *out NULL and a
     negative errno with the reason in why: -EOPNOTSUPP (it cannot here:
     the kind is then declined with this errno and why) or -ENOMEM (no
     server is created). h: the server's chunk buffers, every move's local
     side. */
  int (*open)(struct rdx_helpers *h, struct rdx_server_kind **out, char *why,
              size_t whylen);
  /* Would move execute tok for req (the peer may reach the client named)?
     Moves no byte: 0, or as rdx_serve. */
  int (*check)(struct rdx_server_kind *k, const struct rdx_token *tok,
               const struct rdx_req *req, uint64_t until, char *why,
               size_t whylen);
  /* Move one chunk: for RDX_GET write [local, local + len) into the
     client at tok->addr + token_off (the peer's buffer), for RDX_PUT read
     it from there into local. 0, or as rdx_serve. */
  int (*move)(struct rdx_server_kind *k, const struct rdx_token *tok,
              const struct rdx_req *req, uint64_t token_off, void *local,
              size_t len, uint64_t until, char *why, size_t whylen);
  /* Free k (the struct embedding it). */
  void (*close)(struct rdx_server_kind *k);
};

/* Embedded first in each kind's own server struct. */
struct rdx_server_kind {
  const struct rdx_server_ops *ops;
};

/* ---- cma (rdx_cma.c) ---------------------------------------------------- */

/* Open a cma transport for this process: 0, -ENODEV or -ENOMEM (+ err). */
int rdx_cma_open(const struct rdx_params *p, struct rdx_transport **out,
                 char *err, size_t errlen);

/* The server half of cma (process_vm_writev/readv in rdx_helper.h's
   helpers). */
extern const struct rdx_server_ops rdx_cma_server_ops;

/* ---- rc (rdx_rc_client.c, rdx_rc_server.c) ------------------------------ */

/* Open an RC transport on p's devices and GID index (p NULL: the first
   device, port 1, the default GID): rdx_rc_transport_open
   (rdx_rc_client.h) with the configuration p gives. */
int rdx_rc_open(const struct rdx_params *p, struct rdx_transport **out,
                char *err, size_t errlen);

/* The server half of rc (RDMA WRITE and READ on a session's queue pair). */
extern const struct rdx_server_ops rdx_rc_server_ops;

/* ---- dc (rdx_dc_client.c, rdx_dc_server.c) ------------------------------ */

/* Open a DC transport on p's devices, GID index and access key (p NULL:
   the first mlx5 device, port 1, the default GID and key):
   rdx_dc_transport_open (rdx_dc_client.h) with the configuration p gives. */
int rdx_dc_open(const struct rdx_params *p, struct rdx_transport **out,
                char *err, size_t errlen);

/* The server half of dc (RDMA WRITE and READ from a pool of DCIs). */
extern const struct rdx_server_ops rdx_dc_server_ops;

/* ---- shared by the kinds (rdx_transport.c, rdx_server.c) ---------------- */

/* The segment of r holding region offsets [off, off + len): 0 and *seg,
   -EINVAL (len 0), -ERANGE (not inside r), -EXDEV (crosses segments) or
   -ENXIO (a lazy region's segment not registered now). */
int rdx_region_seg_of(const struct rdx_region *r, uint64_t off, uint64_t len,
                      const struct rdx_seg **seg);

/* s's open kind serving tokens of kind, or NULL with the reason in why
   (as rdx_server_serves). For a kind's own entry points (rdx_rc_server.h). */
struct rdx_server_kind *rdx_server_kind_of(const struct rdx_server *s,
                                           enum rdx_kind kind, char *why,
                                           size_t whylen);

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
