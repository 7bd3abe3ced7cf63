/*
 * rdx_dc_server: the server half of the DC transport, the row of
 * rdx_server.c's kinds table that executes cuObject DC tokens (the
 * 81-character form and NIXL's 115-character one, rdx_token.h) through
 * the generic rdx_serve_check and rdx_serve (rdx_server.h): a GET's chunk
 * is RDMA-WRITten into the client, a PUT's chunk RDMA-READ out of it, from
 * and into the server's chunk buffers (registered once at open), on a DCI
 * addressed per work request (mlx5dv_wr_set_dc_addr) to the token's DCT
 * number, LID/GID and the access key. Each chunk is bounded by
 * RDX_DC_CHUNK_MS and the token's deadline.
 *
 * rdx_serve's errors for a dc token, beyond rdx_server.h's: -EINVAL (the
 * client cannot be reached from this port: a RoCE port and a token without
 * a GID, InfiniBand and LID 0; rdx_serve_check says so first), -EFAULT
 * (the client refused the memory key or range), -ECONNRESET (its DCT does
 * not answer: gone, or a wrong DCT number or access key), -EHOSTUNREACH
 * (no address handle for it), -EIO (flushed or another completion error),
 * -ETIMEDOUT (no completion by the bound: the DCI is destroyed before
 * rdx_serve returns, so nothing touches the buffer after), -EAGAIN (every
 * DCI busy until the bound). A DCI whose transfer failed is destroyed, and
 * a new one made for a later chunk.
 *
 * Devices: rdx_dc_server_set_cfg before rdx_server_create picks the device
 * and the access key (default: the first mlx5 device, port 1, the default
 * GID, RDX_DC_ACCESS_KEY_DEFAULT); without an mlx5 device dc tokens are
 * declined (-EOPNOTSUPP, 501) with the reason, e.g. "dc tokens: no mlx5
 * device (devices here: rxe0)".
 *
 * Untested on hardware (no mlx5 here): its attributes and error mapping
 * are unit-tested (test_rdx_dc_attr), its refusal here (test_rdx_dc_open).
 *
 * DESIGN (threads): check and move run on any thread concurrently. The
 * DCIs are a small pool (at most one per chunk buffer: a move holds a
 * buffer, so no more can be in flight), made lazily, guarded by the
 * kind's mutex; a DCI taken belongs to the moving thread, which posts on
 * it and polls its own CQ without the mutex, then gives it back (or
 * destroys it after a failure). The device, PD and the chunk buffers'
 * registration are immutable from open to close. The configuration set
 * by rdx_dc_server_set_cfg is protected by a mutex of this module (a leaf
 * lock, never held with the pool's).
 */
#ifndef S3R_RDX_DC_SERVER_H
#define S3R_RDX_DC_SERVER_H

#include <stdint.h>

#include "rdma/rdx_rc_client.h" /* struct rdx_rc_dev_cfg */

#define RDX_DC_CHUNK_MS 30000u /* one chunk's bound, as rc's */

/* The device and access key (0: RDX_DC_ACCESS_KEY_DEFAULT) every server
   created after this uses (copied; cfg NULL: the defaults). 0, or -EINVAL
   (more than RDX_RC_DEVS_MAX, a name too long). */
int rdx_dc_server_set_cfg(const struct rdx_rc_dev_cfg *cfg, uint32_t access_key)
    __attribute__((warn_unused_result));

#endif
