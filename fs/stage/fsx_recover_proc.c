/* fsx_recover_proc: the zygote and its recovery workers (see
   fsx_recover_proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "common/strbuf.h"
#include "config/cfg.h"
#include "fs/mount/fsx_i.h"
#include "fs/stage/fsx_recover.h"
#include "fs/stage/fsx_recover_proc.h"
#include "fs/stage/fsx_stage.h"
#include "s3/s3_client.h"

#define STOP_WAIT_S 60 /* a worker told to stop, then SIGKILL */
#define PROG "s3rdmafs"

/* ---- events ---- */

/* One line, written whole (a pipe takes up to PIPE_BUF bytes at once). */
static void say(int fd, const char *line)
{
  size_t n = strlen(line), off = 0;

  while (off < n) {
    ssize_t w = write(fd, line + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    off += (size_t)w;
  }
}

/* "C bucket key[ token]\n", bucket and key hex (a key may hold spaces,
   any byte but NUL): false when it could not be said. */
static bool say_name(int fd, char c, const char *bucket, const char *key,
                     const char *token)
{
  struct strbuf sb = {0};
  char *line;

  strbuf_putc(&sb, c);
  strbuf_putc(&sb, ' ');
  strbuf_put_hex(&sb, bucket);
  strbuf_putc(&sb, ' ');
  strbuf_put_hex(&sb, key);
  if (token) {
    strbuf_putc(&sb, ' ');
    strbuf_puts(&sb, token);
  }
  strbuf_putc(&sb, '\n');
  if (!(line = strbuf_take(&sb)))
    return false;
  say(fd, line);
  free(line);
  return true;
}

/* ---- the worker ---- */

static atomic_bool worker_stop; /* set by SIGTERM */
static pid_t zygote_pid;        /* a worker's parent */

static void on_term(int sig)
{
  (void)sig;
  atomic_store(&worker_stop, true);
}

struct worker {
  struct fsx_mount *m;
  int event_fd;
  int ack_fd;                   /* the daemon's go-ahead after a "B" */
  unsigned long files;          /* "B"s said: tokens */
  pthread_mutex_t lock;
  pthread_cond_t cond;        /* lock: a request waited for is done */
};

struct waiter {
  struct worker *w;
  bool done;                  /* w->lock */
};

static void req_done(struct s3_req *q, void *arg)
{
  struct waiter *wt = arg;
  struct worker *w = wt->w;

  (void)q;
  pthread_mutex_lock(&w->lock);
  wt->done = true;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

/* fsx_recover_io.run: q submitted and waited for, cancelled on SIGTERM
   (looked at every 100 ms: a handler cannot signal a condition). */
static int run(void *arg, struct s3_req *q)
{
  struct worker *w = arg;
  struct waiter wt = {w, false};
  bool cancelled = false;

  if (atomic_load(&worker_stop))
    return -ECANCELED;
  s3_req_submit(q, req_done, &wt);
  pthread_mutex_lock(&w->lock);
  while (!wt.done) {
    struct timespec ts;
    if (atomic_load(&worker_stop) && !cancelled) {
      cancelled = true;
      pthread_mutex_unlock(&w->lock);
      s3_req_cancel(q); /* completes it soon, with -ECANCELED */
      pthread_mutex_lock(&w->lock);
      continue;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&w->cond, &w->lock, &ts);
  }
  pthread_mutex_unlock(&w->lock);
  return s3_req_result(q);
}

/* The daemon's go-ahead for token (a line; others, meant for a worker
   that died before reading them, are passed over): true, or false once
   told to stop or the daemon is gone (then nothing is uploaded). */
static bool wait_go(struct worker *w, const char *token)
{
  char line[64];
  size_t n = 0;

  while (!atomic_load(&worker_stop)) {
    struct pollfd p = {w->ack_fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0)
      continue;
    if (read(w->ack_fd, line + n, 1) != 1)
      return false;
    if (line[n] != '\n') {
      n += n + 1 < sizeof(line);
      continue;
    }
    line[n] = '\0';
    if (!strcmp(line, token))
      return true;
    n = 0;
  }
  return false;
}

/* fsx_stage_recover's callback: the file's name told before and after. */
static int recover_one(void *arg, const struct fsx_stage_rec *r,
                       const char *path, int fd, int map_fd, char *reason,
                       size_t reasonlen)
{
  struct worker *w = arg;
  struct fsx_recover_io io = {w->m, run, w};
  char token[48];
  int rc;

  snprintf(token, sizeof(token), "%ld.%lu", (long)getpid(), ++w->files);
  if (!say_name(w->event_fd, 'B', r->bucket, r->key, token) ||
      !wait_go(w, token)) {
    say(w->event_fd, "E\n");
    snprintf(reason, reasonlen, "not asked: this mount stopped first");
    return -EAGAIN;
  }
  rc = fsx_recover_file(&io, r, path, fd, map_fd, reason, reasonlen);
  say(w->event_fd, "E\n");
  if (!rc)
    say_name(w->event_fd, 'U', r->bucket, r->key, NULL);
  return rc;
}

static int worker_main(struct fsx_mount *m, const struct cfg *c,
                       const struct s3_client_config *sc, int event_fd,
                       int ack_fd, bool use_syslog)
{
  struct worker w = {m, event_fd, ack_fd, 0, PTHREAD_MUTEX_INITIALIZER,
                     PTHREAD_COND_INITIALIZER};
  struct sigaction sa = {.sa_handler = on_term};
  struct fsx_recovery rv;
  char err[1024], line[128];

  sigaction(SIGTERM, &sa, NULL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != zygote_pid)
    return 1; /* the zygote went first */
  if (use_syslog)
    slog_use_syslog(PROG);
  m->s3 = s3_client_create(sc, err, sizeof(err));
  if (!m->s3) {
    log_err("recovery: %s", err);
    return 1;
  }
  if (fsx_stage_open(c->cache.dir, c->endpoint, &m->stage, err,
                     sizeof(err))) {
    log_err("recovery: %s", err);
    s3_client_destroy(m->s3);
    return 1;
  }
  fsx_stage_recover_until(m->stage, m->s3, recover_one, &w, &worker_stop,
                          &rv);
  snprintf(line, sizeof(line), "S %d %d %d %d %d\n", rv.aborted,
           rv.uploaded, rv.kept, rv.left,
           rv.unknown + (int)atomic_load(&m->st.uploads_unknown));
  say(event_fd, line);
  fsx_stage_close(m->stage);
  s3_client_destroy(m->s3);
  return 0;
}

/* ---- the zygote ---- */

/* A command line from fd into buf: its first byte, or 0 at end of file. */
static char read_cmd(int fd, char *buf, size_t len)
{
  size_t n = 0;

  while (n + 1 < len) {
    ssize_t r = read(fd, buf + n, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    if (buf[n] == '\n')
      break;
    n++;
  }
  buf[n] = '\0';
  return buf[0];
}

/* Wait for worker pid, telling it to stop on Q or end of file. */
static int wait_worker(pid_t pid, int cmd_fd, bool *stopping)
{
  time_t stop_at = 0;
  int st = 0;

  for (;;) {
    struct pollfd p = {cmd_fd, POLLIN, 0};
    char buf[64];
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return st;
    if (r < 0 && errno == ECHILD)
      return 0; /* (reaped by someone else: ended) */
    if (!*stopping && poll(&p, 1, 100) > 0) {
      char c = read_cmd(cmd_fd, buf, sizeof(buf));
      if (c == 'Q' || c == 0) {
        *stopping = true;
        stop_at = time(NULL);
        kill(pid, SIGTERM);
      }
    } else if (*stopping) {
      if (time(NULL) - stop_at > STOP_WAIT_S)
        kill(pid, SIGKILL);
      usleep(50 * 1000);
    }
  }
}

static void zygote(struct fsx_mount *m, const struct cfg *c,
                   const struct s3_client_config *sc, int cmd_fd,
                   int event_fd, int ack_fd)
{
  bool stopping = false, use_syslog;
  char buf[64];
  char cmd = read_cmd(cmd_fd, buf, sizeof(buf));

  if (cmd != 'G')
    _exit(0); /* nothing to do, stopped, or the daemon is gone */
  use_syslog = buf[1] == ' ' && buf[2] == '1';
  if (use_syslog) { /* a daemon's: nothing on the terminal it left */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  zygote_pid = getpid();
  for (int n = 0; n < FSX_RECOVER_WORKERS && !stopping; n++) {
    pid_t pid = fork();
    int st;
    if (pid == 0) {
      close(cmd_fd);
      _exit(worker_main(m, c, sc, event_fd, ack_fd, use_syslog));
    }
    if (pid < 0)
      break;
    /* the first worker's only (a crash, once), unless a test asks */
    if (!getenv("S3R_FAILPOINTS_EVERY_WORKER"))
      FP_DISARM();
    st = wait_worker(pid, cmd_fd, &stopping);
    if (!WIFSIGNALED(st) || stopping)
      break;
    snprintf(buf, sizeof(buf), "D %d\n", WTERMSIG(st));
    say(event_fd, buf);
  }
  say(event_fd, "X\n");
  _exit(0);
}

int fsx_recover_proc_fork(const struct fsx_mount *m, const struct cfg *c,
                          const struct s3_client_config *sc,
                          struct fsx_recover_proc *p)
{
  int cmd[2], ev[2], ack[2];
  pid_t pid;

  if (pipe2(cmd, O_CLOEXEC))
    return -errno;
  if (pipe2(ev, O_CLOEXEC)) {
    int rc = -errno;
    close(cmd[0]);
    close(cmd[1]);
    return rc;
  }
  if (pipe2(ack, O_CLOEXEC)) {
    int rc = -errno;
    close(cmd[0]);
    close(cmd[1]);
    close(ev[0]);
    close(ev[1]);
    return rc;
  }
  fflush(NULL); /* nothing buffered is written twice */
  pid = fork();
  if (pid == 0) {
    struct fsx_mount copy = *m;
    close(cmd[1]);
    close(ev[0]);
    close(ack[1]);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* a session of its own: no terminal's ^C or hang-up reaches it; a
       daemon gone: writes to it fail (EPIPE), nothing dies of them; its
       workers reaped by itself whatever the daemon's starter set */
    setsid();
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      close(null);
    }
    zygote(&copy, c, sc, cmd[0], ev[1], ack[0]);
  }
  close(cmd[0]);
  close(ev[1]);
  close(ack[0]);
  if (pid < 0) {
    int rc = -errno;
    close(cmd[1]);
    close(ev[0]);
    close(ack[1]);
    return rc;
  }
  p->pid = (int)pid;
  p->cmd_fd = cmd[1];
  p->event_fd = ev[0];
  p->ack_fd = ack[1];
  return 0;
}

int fsx_recover_proc_say(struct fsx_recover_proc *p, const char *cmd)
{
  size_t n = strlen(cmd);
  ssize_t w = write(p->cmd_fd, cmd, n);

  return w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
}

void fsx_recover_proc_ack(struct fsx_recover_proc *p, const char *token)
{
  char line[80];
  int n = snprintf(line, sizeof(line), "%s\n", token);

  if (n <= 0 || n >= (int)sizeof(line) || write(p->ack_fd, line, (size_t)n) != n)
    log_warn("recovery: its process did not take the go-ahead");
}

void fsx_recover_proc_end(struct fsx_recover_proc *p)
{
  if (p->pid <= 0)
    return;
  close(p->cmd_fd);
  close(p->ack_fd);
  /* (the zygote of a daemonised mount is not our child: nothing to reap) */
  waitpid(p->pid, NULL, 0);
  close(p->event_fd);
  p->pid = 0;
}
