/* fsx_setup: see fsx_setup.h. */
#include "fs/mount/fsx_setup.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/slog.h"
#include "fs/mount/fsx_fuse.h"

void fsx_setup_s3(const struct cfg *c, struct s3_client_config *s)
{
  s3_client_config_default(s);
  s->endpoint = c->endpoint;
  s->virtual_host = c->style == CFG_STYLE_VIRTUAL;
  s->ca_bundle = c->ca_bundle;
  s->insecure = c->insecure;
  s->max_inflight = c->s3.max_inflight;
  s->connect_timeout_ms = c->s3.connect_timeout_ms;
  s->request_timeout_ms = c->s3.request_timeout_ms;
  s->low_speed_time_s = c->s3.low_speed_time_ms / 1000;
  s->rdma_timeout_ms = c->rdma.timeout_ms;
  s->retry.max_attempts = c->s3.retry.max_attempts;
  s->retry.base_ms = c->s3.retry.base_ms;
  s->retry.max_backoff_ms = c->s3.retry.max_backoff_ms;
  s->retry.budget_ms = c->s3.retry.budget_ms;
  s->rdma_header = c->rdma.token_header;
  s->creds.region = c->region;
  s->creds.profile = c->credentials.profile;
  switch (c->credentials.source) {
  case CFG_CREDS_ANONYMOUS:
    s->creds.anonymous = true;
    break;
  case CFG_CREDS_ENV:
  case CFG_CREDS_PROFILE:
    break; /* s3_creds looks there when no keys are given */
  default:
    s->creds.access_key = c->credentials.access_key;
    s->creds.secret_key = c->credentials.secret_key;
    s->creds.session_token = c->credentials.session_token;
  }
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_mountinfo(char *s)
{
  char *o = s;

  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
        s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
}

/*
 * Let the kernel read ahead kb KiB at once on this mount: its default (128
 * KiB) cuts every read into 128 KiB FUSE requests whatever max_read, and
 * each request costs the daemon a wake-up and a pinning of the reader's
 * pages. The knob is the mount's bdi, /sys/class/bdi/MAJOR:MINOR/
 * read_ahead_kb, found through /proc/self/mountinfo by the mountpoint's
 * real path, resolved before mounting (any look at the mountpoint now would
 * wait for our own loop, not running yet). Best effort: only root may
 * write it.
 */
void fsx_setup_readahead(const char *real, unsigned long kb)
{
  char line[4096], dev[32] = "", path[PATH_MAX];
  FILE *f;

  f = fopen("/proc/self/mountinfo", "re");
  if (!real || !f)
    goto out;
  while (fgets(line, sizeof(line), f)) {
    char d[32];
    if (sscanf(line, "%*s %*s %31s %*s %4095s", d, path) != 2)
      continue;
    unescape_mountinfo(path);
    if (strcmp(path, real) == 0)
      snprintf(dev, sizeof(dev), "%s", d); /* the last mount there wins */
  }
  if (dev[0]) {
    snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
    FILE *ra = fopen(path, "we");
    if (!ra || fprintf(ra, "%lu\n", kb) < 0 || fclose(ra) != 0)
      log_info("cannot set %s to %lu (kernel reads stay 128 KiB)", path, kb);
    else
      log_debug("%s: %lu", path, kb);
  }
out:
  if (f)
    fclose(f);
}

int fsx_setup_check_source(struct s3_client *s3, const char *bucket,
                        const char *prefix, const char *endpoint)
{
  struct s3_list_params p = {.prefix = prefix, .max_keys = 1};
  struct s3_list_result lr;
  struct s3_buckets_result br;
  int rc;

  if (bucket) {
    rc = s3_list_objects(s3, bucket, &p, &lr);
    if (!rc)
      s3_list_result_cleanup(&lr);
  } else {
    rc = s3_list_buckets(s3, &br);
    if (!rc)
      s3_buckets_result_cleanup(&br);
  }
  switch (-rc) {
  case 0:
    return 0;
  case ENOENT:
    log_err("bucket '%s' does not exist at %s", bucket, endpoint);
    break;
  case EACCES:
    log_err("access denied by %s%s%s: check the access key and secret key "
            "(and the bucket's policy)", endpoint,
            bucket ? " for bucket " : "", bucket ? bucket : "");
    break;
  case ECONNREFUSED:
  case EHOSTUNREACH:
  case ETIMEDOUT:
  case ECONNRESET:
    log_err("cannot reach the endpoint %s: %s", endpoint, strerror(-rc));
    break;
  default:
    log_err("%s at %s: %s", bucket ? bucket : "listing buckets", endpoint,
            strerror(-rc));
  }
  return rc;
}

static void fuse_log_to_slog(enum fuse_log_level level, const char *fmt,
                             va_list ap)
{
  char line[1024];

  if ((int)level > slog_level)
    return;
  vsnprintf(line, sizeof(line), fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  slog_msg((int)level, "fuse: %s", line);
}

void fsx_setup_opts(const struct cfg *c, struct fsx_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->attr_ttl_ms = c->cache.attr_ttl_ms;
  o->dir_ttl_ms = c->cache.dir_ttl_ms;
  o->neg_ttl_ms = c->cache.negative_ttl_ms;
  o->burst_ttl_ms = c->cache.burst_ttl_ms;
  o->lookup_bytes = c->read.lookup_bytes;
  o->rdma_named = c->rdma.transport != CFG_RDMA_OFF &&
                  c->rdma.transport != CFG_RDMA_AUTO;
  o->kernel_cache = c->cache.kernel_cache;
  o->uid = c->mount.uid;
  o->gid = c->mount.gid;
  o->umask = c->mount.umask;
  o->file_mode = c->mount.file_mode == CFG_MODE_UNSET ? 0 : c->mount.file_mode;
  o->dir_mode = c->mount.dir_mode == CFG_MODE_UNSET ? 0 : c->mount.dir_mode;
  o->ro = c->mount.ro;
  o->all_buckets = c->mount.all_buckets;
  o->atime = c->mount.atime;
  /* other users' access is checked against what the kernel is shown: never
     a listing's guess */
  o->listing_attrs = c->mount.listing_attrs && !c->mount.allow_other;
  o->readahead_min = c->read.readahead_min;
  o->readahead_max = c->read.readahead_max;
  o->readahead_far = c->cache.size / 4 > o->readahead_max ? c->cache.size / 4
                                                          : o->readahead_max;
  o->dense_block = c->read.dense_block;
  o->idle_fetch = c->read.idle_fetch;
  o->max_inflight_per_file = c->read.max_inflight_per_file;
  o->max_read = c->read.max_read;
  o->mount_time = time(NULL);
  o->part_size = c->write.part_size;
  o->max_parts_inflight = c->write.max_parts_inflight;
  o->max_memory = c->write.max_memory;
  o->rename_dir_max = c->write.rename_dir_max;
  o->retry_interval_ms = c->write.retry_interval_ms;
}

void fsx_setup_fuse_log(void)
{
  fuse_set_log_func(fuse_log_to_slog);
}
