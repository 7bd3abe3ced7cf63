/* fsx_args: the command line of s3rdmafs (see fsx_args.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "fs/mount/fsx_args.h"

void fsx_args_usage(FILE *f)
{
  fprintf(f,
          "usage: " FSX_PROG " [options] BUCKET[:/PREFIX] MOUNTPOINT\n"
          "       " FSX_PROG " [options] --all-buckets MOUNTPOINT\n"
          "       " FSX_PROG " stats [--format text|prometheus] MOUNTPOINT\n\n"
          "options:\n"
          "  -o KEY[=VALUE][,...]  configuration keys (below), config=FILE,\n"
          "                        and libfuse mount options (fsname=,\n"
          "                        default_permissions, ...)\n"
          "  -f                    stay in the foreground\n"
          "  -d                    debug: foreground, debug log, FUSE trace\n"
          "  -s                    single-threaded\n"
          "  --all-buckets         every bucket is a top-level directory\n"
          "  --print-config        print the resulting configuration, exit\n"
          "  -h, --help            this help and every configuration key\n"
          "  -V, --version\n\n"
          "Keys: from the config file (which must then be mode 0600), the\n"
          "AWS_* environment or a profile (~/.aws/credentials, also 0600).\n"
          "-o credentials.secret_key=... works, but every local user can read\n"
          "command lines: it logs a warning.\n\n");
}

/* Mount options that mean nothing here (fstab, mount(8)). */
static bool ignored_opt(const char *k)
{
  static const char *const list[] = {"_netdev", "auto", "noauto", "user",
                                     "nouser", "users", "defaults", "nofail",
                                     "x-systemd.automount", NULL};
  for (int i = 0; list[i]; i++)
    if (!strcmp(k, list[i]))
      return true;
  return !strncmp(k, "x-systemd.", 10) || !strncmp(k, "comment=", 8);
}

/* Mount options we hand to libfuse and the kernel untouched. */
static bool fuse_opt_known(const char *k)
{
  static const char *const list[] = {
      "default_permissions", "allow_root", "auto_unmount", "fsname",
      "subtype", "blkdev", "blksize", "dev", "nodev", "suid", "nosuid",
      "exec", "noexec", "atime", "norelatime", "nostrictatime", "diratime",
      "nodiratime", "lazytime", "nolazytime", "sync", "async", "dirsync", "context", "fscontext",
      "defcontext", "rootcontext", "max_read", NULL};
  for (int i = 0; list[i]; i++)
    if (!strcmp(k, list[i]))
      return true;
  return false;
}

/* Options that are both ours and the kernel's. */
static bool shared_opt(const char *k)
{
  return !strcmp(k, "ro") || !strcmp(k, "rw") || !strcmp(k, "allow_other");
}

static int add_fuse_opt(struct fsx_args *a, const char *o)
{
  size_t n = a->fuse_opts ? strlen(a->fuse_opts) : 0;
  char *s = realloc(a->fuse_opts, n + strlen(o) + 2);

  if (!s)
    return -ENOMEM;
  if (n)
    s[n++] = ',';
  strcpy(s + n, o);
  a->fuse_opts = s;
  return 0;
}

/* One -o list: config=FILE first is the caller's job (see main). */
int fsx_args_apply(struct cfg *c, struct fsx_args *a, char *list, bool config,
                   char *err, size_t errlen)
{
  char *save = NULL, *o;
  int rc;

  for (o = strtok_r(list, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(o, '=');
    char *val = eq ? eq + 1 : NULL;
    char key[128];
    snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - o) : (int)strlen(o),
             o);
    if (!strcmp(key, "config")) {
      if (config && (!val || (rc = cfg_load_file(c, val, err, errlen))))
        return val ? rc : (snprintf(err, errlen, "config: needs a path"),
                           -EINVAL);
      continue;
    }
    if (config || ignored_opt(o))
      continue;
    rc = cfg_set(c, key, val, err, errlen);
    if ((rc == -ENOENT && fuse_opt_known(key)) || (!rc && shared_opt(key))) {
      rc = add_fuse_opt(a, o); /* libfuse judges the rest */
      if (rc)
        return rc;
      continue;
    }
    if (rc)
      return rc;
    if (eq)
      *eq = '=';
  }
  return 0;
}

/*
 * Overwrite the values of secret keys (credentials.secret_key=...) in an -o
 * list that lives in argv, once it is copied, so that /proc/PID/cmdline no
 * longer shows them; note the first such key in a->secret_opt for the
 * warning at mount.
 */
static void scrub_secret_opts(struct fsx_args *a, char *list)
{
  char key[64];

  for (char *o = list; *o;) {
    size_t n = strcspn(o, ",");
    char *eq = memchr(o, '=', n);

    if (eq && (size_t)(eq - o) < sizeof(key)) {
      snprintf(key, sizeof(key), "%.*s", (int)(eq - o), o);
      if (cfg_key_is_secret(key)) {
        memset(eq + 1, 'x', n - (size_t)(eq + 1 - o));
        if (!a->secret_opt[0])
          snprintf(a->secret_opt, sizeof(a->secret_opt), "%s", key);
      }
    }
    o += n + (o[n] == ',');
  }
}

int fsx_args_parse(int argc, char **argv, struct fsx_args *a, char ***olists,
                   int *nol)
{
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "-o") || !strncmp(s, "-o", 2)) {
      char *v = s[2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!v) {
        fprintf(stderr, FSX_PROG ": -o needs an argument\n");
        return -EINVAL;
      }
      (*olists)[*nol] = strdup(v);
      if (!(*olists)[(*nol)++]) {
        fprintf(stderr, FSX_PROG ": out of memory\n");
        return -ENOMEM;
      }
      scrub_secret_opts(a, v);
    } else if (!strcmp(s, "-f")) {
      a->foreground = true;
    } else if (!strcmp(s, "-d")) {
      a->foreground = a->debug = true;
    } else if (!strcmp(s, "-s")) {
      a->single = true;
    } else if (!strcmp(s, "--all-buckets")) {
      a->all_buckets = true;
    } else if (!strcmp(s, "--print-config")) {
      a->print_config = true;
    } else if (s[0] == '-' && s[1]) {
      fprintf(stderr, FSX_PROG ": unknown option '%s' (see --help)\n", s);
      return -EINVAL;
    } else if (!a->all_buckets && !a->source) {
      a->source = s;
    } else if (!a->mountpoint) {
      a->mountpoint = s;
    } else {
      fprintf(stderr, FSX_PROG ": unexpected argument '%s'\n", s);
      return -EINVAL;
    }
  }
  return 0;
}

/* "bucket[:/prefix]" into bucket and a prefix ending in '/' (or ""). */
int fsx_args_split_source(const char *src, char **bucket, char **prefix)
{
  const char *colon = strchr(src, ':');
  const char *p = colon ? colon + 1 : "";
  size_t pl;

  *bucket = colon ? strndup(src, (size_t)(colon - src)) : strdup(src);
  while (*p == '/')
    p++;
  pl = strlen(p);
  *prefix = malloc(pl + 2);
  if (!*bucket || !*prefix)
    return -ENOMEM;
  memcpy(*prefix, p, pl);
  if (pl && p[pl - 1] != '/')
    (*prefix)[pl++] = '/';
  (*prefix)[pl] = '\0';
  return **bucket ? 0 : -EINVAL;
}
