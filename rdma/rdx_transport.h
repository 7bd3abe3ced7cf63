/*
 * rdx_transport: the client half of the data plane. A transport registers
 * memory that a server may write into (GET) or read from (PUT), and writes
 * tokens (x-amz-rdma-token values, see rdx_token.h) scoped to exactly one
 * request's range and operation.
 *
 * Kinds:
 *   cma  same host: the server calls process_vm_writev/readv on this
 *        process. Registration is bookkeeping only; the token names this
 *        process's pid and start time (/proc/self/stat field 22). The
 *        server makes those calls as the requesting user with no
 *        CAP_SYS_PTRACE, so the kernel's ptrace rules must let it in:
 *        opening cma gives up this thread's CAP_SYS_PTRACE (open it on the
 *        main thread: the kernel checks the thread-group leader) and,
 *        under Yama ptrace_scope 1, names any process as a permitted
 *        tracer (PR_SET_PTRACER_ANY: the scope-0 rules for this process).
 *        The process must stay dumpable and keep the uid and gid (all
 *        three) of the user it connects as.
 *   rc   verbs RC (any device, soft-RoCE included), elbencho's s3rdma
 *        dialect (rdx_rc_client.h): a session per request in flight,
 *        connected by an HTTP step the caller makes; rdx_token_for
 *        answers -ENOTCONN for it (tokens come from rdx_rc_token_for).
 *   dc   mlx5 DC, NVIDIA cuObject's protocol (rdx_dc_client.h): a DCT in
 *        RTR made with rdx_params.dc_access_key (0: the default below),
 *        one MR per segment, and the 81-character cuObject token
 *        (raddr:rsize:rkey:lid:dctn:has_gid:gid, rdx_token.h) from
 *        rdx_token_for; the server's DCI moves the bytes, the client posts
 *        nothing. Needs an mlx5 device: elsewhere -ENODEV with one line
 *        ("no RDMA device ...", "dc: no mlx5 device (devices here:
 *        rxe0)"). Built and unit-tested for its format and state
 *        transitions only: untested on hardware.
 *
 * Registration is transport-independent: memory is registered as a region
 * cut into segments of at most RDX_SEG_MAX bytes (4 GiB - 64 KiB, the
 * largest DC registration) whatever the kind, and a token's range must lie
 * within one segment, so code that works with cma works unchanged with dc.
 * Segment i of a region covers region offsets [i * seg_len, (i + 1) *
 * seg_len) (the last one shorter), where seg_len is the largest multiple of
 * the caller's unit not above RDX_SEG_MAX: register a page-cache arena of
 * fixed-size chunks with unit = the chunk size, and no chunk straddles a
 * segment.
 *
 * A token cannot be revoked by cma (the server needs nothing from us to
 * use it) and, for verbs kinds, only by deregistering its segment: memory
 * named by a token handed to a server must not be reused for anything else
 * until that request has completed (or failed for good: a timed-out GET may
 * still be written by a slow server).
 *
 * DESIGN (threads): a transport and a region are immutable once opened or
 * registered. rdx_token_for() may run on any thread, concurrently with
 * itself and with register/unregister of other regions; a region must not
 * be unregistered while another thread makes a token for it. Nothing here
 * logs: errors come back as a negative errno and, where an err buffer is
 * taken, a one-line reason.
 */
#ifndef S3R_RDX_TRANSPORT_H
#define S3R_RDX_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_kinds.h"
#include "rdma/rdx_token.h"

/* Largest segment of a registration: the largest DC registration. */
#define RDX_SEG_MAX RDX_DC_LEN_MAX
/* The DC access key cuObject clients and servers use unless told. */
#define RDX_DC_ACCESS_KEY_DEFAULT 0xffeeddccu
/* An err/why buffer of this size holds every message of this module. */
#define RDX_ERR_MAX 256

/* The transports of rdx_kinds.h, in its order (as config's enum
   cfg_rdma_transport, made from the same list). */
