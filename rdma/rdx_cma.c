/*
 * rdx_cma: the same-host transport, both halves. The client's token names
 * its pid and start time; the server moves bytes with process_vm_writev
 * (GET) or process_vm_readv (PUT) on that pid, after checking that the pid
 * is still that process, through a pidfd held across the transfer.
 */
#include "rdma/rdx_i.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PTRACE_SCOPE "/proc/sys/kernel/yama/ptrace_scope"
#define CAP_SYS_PTRACE_BIT 19
/* One process_vm_* call moves at most this much (the kernel caps a call at
   SSIZE_MAX and does partial transfers anyway). */
#define CALL_MAX ((size_t)1 << 30)

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

int rdx_cma_open(struct rdx_transport **out, char *err, size_t errlen)
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

/* yama's ptrace_scope: 0..3, or -1 without yama. */
static int ptrace_scope(void)
{
  FILE *f = fopen(PTRACE_SCOPE, "re");
  int v = -1;

  if (!f)
    return -1;
  if (fscanf(f, "%d", &v) != 1)
    v = -1;
  fclose(f);
  return v;
}

/* Does this process hold CAP_SYS_PTRACE (CapEff in /proc/self/status)? */
static bool cap_sys_ptrace(void)
{
  char line[256];
  unsigned long long eff = 0;
  bool found = false;
  FILE *f = fopen("/proc/self/status", "re");

  if (!f)
    return false;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "CapEff: %llx", &eff) == 1) {
      found = true;
      break;
    }
  fclose(f);
  return found && (eff >> CAP_SYS_PTRACE_BIT & 1);
}

/* Why the kernel may refuse us another process: for reasons. */
static void access_note(char *buf, size_t len)
{
  int scope = ptrace_scope();

  const char *cap = cap_sys_ptrace() ? "with" : "without";

  if (scope < 0)
    snprintf(buf, len, "no yama, %s CAP_SYS_PTRACE", cap);
  else
    snprintf(buf, len, "yama ptrace_scope %d, %s CAP_SYS_PTRACE", scope, cap);
}

int rdx_cma_server_probe(char *why, size_t whylen)
{
  char probe = 0, copy = 1;
  struct iovec l = {&copy, 1}, r = {&probe, 1};
  int scope;

  if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1)
    return rdx_reason(why, whylen, -EOPNOTSUPP, "cma: process_vm_readv: %s",
                      strerror(errno));
  scope = ptrace_scope();
  if (scope >= 3)
    return rdx_reason(why, whylen, -EOPNOTSUPP,
                      "cma: yama ptrace_scope is %d: no process may reach "
                      "another's memory",
                      scope);
  if (scope == 2 && !cap_sys_ptrace())
    return rdx_reason(why, whylen, -EOPNOTSUPP,
                      "cma: yama ptrace_scope is 2 and this process lacks "
                      "CAP_SYS_PTRACE");
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
 * Is the token's pid still the token's process, and may this peer name it?
 * On success *pidfd is a pidfd on it, or -1 where the kernel has none.
 */
static int identify(const struct rdx_token *tok, const struct rdx_req *req,
                    int *pidfd, char *why, size_t whylen)
{
  pid_t pid = tok->cma.pid;
  uint64_t start, uids[4];
  char state;
  int rc, fd;

  *pidfd = -1;
  if (!req->peer_local)
    return rdx_reason(why, whylen, -EACCES,
                      "cma token from a peer on another host");
  fd = pidfd_open_(pid);
  if (fd < 0 && errno == ESRCH)
    return rdx_reason(why, whylen, -ESRCH, "cma: process %d is gone",
                      (int)pid);
  /* ENOSYS (old kernel), EPERM/EACCES (seccomp): check without a pidfd */
  rc = rdx_proc_stat(pid, &state, &start);
  if (rc == -ESRCH) {
    rdx_reason(why, whylen, rc, "cma: process %d is gone", (int)pid);
    goto fail;
  }
  if (rc) {
    rdx_reason(why, whylen, rc, "cma: reading /proc/%d/stat: %s", (int)pid,
               strerror(-rc));
    goto fail;
  }
  if (start != tok->cma.start_time) {
    rc = rdx_reason(why, whylen, -ESRCH,
                    "cma: process %d started at %" PRIu64
                    ", the token's at %" PRIu64 " (pid reused)",
                    (int)pid, start, tok->cma.start_time);
    goto fail;
  }
  if (state == 'Z' || state == 'X' || (fd >= 0 && exited(fd))) {
    rc = rdx_reason(why, whylen, -ESRCH, "cma: process %d has exited",
                    (int)pid);
    goto fail;
  }
  if (req->peer_uid > 0) {
    rc = rdx_proc_uids(pid, uids);
    if (rc) {
      rdx_reason(why, whylen, rc, "cma: reading /proc/%d/status: %s",
                 (int)pid, strerror(-rc));
      goto fail;
    }
    if (uids[0] != (uint64_t)req->peer_uid ||
        uids[1] != (uint64_t)req->peer_uid ||
        uids[2] != (uint64_t)req->peer_uid) {
      rc = rdx_reason(why, whylen, -EACCES,
                      "cma: process %d runs as uid %" PRIu64 "/%" PRIu64
                      "/%" PRIu64 ", the peer is uid %" PRId64,
                      (int)pid, uids[0], uids[1], uids[2], req->peer_uid);
      goto fail;
    }
  }
  *pidfd = fd;
  return 0;

fail:
  if (fd >= 0)
    close(fd);
  return rc;
}

