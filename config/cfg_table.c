/*
 * cfg_table: every configuration key, one row each. Order here is the order
 * of --help, --print-config and docs/config.md; keep docs/config.md in step
 * (test_cfg checks that every key is documented there).
 *
 * OFF() checks at compile time that the member has the C type the row's
 * type stores, so a row cannot write the wrong width.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "common/endpoint.h"
#include "config/cfg_i.h"

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)
#define DAY_S (24u * 3600u)

#define OFF(f, T) _Generic(((struct cfg *)0)->f, T: offsetof(struct cfg, f))
#define OFF_ENUM(f)                                                            \
  (offsetof(struct cfg, f) +                                                   \
   0 * sizeof(char[sizeof(((struct cfg *)0)->f) == sizeof(int) ? 1 : -1]))

/* Row heads; each row adds .doc and, where needed, .def_doc or .flags. */
#define K_STR(n, f, d, chk)                                                    \
  .name = n, .type = CFG_T_STR, .off = OFF(f, const char *), .def.s = d,       \
  .check = chk
#define K_BOOL(n, f, d)                                                        \
  .name = n, .type = CFG_T_BOOL, .off = OFF(f, bool), .def.b = d
#define K_UINT(n, f, d, lo, hi)                                                \
  .name = n, .type = CFG_T_UINT, .off = OFF(f, unsigned), .def.u = d,          \
  .min = lo, .max = hi
#define K_SIZE(n, f, d, lo, hi, chk)                                           \
  .name = n, .type = CFG_T_SIZE, .off = OFF(f, uint64_t), .def.u = d,          \
  .min = lo, .max = hi, .check = chk
#define K_SECS(n, f, d, lo, hi)                                                \
  .name = n, .type = CFG_T_DUR, .off = OFF(f, unsigned), .unit_ms = 1000,      \
  .def.u = (d) * 1000ull, .min = (lo) * 1000ull, .max = (hi) * 1000ull
#define K_MSEC(n, f, d, lo, hi)                                                \
  .name = n, .type = CFG_T_DUR, .off = OFF(f, unsigned), .unit_ms = 1,         \
  .def.u = d, .min = lo, .max = hi
#define K_ENUM(n, f, v, d)                                                     \
  .name = n, .type = CFG_T_ENUM, .off = OFF_ENUM(f), .vals = v, .def.e = d
#define K_MODE(n, f, d, hi)                                                    \
  .name = n, .type = CFG_T_MODE, .off = OFF(f, unsigned), .def.u = d,          \
  .min = 0, .max = hi

/* ---- enum values ---------------------------------------------------------- */

static const struct cfg_enum_val style_vals[] = {
    {"path", CFG_STYLE_PATH}, {"virtual", CFG_STYLE_VIRTUAL}, {NULL, 0}};

static const struct cfg_enum_val source_vals[] = {
    {"auto", CFG_CREDS_AUTO},       {"config", CFG_CREDS_CONFIG},
    {"env", CFG_CREDS_ENV},         {"profile", CFG_CREDS_PROFILE},
    {"anonymous", CFG_CREDS_ANONYMOUS}, {NULL, 0}};

