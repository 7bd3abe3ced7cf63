/*
 * rdx_token: the RDMA token codec (x-amz-rdma-token values) and the server
 * half's checks on a parsed token. Pure functions: no I/O, no allocation, no
 * clock, no global state; thread-safe.
 *
 * A token grants the server access to a range of the client's memory. Three
 * forms, one header value each, ASCII, fixed field order, nothing before or
 * after. The forms cannot be confused: a DC token starts with a hex digit,
 * an RC token with "rc:" and ours with "s3r1:" ('r' and 's' are not hex
 * digits).
 *
 * 1. cuObject DC (NVIDIA cuObject's CUOBJ_PROTO_RDMA_DC_V1 descriptor, as
 *    sent by cuObject clients and executed by MinIO AIStor, versitygw,
 *    NooBaa), exactly 81 characters of lowercase hex:
 *
 *      raddr:rsize:rkey:lid:dctn:has_gid:gid
 *      printf("%016" PRIx64 ":%08x:%08x:%04x:%06x:%01x:", ...) followed by
 *      the 16 GID bytes as %02x each, raw[0] first
 *
 *      raddr    16 hex  buffer address (64-bit)
 *      rsize     8 hex  bytes, 1..RDX_DC_LEN_MAX (one registration is at
 *                       most 4 GiB - 64 KiB)
 *      rkey      8 hex  memory key
 *      lid       4 hex  the client port's LID (0 on RoCE)
 *      dctn      6 hex  the client's DC target number (24-bit QP number)
 *      has_gid   1 hex  "0" or "1"
 *      gid      32 hex  the client port's GID, byte by byte from raw[0]
 *
 *    e.g. 000073967e5ff000:00400000:01f2e973:0000:007a03:1:00000000000000000000ffff0f0f0fdf
 *    DC tokens carry no operation: the request's method says GET or PUT.
 *    Where this layout was confirmed: see the comment over dc_format() in
 *    rdx_token.c.
 *
 *    The parser also accepts the 115-character form some clients send (the
 *    "NIXL form"): the 81 characters, then ":" xaddr ":" xlen, 16 lowercase
 *    hex each: the buffer and byte count of this transfer, which must lie
 *    inside [raddr, raddr + rsize) (dc.has_xfer). Our client never sends it
 *    (it leaves has_xfer false, and format() writes 81 characters); format()
 *    writes the 115 only for a token parsed from them.
 *
 * 2. CMA, same host (the server calls process_vm_writev/readv on the
 *    client), 72 characters, every number fixed-width lowercase hex:
 *
 *      "s3r1:cma:" op ":" pid ":" start ":" addr ":" len
 *      op     "get" (the server writes into the client's memory) or
 *             "put" (the server reads from it)
 *      pid     8 hex  the client's pid, 1..7fffffff
 *      start  16 hex  field 22 of /proc/PID/stat (starttime, clock ticks
 *                     after boot), so a recycled pid is detected
 *      addr   16 hex  buffer address in the client
 *      len    16 hex  bytes, 1..RDX_LEN_MAX
 *
 *    e.g. s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:0000000000100000
 *
 * 3. RC, elbencho's s3rdma dialect (docs/rdma.md, "RC dialect"):
 *    the client first connects an RC queue pair to the server's through
 *    POST /.s3rdma-rc/connect (rdma/rdx_rc_wire.h), which names a session;
 *    the object request then names that session and the client's memory:
 *
 *      "rc:" session ":" addr ":" size ":" rkey
 *      session  32 hex  the session id from x-amz-rdma-session, 16 bytes,
 *                       lowercase only (servers look it up as a string)
 *      addr   1..16 hex buffer address
 *      size   1..16 hex bytes, 1..RDX_LEN_MAX
 *      rkey    1..8 hex memory key
 *
 *    format() writes what elbencho's client writes: addr as 16 digits, size
 *    as at least 8, rkey as 8, lowercase. parse() accepts what elbencho's
 *    server accepts, short of its strtoull quirks: addr, size and rkey in
 *    any number of digits up to the width and in either case (no sign, no
 *    blanks, no "0x"). So an RC token may have more than one text: parse()
 *    of format(t) is t, and format() of a parsed token is the canonical
 *    text.
 *
 *    e.g. rc:0123456789abcdef0123456789abcdef:00007f3a5c000000:00400000:0001a2b3
 *    RC tokens carry no operation: the request's method says GET or PUT.
 *
 * Every form: the range [addr, addr + len) must not wrap past 2^64 (its last
 * byte, addr + len - 1, is at most 0xffffffffffffffff). Another version
 * ("s3r2:...") or kind is rejected, not guessed at.
 *
 * DC and CMA tokens have exactly one text: rdx_token_parse() accepts only
 * what rdx_token_format() writes, so parse(s) == t implies format(t) == s.
 * For RC, format(parse(s)) is the canonical text of s (see above).
 *
 * Never log a whole token (it grants access to memory); log the kind and
 * rdx_token_check()'s reason.
 */
#ifndef S3R_RDX_TOKEN_H
#define S3R_RDX_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A buffer this size holds any token and its NUL. */
#define RDX_TOKEN_MAX 128
/* Token lengths without the NUL: DC, DC in the NIXL form, CMA. */
#define RDX_DC_TOKEN_LEN 81
#define RDX_DC_NIXL_TOKEN_LEN 115
#define RDX_CMA_TOKEN_LEN 72
/* An RC session id: bytes, and hex digits in a token or header. */
#define RDX_RC_SESSION_BYTES 16
#define RDX_RC_SESSION_LEN 32

