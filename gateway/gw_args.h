/*
 * gw_args: s3rdma-gateway's command line. The flags (getopt_long, one row
 * each) into a struct gw_args with the defaults filled in; the two secret
 * keys loaded by gw_secret's precedence (heap copies, scrubbed from argv);
 * the required flags and the keys that go together checked. Every refusal
 * is one line on stderr naming the flag; main exits 2 on it.
 *
 * Runs on main's thread before any other exists (getopt's state, the log
 * level set by --log-level).
 */
#ifndef S3R_GW_ARGS_H
#define S3R_GW_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_proxy.h"  /* struct gw_config */
#include "gateway/gw_secret.h" /* enum gw_secret_from */
#include "rdma/rdx_rc_client.h" /* struct rdx_rc_dev_cfg, RDX_RC_DEVS_MAX */

/* The device rc and dc serve on (--rdma-devices, --rdma-gid-index):
   cfg.devices points at names, whose strings point into list (a copy of
   the option's value, owned). */
struct gw_args_dev {
  char *list;
  const char *names[RDX_RC_DEVS_MAX];
  struct rdx_rc_dev_cfg cfg;
};

struct gw_args {
  /* Points into argv (borrowed: argv outlives it), the environment and
     sk/usk below. */
  struct gw_config cfg;
  /* The secret keys (heap copies cfg points at; wiped by gw_args_free)
     and where each came from. */
  char *sk, *usk;
  enum gw_secret_from sk_from, usk_from;
  struct gw_args_dev dev;
  char *upstreams;        /* --upstream given more than once: the URLs
                             joined by ';' (owned; cfg.upstream points at
                             it) */
  uint32_t dc_access_key; /* --rdma-dc-access-key (RDX_DC_ACCESS_KEY_DEFAULT) */
  struct gw_dcallow *dc_targets; /* --rdma-dc-targets (owned; cfg points
                                    at it) */
  const char *pidfile;    /* --pidfile, or NULL */
  bool fg;                /* -f: do not daemonise */
};

/*
 * Parse argv into *a (every field set; defaults where no flag says
 * otherwise). Returns 0; 1 when --help was printed on stdout; or -EINVAL
 * with one line on stderr. Either way *a may own memory: gw_args_free.
 * Secret keys given on the command line are scrubbed from argv.
 */
int gw_args_parse(int argc, char **argv, struct gw_args *a)
    __attribute__((warn_unused_result));

/* Wipe and free what *a owns (the keys, the device list, the
   upstreams). NULL-tolerant; may be called twice. */
void gw_args_free(struct gw_args *a);

/* Log where the secret keys came from (never the keys), and warn about
   any given on the command line. After the log goes where it will go. */
void gw_args_log_keys(const struct gw_args *a);

#endif
