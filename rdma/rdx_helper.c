/*
 * rdx_helper: process_vm_* in helper processes holding the peer's
 * credentials (see rdx_helper.h for why and the threading).
 *
 * A helper, once forked, runs only async-signal-safe code: raw syscalls,
 * no malloc, no locks (it was forked from a multi-threaded process). It
 * keeps fd 3, its end of the socketpair, and closes every other fd (it
 * must not hold the server's sockets open), drops to the peer's
 * credentials, says so with one byte, then serves requests until its
 * socket closes.
 */
#include "rdma/rdx_helper.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "common/clock.h"
#include "rdma/rdx_reason.h"

#define HELPER_FD 3
#define IDLE_MS 60000u
#define EXTRA_HELPERS 4 /* beyond one per buffer: probes hold no buffer */
/* One process_vm_* call moves at most this much (the kernel does partial
   transfers anyway). */
#define CALL_MAX ((size_t)1 << 30)

enum { OP_PROBE = 0, OP_WRITE = 1, OP_READ = 2 };

struct hreq {
  uint32_t op;
  int32_t pid;
  uint64_t raddr;
  uint64_t local;
  uint64_t len;
};

struct hrep {
  int32_t err; /* 0 or a positive errno */
  uint32_t pad;
  uint64_t moved;
};

struct helper {
  bool used;            /* a slot with a live (or starting) helper */
  bool busy;            /* taken by one thread, which talks to it */
  pid_t pid;
  int fd;
  uid_t uid;
  gid_t gid;
  uint64_t idle_since;  /* clock_mono_ms */
};

struct rdx_helpers {
  char *arena;          /* nbuf * buf_size, MAP_SHARED: helpers see it */
  size_t arena_len, buf_size;
  unsigned nbuf, nhelp;
  unsigned timeout_s;
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* a helper was released */
  bool *taken;          /* protected by mu: buffer i in use */
  struct helper *help;  /* protected by mu (a busy one: by its taker) */
};

/* now + timeout_s, or until when that comes first (ms, monotonic). */
static uint64_t limit_ms(const struct rdx_helpers *h, uint64_t until)
{
  uint64_t t = clock_mono_ms() + (uint64_t)h->timeout_s * 1000u;

  return until && until < t ? until : t;
}

/* ---- the helper process ------------------------------------------------- */

static void close_from(int lowfd)
{
  struct rlimit rl;

#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
    return;
#endif
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur > (1u << 20))
    rl.rlim_cur = 1u << 20;
  for (int fd = lowfd; fd < (int)rl.rlim_cur; fd++)
    close(fd);
}

/*
 * Take (uid, gid) for good: 0 or -1. Capabilities: none; for uid 0, every
 * one this process has but CAP_SYS_PTRACE (the kernel then lets a root
 * peer reach a root process whose capabilities are no more than that,
 * dumpable and allowed by Yama, as root without CAP_SYS_PTRACE).
 */
static int drop(uid_t uid, gid_t gid)
{
  struct __user_cap_header_struct hd = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct cap[2];
  uint32_t keep[2] = {0, 0};
  uid_t r, e, s;
  gid_t rg, eg, sg;

  memset(cap, 0, sizeof(cap));
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
    return -1;
  if (uid == 0) {
    if (syscall(SYS_capget, &hd, cap))
      return -1;
    keep[0] = cap[0].permitted & ~(1u << CAP_SYS_PTRACE);
    keep[1] = cap[1].permitted;
  }
  /* an unprivileged server cannot clear its groups; the kernel's ptrace
     check does not look at them, and its uid must be the peer's anyway */
  if (syscall(SYS_setgroups, 0, NULL) && (errno != EPERM || getuid() == 0))
    return -1;
  if (syscall(SYS_setresgid, gid, gid, gid) ||
      syscall(SYS_setresuid, uid, uid, uid))
    return -1;
  for (int i = 0; i < 2; i++) {
    cap[i].effective = cap[i].permitted = keep[i];
    cap[i].inheritable = 0;
  }
  if (syscall(SYS_capset, &hd, cap))
    return -1;
  /* a change of credentials set dumpable to fs.suid_dumpable: again */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) ||
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    return -1;
  if (getresuid(&r, &e, &s) || r != uid || e != uid || s != uid ||
      getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid)
    return -1;
  if (syscall(SYS_capget, &hd, cap) || cap[0].permitted != keep[0] ||
      cap[1].permitted != keep[1] || (cap[0].permitted >> CAP_SYS_PTRACE & 1))
    return -1;
  return 0;
}

