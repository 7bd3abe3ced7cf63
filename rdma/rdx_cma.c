/*
 * rdx_cma: the same-host transport, both halves. The client's token names
 * its pid and start time; the server moves bytes with process_vm_writev
 * (GET) or process_vm_readv (PUT) on that pid, after checking that the pid
 * is still that process and a whole process (a pidfd held across the
 * transfer), in a helper process holding the requesting peer's credentials
 * (rdx_helper.h): whether the peer may reach the process is the kernel's
 * decision, at each call. Refusals name the rule broken; pids, uids, start
 * times and addresses go to the log (info), never to the client.
 *
 * The client half is struct rdx_transport_ops (opened by rdx_cma_open), the
 * server half struct rdx_server_ops (rdx_cma_server_ops); both in rdx_i.h.
 */
#include "rdma/rdx_i.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/capability.h>

#include "common/slog.h"
#include "rdma/rdx_helper.h"
#include "rdma/rdx_reason.h"

#define PTRACE_SCOPE "/proc/sys/kernel/yama/ptrace_scope"
#define SUID_DUMPABLE "/proc/sys/fs/suid_dumpable"

/* An integer sysctl under /proc/sys: its value, or -1 when absent. */
static int sysctl_int(const char *path)
{
  FILE *f = fopen(path, "re");
  int v = -1;

  if (!f)
    return -1;
  if (fscanf(f, "%d", &v) != 1)
    v = -1;
  fclose(f);
  return v;
}

/* ---- client ------------------------------------------------------------- */

struct cma {
  struct rdx_transport base; /* first: the ops see a struct rdx_transport */
  pid_t pid;                 /* getpid() at open */
  uint64_t start;            /* our /proc/self/stat field 22 */
};

static int cma_reg(struct rdx_transport *t, struct rdx_seg *seg)
{
  return 0; /* bookkeeping only: rdx_register keeps the segments */
}

static void cma_unreg(struct rdx_transport *t, struct rdx_seg *seg)
{
}

static int cma_token(struct rdx_transport *t, const struct rdx_seg *seg,
                     uint64_t addr, uint64_t len, enum rdx_op op,
                     struct rdx_token *tok)
{
  struct cma *c = (struct cma *)t;

  if (getpid() != c->pid)
    return -ECHILD;
  tok->kind = RDX_CMA;
  tok->op = op;
  tok->addr = addr;
  tok->len = len;
  tok->cma.pid = (int32_t)c->pid;
  tok->cma.start_time = c->start;
  return 0;
}

static void cma_close(struct rdx_transport *t)
{
  free(t);
}

static const struct rdx_transport_ops cma_ops = {
    .reg = cma_reg,
    .unreg = cma_unreg,
    .token = cma_token,
    .close = cma_close,
};

/* Clear CAP_SYS_PTRACE from this thread's capability sets: 0 or -errno. */
static int drop_cap_sys_ptrace(void)
{
  struct __user_cap_header_struct hd = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct cap[2];

  if (syscall(SYS_capget, &hd, cap))
    return -errno;
  if (!((cap[0].permitted | cap[0].effective | cap[0].inheritable) >>
            CAP_SYS_PTRACE & 1))
    return 0;
  cap[0].permitted &= ~(1u << CAP_SYS_PTRACE);
  cap[0].effective &= ~(1u << CAP_SYS_PTRACE);
  cap[0].inheritable &= ~(1u << CAP_SYS_PTRACE);
  return syscall(SYS_capset, &hd, cap) ? -errno : 0;
}

int rdx_cma_open(const struct rdx_params *p, struct rdx_transport **out,
                 char *err, size_t errlen)
{
  struct cma *c;
  char probe = 0, copy = 1;
  struct iovec l = {&copy, 1}, r = {&probe, 1};
  uint64_t start;
  int rc;

  *out = NULL;
  rc = rdx_proc_stat(0, NULL, &start);
  if (rc)
    return rdx_reason(err, errlen, -ENODEV,
                      "cma: cannot read the start time in /proc/self/stat: %s",
                      strerror(-rc));
  /* A kernel without the call (CONFIG_CROSS_MEMORY_ATTACH off) has no cma
     at all; a seccomp filter refusing it here may not bind the server. */
  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) < 0 && errno == ENOSYS)
    return rdx_reason(err, errlen, -ENODEV,
                      "cma: this kernel has no process_vm_readv");
  /* Yama's scope 1 lets only ancestors reach us, and the server is none:
     name any process as our tracer, which leaves the kernel's ordinary
     rules (same uid and gid, dumpable), as under scope 0 */
  if (sysctl_int(PTRACE_SCOPE) == 1 &&
      prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0))
    return rdx_reason(err, errlen, -ENODEV,
                      "cma: yama ptrace_scope 1 and PR_SET_PTRACER failed: %s",
                      strerror(errno));
  /* the server reaches us as our uid without CAP_SYS_PTRACE, and the
     kernel lets it only if our capabilities are a subset of its own: a
     root client gives up CAP_SYS_PTRACE, which it has no use for */
  rc = p && p->probe ? 0 : drop_cap_sys_ptrace();
  if (rc)
    return rdx_reason(err, errlen, -ENODEV,
                      "cma: cannot give up CAP_SYS_PTRACE: %s", strerror(-rc));
  c = calloc(1, sizeof(*c));
  if (!c)
    return rdx_reason(err, errlen, -ENOMEM, "cma: out of memory");
  c->base.ops = &cma_ops;
  c->base.kind = RDX_TRANSPORT_CMA;
  c->pid = getpid();
  c->start = start;
  *out = &c->base;
  return 0;
}