/* Largest DC registration: 4 GiB - 64 KiB (NVIDIA CUOBJ_MAX_MEMORY_REG_SIZE). */
#define RDX_DC_LEN_MAX 0xffff0000ULL
/* Largest CMA/RC token: 5 TiB, the most one S3 request can move (a GET of
   a whole object of the largest size S3 allows). */
#define RDX_LEN_MAX (5ULL << 40)
/* Largest CMA pid (pid_t is a positive int). */
#define RDX_PID_MAX 0x7fffffff

/* Zero is no kind and no operation, so a zeroed token is invalid. */
enum rdx_kind {
  RDX_DC = 1,
  RDX_RC,
  RDX_CMA,
};

enum rdx_op {
  RDX_OP_NONE = 0, /* DC tokens: the request's method decides */
  RDX_GET,         /* the server writes into the client's memory */
  RDX_PUT,         /* the server reads from the client's memory */
};

struct rdx_dc {
  uint32_t rkey;
  uint16_t lid;
  uint32_t dctn;    /* 24 bits */
  bool has_gid;
  uint8_t gid[16];  /* raw[0] first; kept as given even when !has_gid */
  bool has_xfer;    /* the NIXL form: this transfer's range follows */
  uint64_t xfer_addr; /* inside [addr, addr + len) */
  uint64_t xfer_len;  /* 1.., xfer_addr + xfer_len <= addr + len */
};

struct rdx_rc {
  uint8_t session[RDX_RC_SESSION_BYTES]; /* the connect step's session id */
  uint32_t rkey;
};

struct rdx_cma {
  int32_t pid;         /* 1..RDX_PID_MAX */
  uint64_t start_time; /* /proc/PID/stat field 22 */
};

struct rdx_token {
  enum rdx_kind kind;
  enum rdx_op op;   /* RDX_OP_NONE for DC and RC; RDX_GET or RDX_PUT (CMA) */
  uint64_t addr;    /* the client's buffer */
  uint64_t len;     /* its length in bytes (DC: rsize; RC: size) */
  union {
    struct rdx_dc dc;
    struct rdx_rc rc;
    struct rdx_cma cma;
  };
};

/* "dc", "rc", "cma" / "get", "put", "none"; "?" for anything else. */
const char *rdx_kind_name(enum rdx_kind kind);
const char *rdx_op_name(enum rdx_op op);

/*
 * Is t a token format() can write and parse() can return? Kind and op known
 * (DC, RC: RDX_OP_NONE; CMA: GET or PUT), len in 1..the kind's maximum,
 * [addr, addr + len) not wrapping, dctn < 2^24, a DC transfer range (when
 * has_xfer) of 1 or more bytes inside [addr, addr + len), CMA pid in
 * 1..RDX_PID_MAX.
 * Returns 0, or -EINVAL with a one-line reason in why (when why is not NULL
 * and whylen > 0; always NUL-terminated, truncated to whylen).
 */
int rdx_token_validate(const struct rdx_token *t, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/*
 * Write t's text and a NUL into buf. Returns the text's length (without the
 * NUL), -EINVAL when t is not valid (rdx_token_validate), or -ENOSPC when
 * buf cannot hold the text and its NUL (RDX_TOKEN_MAX always can). On error,
 * buf holds "" when len > 0.
 */
int rdx_token_format(const struct rdx_token *t, char *buf, size_t len)
    __attribute__((warn_unused_result));

/*
 * Parse the n bytes at s (a header value: s need not be NUL-terminated and
 * is never read past n; a NUL among the n bytes is an error). Returns 0 and
 * *out filled (zeroed first, padding included), or -EINVAL for anything
 * that is not exactly one valid token as described above; *out is then
 * zeroed.
 */
int rdx_token_parse(const char *s, size_t n, struct rdx_token *out)
    __attribute__((warn_unused_result));

/*
 * The server half: may the server execute token t for a request of
 * operation op that moves len bytes? len is the exact byte count of the
 * transfer: for a GET, the bytes of the range (or of the whole object) the
 * server will send; for a PUT or UploadPart, the bytes the server will read
 * (where the request declares no length of its own, the server takes the
 * token's, and this check then guards the rest).
 *
 * The rule (a token is scoped to exactly the request's range):
 *  - t is valid (rdx_token_validate) and executable: DC: a non-zero dctn,
 *    and a GID or a LID to reach the client by;           else -EINVAL
 *  - op is RDX_GET or RDX_PUT;                             else -EINVAL
 *  - CMA: t->op == op (a put token never serves a GET, nor a get token a
 *    PUT);                                                 else -EPERM
 *  - len >= 1 (a request that moves nothing needs no token) and the
 *    token's length equals len (a DC token with has_xfer: xfer_len, else
 *    t->len);                                              else -EPERM
 *    with one exception, for cuObject clients whose DC or RC token
 *    describes the whole buffer they registered (their GetObject buffer may
 *    be larger than the object; elbencho's server writes min(range, size)):
 *    a DC or RC token on a GET may be longer than len; the server then
 *    writes len bytes at the token's address and nothing past them.
 *
 * Returns 0, or the negative errno above with a one-line reason in why
 * (same rules as rdx_token_validate). The reason names fields and numbers,
 * never the whole token.
 */
int rdx_token_check(const struct rdx_token *t, enum rdx_op op, uint64_t len,
                    char *why, size_t whylen)
    __attribute__((warn_unused_result));

#endif