static void serve_one(const struct hreq *q, struct hrep *p, uintptr_t lo,
                      uintptr_t hi)
{
  char byte;

  p->err = 0;
  p->moved = 0;
  if (q->op == OP_PROBE) {
    struct iovec l = {&byte, 1}, r = {(void *)(uintptr_t)q->raddr, 1};
    if (process_vm_readv(q->pid, &l, 1, &r, 1, 0) != 1)
      p->err = errno ? errno : EFAULT;
    return;
  }
  if (q->local < lo || q->local > hi || q->len > hi - q->local ||
      (q->op != OP_WRITE && q->op != OP_READ)) {
    p->err = EINVAL;
    return;
  }
  while (p->moved < q->len) {
    size_t n = q->len - p->moved < CALL_MAX ? q->len - p->moved : CALL_MAX;
    struct iovec l = {(void *)(uintptr_t)(q->local + p->moved), n};
    struct iovec r = {(void *)(uintptr_t)(q->raddr + p->moved), n};
    ssize_t got;

    errno = 0;
    got = q->op == OP_WRITE ? process_vm_writev(q->pid, &l, 1, &r, 1, 0)
                            : process_vm_readv(q->pid, &l, 1, &r, 1, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      p->err = got < 0 ? errno : EFAULT;
      return;
    }
    p->moved += (uint64_t)got;
  }
}

static void __attribute__((noreturn))
helper_main(uid_t uid, gid_t gid, uintptr_t lo, uintptr_t hi)
{
  char ok = 1;

  close_from(HELPER_FD + 1);
  if (drop(uid, gid) || write(HELPER_FD, &ok, 1) != 1)
    _exit(1);
  for (;;) {
    struct hreq q;
    struct hrep p;
    ssize_t n = read(HELPER_FD, &q, sizeof(q));

    if (n < 0 && errno == EINTR)
      continue;
    if (n != (ssize_t)sizeof(q))
      _exit(0); /* closed by the server, or not our protocol */
    serve_one(&q, &p, lo, hi);
    if (write(HELPER_FD, &p, sizeof(p)) != (ssize_t)sizeof(p))
      _exit(0);
  }
}

/* ---- the server's side -------------------------------------------------- */

/* Wait for fd to be readable until deadline (monotonic ms): 0 or
   -ETIMEDOUT. */
static int wait_readable(int fd, uint64_t deadline)
{
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint64_t now = clock_mono_ms();
    uint64_t left = deadline > now ? deadline - now : 0;
    int n;

    if (left == 0)
      return -ETIMEDOUT;
    n = poll(&p, 1, (int)(left > 3600000 ? 3600000 : left));
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -errno;
  }
}

/* Kill and reap e's process (outside mu: e is owned by the caller). */
static void stop_helper(struct helper *e)
{
  if (e->fd >= 0)
    close(e->fd);
  if (e->pid > 0) {
    kill(e->pid, SIGKILL);
    while (waitpid(e->pid, NULL, 0) < 0 && errno == EINTR)
      ;
  }
  e->fd = -1;
  e->pid = 0;
}

/* Fork a helper for (uid, gid) into e (owned by the caller): 0 or -errno. */
static int spawn(struct rdx_helpers *h, struct helper *e, uid_t uid, gid_t gid)
{
  uintptr_t lo = (uintptr_t)h->arena, hi = lo + h->arena_len;
  char ok = 0;
  int sv[2], rc;
  pid_t pid;

  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
    return -errno;
  pid = fork();
  if (pid == 0) {
    if (dup2(sv[1], HELPER_FD) < 0)
      _exit(1);
    helper_main(uid, gid, lo, hi);
  }
  rc = -errno;
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return rc;
  }
  e->pid = pid;
  e->fd = sv[0];
  e->uid = uid;
  e->gid = gid;
  rc = wait_readable(e->fd, limit_ms(h, 0));
  if (rc == 0 && read(e->fd, &ok, 1) != 1)
    rc = -EIO;
  if (rc == 0 && ok != 1)
    rc = -EIO;
  if (rc) {
    stop_helper(e);
    return -EPERM; /* it could not take the peer's credentials */
  }
  return 0;
}