/* ---- server ------------------------------------------------------------- */

struct cma_server {
  struct rdx_server_kind base; /* first: the ops see a struct rdx_server_kind */
  struct rdx_helpers *h;       /* the server's: buffers and helpers */
};

/* Can this process reach others with process_vm_*? 0, or -EOPNOTSUPP. */
static int server_probe(char *why, size_t whylen)
{
  char probe = 0, copy = 1;
  struct iovec l = {&copy, 1}, r = {&probe, 1};
  int scope = sysctl_int(PTRACE_SCOPE);

  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1)
    return rdx_reason(why, whylen, -EOPNOTSUPP, "cma: process_vm_readv: %s",
                      strerror(errno));
  /* the calls run without capabilities (rdx_helper.h): from scope 2 on,
     Yama lets no such process reach another */
  if (scope >= 2)
    return rdx_reason(why, whylen, -EOPNOTSUPP,
                      "cma: yama ptrace_scope is %d: only CAP_SYS_PTRACE may "
                      "reach another process, and cma runs without it",
                      scope);
  /* a helper's copy of this process's memory would be traceable by the
     peer for a moment after it takes the peer's uid */
  if (sysctl_int(SUID_DUMPABLE) == 1)
    return rdx_reason(why, whylen, -EOPNOTSUPP,
                      "cma: fs.suid_dumpable is 1 (debug): set it to 0 or 2 "
                      "to serve cma");
  return 0;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

/* Has the process behind pidfd exited (a zombie counts)? */
static bool exited(int pidfd)
{
  struct pollfd p = {.fd = pidfd, .events = POLLIN};

  return poll(&p, 1, 0) > 0;
}

/*
 * A failed move as rdx_serve's errno and reason. moved: bytes of this
 * chunk moved before it failed.
 */
static int move_failed(int rc, const struct rdx_token *tok,
                       const struct rdx_req *req, uint64_t raddr, size_t moved,
                       size_t len, char *why, size_t whylen)
{
  switch (rc) {
  case -EPERM:
  case -EACCES:
    log_info("cma: the kernel refuses uid %" PRId64 " gid %" PRId64
             " access to process %d",
             req->peer_uid, req->peer_gid, (int)tok->cma.pid);
    return rdx_reason(why, whylen, -EACCES,
                      "cma: the kernel does not let the requesting user reach "
                      "the token's process (ptrace rules: same uid and gid, "
                      "dumpable, Yama)");
  case -ENOSYS:
    return rdx_reason(why, whylen, -EOPNOTSUPP, "cma: no process_vm_* here");
  case -ESRCH:
    return rdx_reason(why, whylen, -ESRCH, "cma: the token's process has exited");
  case -EFAULT:
    log_info("cma: process %d: 0x%" PRIx64 "+%zu not mapped (moved %zu of %zu)",
             (int)tok->cma.pid, raddr + moved, len - moved, moved, len);
    return rdx_reason(why, whylen, -EFAULT,
                      "cma: the token's range is not mapped%s in its process",
                      tok->op == RDX_GET ? " writable" : "");
  case -ETIMEDOUT:
    return rdx_reason(why, whylen, -ETIMEDOUT,
                      "cma: the transfer did not finish in time (the "
                      "server's timeout or the token's deadline)");
  case -EAGAIN:
    return rdx_reason(why, whylen, -EAGAIN, "cma: every transfer slot is busy");
  default:
    return rdx_reason(why, whylen, rc, "cma: transfer failed: %s",
                      strerror(-rc));
  }
}

/*
 * Is the token's pid still the token's process, a whole process (not a
 * thread), and do we know who asks? With h, first the kernel's verdict for
 * the peer (one byte read by a helper holding its credentials): a process
 * the peer may not reach is refused the same way whatever else is wrong
 * with the token, so that refusals tell nothing of it (whether it is a
 * thread, its start time). Without h (cma_srv_move), the move that
 * follows is the kernel's check. On success *pidfd is a pidfd on it, or -1
 * where the kernel has none. why: the rule broken, for the client; the
 * details (pids, start times) go to the log.
 */
