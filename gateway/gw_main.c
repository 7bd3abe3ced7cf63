/*
 * s3rdma-gateway: an S3 front end that verifies clients' SigV4, re-signs
 * and forwards to an upstream S3 endpoint, and moves the object bytes of
 * requests carrying an RDMA token through rdma/rdx_server instead of the
 * HTTP body. Start-up and shutdown (the flags: gw_args).
 *
 * DESIGN (threads): main parses the flags (gw_args_parse), hands the
 * device to rc and dc (and dc its access key), optionally daemonises (the
 * starting process waits until the daemon listens, and exits 1 if it
 * does not), blocks SIGINT/SIGTERM (every thread created later inherits
 * the mask),
 * starts the worker pool (gw_proxy) and the HTTP server (gw_http), then
 * waits for a signal in sigwait(). Stop: the HTTP server first (its
 * requests finish), then the pool; the stats are printed last.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/slog.h"
#include "gateway/gw_args.h"
#include "gateway/gw_dcallow.h"
#include "gateway/gw_http.h"
#include "gateway/gw_proxy.h"
#include "rdma/rdx_dc_server.h"
#include "rdma/rdx_rc_server.h"

static void print_stats(struct gw_stats *stats, bool fg)
{
  char buf[2048];

  gw_stats_format(stats, buf, sizeof(buf));
  if (fg) {
    fprintf(stderr, "s3rdma-gateway: stats at exit:\n%s", buf);
    return;
  }
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
    log_notice("stats: %s", line);
}

/*
 * Into the background, as daemon(3), but the starting process stays until
 * the daemon listens: it exits 0 once the daemon writes a byte to the
 * returned fd, 1 when the daemon closes it unwritten (it failed to start;
 * the reason is in syslog). -errno when the fork fails.
 */
static int daemonise(void)
{
  int p[2], null;
  pid_t pid;
  char c;

  if (pipe2(p, O_CLOEXEC))
    return -errno;
  pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return -e;
  }
  if (pid > 0) {
    ssize_t n;
    close(p[1]);
    do
      n = read(p[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      fprintf(stderr, "s3rdma-gateway: failed to start (the reason is in "
                      "syslog)\n");
    _exit(n == 1 ? 0 : 1);
  }
  close(p[0]);
  setsid();
  if (chdir("/")) /* "/" exists: nothing to do if not */
    null = -1;
  null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2)
      close(null);
  }
  return p[1];
}

int main(int argc, char **argv)
{
  static struct gw_stats stats;
  struct gw_args a;
  struct rdx_server *rdx = NULL;
  struct gw_proxy *proxy = NULL;
  struct gw_http *http = NULL;
  int ready_fd = -1;          /* daemonised: the starting process waits */
  char err[512] = "";
  sigset_t set;
  int rc, sig;

  slog_set_level(LOG_NOTICE);
  rc = gw_args_parse(argc, argv, &a);
  /* the same device for rc and dc; dc also takes the access key */
  if (!rc && (rdx_rc_server_set_cfg(&a.dev.cfg) ||
              rdx_dc_server_set_cfg(&a.dev.cfg, a.dc_access_key))) {
    fprintf(stderr, "s3rdma-gateway: --rdma-devices: a name is too long\n");
    rc = -EINVAL;
  }
  if (rc) {
    gw_args_free(&a);
    return rc > 0 ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (!a.fg) {
    if ((ready_fd = daemonise()) < 0) {
      fprintf(stderr, "s3rdma-gateway: daemon: %s\n", strerror(-ready_fd));
      rc = 1;
      goto free_keys;
    }
    slog_use_syslog("s3rdma-gateway");
  }
  gw_args_log_keys(&a);
  if (gw_dcallow_is_any(a.dc_targets))
    log_warn("--rdma-dc-targets any: a key holder's dc token may name any "
             "target of the fabric (only its memory key protects it)");
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
    log_err("curl_global_init failed");
    rc = 1;
    goto free_keys;
  }
  rc = rdx_server_create(&(struct rdx_server_cfg){a.cfg.chunk_size,
                                                  a.cfg.threads,
                                                  a.cfg.timeout_s},
                         &rdx, err, sizeof(err));
  if (rc) {
    log_err("rdma server: %s", err);
    goto cleanup_curl;
  }
  rc = gw_proxy_create(&a.cfg, &stats, rdx, &proxy, err, sizeof(err));
  if (rc) {
    log_err("%s", err);
    goto destroy_rdx;
  }
  rc = gw_http_start(&a.cfg, &stats, proxy, rdx, &http, err, sizeof(err));
  if (rc) {
    log_err("%s", err);
    goto destroy_proxy;
  }
  if (a.pidfile) {
    FILE *f = fopen(a.pidfile, "we");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
      log_err("--pidfile: cannot write %s: %s", a.pidfile, strerror(errno));
      rc = -EIO;
      goto stop_http;
    }
  }
  log_notice("listening on %s (port %u), upstream %s, %u threads, %u conns",
             a.cfg.listen, gw_http_port(http), a.cfg.upstream, a.cfg.threads,
             a.cfg.max_conns);
  if (ready_fd >= 0) { /* the parent exits 0 now */
    if (write(ready_fd, "", 1) != 1)
      log_warn("telling the starting process we listen: %s", strerror(errno));
    close(ready_fd);
    ready_fd = -1;
  }
  if (a.cfg.test_token_delay_ms || a.cfg.test_put_hold_ms ||
      a.cfg.test_put_no_reply)
    log_warn("test hooks on: token requests delayed %u ms (the first %u; 0: "
             "all), token PUTs held %u ms%s",
             a.cfg.test_token_delay_ms, a.cfg.test_token_delay_n,
             a.cfg.test_put_hold_ms,
             a.cfg.test_put_no_reply ? ", PUTs answered without "
                                       "x-amz-rdma-reply" : "");
  do {
    if (sigwait(&set, &sig))
      break;
  } while (sig != SIGINT && sig != SIGTERM);
  log_notice("signal %d: stopping", sig);
  rc = 0;
  if (a.pidfile)
    unlink(a.pidfile);
stop_http:
  gw_http_stop(http);
destroy_proxy:
  gw_proxy_destroy(proxy);
destroy_rdx:
  rdx_server_destroy(rdx);
cleanup_curl:
  curl_global_cleanup();
  if (proxy)
    print_stats(&stats, a.fg);
free_keys:
  gw_args_free(&a);
  if (ready_fd >= 0)
    close(ready_fd); /* not listening: the parent exits 1 */
  return rc ? 1 : 0;
}