static const struct cfg_enum_val level_vals[] = {
    {"error", LOG_ERR}, {"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
    {"info", LOG_INFO}, {"debug", LOG_DEBUG},     {NULL, 0}};

static const struct cfg_enum_val atime_vals[] = {
    {"noatime", CFG_ATIME_NO},
    {"relatime", CFG_ATIME_REL},
    {"strictatime", CFG_ATIME_STRICT},
    {NULL, 0}};

static const struct cfg_enum_val transport_vals[] = {
#define X(name, up, low, tok) {name, CFG_RDMA_##up},
    RDX_TRANSPORTS(X)
#undef X
    {NULL, 0}};

/* ---- validators ----------------------------------------------------------- */

/* One URL, or several separated by ';' (ENDPOINT_LIST_MAX at most, no
   server twice): each must parse; in a list, the reason names the URL. */
static const char *check_url(const union cfg_val *v)
{
  static _Thread_local char msg[2400];
  char one[ENDPOINT_LIST_MAX][2048];
  struct endpoint ep[ENDPOINT_LIST_MAX];
  const char *p = v->s, *url, *why = NULL;
  unsigned n = 0;
  size_t len;

  if (!v->s)
    return NULL;
  while (!why && endpoint_list_next(&p, &url, &len)) {
    if (n == ENDPOINT_LIST_MAX)
      return "names more than 16 URLs";
    if (len >= sizeof(one[n]))
      return "has a URL too long";
    memcpy(one[n], url, len);
    one[n][len] = '\0';
    endpoint_parse(one[n], &ep[n], &why);
    for (unsigned i = 0; !why && i < n; i++)
      if (endpoint_same(&ep[i], &ep[n]))
        why = "names the same server as an earlier URL";
    n++;
  }
  if (!why)
    return n ? NULL : "names no URL";
  if (n == 1 && !*p)
    return why; /* (one URL: the value is the URL) */
  snprintf(msg, sizeof(msg), "(its URL %u, \"%.2047s\") %s", n, one[n - 1],
           why);
  return msg;
}

static const char *check_abs_path(const union cfg_val *v)
{
  if (v->s && v->s[0] != '/')
    return "is not an absolute path";
  return NULL;
}

static const char *check_abs_or_empty(const union cfg_val *v)
{
  return v->s && v->s[0] ? check_abs_path(v) : NULL;
}

static const char *check_region(const union cfg_val *v)
{
  for (const char *s = v->s; s && *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
      return "is not a region name (letters, digits, '-' and '_')";
  return NULL;
}

/* Keys, tokens, profile names: they go into headers and file lookups. */
static const char *check_printable(const union cfg_val *v)
{
  for (const char *s = v->s; s && *s; s++)
    if (!isgraph((unsigned char)*s))
      return "contains spaces or control characters";
  return NULL;
}

static const char *check_header_name(const union cfg_val *v)
{
  const char *s = v->s;

  if (!s || !*s)
    return "is not an HTTP header name";
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
      return "is not an HTTP header name";
  return NULL;
}

/* rdma.devices: names (mlx5_0, rxe0) or IP addresses of their netdevs, up
   to 16, separated by ';', ',' or blanks (only ';' and blanks survive in a
   -o list). Whether they exist is the transport's check, at mount. */
static const char *check_devices(const union cfg_val *v)
{
  const char *s = v->s;
  unsigned n = 0;

  if (!s)
    return NULL;
  while (*s) {
    size_t len = strcspn(s, ";, \t");
    if (len) {
      if (len > 63)
        return "names a device longer than 63 characters";
      for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_-.:", s[i]))
          return "is not a list of device names or IP addresses";
      if (++n > 16)
        return "names more than 16 devices";
    }
    s += len;
    s += strspn(s, ";, \t");
  }
  return n ? NULL : "names no device";
}

/* rdma.gid_index: "auto" (the RoCE v2 IPv4-mapped GID) or 0..255. */
static const char *check_gid_index(const union cfg_val *v)
{
  const char *s = v->s;
  unsigned long n = 0;

  if (!s || !strcmp(s, "auto"))
    return NULL;
  if (!*s || strlen(s) > 3 || strspn(s, "0123456789") != strlen(s) ||
      (s[0] == '0' && s[1]) || (n = strtoul(s, NULL, 10)) > 255)
    return "is not auto or a GID index 0..255";
  return NULL;
}

static const char *check_pow2(const union cfg_val *v)
{
  return v->u & (v->u - 1) ? "is not a power of two" : NULL;
}

static const char *check_page_multiple(const union cfg_val *v)
{
  return v->u % 4096 ? "is not a multiple of 4K" : NULL;
}

static const char *check_staging_max(const union cfg_val *v)
{
  return v->u && v->u < MiB
             ? "is below 1M (0 means half the free space of cache.dir)"
             : NULL;
}

/* curl's low-speed window is whole seconds */
static const char *check_whole_secs(const union cfg_val *v)
{
  return v->u % 1000 ? "is not a whole number of seconds" : NULL;
}

static uint64_t def_uid(void)
{
  return getuid();
}

static uint64_t def_gid(void)
{
  return getgid();
}

/* ---- the table ------------------------------------------------------------ */

const struct cfg_key cfg_keys[] = {
    {K_STR("endpoint", endpoint, NULL, check_url), .flags = CFG_F_LIST,
     .def_doc = "$S3R_ENDPOINT, else $AWS_ENDPOINT_URL",
     .doc = "S3 endpoint URL, http:// or https:// (required); several "
            "serving the same buckets: \"URL;URL\" (a JSON array), at most "
            "16, each server once"},
    {K_STR("region", region, NULL, check_region),
     .def_doc = "$AWS_REGION, $AWS_DEFAULT_REGION, the profile, us-east-1",
     .doc = "region used in request signatures"},
    {K_ENUM("style", style, style_vals, CFG_STYLE_PATH),
     .doc = "addressing: host/bucket/key (path) or bucket.host/key (virtual)"},
    {K_STR("ca_bundle", ca_bundle, NULL, check_abs_path),
     .def_doc = "$AWS_CA_BUNDLE, else the system CAs",
     .doc = "PEM file of CA certificates for https endpoints"},
    {K_BOOL("insecure", insecure, false),
     .doc = "do not verify the server's TLS certificate (testing only)"},

    {K_ENUM("credentials.source", credentials.source, source_vals,
            CFG_CREDS_AUTO),
     .doc = "where keys come from; auto: config keys, environment, profile"},
    {K_STR("credentials.access_key", credentials.access_key, NULL,
           check_printable),
     .flags = CFG_F_SECRET, .def_doc = "unset",
     .doc = "access key id (source config or auto); never printed"},
    {K_STR("credentials.secret_key", credentials.secret_key, NULL,
           check_printable),
     .flags = CFG_F_SECRET | CFG_F_KEY, .def_doc = "unset",
     .doc = "secret access key, given with access_key; never printed"},
    {K_STR("credentials.session_token", credentials.session_token, NULL,
           check_printable),
     .flags = CFG_F_SECRET | CFG_F_KEY, .def_doc = "unset",
     .doc = "session token for temporary keys; never printed"},
    {K_STR("credentials.profile", credentials.profile, NULL, check_printable),
     .def_doc = "$AWS_PROFILE, else default",
     .doc = "profile in ~/.aws/credentials and ~/.aws/config"},

    {K_UINT("s3.max_inflight", s3.max_inflight, 128, 1, 4096),
     .doc = "S3 requests in flight at once, all files together"},
    {K_MSEC("s3.connect_timeout_ms", s3.connect_timeout_ms, 5000, 1, 600000),
     .doc = "TCP and TLS connect timeout"},
    {K_MSEC("s3.request_timeout_ms", s3.request_timeout_ms, 0, 0, 3600000),
     .doc = "limit on one attempt of one request; 0 = none (stalls are "
            "caught by s3.low_speed_time)"},
    {K_SECS("s3.low_speed_time", s3.low_speed_time_ms, 30, 1, DAY_S),
     .check = check_whole_secs,
     .doc = "an attempt that moves no byte for this long is given up (and "
            "retried); not one carrying an RDMA token: rdma.timeout"},
    {K_UINT("s3.retry.max_attempts", s3.retry.max_attempts, 5, 1, 100),
     .doc = "attempts per request, the first included"},
    {K_MSEC("s3.retry.base_ms", s3.retry.base_ms, 100, 1, 60000),
     .doc = "first retry waits up to this; doubles per retry (full jitter)"},
    {K_MSEC("s3.retry.max_backoff_ms", s3.retry.max_backoff_ms, 5000, 1,
            600000),
     .doc = "cap on one wait between attempts"},
    {K_MSEC("s3.retry.budget_ms", s3.retry.budget_ms, 30000, 1, 3600000),
     .doc = "no new attempt this long after a request's first"},

    {K_SIZE("cache.size", cache.size, 1 * GiB, 16 * MiB, 16 * TiB, NULL),
     .doc = "page cache in memory, bytes"},
    {K_SIZE("cache.chunk_size", cache.chunk_size, 1 * MiB, 64 * KiB,
            64 * MiB, check_pow2),
     .doc = "page cache unit and smallest ranged GET; a power of two"},
    {K_BOOL("cache.mlock", cache.mlock, true),
     .doc = "pin the page cache (needed for RDMA; degrades with a warning), "
            "a sixteenth of it (at most 64 MiB) at a time as reads first "
            "use it"},
    {K_STR("cache.dir", cache.dir, "/var/cache/s3rdmafs", check_abs_path),
     .doc = "staging directory for random writes and overwrites"},
    {K_SECS("cache.attr_ttl", cache.attr_ttl_ms, 60, 0, 30 * DAY_S),
     .doc = "how long file attributes are trusted; 0 = ask every time"},
    {K_SECS("cache.dir_ttl", cache.dir_ttl_ms, 60, 0, 30 * DAY_S),
     .doc = "how long directory listings are trusted"},
    {K_SECS("cache.negative_ttl", cache.negative_ttl_ms, 10, 0, 30 * DAY_S),
     .doc = "how long \"no such file\" is remembered"},
    {K_SECS("cache.burst_ttl", cache.burst_ttl_ms, 0, 0, 3600),
     .doc = "a cold lookup also lists its directory's first page, which "
            "then answers the lookups after it this long (directories at "
            "once, files with their GET alone, absent names still asked); "
            "never past negative_ttl or dir_ttl; 0 = off"},
    {K_BOOL("cache.kernel_cache", cache.kernel_cache, true),
     .doc = "keep the kernel's page cache across opens while the ETag is "
            "unchanged"},
    {K_SECS("cache.idle_release", cache.idle_release_ms, 300, 0, 30 * DAY_S),
     .doc = "a segment of the page cache no read used this long is given "
            "back (its memory unlocked and freed); 0 = never"},

    {K_SIZE("read.readahead_min", read.readahead_min, 1 * MiB, 64 * KiB,
            4 * GiB, NULL),
     .doc = "first readahead window of a sequential reader"},
    {K_SIZE("read.readahead_max", read.readahead_max, 64 * MiB, 64 * KiB,
            4 * GiB, NULL),
     .doc = "the window doubles up to this; at most cache.size/2 (far from "
            "the server it may grow past: four round trips of the "
            "reader's rate, at most cache.size/4)"},
    {K_UINT("read.max_inflight_per_file", read.max_inflight_per_file, 16, 1,
            1024),
     .doc = "ranged GETs in flight for one open file"},
    {K_SIZE("read.max_read", read.max_read, 1 * MiB, 4 * KiB, 16 * MiB,
            check_page_multiple),
     .doc = "FUSE max_read: largest read the kernel sends at once"},
    {K_SIZE("read.dense_block", read.dense_block, 2 * MiB, 0, 1 * GiB, NULL),
     .doc = "random reads: a block missed three times is fetched whole, "
            "for the kernel's page cache (0: always exact)"},
    {K_SIZE("read.lookup_bytes", read.lookup_bytes, 64 * KiB, 0, 64 * MiB,
            NULL),
     .doc = "a cold lookup of a file GETs its first bytes instead of a "
            "HEAD; a file no larger is then read with no request "
            "(0: HEAD)"},
    {K_SIZE("read.idle_fetch", read.idle_fetch, 4 * GiB, 0, 1024 * GiB,
            NULL),
     .doc = "a file this large at most, read at random by a lone reader, "
            "is fetched in order with the capacity it leaves idle (0: never)"},

    {K_SIZE("write.part_size", write.part_size, 8 * MiB, 5 * MiB, 5 * GiB,
            NULL),
     .doc = "multipart part size (10000 parts: 8M allows 78G objects)"},
    {K_UINT("write.max_parts_inflight", write.max_parts_inflight, 8, 1, 1024),
     .doc = "parts uploading at once for one file"},
    {K_SIZE("write.max_memory", write.max_memory, 256 * MiB, 16 * MiB,
            16 * TiB, NULL),
     .doc = "memory for write buffers, all files together"},
    {K_BOOL("write.stream", write.stream, true),
     .doc = "a new or emptied file written in order is uploaded from "
            "registered part buffers (write.max_memory of them), not "
            "through a staging file"},
    {K_STR("write.pool_dir", write.pool_dir, "/dev/shm", check_abs_or_empty),
     .doc = "directory of the part buffers' file, a tmpfs for choice (no "
            "write-back to a disk); where it lacks room, and with \"\", "
            "the file goes into cache.dir, where it also outlives a "
            "restart of the machine"},
    {K_UINT("write.rename_dir_max", write.rename_dir_max, 10000, 1, 10000000),
     .doc = "objects a directory rename may copy; beyond: EXDEV"},
    {K_SECS("write.retry_interval", write.retry_interval_ms, 30, 1, DAY_S),
     .doc = "a failed upload is retried in the background this often"},
    {K_SIZE("write.staging_max", write.staging_max, 0, 0, 1024 * TiB,
            check_staging_max),
     .def_doc = "0: half the free space of cache.dir's filesystem at mount",
     .doc = "disk the staging files of files being written may take in "
            "cache.dir (also what df shows as the mount's size)"},
    {K_SECS("write.staging_wait", write.staging_wait_ms, 30, 0, 3600),
     .doc = "a write past write.staging_max waits this long for uploads to "
            "free space, then fails with ENOSPC"},

    {K_UINT("mount.uid", mount.uid, 0, 0, 0xfffffffe), .def_fn = def_uid,
     .def_doc = "the mounting user's",
     .doc = "owner of files without x-amz-meta-uid"},
    {K_UINT("mount.gid", mount.gid, 0, 0, 0xfffffffe), .def_fn = def_gid,
     .def_doc = "the mounting user's",
     .doc = "group of files without x-amz-meta-gid"},
    {K_MODE("mount.umask", mount.umask, 022, 0777),
     .doc = "cleared from the modes of objects without x-amz-meta-mode"},
    {K_MODE("mount.file_mode", mount.file_mode, CFG_MODE_UNSET, 07777),
     .def_doc = "unset: x-amz-meta-mode, else 0666 & ~umask",
     .doc = "permission bits for every regular file"},
    {K_MODE("mount.dir_mode", mount.dir_mode, CFG_MODE_UNSET, 07777),
     .def_doc = "unset: x-amz-meta-mode, else 0777 & ~umask",
     .doc = "permission bits for every directory"},
    {K_BOOL("mount.allow_other", mount.allow_other, false),
     .doc = "let other users in (FUSE allow_other; needs user_allow_other "
            "in /etc/fuse.conf unless root)"},
    {K_BOOL("mount.ro", mount.ro, false), .doc = "mount read-only"},
    {K_BOOL("mount.all_buckets", mount.all_buckets, false),
     .doc = "every bucket is a top-level directory"},
    {K_BOOL("mount.listing_attrs", mount.listing_attrs, true),
     .doc = "show the attributes a listing gives (no HEAD per entry: `ls -l` "
            "is one LIST per 1000 names, but modes and owners are the "
            "mount's defaults until a file is looked up); false: every name "
            "shown has its x-amz-meta-* asked for first (a HEAD each, as "
            "s3fs does); always false with allow_other, where the kernel "
            "checks other users' access against what is shown"},
    {K_ENUM("mount.atime", mount.atime, atime_vals, CFG_ATIME_NO),
     .doc = "when reading a file stores its atime (x-amz-meta-atime, a copy "
            "of the object onto itself), at the close of a file read with no "
            "other handle open: relatime (once its atime is not newer than "
            "its mtime or ctime, or is a day old) or strictatime (every "
            "time); also -o noatime|relatime|strictatime"},
    {K_SIZE("mount.memory_target", mount.memory_target, 0, 0, 16 * TiB,
            NULL),
     .doc = "memory the page cache and the write buffers hold together at "
            "most: cache.size and write.max_memory are cut to fit at mount "
            "(at least 48 MiB); 0 = half the memory cgroup's limit where one "
            "is set (v2 memory.max or memory.high, v1 "
            "memory.limit_in_bytes), else a quarter of the machine's"},

    {K_ENUM("log.level", log.level, level_vals, LOG_NOTICE),
     .doc = "least important message logged"},
    {K_BOOL("log.syslog", log.syslog, false),
     .doc = "log to syslog instead of stderr"},

    {K_ENUM("rdma.transport", rdma.transport, transport_vals, CFG_RDMA_AUTO),
     .doc = "data plane for file bytes: off (HTTP bodies), auto, cma (same host), rc, dc"},
    {K_STR("rdma.token_header", rdma.token_header, "x-amz-rdma-token",
           check_header_name),
     .doc = "request header carrying the RDMA token (vendors differ)"},
    {K_UINT("rdma.dc_access_key", rdma.dc_access_key, 0xffeeddcc, 0,
            0xffffffff),
     .flags = CFG_F_HEX, .doc = "DC access key of our DCT (hex accepted)"},
    {K_SECS("rdma.timeout", rdma.timeout_ms, 30, 1, DAY_S),
     .doc = "deadline of an attempt carrying an RDMA token, plus 1 s per "
            "8 MiB it moves; sent signed as x-amz-rdma-expires"},
    {K_STR("rdma.devices", rdma.devices, NULL, check_devices),
     .def_doc = "any",
     .doc = "verbs devices rc and dc may use: names (mlx5_0, rxe0) or IP "
            "addresses of their netdevs, separated by ';' or blanks"},
    {K_STR("rdma.gid_index", rdma.gid_index, "auto", check_gid_index),
     .doc = "GID table index of the port: auto (the RoCE v2 IPv4-mapped "
            "one) or 0..255"},
};

const size_t cfg_nkeys = sizeof(cfg_keys) / sizeof(cfg_keys[0]);

const struct cfg_key *cfg_key_find(const char *name)
{
  for (size_t i = 0; i < cfg_nkeys; i++)
    if (strcmp(cfg_keys[i].name, name) == 0)
      return &cfg_keys[i];
  return NULL;
}