static int identify(struct rdx_helpers *h, const struct rdx_token *tok,
                    const struct rdx_req *req, uint64_t until, int *pidfd,
                    char *why, size_t whylen)
{
  pid_t pid = tok->cma.pid;
  uint64_t start, tgid;
  size_t moved;
  char state;
  int rc, fd;

  *pidfd = -1;
  if (!req->peer_local)
    return rdx_reason(why, whylen, -EACCES,
                      "cma token from a peer on another host");
  if (req->peer_uid < 0 || req->peer_gid < 0 || req->peer_uid > UINT32_MAX ||
      req->peer_gid > UINT32_MAX)
    return rdx_reason(why, whylen, -EACCES,
                      "cma: cannot tell which user sent the request");
  fd = pidfd_open_(pid);
  if (fd < 0 && errno == ESRCH)
    return rdx_reason(why, whylen, -ESRCH,
                      "cma: the token's process is gone");
  /* EINVAL: a thread id (checked below); ENOSYS (old kernel), EPERM or
     EACCES (seccomp): check without a pidfd */
  if (h) {
    rc = rdx_helpers_move(h, (uid_t)req->peer_uid, (gid_t)req->peer_gid,
                          RDX_PUT, pid, tok->addr, NULL, 0, until, &moved);
    if (rc) {
      rc = move_failed(rc, tok, req, tok->addr, 0, 1, why, whylen);
      goto fail;
    }
  }
  rc = rdx_proc_stat(pid, &state, &start);
  if (rc == 0)
    rc = rdx_proc_status(pid, "Tgid", &tgid, 1);
  if (rc) {
    log_info("cma: /proc/%d: %s", (int)pid, strerror(-rc));
    rc = rdx_reason(why, whylen, -ESRCH,
                    "cma: the token's process is gone");
    goto fail;
  }
  if (tgid != (uint64_t)pid) {
    log_info("cma: %d is a thread of process %" PRIu64, (int)pid, tgid);
    rc = rdx_reason(why, whylen, -EINVAL,
                    "cma: the token names a thread, not a process");
    goto fail;
  }
  if (start != tok->cma.start_time) {
    log_info("cma: process %d started at %" PRIu64 ", the token's at %" PRIu64
             " (pid reused)",
             (int)pid, start, tok->cma.start_time);
    rc = rdx_reason(why, whylen, -ESRCH,
                    "cma: the token's process is gone (its pid was reused)");
    goto fail;
  }
  if (state == 'Z' || state == 'X' || (fd >= 0 && exited(fd))) {
    rc = rdx_reason(why, whylen, -ESRCH, "cma: the token's process has exited");
    goto fail;
  }
  *pidfd = fd;
  return 0;

fail:
  if (fd >= 0)
    close(fd);
  return rc;
}

static int cma_srv_check(struct rdx_server_kind *k, const struct rdx_token *tok,
                         const struct rdx_req *req, uint64_t until, char *why,
                         size_t whylen)
{
  struct cma_server *c = (struct cma_server *)k;
  int pidfd, rc;

  rc = identify(c->h, tok, req, until, &pidfd, why, whylen);
  if (pidfd >= 0)
    close(pidfd);
  return rc;
}

static int cma_srv_move(struct rdx_server_kind *k, const struct rdx_token *tok,
                        const struct rdx_req *req, uint64_t token_off,
                        void *local, size_t len, uint64_t until, char *why,
                        size_t whylen)
{
  struct cma_server *c = (struct cma_server *)k;
  uint64_t raddr = tok->addr + token_off;
  pid_t pid = tok->cma.pid;
  size_t moved = 0;
  int pidfd, rc;

  /* [raddr, raddr + len) lies in the token's range, which does not wrap */
  if (raddr + (len - 1) > UINTPTR_MAX)
    return rdx_reason(why, whylen, -EINVAL,
                      "cma: client range beyond this host's addresses");
  rc = identify(NULL, tok, req, 0, &pidfd, why, whylen);
  if (rc)
    return rc;
  rc = rdx_helpers_move(c->h, (uid_t)req->peer_uid, (gid_t)req->peer_gid,
                        req->op, pid, raddr, local, len, until, &moved);
  if (rc)
    rc = move_failed(rc, tok, req, raddr, moved, len, why, whylen);
  else if (pidfd >= 0 && exited(pidfd))
    rc = rdx_reason(why, whylen, -ESRCH,
                    "cma: the token's process exited during the transfer");
  if (pidfd >= 0)
    close(pidfd);
  return rc;
}

static int cma_srv_open(struct rdx_helpers *h, struct rdx_server_kind **out,
                        char *why, size_t whylen)
{
  struct cma_server *c;
  int rc = server_probe(why, whylen);

  *out = NULL;
  if (rc)
    return rc;
  c = calloc(1, sizeof(*c));
  if (!c)
    return rdx_reason(why, whylen, -ENOMEM, "cma: out of memory");
  c->base.ops = &rdx_cma_server_ops;
  c->h = h;
  *out = &c->base;
  return 0;
}

static void cma_srv_close(struct rdx_server_kind *k)
{
  free(k);
}

const struct rdx_server_ops rdx_cma_server_ops = {
    .kind = RDX_CMA,
    .open = cma_srv_open,
    .check = cma_srv_check,
    .move = cma_srv_move,
    .close = cma_srv_close,
};
