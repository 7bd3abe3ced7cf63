/*
 * rdx_kinds: the one list of transports, from which every table of them
 * is made: enum rdx_transport_kind and its names (rdx_transport.h), the
 * open dispatch (rdx_transport.c), the token kind each one's tokens carry,
 * and the config's enum cfg_rdma_transport with its values (config/).
 * A row: X(name as the config and stats say it, the kind's suffix, its
 * open function's prefix, the token kind: 0 for none). No dependency, so
 * that config/ may include it.
 */
#ifndef S3R_RDX_KINDS_H
#define S3R_RDX_KINDS_H

#define RDX_TRANSPORTS(X)                                                      \
  X("off", OFF, off, 0)                                                        \
  X("auto", AUTO, auto, 0)                                                     \
  X("cma", CMA, cma, RDX_CMA)                                                  \
  X("rc", RC, rc, RDX_RC)                                                      \
  X("dc", DC, dc, RDX_DC)

#endif
