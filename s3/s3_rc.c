/* s3_rc: the RC dialect's connect and disconnect POSTs (see s3_rc.h). */
#include "s3/s3_rc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_i.h"

#define RC_CONNECT_PATH "/.s3rdma-rc/connect"
#define RC_DISCONNECT_PATH "/.s3rdma-rc/disconnect"

/* Copy v into dst of cap bytes: false when absent, empty or too long. */
static bool copy_value(char *dst, size_t cap, const char *v)
{
  size_t n = v ? strlen(v) : 0;

  if (!n || n >= cap)
    return false;
  memcpy(dst, v, n + 1);
  return true;
}

int s3_rc_connect_outcome(int rc, long status, const char *session,
                          const char *reply, const char *psn,
                          struct s3_rc_reply *out)
{
  memset(out, 0, sizeof(*out));
  if (status == 501 || status == 505)
    return -EPROTONOSUPPORT; /* a gateway that serves no rc, say */
  if (status >= 500 || status == 408 || status == 429)
    return -EAGAIN;
  if (status >= 300 || (status >= 200 && rc == 0 && status != 200))
    return -EPROTONOSUPPORT;
  if (status < 200)
    return rc ? rc : -EPROTO; /* no HTTP reply (or 1xx: nonsense) */
  if (rc)
    return rc; /* a 200 whose body or headers broke the transfer */
  if (!copy_value(out->session, sizeof(out->session), session) ||
      !copy_value(out->reply, sizeof(out->reply), reply) ||
      !copy_value(out->psn, sizeof(out->psn), psn)) {
    memset(out, 0, sizeof(*out));
    return -EPROTONOSUPPORT;
  }
  return 0;
}

/* A POST to path with no bucket, no body, not retried. */
static struct s3_req *rc_post(struct s3_client *c, int ep, const char *path,
                              unsigned timeout_ms)
{
  /* the key only names it in log lines; the path is what is sent */
  struct s3_req *r = s3_req_create(c, "POST", NULL, path + 1);

  if (!r)
    return NULL;
  r->path = strdup(path);
  if (!r->path) {
    s3_req_destroy(r);
    return NULL;
  }
  s3_req_set_idempotent(r, false);
  if (ep >= 0)
    s3_req_set_endpoint(r, ep, true);
  if (timeout_ms)
    s3_req_set_timeout(r, timeout_ms);
  return r;
}

int s3_rc_connect(struct s3_client *c, int ep, const char *token,
                  const char *psn, unsigned timeout_ms,
                  struct s3_rc_reply *out)
{
  struct s3_req *r = rc_post(c, ep, RC_CONNECT_PATH, timeout_ms);
  int rc;

  memset(out, 0, sizeof(*out));
  if (!r)
    return -ENOMEM;
  /* the dialect's header, whatever rdma.token_header names for objects */
  rc = s3_req_add_header(r, "x-amz-rdma-token", token);
  if (!rc)
    rc = s3_req_add_header(r, "x-amz-rdma-psn", psn);
  if (rc) {
    s3_req_destroy(r);
    return rc;
  }
  rc = s3_ops_run(r);
  rc = s3_rc_connect_outcome(rc, s3_req_status(r),
                             s3_req_header(r, "x-amz-rdma-session"),
                             s3_req_header(r, "x-amz-rdma-reply"),
                             s3_req_header(r, "x-amz-rdma-psn"), out);
  s3_req_destroy(r);
  return rc;
}

int s3_rc_disconnect(struct s3_client *c, int ep, const char *session,
                     unsigned timeout_ms)
{
  struct s3_req *r = rc_post(c, ep, RC_DISCONNECT_PATH, timeout_ms);
  long status;
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_req_add_header(r, "x-amz-rdma-session", session);
  if (!rc)
    rc = s3_ops_run(r);
  status = s3_req_status(r);
  s3_req_destroy(r);
  if (status >= 200 && status < 300)
    return 0;
  return rc ? rc : -EPROTO;
}
