/*
 * rdx_server: the server half's checks shared by every kind, then dispatch
 * to the kind that moves the bytes (rdx_cma.c; the verbs kinds next).
 */
#include "rdma/rdx_i.h"
#include "rdma/rdx_helper.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct rdx_server {
  int cma;                    /* 0, or -EOPNOTSUPP with cma_why */
  char cma_why[RDX_ERR_MAX];
  struct rdx_helpers *help;   /* chunk buffers and cma helpers */
};

int rdx_server_create(const struct rdx_server_cfg *cfg,
                      struct rdx_server **out, char *err, size_t errlen)
{
  static const struct rdx_server_cfg defaults = {1 << 20, 16, 120};
  struct rdx_server *s;
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (!out)
    return rdx_reason(err, errlen, -EINVAL, "no place for the server");
  *out = NULL;
  s = calloc(1, sizeof(*s));
  if (!s)
    return rdx_reason(err, errlen, -ENOMEM, "out of memory");
  if (!cfg)
    cfg = &defaults;
  rc = rdx_helpers_create(cfg->buf_size, cfg->nbuf, cfg->timeout_s, &s->help,
                          err, errlen);
  if (rc) {
    free(s);
    return rc;
  }
  s->cma = rdx_cma_server_probe(s->cma_why, sizeof(s->cma_why));
  *out = s;
  return 0;
}

void rdx_server_destroy(struct rdx_server *s)
{
  if (!s)
    return;
  rdx_helpers_destroy(s->help);
  free(s);
}

int rdx_server_serves(const struct rdx_server *s, enum rdx_kind kind,
                      char *why, size_t whylen)
{
  if (!s)
    return rdx_reason(why, whylen, -EINVAL, "no server");
  switch (kind) {
  case RDX_CMA:
    if (s->cma)
      return rdx_reason(why, whylen, s->cma, "%s", s->cma_why);
    return 0;
  case RDX_RC:
  case RDX_DC:
    return rdx_reason(why, whylen, -EOPNOTSUPP,
                      "%s tokens: the server half is not built yet",
                      rdx_kind_name(kind));
  }
  return rdx_reason(why, whylen, -EINVAL, "token kind %d unknown", (int)kind);
}

void *rdx_server_buf_alloc(struct rdx_server *s, size_t len)
{
  return s ? rdx_helpers_buf_alloc(s->help, len) : NULL;
}

void rdx_server_buf_free(struct rdx_server *s, void *buf)
{
  if (s)
    rdx_helpers_buf_free(s->help, buf);
}

static uint64_t clock_ms(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The request's deadline (CLOCK_REALTIME, the client's clock on this host)
 * as a CLOCK_MONOTONIC time in *until (0: none), so that a wait is cut
 * there; -ETIMEDOUT once it has passed.
 */
static int deadline(const struct rdx_req *req, uint64_t *until, char *why,
                    size_t whylen)
{
  uint64_t now;

  *until = 0;
  if (!req->expires_ms)
    return 0;
  now = clock_ms(CLOCK_REALTIME);
  if (now >= req->expires_ms)
    return rdx_reason(why, whylen, -ETIMEDOUT,
                      "the token's deadline (x-amz-rdma-expires) has passed");
  *until = clock_ms(CLOCK_MONOTONIC) + (req->expires_ms - now);
  return 0;
}

/* Token against request, and the kind served: no I/O. */
static int check_request(const struct rdx_server *s,
                         const struct rdx_token *tok,
                         const struct rdx_req *req, char *why, size_t whylen)
{
  int rc;

  if (!s || !tok || !req)
    return rdx_reason(why, whylen, -EINVAL, "no server, token or request");
  rc = rdx_token_check(tok, req->op, req->len, why, whylen);
  if (rc)
    return rc;
  return rdx_server_serves(s, tok->kind, why, whylen);
}

int rdx_serve_check(const struct rdx_server *s, const struct rdx_token *tok,
                    const struct rdx_req *req, char *why, size_t whylen)
{
  uint64_t until;
  int rc = check_request(s, tok, req, why, whylen);

  if (!rc)
    rc = deadline(req, &until, why, whylen);
  if (rc)
    return rc;
  if (tok->kind == RDX_CMA)
    return rdx_cma_check(s->help, tok, req, until, why, whylen);
  return rdx_reason(why, whylen, -EOPNOTSUPP, "%s tokens are not served",
                    rdx_kind_name(tok->kind));
}

int rdx_serve(const struct rdx_server *s, const struct rdx_token *tok,
              const struct rdx_req *req, uint64_t token_off, void *local,
              size_t len, char *why, size_t whylen)
{
  uint64_t until;
  int rc = check_request(s, tok, req, why, whylen);

  if (rc)
    return rc;
  if (!local || len == 0)
    return rdx_reason(why, whylen, -EINVAL, "%s",
                      local ? "empty chunk" : "no local buffer");
  /* rdx_token_check has made req->len <= tok->len (== but for a DC GET) */
  if (token_off >= req->len || (uint64_t)len > req->len - token_off)
    return rdx_reason(why, whylen, -ERANGE,
                      "chunk at %" PRIu64 "+%zu is outside the request's %" PRIu64
                      " bytes",
                      token_off, len, req->len);
  rc = deadline(req, &until, why, whylen);
  if (rc)
    return rc;
  if (tok->kind == RDX_CMA)
    return rdx_cma_serve(s->help, tok, req, token_off, local, len, until,
                         why, whylen);
  return rdx_reason(why, whylen, -EOPNOTSUPP, "%s tokens are not served",
                    rdx_kind_name(tok->kind));
}