enum rdx_transport_kind {
#define X(name, up, low, tok) RDX_TRANSPORT_##up,
  RDX_TRANSPORTS(X)
#undef X
  RDX_TRANSPORT_KINDS
};

struct rdx_params {
  /* The S3 endpoint runs on this host (its address is a local one): only
     then does auto consider cma. An explicit cma ignores it. */
  bool endpoint_local;
  /* dc: the DCT access key; 0 means RDX_DC_ACCESS_KEY_DEFAULT. */
  uint32_t dc_access_key;
  /* rc and dc: the devices to use, names (mlx5_0, rxe0) or IP addresses,
     separated by ';', ',' or blanks (NULL: the first device there is; the
     first spec is used today); the port's GID index when gid_given, else
     the RoCE v2 IPv4-mapped one (a zeroed struct means: defaults). */
  const char *devices;
  bool gid_given;
  uint8_t gid_index;
  /* Only find out whether the kind can run (a mount before it forks):
     nothing the process keeps is changed (cma keeps CAP_SYS_PTRACE,
     which the daemon's fd taker needs on a thread started before the
     real open, fs/direct/fsx_direct.h). */
  bool probe;
};

struct rdx_transport;
struct rdx_region;

/* "off", "auto", "cma", "rc", "dc"; "?" for anything else. */
const char *rdx_transport_kind_name(enum rdx_transport_kind kind);
/* The token kind a transport's tokens carry (enum rdx_kind); 0 for off,
   auto and anything else. */
int rdx_transport_token_kind(enum rdx_transport_kind kind);

/*
 * Open a transport of the given kind. p may be NULL (all defaults). auto
 * picks the first kind that opens: dc (an mlx5 device), then rc (any verbs
 * device), then cma when p->endpoint_local; on success err then says why
 * the kinds before it were passed over ("" for dc). Note that auto takes
 * rc on a host with any verbs device even when the endpoint is local and
 * speaks cma (the order the issue sets: a real NIC first); whether the
 * server speaks rc is known only at the first connect step, and a refusal
 * leaves the mount on HTTP bodies (fs/plane/fsx_rdma_rc.c).
 * Returns 0 and *out (free with rdx_transport_close), or, with *out NULL
 * and a one-line reason in err (always NUL-terminated when errlen > 0):
 *   -ENODEV  the kind cannot run here: off, no RDMA device, /proc or
 *            process_vm_readv missing, auto found nothing (the caller uses
 *            HTTP bodies; under auto that is one log line, not an error)
 *   -ENODEV  dc: no mlx5 device (another verbs device is not enough)
 *   -EINVAL  unknown kind, out NULL
 *   -ENOMEM
 */
