/*
 * rdx_rc_wire: the connect step of the RC dialect (elbencho's s3rdma,
 * docs/rdma.md "RC dialect"): the values of its headers, as pure
 * codecs. No I/O, no allocation, no global state; thread-safe. The object
 * request's "rc:" token is rdx_token's.
 *
 *   POST /.s3rdma-rc/connect, empty body
 *     x-amz-rdma-token   the client's queue pair: a QP token (below)
 *     x-amz-rdma-psn     its first packet sequence number (below)
 *   200, empty body
 *     x-amz-rdma-session the session id, 32 lowercase hex (rdx_token.h)
 *     x-amz-rdma-reply   "200:" and the server's QP token
 *     x-amz-rdma-psn     the server's first packet sequence number
 *   (400: bad token, transport or PSN; 500: no queue pair; 503: too many
 *   sessions; no x-amz-rdma-* headers on these)
 *   POST /.s3rdma-rc/disconnect, empty body, x-amz-rdma-session: always 204.
 *
 * The QP token is AMD hipObject's 44-byte RDMA token, written as 88 hex
 * digits, two per byte in byte order, integers little-endian:
 *
 *   offset  size  field
 *        0     1  transport (0 DC, 1 RC; the connect step needs 1)
 *        1     4  qpn       queue pair number
 *        5    16  gid       the port's GID, raw[0] first
 *       21     4  rkey      (0 in the connect step)
 *       25     8  addr      (0 in the connect step)
 *       33     8  len       (0 in the connect step)
 *       41     1  port      the port number
 *       42     2  lid       (0 on RoCE)
 *
 * format() writes lowercase; parse() accepts exactly 88 digits in either
 * case (elbencho's decoder is case-blind), nothing before or after.
 * A PSN is written as exactly 6 lowercase hex digits, 1..0xffffff; parse()
 * takes 1..6 digits in either case and refuses 0 (elbencho's server).
 */
#ifndef S3R_RDX_RC_WIRE_H
#define S3R_RDX_RC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_token.h"

#define RDX_RC_CONNECT_PATH "/.s3rdma-rc/connect"
#define RDX_RC_DISCONNECT_PATH "/.s3rdma-rc/disconnect"
#define RDX_RC_HDR_SESSION "x-amz-rdma-session"
#define RDX_RC_HDR_PSN "x-amz-rdma-psn"

#define RDX_RC_QP_TOKEN_BYTES 44
#define RDX_RC_QP_TOKEN_LEN 88       /* hex digits */
#define RDX_RC_REPLY_LEN (4 + 88)    /* "200:" and a QP token */
#define RDX_RC_PSN_LEN 6
#define RDX_RC_PSN_MAX 0xffffffu
#define RDX_RC_TRANSPORT_DC 0
#define RDX_RC_TRANSPORT_RC 1

struct rdx_rc_qp_token {
  uint8_t transport;
  uint32_t qpn;
  uint8_t gid[16];
  uint32_t rkey;
  uint64_t addr;
  uint64_t len;
  uint8_t port;
  uint16_t lid;
};

/*
 * Write t as 88 lowercase hex digits and a NUL. Returns 88, or -ENOSPC when
 * buf cannot hold them and the NUL (buf then holds "" when len > 0).
 */
int rdx_rc_qp_token_format(const struct rdx_rc_qp_token *t, char *buf,
                           size_t len) __attribute__((warn_unused_result));

/*
 * Parse the n bytes at s (not NUL-terminated, never read past n). Returns 0
 * and *out filled, or -EINVAL (*out zeroed) unless they are exactly 88 hex
 * digits. Any transport value parses; the connect step refuses all but
 * RDX_RC_TRANSPORT_RC.
 */
int rdx_rc_qp_token_parse(const char *s, size_t n, struct rdx_rc_qp_token *out)
    __attribute__((warn_unused_result));

/* The x-amz-rdma-reply of a connect: "200:" and t (RDX_RC_REPLY_LEN). */
int rdx_rc_reply_format(const struct rdx_rc_qp_token *t, char *buf,
                        size_t len) __attribute__((warn_unused_result));
/* Exactly "200:" and a QP token; -EINVAL otherwise (*out zeroed). */
int rdx_rc_reply_parse(const char *s, size_t n, struct rdx_rc_qp_token *out)
    __attribute__((warn_unused_result));

/* psn (1..RDX_RC_PSN_MAX, else -EINVAL) as 6 lowercase hex digits. */
int rdx_rc_psn_format(uint32_t psn, char *buf, size_t len)
    __attribute__((warn_unused_result));
/* 1..6 hex digits in either case, not 0; -EINVAL otherwise (*out 0). */
int rdx_rc_psn_parse(const char *s, size_t n, uint32_t *out)
    __attribute__((warn_unused_result));

/* A session id as 32 lowercase hex digits. */
int rdx_rc_session_format(const uint8_t id[RDX_RC_SESSION_BYTES], char *buf,
                          size_t len) __attribute__((warn_unused_result));
/* Exactly 32 lowercase hex digits; -EINVAL otherwise (id zeroed). */
int rdx_rc_session_parse(const char *s, size_t n,
                         uint8_t id[RDX_RC_SESSION_BYTES])
    __attribute__((warn_unused_result));

#endif