int rdx_cma_check(const struct rdx_token *tok, const struct rdx_req *req,
                  char *why, size_t whylen)
{
  int pidfd, rc;

  rc = identify(tok, req, &pidfd, why, whylen);
  if (pidfd >= 0)
    close(pidfd);
  return rc;
}

/* A failed process_vm_* call as rdx_serve's errno and reason. */
static int call_failed(int err, const struct rdx_token *tok, uint64_t raddr,
                       size_t done, size_t len, char *why, size_t whylen)
{
  const char *call = tok->op == RDX_GET ? "process_vm_writev"
                                        : "process_vm_readv";
  char note[128];

  switch (err) {
  case EPERM:
  case EACCES:
  case ENOSYS:
    access_note(note, sizeof(note));
    return rdx_reason(why, whylen, -EOPNOTSUPP, "cma: %s on process %d: %s (%s)",
                      call, (int)tok->cma.pid, strerror(err), note);
  case ESRCH:
    return rdx_reason(why, whylen, -ESRCH, "cma: process %d has exited",
                      (int)tok->cma.pid);
  case EFAULT:
    return rdx_reason(why, whylen, -EFAULT,
                      "cma: %s: client range 0x%" PRIx64 "+%zu is not mapped%s "
                      "(moved %zu of %zu bytes of this chunk)",
                      call, raddr + done, len - done,
                      tok->op == RDX_GET ? " writable" : "", done, len);
  default:
    return rdx_reason(why, whylen, -err, "cma: %s on process %d: %s", call,
                      (int)tok->cma.pid, strerror(err));
  }
}

int rdx_cma_serve(const struct rdx_token *tok, const struct rdx_req *req,
                  uint64_t token_off, void *local, size_t len, char *why,
                  size_t whylen)
{
  uint64_t raddr = tok->addr + token_off;
  pid_t pid = tok->cma.pid;
  size_t done = 0;
  int pidfd, rc;

  /* [raddr, raddr + len) lies in the token's range, which does not wrap */
  if (raddr + (len - 1) > UINTPTR_MAX)
    return rdx_reason(why, whylen, -EINVAL,
                      "cma: client range beyond this host's addresses");
  rc = identify(tok, req, &pidfd, why, whylen);
  if (rc)
    return rc;
  while (done < len) {
    size_t n = len - done < CALL_MAX ? len - done : CALL_MAX;
    struct iovec l = {(char *)local + done, n};
    struct iovec r = {(void *)(uintptr_t)(raddr + done), n};
    ssize_t got;

    if (req->op == RDX_GET)
      got = process_vm_writev(pid, &l, 1, &r, 1, 0);
    else
      got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      rc = call_failed(got < 0 ? errno : EFAULT, tok, raddr, done, len, why,
                       whylen);
      goto out;
    }
    done += (size_t)got;
  }
  if (pidfd >= 0 && exited(pidfd))
    rc = rdx_reason(why, whylen, -ESRCH,
                    "cma: process %d exited during the transfer", (int)pid);
out:
  if (pidfd >= 0)
    close(pidfd);
  return rc;
}
