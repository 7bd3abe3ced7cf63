/*
 * rdx_server: the server half's checks shared by every kind, then dispatch
 * through the kinds table to the kind that moves the bytes (struct
 * rdx_server_ops, rdx_i.h: rdx_cma.c, rdx_rc_server.c, rdx_dc_server.c).
 */
#include "rdma/rdx_i.h"
#include "rdma/rdx_helper.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "rdma/rdx_reason.h"

/* Every kind this server half is built with: one row per kind. */
static const struct rdx_server_ops *const kinds[] = {
    &rdx_cma_server_ops,
    &rdx_rc_server_ops,
    &rdx_dc_server_ops,
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* kinds[i] in one server, set up at create and immutable after. */
struct kind_slot {
  struct rdx_server_kind *k; /* NULL when the kind cannot be served here */
  int rc;                    /* 0, or why not (-EOPNOTSUPP) with why */
  char why[RDX_ERR_MAX];
};

struct rdx_server {
  struct rdx_helpers *help;      /* chunk buffers and cma helpers */
  struct kind_slot slot[NKINDS]; /* [i]: kinds[i] */
};

static void close_kinds(struct rdx_server *s)
{
  for (size_t i = 0; i < NKINDS; i++)
    if (s->slot[i].k)
      kinds[i]->close(s->slot[i].k);
}

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
  if (rc)
    goto free_s;
  for (size_t i = 0; i < NKINDS; i++) {
    struct kind_slot *sl = &s->slot[i];

    sl->rc = kinds[i]->open(s->help, &sl->k, sl->why, sizeof(sl->why));
    if (sl->rc == -ENOMEM) {
      rc = rdx_reason(err, errlen, -ENOMEM, "%s", sl->why);
      goto close_kinds;
    }
  }
  *out = s;
  return 0;

close_kinds:
  close_kinds(s);
  rdx_helpers_destroy(s->help);
free_s:
  free(s);
  return rc;
}

void rdx_server_destroy(struct rdx_server *s)
{
  if (!s)
    return;
  close_kinds(s);
  rdx_helpers_destroy(s->help);
  free(s);
}

/* The slot of kind, or NULL when this server half is not built with it. */
static const struct kind_slot *slot_of(const struct rdx_server *s,
                                       enum rdx_kind kind)
{
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i]->kind == kind)
      return &s->slot[i];
  return NULL;
}

int rdx_server_serves(const struct rdx_server *s, enum rdx_kind kind,
                      char *why, size_t whylen)
{
  const struct kind_slot *sl;

  if (!s)
    return rdx_reason(why, whylen, -EINVAL, "no server");
  sl = slot_of(s, kind);
  if (sl && sl->rc)
    return rdx_reason(why, whylen, sl->rc, "%s", sl->why);
  if (sl)
    return 0;
  /* the codec names every kind a token can have (rdx_token.h) */
  if (strcmp(rdx_kind_name(kind), "?") == 0)
    return rdx_reason(why, whylen, -EINVAL, "token kind %d unknown",
                      (int)kind);
  return rdx_reason(why, whylen, -EOPNOTSUPP,
                    "%s tokens: the server half is not built yet",
                    rdx_kind_name(kind));
}

struct rdx_server_kind *rdx_server_kind_of(const struct rdx_server *s,
                                           enum rdx_kind kind, char *why,
                                           size_t whylen)
{
  if (rdx_server_serves(s, kind, why, whylen))
    return NULL;
  return slot_of(s, kind)->k;
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
  now = clock_wall_ms();
  if (now >= req->expires_ms)
    return rdx_reason(why, whylen, -ETIMEDOUT,
                      "the token's deadline (x-amz-rdma-expires) has passed");
  *until = clock_mono_ms() + (req->expires_ms - now);
  return 0;
}

/* Token against request, and the kind served: no I/O. *k: the kind. */
static int check_request(const struct rdx_server *s,
                         const struct rdx_token *tok,
                         const struct rdx_req *req,
                         struct rdx_server_kind **k, char *why, size_t whylen)
{
  int rc;

  if (!s || !tok || !req)
    return rdx_reason(why, whylen, -EINVAL, "no server, token or request");
  rc = rdx_token_check(tok, req->op, req->len, why, whylen);
  if (rc)
    return rc;
  rc = rdx_server_serves(s, tok->kind, why, whylen);
  if (rc)
    return rc;
  *k = slot_of(s, tok->kind)->k;
  return 0;
}

int rdx_serve_check(const struct rdx_server *s, const struct rdx_token *tok,
                    const struct rdx_req *req, char *why, size_t whylen)
{
  struct rdx_server_kind *k = NULL; /* (set when check_request is 0) */
  uint64_t until;
  int rc = check_request(s, tok, req, &k, why, whylen);

  if (!rc)
    rc = deadline(req, &until, why, whylen);
  if (rc)
    return rc;
  return k->ops->check(k, tok, req, until, why, whylen);
}

int rdx_serve(const struct rdx_server *s, const struct rdx_token *tok,
              const struct rdx_req *req, uint64_t token_off, void *local,
              size_t len, char *why, size_t whylen)
{
  struct rdx_server_kind *k = NULL;
  uint64_t until;
  int rc = check_request(s, tok, req, &k, why, whylen);

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
  return k->ops->move(k, tok, req, token_off, local, len, until, why, whylen);
}
