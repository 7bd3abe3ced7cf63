/*
 * rdx_dc_client: the client half of the DC transport (mlx5 Dynamically
 * Connected, NVIDIA cuObject's protocol as MinIO AIStor, versitygw and
 * NooBaa serve it): one DCT in RTR, made with the DC access key, memory
 * registered through rdx_register (local write, remote read and write,
 * one MR per segment: a segment is at most RDX_SEG_MAX = the largest DC
 * registration), and the 81-character cuObject token
 * (raddr:rsize:rkey:lid:dctn:has_gid:gid, rdx_token.h) from rdx_token_for.
 *
 * The client posts nothing and has no connect step: a server's DCI
 * reaches the DCT with the token's LID/GID and DCT number and the access
 * key, and RDMA-WRITEs a GET's bytes into the range or RDMA-READs a PUT's
 * out of it. So, as for rc, a client never sees an error of its own; a
 * failed transfer is known only from the server's reply.
 *
 * Built against rdma-core's mlx5dv.h (libmlx5); it runs only on an mlx5
 * device and refuses elsewhere with one line. Untested on hardware: its
 * attributes and token are unit-tested (test_rdx_dc_attr), its refusal
 * here (test_rdx_dc_open).
 *
 * DESIGN (threads): a DC transport is immutable once opened (its DCT, PD
 * and device are only read); rdx_token_for may run on any thread.
 */
#ifndef S3R_RDX_DC_CLIENT_H
#define S3R_RDX_DC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_rc_client.h" /* struct rdx_rc_dev_cfg */
#include "rdma/rdx_transport.h"

/*
 * Open a DC transport on cfg's device (NULL or no names: the first mlx5
 * device, port 1, the default GID) with DCT access key access_key (0:
 * RDX_DC_ACCESS_KEY_DEFAULT). Returns 0 and *out (rdx_transport_close), or
 * with one line in err: -ENODEV (no verbs, no RDMA device, no mlx5 device:
 * "dc: no mlx5 device (devices here: rxe0)", a name that matches none, a
 * device that is not mlx5, port down), -EINVAL (a bad device spec),
 * -ENOMEM, or the errno of a DCT that cannot be made.
 */
int rdx_dc_transport_open(const struct rdx_rc_dev_cfg *cfg, uint32_t access_key,
                          struct rdx_transport **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The DCT number of a DC transport (its tokens' dctn), 0 for any other. */
uint32_t rdx_dc_transport_dctn(const struct rdx_transport *t);

#endif