/* Give e back; a helper that failed (dead: true) is stopped first. */
static void release(struct rdx_helpers *h, struct helper *e, bool dead)
{
  if (dead)
    stop_helper(e);
  pthread_mutex_lock(&h->mu);
  e->busy = false;
  e->used = e->pid > 0;
  e->idle_since = clock_mono_ms();
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/*
 * Under mu: a helper for (uid, gid) to take: an idle one of that peer, a
 * free slot, or the longest idle of another peer (NULL: none). *stale: a
 * helper idle for over IDLE_MS, to stop.
 */
static struct helper *pick(struct rdx_helpers *h, uid_t uid, gid_t gid,
                           uint64_t now, struct helper **stale)
{
  struct helper *free_slot = NULL, *idle_other = NULL;

  *stale = NULL;
  for (unsigned i = 0; i < h->nhelp; i++) {
    struct helper *c = &h->help[i];
    if (!c->used) {
      free_slot = free_slot ? free_slot : c;
    } else if (c->busy) {
      continue;
    } else if (c->uid == uid && c->gid == gid && now - c->idle_since <= IDLE_MS) {
      return c;
    } else if (now - c->idle_since > IDLE_MS) {
      *stale = c;
    } else if (!idle_other || c->idle_since < idle_other->idle_since) {
      idle_other = c;
    }
  }
  return free_slot ? free_slot : idle_other ? idle_other : *stale;
}

/*
 * Take a helper for (uid, gid), starting one if needed. Returns 0 with *out
 * busy and live, or -EAGAIN (none free within the timeout or by until),
 * -EIO, -errno.
 */
static int acquire(struct rdx_helpers *h, uid_t uid, gid_t gid,
                   uint64_t until_ms, struct helper **out)
{
  uint64_t lim = limit_ms(h, until_ms);
  struct timespec until = clock_at(lim);
  struct helper *e, *stale;
  int rc;

  pthread_mutex_lock(&h->mu);
  while (!(e = pick(h, uid, gid, clock_mono_ms(), &stale)))
    if (pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT) {
      pthread_mutex_unlock(&h->mu);
      return until_ms && lim == until_ms ? -ETIMEDOUT : -EAGAIN;
    }
  e->busy = e->used = true;
  if (stale == e)
    stale = NULL;
  if (stale)
    stale->busy = true;
  pthread_mutex_unlock(&h->mu);

  if (stale)
    release(h, stale, true); /* one idle helper stopped per call */
  if (e->pid > 0 && (e->uid != uid || e->gid != gid))
    stop_helper(e); /* another peer's, idle longest */
  if (e->pid > 0 && clock_mono_ms() - e->idle_since > IDLE_MS)
    stop_helper(e);
  if (e->pid <= 0) {
    rc = spawn(h, e, uid, gid);
    if (rc) {
      release(h, e, false);
      return rc;
    }
  }
  *out = e;
  return 0;
}

int rdx_helpers_move(struct rdx_helpers *h, uid_t uid, gid_t gid,
                     enum rdx_op op, pid_t pid, uint64_t raddr, void *local,
                     size_t len, uint64_t until, size_t *moved)
{
  uintptr_t lo = (uintptr_t)h->arena, l = (uintptr_t)local;
  struct hreq q = {.op = len == 0 ? OP_PROBE : op == RDX_GET ? OP_WRITE : OP_READ,
                   .pid = pid, .raddr = raddr, .local = l, .len = len};
  struct hrep p;
  struct helper *e;
  ssize_t n;
  int rc;

  *moved = 0;
  if (len && (l < lo || l >= lo + h->arena_len ||
              len > h->buf_size - (l - lo) % h->buf_size))
    return -EINVAL;
  rc = acquire(h, uid, gid, until, &e);
  if (rc)
    return rc;
  if (until && clock_mono_ms() >= until) {
    release(h, e, false); /* the deadline came while a helper started */
    return -ETIMEDOUT;
  }
  if (send(e->fd, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q)) {
    release(h, e, true);
    return -EIO;
  }
  rc = wait_readable(e->fd, limit_ms(h, until));
  if (rc) {
    release(h, e, true); /* killed and reaped: nothing moves from now on */
    return rc;
  }
  n = recv(e->fd, &p, sizeof(p), 0);
  if (n != (ssize_t)sizeof(p) || p.moved > len) {
    release(h, e, true);
    return -EIO;
  }
  release(h, e, false);
  *moved = (size_t)p.moved;
  return p.err ? -p.err : 0;
}

/* ---- buffers, create, destroy ------------------------------------------- */

void *rdx_helpers_buf_alloc(struct rdx_helpers *h, size_t len)
{
  void *p = NULL;

  if (!h || len == 0 || len > h->buf_size)
    return NULL;
  pthread_mutex_lock(&h->mu);
  for (unsigned i = 0; i < h->nbuf && !p; i++)
    if (!h->taken[i]) {
      h->taken[i] = true;
      p = h->arena + (size_t)i * h->buf_size;
    }
  pthread_mutex_unlock(&h->mu);
  return p;
}

void rdx_helpers_arena(const struct rdx_helpers *h, void **base, size_t *len,
                       unsigned *nbuf)
{
  *base = h->arena;
  *len = h->arena_len;
  *nbuf = h->nbuf;
}

void rdx_helpers_buf_free(struct rdx_helpers *h, void *buf)
{
  size_t off;

  if (!h || !buf)
    return;
  off = (size_t)((char *)buf - h->arena);
  pthread_mutex_lock(&h->mu);
  h->taken[off / h->buf_size] = false;
  pthread_mutex_unlock(&h->mu);
}

int rdx_helpers_create(size_t buf_size, unsigned nbuf, unsigned timeout_s,
                       struct rdx_helpers **out, char *err, size_t errlen)
{
  long page = sysconf(_SC_PAGESIZE);
  struct rdx_helpers *h;

  *out = NULL;
  if (page <= 0)
    page = 4096;
  if (buf_size == 0 || nbuf == 0 || timeout_s == 0 ||
      buf_size > ((size_t)1 << 30) || nbuf > 4096)
    return rdx_reason(err, errlen, -EINVAL, "cma: bad buffer or timeout sizes");
  h = calloc(1, sizeof(*h));
  if (!h)
    goto oom;
  h->buf_size = (buf_size + (size_t)page - 1) / (size_t)page * (size_t)page;
  h->nbuf = nbuf;
  h->nhelp = nbuf + EXTRA_HELPERS;
  h->timeout_s = timeout_s;
  h->arena_len = h->buf_size * nbuf;
  h->taken = calloc(nbuf, sizeof(*h->taken));
  h->help = calloc(h->nhelp, sizeof(*h->help));
  if (!h->taken || !h->help)
    goto free_h;
  h->arena = mmap(NULL, h->arena_len, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (h->arena == MAP_FAILED)
    goto free_h;
  for (unsigned i = 0; i < h->nhelp; i++)
    h->help[i].fd = -1;
  pthread_mutex_init(&h->mu, NULL);
  clock_cond_init(&h->cv);
  *out = h;
  return 0;

free_h:
  free(h->taken);
  free(h->help);
  free(h);
oom:
  return rdx_reason(err, errlen, -ENOMEM, "cma: out of memory");
}

void rdx_helpers_destroy(struct rdx_helpers *h)
{
  if (!h)
    return;
  for (unsigned i = 0; i < h->nhelp; i++)
    if (h->help[i].used)
      stop_helper(&h->help[i]);
  munmap(h->arena, h->arena_len);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h->taken);
  free(h->help);
  free(h);
}