int rdx_transport_open(enum rdx_transport_kind kind,
                       const struct rdx_params *p, struct rdx_transport **out,
                       char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The kind actually opened (never off or auto). */
enum rdx_transport_kind rdx_transport_kind(const struct rdx_transport *t);

/* Close t; NULL does nothing. Every region must be unregistered first. */
void rdx_transport_close(struct rdx_transport *t);

/*
 * Register [base, base + len) with t, in segments of seg_len = the largest
 * multiple of unit not above RDX_SEG_MAX (unit 0 or 1: RDX_SEG_MAX). cma
 * does not touch the memory; verbs kinds pin it. Returns 0 and *out (free
 * with rdx_unregister), or -EINVAL (NULL t/base/out, len 0, unit over
 * RDX_SEG_MAX, the range wraps), -ENOMEM, or a verbs registration's error.
 */
int rdx_register(struct rdx_transport *t, void *base, size_t len, size_t unit,
                 struct rdx_region **out) __attribute__((warn_unused_result));

/*
 * As rdx_register, for memory servers only read: the source of PUTs.
 * Verbs kinds register it for remote read only, without local write, so
 * it may be a read-only mapping (a PROT_READ mmap of a file: a pin for
 * writing would fail with EFAULT). Tokens for it: RDX_PUT only (RDX_GET:
 * -EACCES).
 */
int rdx_register_src(struct rdx_transport *t, const void *base, size_t len,
                     size_t unit, struct rdx_region **out)
    __attribute__((warn_unused_result));

/*
 * As rdx_register, for device memory exported as a dma-buf (GPUDirect:
 * cuMemGetHandleForAddressRange): bytes [0, len) of dma-buf fd, named in
 * tokens by the I/O virtual addresses [iova, iova + len) (any nonzero
 * value: the NIC translates it, this process never maps the memory). fd
 * is not kept (the registration holds the dma-buf). Verbs kinds only
 * (ibv_reg_dmabuf_mr): for local and remote write, tokens RDX_GET only;
 * with src, for remote read only (a PUT's source), tokens RDX_PUT only
 * (either way the other is -EACCES). Returns 0 and *out, or
 * -EOPNOTSUPP (the kind cannot: cma; rdx_transport_dmabuf says so
 * beforehand), -EINVAL, -ENOMEM, or the registration's error (soft-RoCE
 * has none: -EOPNOTSUPP or another errno from the provider).
 */
int rdx_register_dmabuf(struct rdx_transport *t, int fd, uint64_t iova,
                        size_t len, bool src, struct rdx_region **out)
    __attribute__((warn_unused_result));
/* Can t's kind register dma-bufs at all (rc, dc)? */
bool rdx_transport_dmabuf(const struct rdx_transport *t);

/*
 * As rdx_register, the segments seg_len long (not above RDX_SEG_MAX) and
 * none registered: rdx_region_seg_set registers each as the memory comes
 * to be used, and drops it before the memory goes (a token for a segment
 * not registered: -ENXIO). For memory used a segment at a time (the page
 * cache: verbs kinds pin only what is in use).
 */
int rdx_register_lazy(struct rdx_transport *t, void *base, size_t len,
                      size_t seg_len, struct rdx_region **out)
    __attribute__((warn_unused_result));
/*
 * Register (on) or unregister the segments of a lazy region covering
 * region offsets [off, off + len) (off at a segment's start; len whole
 * segments, or to the region's end). No token for them may be in the
 * making meanwhile, nor a server touching them after off. 0, -EINVAL, or
 * a registration's error (the segments before the failing one stay
 * registered).
 */
int rdx_region_seg_set(struct rdx_region *r, uint64_t off, uint64_t len,
                       bool on);
/* Bytes of r registered now. */
uint64_t rdx_region_live_bytes(const struct rdx_region *r);

/* Release a region; NULL does nothing. Tokens for it must be finished. */
void rdx_unregister(struct rdx_region *r);

/* The region's length, its segment length, and how many segments. */
size_t rdx_region_len(const struct rdx_region *r);
size_t rdx_region_seg_len(const struct rdx_region *r);
size_t rdx_region_nseg(const struct rdx_region *r);

/*
 * Write the token for region offsets [off, off + len) and operation op
 * (RDX_GET: the server writes there; RDX_PUT: it reads from there) into
 * buf, NUL-terminated. The token grants exactly that range and operation:
 * make it for exactly the bytes the request will move (for a ranged GET,
 * clip to the object's size: the server refuses a token longer than what
 * it sends).
 * Returns the token's length (without the NUL), or:
 *   -EINVAL  NULL t/r, len 0, op not RDX_GET/RDX_PUT, r not registered
 *            with t
 *   -EACCES  RDX_GET on a region of rdx_register_src
 *   -ERANGE  [off, off + len) not inside the region
 *   -EXDEV   the range crosses a segment boundary (split it, or use HTTP)
 *   -ENXIO   its segment of a lazy region is not registered now
 *   -ENOSPC  buf cannot hold the token (RDX_TOKEN_MAX always can)
 *   -ECHILD  cma: called in a child forked after rdx_transport_open (the
 *            token would name the parent)
 * On error buf holds "" when buflen > 0.
 */
int rdx_token_for(struct rdx_transport *t, const struct rdx_region *r,
                  uint64_t off, uint64_t len, enum rdx_op op, char *buf,
                  size_t buflen) __attribute__((warn_unused_result));

#endif
