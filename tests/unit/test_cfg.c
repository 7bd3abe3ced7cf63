/*
 * test_cfg: the config module. The key table's own consistency; defaults;
 * every value type, good and bad, through -o and through JSON; sizes and
 * durations at the 64-bit edge; file errors with line:column; duplicates;
 * unknown keys with hints; wrong types; bounds named in the message; -o
 * aliases; cross-key checks; secrets never printed; the endpoint from the
 * environment; reloads without leaks (ASan). The packaged example must load
 * and name every key; docs/config.md and the config fuzzer's dictionary
 * must name every key too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/cfg.h"
#include "config/cfg_i.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define KiB 1024ull

/* ---- helpers -------------------------------------------------------------- */

/* A file of the source tree: TEST_DATA_DIR is <src>/tests/unit/data. */
static void src_path(const char *rel, char *out, size_t len)
{
  static const char suffix[] = "/tests/unit/data";
  const char *d = TEST_DATA_DIR;
  size_t n = strlen(d), sn = strlen(suffix);

  assert_true(n >= sn && strcmp(d + n - sn, suffix) == 0);
  snprintf(out, len, "%.*s/%s", (int)(n - sn), d, rel);
}

static void write_tmp(char *path, size_t len, const char *text)
{
  int fd;

  snprintf(path, len, "/tmp/test_cfg_XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

/* Load text as a file; path gets the name it had (already unlinked). */
static int load_text(struct cfg *c, const char *text, char *err, size_t errlen,
                     char *path, size_t pathlen)
{
  int rc;

  write_tmp(path, pathlen, text);
  rc = cfg_load_file(c, path, err, errlen);
  unlink(path);
  return rc;
}

/* load_text with the file's mode set first (mkstemp makes 0600). */
static int load_text_mode(struct cfg *c, const char *text, mode_t mode,
                          char *err, size_t errlen, char *path,
                          size_t pathlen)
{
  int rc;

  write_tmp(path, pathlen, text);
  assert_int_equal(chmod(path, mode), 0);
  rc = cfg_load_file(c, path, err, errlen);
  unlink(path);
  return rc;
}

static void assert_contains(const char *hay, const char *needle)
{
  if (!strstr(hay, needle))
    fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

static void assert_dump_line(const struct cfg *c, const char *key,
                             const char *val)
{
  char buf[16384], line[600];

  buf[0] = '\n';
  assert_true(cfg_dump(c, buf + 1, sizeof(buf) - 1) < sizeof(buf) - 1);
  snprintf(line, sizeof(line), "\n%s = %s\n", key, val);
  if (!strstr(buf, line))
    fail_msg("dump lacks \"%s = %s\":\n%s", key, val, buf);
}

static void clear_env(void)
{
  unsetenv("S3R_ENDPOINT");
  unsetenv("AWS_ENDPOINT_URL");
}

/* ---- the table ------------------------------------------------------------ */

static void test_table_sane(void **state)
{
  char why[256];
  union cfg_val v;

  (void)state;
  assert_true(cfg_nkeys >= 40);
  for (size_t i = 0; i < cfg_nkeys; i++) {
    const struct cfg_key *k = &cfg_keys[i];
    size_t n = strlen(k->name);

    assert_non_null(k->doc);
    assert_true(k->doc[0] != 0);
    assert_ptr_equal(cfg_key_find(k->name), k);
    /* no key is also a section */
    for (size_t j = 0; j < cfg_nkeys; j++)
      assert_false(strncmp(cfg_keys[j].name, k->name, n) == 0 &&
                   cfg_keys[j].name[n] == '.');
    if (k->type == CFG_T_UINT || k->type == CFG_T_DUR ||
        k->type == CFG_T_MODE)
      assert_true(k->max <= UINT_MAX);
    if (k->type == CFG_T_DUR)
      assert_true(k->unit_ms == 1 || k->unit_ms == 1000);
    if (k->type == CFG_T_ENUM)
      assert_non_null(k->vals);
    /* every set default passes its own checks */
    cfg_value_default(k, &v);
    if ((k->type == CFG_T_STR && !v.s) ||
        (k->type == CFG_T_MODE && v.u == CFG_MODE_UNSET))
      continue;
    if (cfg_value_check(k, &v, why, sizeof(why)))
      fail_msg("default of %s: %s", k->name, why);
  }
}

/* ---- defaults ------------------------------------------------------------- */

static void test_defaults(void **state)
{
  struct cfg c;
  char err[256];

  (void)state;
  clear_env();
  memset(&c, 0xa5, sizeof(c));
  cfg_init_defaults(&c);
  assert_null(c.endpoint);
  assert_null(c.region);
  assert_int_equal(c.style, CFG_STYLE_PATH);
  assert_null(c.ca_bundle);
  assert_false(c.insecure);
  assert_int_equal(c.credentials.source, CFG_CREDS_AUTO);
  assert_null(c.credentials.access_key);
  assert_null(c.credentials.secret_key);
  assert_null(c.credentials.session_token);
  assert_null(c.credentials.profile);
  assert_int_equal(c.s3.max_inflight, 128);
  assert_int_equal(c.s3.connect_timeout_ms, 5000);
  assert_int_equal(c.s3.request_timeout_ms, 0);
  assert_int_equal(c.s3.low_speed_time_ms, 30000);
  assert_int_equal(c.s3.retry.max_attempts, 5);
  assert_int_equal(c.s3.retry.base_ms, 100);
  assert_int_equal(c.s3.retry.max_backoff_ms, 5000);
  assert_int_equal(c.s3.retry.budget_ms, 30000);
  assert_int_equal(c.cache.size, 1 * GiB);
  assert_int_equal(c.cache.chunk_size, 1 * MiB);
  assert_true(c.cache.mlock);
  assert_string_equal(c.cache.dir, "/var/cache/s3rdmafs");
  assert_int_equal(c.cache.attr_ttl_ms, 60000);
  assert_int_equal(c.cache.dir_ttl_ms, 60000);
  assert_int_equal(c.cache.negative_ttl_ms, 10000);
  assert_true(c.cache.kernel_cache);
  assert_int_equal(c.cache.idle_release_ms, 300000);
  assert_int_equal(c.read.readahead_min, 1 * MiB);
  assert_int_equal(c.read.readahead_max, 64 * MiB);
  assert_int_equal(c.read.max_inflight_per_file, 16);
  assert_int_equal(c.read.max_read, 1 * MiB);
  assert_int_equal(c.read.dense_block, 2 * MiB);
  assert_int_equal(c.read.idle_fetch, 4 * GiB);
  assert_int_equal(c.read.lookup_bytes, 64 * KiB);
  assert_int_equal(c.write.part_size, 8 * MiB);
  assert_int_equal(c.write.max_parts_inflight, 8);
  assert_int_equal(c.write.max_memory, 256 * MiB);
  assert_int_equal(c.write.staging_max, 0); /* half the free space */
  assert_int_equal(c.write.staging_wait_ms, 30000);
  assert_true(c.write.stream);
  assert_string_equal(c.write.pool_dir, "/dev/shm");
  assert_int_equal(c.mount.uid, getuid());
  assert_int_equal(c.mount.gid, getgid());
  assert_int_equal(c.mount.umask, 022);
  assert_int_equal(c.mount.file_mode, CFG_MODE_UNSET);
  assert_int_equal(c.mount.dir_mode, CFG_MODE_UNSET);
  assert_false(c.mount.allow_other);
  assert_false(c.mount.ro);
  assert_false(c.mount.all_buckets);
  assert_true(c.mount.listing_attrs);
  assert_int_equal(c.mount.atime, CFG_ATIME_NO);
  assert_int_equal(c.mount.memory_target, 0);
  assert_int_equal(c.log.level, LOG_NOTICE);
  assert_false(c.log.syslog);
  assert_int_equal(c.rdma.transport, CFG_RDMA_AUTO);
  assert_string_equal(c.rdma.token_header, "x-amz-rdma-token");
  assert_int_equal(c.rdma.dc_access_key, 0xffeeddccu);
  assert_int_equal(c.rdma.timeout_ms, 30000);

  /* the defaults are consistent: only the endpoint is missing */
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), -EINVAL);
  assert_contains(err, "endpoint: not set");
  assert_int_equal(cfg_set(&c, "endpoint", "http://127.0.0.1:7480", err,
                           sizeof(err)), 0);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(err, "");
  cfg_cleanup(&c);
}

/* ---- public parsers ------------------------------------------------------- */

static const struct size_case {
  const char *in;
  int rc;
  uint64_t want;
} size_cases[] = {
    {"0", 0, 0},
    {"1", 0, 1},
    {"4096", 0, 4096},
    {"64K", 0, 64 * 1024},
    {"64k", 0, 64 * 1024},
    {"64KB", 0, 64 * 1024},
    {"64KiB", 0, 64 * 1024},
    {"64kib", 0, 64 * 1024},
    {"1M", 0, MiB},
    {"1G", 0, GiB},
    {"2T", 0, 2048 * GiB},
    {"10B", 0, 10},
    {"007M", 0, 7 * MiB},
    {"18446744073709551615", 0, UINT64_MAX},
    {"16777215T", 0, 16777215ull << 40},
    {"18446744073709551616", -ERANGE, 0},
    {"99999999999999999999", -ERANGE, 0},
    {"99999999T", -ERANGE, 0},
    {"16777216T", -ERANGE, 0},
    {"17179869184G", -ERANGE, 0},
    {"", -EINVAL, 0},
    {"K", -EINVAL, 0},
    {"12Q", -EINVAL, 0},
    {"1.5G", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"+1", -EINVAL, 0},
    {" 1", -EINVAL, 0},
    {"1 ", -EINVAL, 0},
    {"1 G", -EINVAL, 0},
    {"1GG", -EINVAL, 0},
    {"1GBB", -EINVAL, 0},
    {"1iB", -EINVAL, 0},
    {"1P", -EINVAL, 0},
    {"0x10", -EINVAL, 0},
};

static void test_parse_size(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(size_cases) / sizeof(size_cases[0]); i++) {
    const struct size_case *t = &size_cases[i];
    uint64_t v = 12345;
    int rc = cfg_parse_size(t->in, &v);

    if (rc != t->rc)
      fail_msg("cfg_parse_size(\"%s\") = %d, want %d", t->in, rc, t->rc);
    if (!rc && v != t->want)
      fail_msg("cfg_parse_size(\"%s\") gave %llu", t->in,
               (unsigned long long)v);
    if (rc)
      assert_int_equal(v, 12345);   /* untouched on error */
  }
  assert_int_equal(cfg_parse_size(NULL, &(uint64_t){0}), -EINVAL);
}

static const struct dur_case {
  const char *in;
  unsigned unit_ms;
  int rc;
  uint64_t want_ms;
} dur_cases[] = {
    {"0", 1000, 0, 0},
    {"60", 1000, 0, 60000},
    {"60", 1, 0, 60},
    {"500ms", 1000, 0, 500},
    {"2s", 1, 0, 2000},
    {"2m", 1000, 0, 120000},
    {"1h", 1000, 0, 3600000},
    {"1d", 1, 0, 86400000},
    {"18446744073709551615", 1, 0, UINT64_MAX},
    {"18446744073709551615", 1000, -ERANGE, 0},
    {"999999999999999999d", 1, -ERANGE, 0},
    {"", 1000, -EINVAL, 0},
    {"s", 1000, -EINVAL, 0},
    {"1.5s", 1000, -EINVAL, 0},
    {"5x", 1000, -EINVAL, 0},
    {"5 s", 1000, -EINVAL, 0},
    {"5S", 1000, -EINVAL, 0},
    {"5sec", 1000, -EINVAL, 0},
    {"-1", 1000, -EINVAL, 0},
    {"1", 0, -EINVAL, 0},
};

static void test_parse_duration(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(dur_cases) / sizeof(dur_cases[0]); i++) {
    const struct dur_case *t = &dur_cases[i];
    uint64_t v = 0;
    int rc = cfg_parse_duration(t->in, t->unit_ms, &v);

    if (rc != t->rc)
      fail_msg("cfg_parse_duration(\"%s\", %u) = %d, want %d", t->in,
               t->unit_ms, rc, t->rc);
    if (!rc && v != t->want_ms)
      fail_msg("cfg_parse_duration(\"%s\") gave %llu", t->in,
               (unsigned long long)v);
  }
}

static void test_parse_bool(void **state)
{
  static const char *const yes[] = {"true", "TRUE", "True", "1", "yes", "on"};
  static const char *const no[] = {"false", "FALSE", "0", "no", "off", "Off"};
  static const char *const bad[] = {"", "2", "y", "n", "truee", " true",
                                    "enable"};
  bool b;

  (void)state;
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    b = false;
    assert_int_equal(cfg_parse_bool(yes[i], &b), 0);
    assert_true(b);
  }
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    b = true;
    assert_int_equal(cfg_parse_bool(no[i], &b), 0);
    assert_false(b);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(cfg_parse_bool(bad[i], &b), -EINVAL);
  assert_int_equal(cfg_parse_bool(NULL, &b), -EINVAL);
}

/* ---- -o values, every type ----------------------------------------------- */

/* rc 0: want is the value as cfg_dump prints it; else a piece of err. */
static const struct set_case {
  const char *key;
  const char *value;
  int rc;
  const char *want;
} set_cases[] = {
    /* string with a URL validator */
    {"endpoint", "http://10.0.0.5:7480", 0, "http://10.0.0.5:7480"},
    {"endpoint", "HTTPS://s3.example.com", 0, "HTTPS://s3.example.com"},
    {"endpoint", "", 0, "(unset)"},
    {"endpoint", "ftp://x", -EINVAL,
     "endpoint: \"ftp://x\" is not an http:// or https:// URL"},
    {"endpoint", "10.0.0.5:7480", -EINVAL, "is not an http:// or https://"},
    {"endpoint", "http://", -EINVAL, "\"http://\" has no host name"},
    {"endpoint", "http:///x", -EINVAL, "has no host name"},
    {"endpoint", "http://a b", -EINVAL, "contains spaces or control"},
    {"endpoint", "http://a\nb", -EINVAL, "\"http://a?b\" contains spaces"},
    /* a list: URLs separated by ';', each checked */
    {"endpoint", "http://a:1;http://b:2", 0, "http://a:1;http://b:2"},
    {"endpoint", "http://a:1;ftp://b", -EINVAL,
     "is not an http:// or https:// URL"},
    {"endpoint", ";", -EINVAL, "endpoint: \";\" names no URL"},
    /* in a list, the URL at fault is named */
    {"endpoint", "http://a:1; http://b:2", -EINVAL,
     "(its URL 2, \" http://b:2\") is not an http:// or https:// URL"},
    {"endpoint", "http://a;http://b;HTTP://A:80/", -EINVAL,
     "(its URL 3, \"HTTP://A:80/\") names the same server as an earlier"},
    {"endpoint", "http://a:1;http://a:2;http://a:3;http://a:4;http://a:5;"
                 "http://a:6;http://a:7;http://a:8;http://a:9;http://a:10;"
                 "http://a:11;http://a:12;http://a:13;http://a:14;"
                 "http://a:15;http://a:16;http://a:17", -EINVAL,
     "names more than 16 URLs"},
    {"region", "eu-west-1", 0, "eu-west-1"},
    {"region", "", 0, "(unset)"},
    {"region", "eu west", -EINVAL, "region: \"eu west\" is not a region name"},
    {"ca_bundle", "/etc/ssl/ca.pem", 0, "/etc/ssl/ca.pem"},
    {"ca_bundle", "ca.pem", -EINVAL, "\"ca.pem\" is not an absolute path"},
    {"cache.dir", "/srv/stage", 0, "/srv/stage"},
    {"cache.dir", "", -EINVAL, "cache.dir: \"\" is not an absolute path"},
    {"write.pool_dir", "/run/s3r", 0, "/run/s3r"},
    {"write.pool_dir", "", 0, ""},
    {"write.pool_dir", "shm", -EINVAL, "\"shm\" is not an absolute path"},
    {"rdma.token_header", "x-scal-rdma", 0, "x-scal-rdma"},
    {"rdma.token_header", "x rdma", -EINVAL, "is not an HTTP header name"},
    {"rdma.token_header", "x:y", -EINVAL, "is not an HTTP header name"},
    {"rdma.token_header", "", -EINVAL, "is not an HTTP header name"},
    {"rdma.devices", "mlx5_0", 0, "mlx5_0"},
    {"rdma.devices", "rxe0;10.0.0.7 fd00::7", 0, "rxe0;10.0.0.7 fd00::7"},
    {"rdma.devices", "", 0, "(unset)"},
    {"rdma.devices", "; ;", -EINVAL, "names no device"},
    {"rdma.devices", "rxe0/1", -EINVAL, "is not a list of device names"},
    {"rdma.devices", "a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q", -EINVAL,
     "names more than 16 devices"},
    {"rdma.gid_index", "auto", 0, "auto"},
    {"rdma.gid_index", "3", 0, "3"},
    {"rdma.gid_index", "255", 0, "255"},
    {"rdma.gid_index", "256", -EINVAL, "is not auto or a GID index 0..255"},
    {"rdma.gid_index", "03", -EINVAL, "is not auto or a GID index 0..255"},
    {"rdma.gid_index", "-1", -EINVAL, "is not auto or a GID index 0..255"},
    {"credentials.profile", "dev", 0, "dev"},
    {"credentials.profile", "a\tb", -EINVAL, "contains spaces or control"},
    /* secret strings */
    {"credentials.access_key", "AKIDEXAMPLE", 0, "***"},
    {"credentials.access_key", "", 0, "(unset)"},
    {"credentials.secret_key", "a b", -EINVAL,
     "credentials.secret_key: (hidden value) contains spaces"},
    /* long input is cut in messages */
    {"ca_bundle",
     "relative/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaa", -EINVAL, "aaaa...\" is not an absolute path"},
    /* bool */
    {"insecure", "true", 0, "true"},
    {"insecure", "YES", 0, "true"},
    {"insecure", "on", 0, "true"},
    {"insecure", "1", 0, "true"},
    {"insecure", "false", 0, "false"},
    {"insecure", "no", 0, "false"},
    {"insecure", "off", 0, "false"},
    {"insecure", "0", 0, "false"},
    {"insecure", "maybe", -EINVAL,
     "insecure: \"maybe\" is not a boolean (true/false, yes/no, on/off, 1/0)"},
    {"mount.ro", "", -EINVAL, "\"\" is not a boolean"},
    /* integer */
    {"s3.max_inflight", "1", 0, "1"},
    {"s3.max_inflight", "4096", 0, "4096"},
    {"s3.max_inflight", "0x40", 0, "64"},
    {"s3.max_inflight", "0", -EINVAL,
     "s3.max_inflight: 0 is below the minimum 1"},
    {"s3.max_inflight", "4097", -EINVAL,
     "s3.max_inflight: 4097 is above the maximum 4096"},
    {"s3.max_inflight", "abc", -EINVAL, "\"abc\" is not a whole number"},
    {"s3.max_inflight", "-1", -EINVAL, "\"-1\" is not a whole number"},
    {"s3.max_inflight", "12 ", -EINVAL, "is not a whole number"},
    {"s3.max_inflight", "1.0", -EINVAL, "is not a whole number"},
    {"s3.max_inflight", "99999999999999999999999", -EINVAL,
     "\"99999999999999999999999\" is too large"},
    {"s3.retry.max_attempts", "101", -EINVAL, "above the maximum 100"},
    {"mount.uid", "4242", 0, "4242"},
    {"mount.uid", "0", 0, "0"},
    {"mount.uid", "4294967295", -EINVAL, "above the maximum 4294967294"},
    {"rdma.dc_access_key", "0xDEADBEEF", 0, "0xdeadbeef"},
    {"rdma.dc_access_key", "4294967295", 0, "0xffffffff"},
    {"rdma.dc_access_key", "0", 0, "0x00000000"},
    {"rdma.dc_access_key", "0x100000000", -EINVAL,
     "0x100000000 is above the maximum 0xffffffff"},
    {"rdma.dc_access_key", "0x", -EINVAL, "\"0x\" is not a whole number"},
    {"rdma.dc_access_key", "0xffeeddccg", -EINVAL, "is not a whole number"},
    /* size */
    {"cache.size", "64M", 0, "64M"},
    {"cache.size", "16M", 0, "16M"},
    {"cache.size", "1073741824", 0, "1G"},
    {"cache.size", "2g", 0, "2G"},
    {"cache.size", "1GiB", 0, "1G"},
    {"cache.size", "16T", 0, "16T"},
    {"cache.size", "17000000K", 0, "17000000K"},
    {"cache.size", "16777215", -EINVAL, "16777215 is below the minimum 16M"},
    {"cache.size", "15M", -EINVAL, "cache.size: 15M is below the minimum 16M"},
    {"cache.size", "17T", -EINVAL, "cache.size: 17T is above the maximum 16T"},
    {"cache.size", "12Q", -EINVAL,
     "cache.size: \"12Q\" is not a size (use bytes or a K/M/G/T suffix)"},
    {"cache.size", "99999999T", -EINVAL,
     "cache.size: \"99999999T\" is too large"},
    {"cache.size", "1.5G", -EINVAL, "is not a size"},
    {"cache.size", "", -EINVAL, "\"\" is not a size"},
    {"cache.chunk_size", "128K", 0, "128K"},
    {"cache.chunk_size", "96K", -EINVAL,
     "cache.chunk_size: 96K is not a power of two"},
    {"cache.chunk_size", "32K", -EINVAL, "32K is below the minimum 64K"},
    {"cache.chunk_size", "128M", -EINVAL, "128M is above the maximum 64M"},
    {"read.max_read", "128K", 0, "128K"},
    {"read.max_read", "12K", 0, "12K"},
    {"read.max_read", "6K", -EINVAL, "6K is not a multiple of 4K"},
    {"read.max_read", "1000", -EINVAL, "1000 is below the minimum 4K"},
    {"write.part_size", "5G", 0, "5G"},
    {"write.part_size", "4M", -EINVAL, "4M is below the minimum 5M"},
    {"write.part_size", "6G", -EINVAL, "6G is above the maximum 5G"},
    {"write.staging_max", "64M", 0, "64M"},
    {"write.staging_max", "0", 0, "0"},
    {"write.staging_max", "1M", 0, "1M"},
    {"write.staging_max", "1024T", 0, "1024T"},
    {"write.staging_max", "1048575", -EINVAL,
     "write.staging_max: 1048575 is below 1M (0 means half the free space "
     "of cache.dir)"},
    {"write.staging_max", "1025T", -EINVAL,
     "write.staging_max: 1025T is above the maximum 1024T"},
    {"write.staging_max", "unlimited", -EINVAL, "is not a size"},
    /* duration, seconds keys */
    {"cache.attr_ttl", "30", 0, "30s"},
    {"cache.attr_ttl", "0", 0, "0s"},
    {"cache.attr_ttl", "500ms", 0, "500ms"},
    {"cache.attr_ttl", "1500ms", 0, "1500ms"},
    {"cache.attr_ttl", "2m", 0, "120s"},
    {"cache.dir_ttl", "1h", 0, "3600s"},
    {"cache.negative_ttl", "30d", 0, "2592000s"},
    {"cache.negative_ttl", "31d", -EINVAL,
     "cache.negative_ttl: 2678400s is above the maximum 2592000s"},
    {"cache.attr_ttl", "5x", -EINVAL,
     "cache.attr_ttl: \"5x\" is not a duration (use whole seconds or a "
     "ms/s/m/h/d suffix)"},
    {"cache.attr_ttl", "1.5", -EINVAL, "is not a duration"},
    {"cache.attr_ttl", "999999999999999999d", -EINVAL, "is too large"},
    /* duration, ms keys */
    {"s3.connect_timeout_ms", "250", 0, "250ms"},
    {"s3.connect_timeout_ms", "2s", 0, "2000ms"},
    {"s3.connect_timeout_ms", "0", -EINVAL,
     "s3.connect_timeout_ms: 0ms is below the minimum 1ms"},
    {"s3.connect_timeout_ms", "11m", -EINVAL, "above the maximum 600000ms"},
    {"s3.request_timeout_ms", "0", 0, "0ms"},
    {"s3.retry.budget_ms", "1m", 0, "60000ms"},
    {"s3.retry.base_ms", "x", -EINVAL, "use whole milliseconds"},
    {"write.staging_wait", "2", 0, "2s"},
    {"write.staging_wait", "0", 0, "0s"},
    {"write.staging_wait", "500ms", 0, "500ms"},
    {"write.staging_wait", "1h", 0, "3600s"},
    {"write.staging_wait", "61m", -EINVAL,
     "write.staging_wait: 3660s is above the maximum 3600s"},
    {"s3.low_speed_time", "2", 0, "2s"},
    {"s3.low_speed_time", "2000ms", 0, "2s"},
    {"s3.low_speed_time", "1d", 0, "86400s"},
    {"s3.low_speed_time", "1500ms", -EINVAL,
     "s3.low_speed_time: 1500ms is not a whole number of seconds"},
    {"s3.low_speed_time", "0", -EINVAL,
     "s3.low_speed_time: 0s is below the minimum 1s"},
    {"s3.low_speed_time", "25h", -EINVAL, "is above the maximum 86400s"},
    {"rdma.timeout", "2", 0, "2s"},
    {"rdma.timeout", "1500ms", 0, "1500ms"},
    {"rdma.timeout", "10m", 0, "600s"},
    {"rdma.timeout", "999ms", -EINVAL,
     "rdma.timeout: 999ms is below the minimum 1s"},
    {"rdma.timeout", "2d", -EINVAL,
     "rdma.timeout: 172800s is above the maximum 86400s"},
    {"rdma.timeout", "soon", -EINVAL, "is not a duration"},
    /* enum */
    {"style", "virtual", 0, "virtual"},
    {"style", "VIRTUAL", 0, "virtual"},
    {"style", "host", -EINVAL, "style: \"host\" is not one of path|virtual"},
    {"credentials.source", "anonymous", 0, "anonymous"},
    {"credentials.source", "profile", 0, "profile"},
    {"credentials.source", "env", 0, "env"},
    {"credentials.source", "iam", -EINVAL,
     "is not one of auto|config|env|profile|anonymous"},
    {"log.level", "debug", 0, "debug"},
    {"log.level", "error", 0, "error"},
    {"log.level", "verbose", -EINVAL,
     "\"verbose\" is not one of error|warning|notice|info|debug"},
    {"rdma.transport", "dc", 0, "dc"},
    {"rdma.transport", "cma", 0, "cma"},
    {"rdma.transport", "ib", -EINVAL, "is not one of off|auto|cma|rc|dc"},
    {"mount.atime", "strictatime", 0, "strictatime"},
    {"mount.listing_attrs", "false", 0, "false"},
    /* mode */
    {"mount.umask", "027", 0, "027"},
    {"mount.umask", "0", 0, "0"},
    {"mount.umask", "777", 0, "0777"},
    {"mount.umask", "1777", -EINVAL,
     "mount.umask: 01777 is above the maximum 0777"},
    {"mount.umask", "8", -EINVAL, "mount.umask: \"8\" is not an octal mode"},
    {"mount.umask", "0o22", -EINVAL, "is not an octal mode"},
    {"mount.umask", "", -EINVAL, "is not an octal mode"},
    {"mount.file_mode", "0644", 0, "0644"},
    {"mount.file_mode", "4755", 0, "04755"},
    {"mount.dir_mode", "17777", -EINVAL, "above the maximum 07777"},
};

static void test_set_values(void **state)
{
  struct cfg c;
  char err[512];

  (void)state;
  for (size_t i = 0; i < sizeof(set_cases) / sizeof(set_cases[0]); i++) {
    const struct set_case *t = &set_cases[i];
    int rc;

    cfg_init_defaults(&c);
    rc = cfg_set(&c, t->key, t->value, err, sizeof(err));
    if (rc != t->rc)
      fail_msg("-o %s=%s: rc %d, want %d (%s)", t->key, t->value, rc, t->rc,
               err);
    if (rc == 0) {
      assert_string_equal(err, "");
      assert_dump_line(&c, t->key, t->want);
    } else {
      assert_int_equal(strncmp(err, t->key, strlen(t->key)), 0);
      assert_contains(err, t->want);
    }
    cfg_cleanup(&c);
  }
}

/* ---- JSON values ---------------------------------------------------------- */

/* rc 0: want is "key = value" in the dump; else a piece of err. */
static const struct json_case {
  const char *text;
  int rc;
  const char *want;
} json_cases[] = {
    /* forms of a value */
    {"{\"cache\": {\"size\": 67108864}}", 0, "cache.size = 64M"},
    {"{\"cache\": {\"size\": \"64M\"}}", 0, "cache.size = 64M"},
    {"{\"cache.size\": \"64M\"}", 0, "cache.size = 64M"},
    {"{\"s3\": {\"retry.max_attempts\": 3}}", 0, "s3.retry.max_attempts = 3"},
    {"{\"s3\": {\"retry\": {\"max_attempts\": \"3\"}}}", 0,
     "s3.retry.max_attempts = 3"},
    {"{\"cache\": {\"attr_ttl\": 5}}", 0, "cache.attr_ttl = 5s"},
    {"{\"cache\": {\"attr_ttl\": \"250ms\"}}", 0, "cache.attr_ttl = 250ms"},
    {"{\"s3\": {\"connect_timeout_ms\": 250}}", 0,
     "s3.connect_timeout_ms = 250ms"},
    {"{\"mount\": {\"umask\": 22}}", 0, "mount.umask = 022"},
    {"{\"write\": {\"staging_max\": \"64M\"}}", 0,
     "write.staging_max = 64M"},
    {"{\"write\": {\"staging_wait\": 5}}", 0, "write.staging_wait = 5s"},
    {"{\"mount\": {\"umask\": 27}}", 0, "mount.umask = 027"},
    {"{\"mount\": {\"umask\": \"077\"}}", 0, "mount.umask = 077"},
    {"{\"mount\": {\"file_mode\": 644}}", 0, "mount.file_mode = 0644"},
    {"{\"mount\": {\"ro\": true}}", 0, "mount.ro = true"},
    {"{\"cache\": {\"mlock\": false}}", 0, "cache.mlock = false"},
    {"{\"rdma\": {\"dc_access_key\": 4294967295}}", 0,
     "rdma.dc_access_key = 0xffffffff"},
    {"{\"rdma\": {\"dc_access_key\": \"0x1234abcd\"}}", 0,
     "rdma.dc_access_key = 0x1234abcd"},
    {"{\"log\": {\"level\": \"info\"}}", 0, "log.level = info"},
    {"{\"region\": \"\"}", 0, "region = (unset)"},
    {"{}", 0, "cache.size = 1G"},
    {"{\"cache\": {}}", 0, "cache.size = 1G"},
    /* null is the default */
    {"{\"cache\": {\"dir\": null}}", 0, "cache.dir = /var/cache/s3rdmafs"},
    {"{\"cache\": {\"size\": null}}", 0, "cache.size = 1G"},
    {"{\"mount\": {\"file_mode\": null}}", 0, "mount.file_mode = (unset)"},
    {"{\"endpoint\": null}", 0, "endpoint = (unset)"},
    /* wrong types */
    {"{\"mount\": {\"ro\": \"yes\"}}", -EINVAL,
     "mount.ro: expected true or false, got a string"},
    {"{\"mount\": {\"ro\": 1}}", -EINVAL,
     "mount.ro: expected true or false, got an integer"},
    {"{\"cache\": {\"size\": true}}", -EINVAL,
     "cache.size: expected a size (integer bytes or a string like \"64M\"), "
     "got a boolean"},
    {"{\"cache\": {\"size\": 1.5}}", -EINVAL,
     "cache.size: expected a size (integer bytes or a string like \"64M\"), "
     "got a real number"},
    {"{\"cache\": {\"size\": {}}}", -EINVAL, "got an object"},
    {"{\"cache\": {\"size\": [1]}}", -EINVAL, "got an array"},
    {"{\"endpoint\": 5}", -EINVAL,
     "endpoint: expected a string, got an integer"},
    {"{\"endpoint\": [\"http://a:1\", \"http://b:2\"]}", 0,
     "endpoint = http://a:1;http://b:2"},
    {"{\"endpoint\": [\"http://a:1\", 5]}", -EINVAL,
     "endpoint: element 1 is not a non-empty string without ';'"},
    {"{\"endpoint\": [\"http://a:1\", \"ftp://b\"]}", -EINVAL,
     "is not an http:// or https:// URL"},
    {"{\"region\": [\"eu-west-1\"]}", -EINVAL,
     "region: expected a string, got an array"},
    {"{\"style\": 1}", -EINVAL,
     "style: expected one of path|virtual (a string), got an integer"},
    {"{\"s3\": {\"max_inflight\": false}}", -EINVAL,
     "s3.max_inflight: expected an integer, got a boolean"},
    {"{\"cache\": {\"attr_ttl\": 1.5}}", -EINVAL,
     "cache.attr_ttl: expected a duration (integer seconds or a string like "
     "\"90s\"), got a real number"},
    {"{\"mount\": {\"umask\": true}}", -EINVAL,
     "mount.umask: expected an octal mode"},
    {"{\"log\": {\"level\": [\"debug\"]}}", -EINVAL,
     "log.level: expected one of error|warning|notice|info|debug (a string), "
     "got an array"},
    {"{\"cache\": 5}", -EINVAL,
     "cache: is a section: expected an object, got an integer"},
    {"{\"s3\": {\"retry\": \"fast\"}}", -EINVAL,
     "s3.retry: is a section: expected an object, got a string"},
    /* bad values, bounds */
    {"{\"cache\": {\"size\": \"12Q\"}}", -EINVAL,
     "cache.size: \"12Q\" is not a size (use bytes or a K/M/G/T suffix)"},
    {"{\"cache\": {\"size\": \"99999999T\"}}", -EINVAL, "is too large"},
    {"{\"cache\": {\"size\": -1}}", -EINVAL,
     "cache.size: -1 is below the minimum 16M"},
    {"{\"cache\": {\"size\": 1024}}", -EINVAL,
     "cache.size: 1K is below the minimum 16M"},
    {"{\"s3\": {\"max_inflight\": 5000}}", -EINVAL,
     "s3.max_inflight: 5000 is above the maximum 4096"},
    {"{\"s3\": {\"max_inflight\": 0}}", -EINVAL,
     "s3.max_inflight: 0 is below the minimum 1"},
    {"{\"cache\": {\"attr_ttl\": 9223372036854775807}}", -EINVAL,
     "cache.attr_ttl: 9223372036854775807 is too large"},
    {"{\"cache\": {\"attr_ttl\": 2592001}}", -EINVAL,
     "above the maximum 2592000s"},
    {"{\"write\": {\"staging_max\": 1024}}", -EINVAL,
     "write.staging_max: 1K is below 1M"},
    {"{\"mount\": {\"umask\": 29}}", -EINVAL,
     "mount.umask: 29 is not an octal mode"},
    {"{\"mount\": {\"umask\": -1}}", -EINVAL, "-1 is not an octal mode"},
    {"{\"endpoint\": \"s3.example.com\"}", -EINVAL,
     "endpoint: \"s3.example.com\" is not an http:// or https:// URL"},
    /* unknown keys */
    {"{\"cache\": {\"szie\": \"1G\"}}", -EINVAL,
     "cache.szie: unknown key (did you mean cache.size?)"},
    {"{\"cache\": {\"sise\": \"1G\"}}", -EINVAL, "did you mean cache.size?"},
    {"{\"cahce\": {\"size\": \"1G\"}}", -EINVAL,
     "cahce: unknown key (did you mean cache?)"},
    {"{\"s3\": {\"retry\": {\"max_attempt\": 3}}}", -EINVAL,
     "did you mean s3.retry.max_attempts?"},
    {"{\"cache\": {\"part_size\": \"8M\"}}", -EINVAL,
     "cache.part_size: unknown key (did you mean write.part_size?)"},
    {"{\"max_inflight\": 4}", -EINVAL, "did you mean s3.max_inflight?"},
    {"{\"ro\": true}", -EINVAL, "ro: unknown key (did you mean mount.ro?)"},
    {"{\"endpiont\": \"http://x\"}", -EINVAL, "did you mean endpoint?"},
    {"{\"frobnicate\": 1}", -EINVAL,
     "frobnicate: unknown key (s3rdmafs --help lists them)"},
    {"{\"cache\": {\"\": 1}}", -EINVAL, "cache.: unknown key"},
    {"{\"a\\nb\": 1}", -EINVAL, "a?b: unknown key"},
    /* the same key twice */
    {"{\"cache.size\": \"1G\", \"cache\": {\"size\": \"2G\"}}", -EINVAL,
     "cache.size: given twice"},
    {"{\"cache\": {\"size\": \"1G\"}, \"cache.size\": null}", -EINVAL,
     "cache.size: given twice"},
};

static void test_json_values(void **state)
{
  char err[512], path[64], prefix[80];
  struct cfg c;

  (void)state;
  for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
    const struct json_case *t = &json_cases[i];
    int rc;

    cfg_init_defaults(&c);
    rc = load_text(&c, t->text, err, sizeof(err), path, sizeof(path));
    if (rc != t->rc)
      fail_msg("%s: rc %d, want %d (%s)", t->text, rc, t->rc, err);
    if (rc == 0) {
      const char *eq = strstr(t->want, " = ");
      char key[64];

      assert_string_equal(err, "");
      snprintf(key, sizeof(key), "%.*s", (int)(eq - t->want), t->want);
      assert_dump_line(&c, key, eq + 3);
    } else {
      snprintf(prefix, sizeof(prefix), "%s: ", path);
      assert_int_equal(strncmp(err, prefix, strlen(prefix)), 0);
      assert_contains(err, t->want);
    }
    cfg_cleanup(&c);
  }
}

static void test_json_null_uid(void **state)
{
  struct cfg c;
  char err[256], path[64];

  (void)state;
  cfg_init_defaults(&c);
  assert_int_equal(cfg_set(&c, "uid", "4242", err, sizeof(err)), 0);
  assert_int_equal(load_text(&c, "{\"mount\": {\"uid\": null}}", err,
                             sizeof(err), path, sizeof(path)), 0);
  assert_int_equal(c.mount.uid, getuid());
  cfg_cleanup(&c);
}

/* ---- file errors ---------------------------------------------------------- */

static const struct file_case {
  const char *text;
  int rc;
  const char *want;    /* after "<path>" */
} file_cases[] = {
    {"{\n  \"cache\": {\n    \"size\": \"1G\",\n  }\n}\n", -EINVAL,
     ":4:3: string or '}' expected near '}'"},
    {"{\n  \"endpoint\": \"http://x\n}\n", -EINVAL, ":2:23: "},
    {"{\"a\": tru}", -EINVAL, ":1:9: invalid token near 'tru'"},
    {"", -EINVAL, ":1:0: "},
    {"{\"cache\": {\"size\": \"1G\"}}\n{}", -EINVAL, ":2:1: end of file"},
    {"{\n  \"cache\": {\"size\": \"1G\", \"size\": \"2G\"}\n}\n", -EINVAL,
     ":2:32: duplicate object key near '\"size\"'"},
    {"[1]", -EINVAL, ": expected a JSON object at the top, got an array"},
    {"\"x\"", -EINVAL, ":1:3: '[' or '{' expected"},
};

static void test_file_errors(void **state)
{
  char err[512], path[64], want[256];
  struct cfg c;

  (void)state;
  for (size_t i = 0; i < sizeof(file_cases) / sizeof(file_cases[0]); i++) {
    const struct file_case *t = &file_cases[i];
    int rc;

    cfg_init_defaults(&c);
    rc = load_text(&c, t->text, err, sizeof(err), path, sizeof(path));
    assert_int_equal(rc, t->rc);
    snprintf(want, sizeof(want), "%s%s", path, t->want);
    if (strncmp(err, want, strlen(want)) != 0)
      fail_msg("\"%s\" does not start with \"%s\"", err, want);
    cfg_cleanup(&c);
  }

  cfg_init_defaults(&c);
  assert_int_equal(cfg_load_file(&c, "/nonexistent/s3rdmafs.json", err,
                                 sizeof(err)), -ENOENT);
  assert_string_equal(err, "/nonexistent/s3rdmafs.json: cannot open: "
                           "No such file or directory");
  assert_int_equal(cfg_load_file(&c, "/tmp", err, sizeof(err)), -EISDIR);
  assert_string_equal(err, "/tmp: is a directory");
  /* a failed load leaves what it had applied, and nothing leaks */
  assert_int_equal(load_text(&c, "{\"region\": \"r1\", \"cache\": {\"size\": "
                                 "\"1X\"}}", err, sizeof(err), path,
                             sizeof(path)), -EINVAL);
  assert_string_equal(c.region, "r1");
  cfg_cleanup(&c);
}

/* ---- whole files ---------------------------------------------------------- */

/*
 * Does the JSON object o hold the dotted name, nested at any of its dots or
 * written dotted ({"s3": {"retry.base_ms": 1}} holds s3.retry.base_ms)?
 */
static bool json_holds(json_t *o, const char *name)
{
  char head[128];

  if (!json_is_object(o))
    return false;
  if (json_object_get(o, name))
    return true;
  for (const char *dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
    size_t n = (size_t)(dot - name);
    if (n >= sizeof(head))
      return false;
    memcpy(head, name, n);
    head[n] = 0;
    if (json_holds(json_object_get(o, head), dot + 1))
      return true;
  }
  return false;
}

/* The packaged example loads, validates, and names every key of the table
   (null where the default is computed or unset), so that it cannot fall
   behind the table again. */
static void test_example_file(void **state)
{
  char path[PATH_MAX], err[512];
  json_error_t jerr;
  json_t *root;
  struct cfg c;

  (void)state;
  clear_env();
  src_path("packaging/s3rdmafs.example.json", path, sizeof(path));
  cfg_init_defaults(&c);
  if (cfg_load_file(&c, path, err, sizeof(err)))
    fail_msg("%s", err);
  if (cfg_validate(&c, err, sizeof(err)))
    fail_msg("%s", err);
  assert_string_equal(c.endpoint, "http://127.0.0.1:7480");
  assert_int_equal(c.cache.size, 1 * GiB);
  assert_int_equal(c.s3.retry.budget_ms, 30000);
  assert_int_equal(c.rdma.dc_access_key, 0xffeeddccu);
  cfg_cleanup(&c);

  root = json_load_file(path, 0, &jerr);
  if (!root)
    fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
  for (size_t i = 0; i < cfg_nkeys; i++)
    if (!json_holds(root, cfg_keys[i].name))
      fail_msg("packaging/s3rdmafs.example.json lacks the key %s",
               cfg_keys[i].name);
  json_decref(root);
}

/* The config fuzzer's dictionary holds every key name. */
static void test_fuzz_dict(void **state)
{
  char path[PATH_MAX], line[256], want[160];
  bool *seen = calloc(cfg_nkeys, sizeof(*seen));
  FILE *f;

  (void)state;
  assert_non_null(seen);
  src_path("tests/fuzz/dict/config.dict", path, sizeof(path));
  f = fopen(path, "r");
  if (!f)
    fail_msg("cannot open %s", path);
  while (fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = 0;
    for (size_t i = 0; i < cfg_nkeys; i++) {
      snprintf(want, sizeof(want), "\"%s\"", cfg_keys[i].name);
      if (strcmp(line, want) == 0)
        seen[i] = true;
    }
  }
  fclose(f);
  for (size_t i = 0; i < cfg_nkeys; i++)
    if (!seen[i])
      fail_msg("tests/fuzz/dict/config.dict lacks the line \"%s\"",
               cfg_keys[i].name);
  free(seen);
}

static const char full_file[] =
    "{\n"
    "  \"endpoint\": \"https://s3.example.com:9000\",\n"
    "  \"region\": \"eu-central-1\",\n"
    "  \"style\": \"virtual\",\n"
    "  \"ca_bundle\": \"/etc/ssl/certs/ca.pem\",\n"
    "  \"insecure\": true,\n"
    "  \"credentials\": {\"source\": \"config\",\n"
    "    \"access_key\": \"AKIDFULLFILESECRET\",\n"
    "    \"secret_key\": \"KEYFULLFILESECRET\",\n"
    "    \"session_token\": \"TOKENFULLFILESECRET\"},\n"
    "  \"s3\": {\"max_inflight\": 256, \"connect_timeout_ms\": 2500,\n"
    "    \"request_timeout_ms\": \"2m\", \"low_speed_time\": 10,\n"
    "    \"retry\": {\"max_attempts\": 7, \"base_ms\": 50,\n"
    "      \"max_backoff_ms\": \"10s\", \"budget_ms\": 60000}},\n"
    "  \"cache\": {\"size\": \"4G\", \"chunk_size\": \"4M\", \"mlock\": false,\n"
    "    \"dir\": \"/srv/s3r\", \"attr_ttl\": 5, \"dir_ttl\": \"2m\",\n"
    "    \"negative_ttl\": \"500ms\", \"burst_ttl\": \"250ms\",\n"
    "    \"kernel_cache\": false, \"idle_release\": \"90s\"},\n"
    "  \"read\": {\"readahead_min\": \"2M\", \"readahead_max\": \"128M\",\n"
    "    \"max_inflight_per_file\": 32, \"max_read\": \"128K\",\n"
    "    \"dense_block\": \"4M\", \"idle_fetch\": \"512M\",\n"
    "    \"lookup_bytes\": \"16K\"},\n"
    "  \"write\": {\"part_size\": \"16M\", \"max_parts_inflight\": 4,\n"
    "    \"max_memory\": \"1G\", \"rename_dir_max\": 500,\n"
    "    \"retry_interval\": \"5s\", \"staging_max\": \"20G\",\n"
    "    \"staging_wait\": \"90s\", \"stream\": false, \"pool_dir\": \"\"},\n"
    "  \"mount\": {\"uid\": 4242, \"gid\": 4343, \"umask\": \"027\",\n"
    "    \"file_mode\": \"0640\", \"dir_mode\": 750, \"allow_other\": true,\n"
    "    \"ro\": true, \"all_buckets\": true, \"atime\": \"relatime\",\n"
    "    \"listing_attrs\": false, \"memory_target\": \"3G\"},\n"
    "  \"log\": {\"level\": \"debug\", \"syslog\": true},\n"
    "  \"rdma\": {\"transport\": \"cma\", \"token_header\": \"x-scal-rdma\",\n"
    "    \"dc_access_key\": \"0x12345678\", \"timeout\": \"45s\",\n"
    "    \"devices\": \"rxe0\", \"gid_index\": \"1\"}\n"
    "}\n";

/* Lines of two dumps that differ. */
static size_t dump_diff(const struct cfg *a, const struct cfg *b)
{
  char da[8192], db[8192];
  char *sa, *sb, *la, *lb;
  size_t n = 0;

  cfg_dump(a, da, sizeof(da));
  cfg_dump(b, db, sizeof(db));
  for (la = strtok_r(da, "\n", &sa), lb = strtok_r(db, "\n", &sb); la && lb;
       la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb))
    n += strcmp(la, lb) != 0;
  return n;
}

static void test_full_file(void **state)
{
  char err[512], path[64];
  struct cfg c, d;

  (void)state;
  cfg_init_defaults(&c);
  cfg_init_defaults(&d);
  if (load_text(&c, full_file, err, sizeof(err), path, sizeof(path)))
    fail_msg("%s", err);
  if (cfg_validate(&c, err, sizeof(err)))
    fail_msg("%s", err);
  assert_string_equal(c.endpoint, "https://s3.example.com:9000");
  assert_string_equal(c.region, "eu-central-1");
  assert_int_equal(c.style, CFG_STYLE_VIRTUAL);
  assert_string_equal(c.ca_bundle, "/etc/ssl/certs/ca.pem");
  assert_true(c.insecure);
  assert_int_equal(c.credentials.source, CFG_CREDS_CONFIG);
  assert_string_equal(c.credentials.access_key, "AKIDFULLFILESECRET");
  assert_string_equal(c.credentials.secret_key, "KEYFULLFILESECRET");
  assert_string_equal(c.credentials.session_token, "TOKENFULLFILESECRET");
  assert_int_equal(c.s3.max_inflight, 256);
  assert_int_equal(c.s3.connect_timeout_ms, 2500);
  assert_int_equal(c.s3.request_timeout_ms, 120000);
  assert_int_equal(c.s3.low_speed_time_ms, 10000);
  assert_int_equal(c.s3.retry.max_attempts, 7);
  assert_int_equal(c.s3.retry.base_ms, 50);
  assert_int_equal(c.s3.retry.max_backoff_ms, 10000);
  assert_int_equal(c.s3.retry.budget_ms, 60000);
  assert_int_equal(c.cache.size, 4 * GiB);
  assert_int_equal(c.cache.chunk_size, 4 * MiB);
  assert_false(c.cache.mlock);
  assert_string_equal(c.cache.dir, "/srv/s3r");
  assert_int_equal(c.cache.attr_ttl_ms, 5000);
  assert_int_equal(c.cache.dir_ttl_ms, 120000);
  assert_int_equal(c.cache.negative_ttl_ms, 500);
  assert_int_equal(c.cache.burst_ttl_ms, 250);
  assert_false(c.cache.kernel_cache);
  assert_int_equal(c.cache.idle_release_ms, 90000);
  assert_int_equal(c.read.readahead_min, 2 * MiB);
  assert_int_equal(c.read.readahead_max, 128 * MiB);
  assert_int_equal(c.read.max_inflight_per_file, 32);
  assert_int_equal(c.read.max_read, 128 * 1024);
  assert_int_equal(c.read.dense_block, 4 * MiB);
  assert_int_equal(c.read.idle_fetch, 512 * MiB);
  assert_int_equal(c.read.lookup_bytes, 16 * KiB);
  assert_int_equal(c.write.part_size, 16 * MiB);
  assert_int_equal(c.write.max_parts_inflight, 4);
  assert_int_equal(c.write.max_memory, 1 * GiB);
  assert_int_equal(c.write.rename_dir_max, 500);
  assert_int_equal(c.write.retry_interval_ms, 5000);
  assert_int_equal(c.write.staging_max, 20 * GiB);
  assert_int_equal(c.write.staging_wait_ms, 90000);
  assert_false(c.write.stream);
  assert_true(!c.write.pool_dir || !c.write.pool_dir[0]); /* cache.dir */
  assert_int_equal(c.mount.uid, 4242);
  assert_int_equal(c.mount.gid, 4343);
  assert_int_equal(c.mount.umask, 027);
  assert_int_equal(c.mount.file_mode, 0640);
  assert_int_equal(c.mount.dir_mode, 0750);
  assert_true(c.mount.allow_other);
  assert_true(c.mount.ro);
  assert_true(c.mount.all_buckets);
  assert_int_equal(c.mount.atime, CFG_ATIME_REL);
  assert_false(c.mount.listing_attrs);
  assert_int_equal(c.mount.memory_target, 3 * GiB);
  assert_int_equal(c.log.level, LOG_DEBUG);
  assert_true(c.log.syslog);
  assert_int_equal(c.rdma.transport, CFG_RDMA_CMA);
  assert_string_equal(c.rdma.token_header, "x-scal-rdma");
  assert_int_equal(c.rdma.dc_access_key, 0x12345678u);
  assert_int_equal(c.rdma.timeout_ms, 45000);
  assert_string_equal(c.rdma.devices, "rxe0");
  assert_string_equal(c.rdma.gid_index, "1");
  /* the file sets every key but credentials.profile (source is config) */
  assert_int_equal(dump_diff(&c, &d), cfg_nkeys - 1);
  cfg_cleanup(&c);
  cfg_cleanup(&d);
}

/* ---- -o overrides and aliases --------------------------------------------- */

static void test_overrides(void **state)
{
  char err[512], path[64];
  struct cfg c;

  (void)state;
  cfg_init_defaults(&c);
  assert_int_equal(cfg_set(&c, "ro", NULL, err, sizeof(err)), 0);
  assert_true(c.mount.ro);
  assert_int_equal(cfg_set(&c, "rw", NULL, err, sizeof(err)), 0);
  assert_false(c.mount.ro);
  assert_int_equal(cfg_set(&c, "rw", "false", err, sizeof(err)), 0);
  assert_true(c.mount.ro);
  assert_int_equal(cfg_set(&c, "ro", "no", err, sizeof(err)), 0);
  assert_false(c.mount.ro);
  assert_int_equal(cfg_set(&c, "mount.ro", NULL, err, sizeof(err)), 0);
  assert_true(c.mount.ro);
  assert_int_equal(cfg_set(&c, "allow_other", NULL, err, sizeof(err)), 0);
  assert_true(c.mount.allow_other);
  assert_int_equal(cfg_set(&c, "uid", "4242", err, sizeof(err)), 0);
  assert_int_equal(c.mount.uid, 4242);
  assert_int_equal(cfg_set(&c, "gid", "4343", err, sizeof(err)), 0);
  assert_int_equal(c.mount.gid, 4343);
  assert_int_equal(cfg_set(&c, "umask", "077", err, sizeof(err)), 0);
  assert_int_equal(c.mount.umask, 077);
  assert_int_equal(cfg_set(&c, "endpoint", "http://e:1", err, sizeof(err)),
                   0);
  assert_string_equal(c.endpoint, "http://e:1");
  assert_int_equal(cfg_set(&c, "region", "us-west-2", err, sizeof(err)), 0);
  assert_string_equal(c.region, "us-west-2");
  assert_int_equal(cfg_set(&c, "profile", "dev", err, sizeof(err)), 0);
  assert_string_equal(c.credentials.profile, "dev");
  assert_int_equal(cfg_set(&c, "mount.all_buckets", "1", err, sizeof(err)),
                   0);
  assert_true(c.mount.all_buckets);
  assert_int_equal(c.mount.atime, CFG_ATIME_NO); /* the default */
  assert_int_equal(cfg_set(&c, "relatime", NULL, err, sizeof(err)), 0);
  assert_int_equal(c.mount.atime, CFG_ATIME_REL);
  assert_int_equal(cfg_set(&c, "strictatime", NULL, err, sizeof(err)), 0);
  assert_int_equal(c.mount.atime, CFG_ATIME_STRICT);
  assert_int_equal(cfg_set(&c, "noatime", NULL, err, sizeof(err)), 0);
  assert_int_equal(c.mount.atime, CFG_ATIME_NO);
  assert_int_equal(cfg_set(&c, "mount.atime", "relatime", err, sizeof(err)),
                   0);
  assert_int_equal(c.mount.atime, CFG_ATIME_REL);

  /* errors name the key the alias stands for */
  assert_int_equal(cfg_set(&c, "relatime", "1", err, sizeof(err)), -EINVAL);
  assert_string_equal(err, "relatime: takes no value");
  assert_int_equal(cfg_set(&c, "mount.atime", "lazy", err, sizeof(err)),
                   -EINVAL);
  assert_contains(err, "is not one of noatime|relatime|strictatime");
  assert_int_equal(cfg_set(&c, "uid", "abc", err, sizeof(err)), -EINVAL);
  assert_string_equal(err, "mount.uid: \"abc\" is not a whole number");
  assert_int_equal(cfg_set(&c, "ro", "maybe", err, sizeof(err)), -EINVAL);
  assert_contains(err, "mount.ro: \"maybe\" is not a boolean");
  assert_int_equal(cfg_set(&c, "cache.size", NULL, err, sizeof(err)),
                   -EINVAL);
  assert_string_equal(err, "cache.size: needs a value (cache.size=VALUE)");
  assert_int_equal(cfg_set(&c, "umask", NULL, err, sizeof(err)), -EINVAL);
  assert_string_equal(err, "mount.umask: needs a value (umask=VALUE)");
  assert_int_equal(cfg_set(&c, "config", "/etc/x.json", err, sizeof(err)),
                   -EINVAL);
  assert_contains(err, "config: is for the caller");
  assert_int_equal(cfg_set(&c, "", "x", err, sizeof(err)), -EINVAL);
  assert_int_equal(cfg_set(&c, NULL, "x", err, sizeof(err)), -EINVAL);

  /* unknown: -ENOENT, so the caller may pass it to libfuse */
  assert_int_equal(cfg_set(&c, "default_permissions", NULL, err,
                           sizeof(err)), -ENOENT);
  assert_contains(err, "default_permissions: unknown key");
  assert_int_equal(cfg_set(&c, "allow_othr", NULL, err, sizeof(err)),
                   -ENOENT);
  assert_string_equal(err, "allow_othr: unknown key (did you mean "
                           "allow_other?)");
  assert_int_equal(cfg_set(&c, "cache.szie", "1G", err, sizeof(err)),
                   -ENOENT);
  assert_string_equal(err, "cache.szie: unknown key (did you mean "
                           "cache.size?)");
  assert_int_equal(cfg_set(&c, "cache", "1G", err, sizeof(err)), -ENOENT);
  assert_string_equal(err, "cache: is a section, not a key");
  assert_int_equal(cfg_set(&c, "s3.retry", "1", err, sizeof(err)), -ENOENT);

  /* later wins, over the file too; a failed -o changes nothing */
  assert_int_equal(load_text(&c, "{\"cache\": {\"size\": \"2G\"}}", err,
                             sizeof(err), path, sizeof(path)), 0);
  assert_int_equal(c.cache.size, 2 * GiB);
  assert_int_equal(cfg_set(&c, "cache.size", "64M", err, sizeof(err)), 0);
  assert_int_equal(cfg_set(&c, "cache.size", "128M", err, sizeof(err)), 0);
  assert_int_equal(cfg_set(&c, "cache.size", "1Q", err, sizeof(err)),
                   -EINVAL);
  assert_int_equal(c.cache.size, 128 * MiB);

  /* no err buffer, or a tiny one */
  assert_int_equal(cfg_set(&c, "cache.size", "1Q", NULL, 0), -EINVAL);
  assert_int_equal(cfg_set(&c, "cache.size", "1Q", err, 5), -EINVAL);
  assert_string_equal(err, "cach");
  cfg_cleanup(&c);
}

/* ---- cfg_validate --------------------------------------------------------- */

static const struct validate_case {
  const char *set[6][2];   /* key, value; ends at a NULL key */
  int rc;
  const char *want;
} validate_cases[] = {
    {{{NULL, NULL}}, 0, NULL},
    {{{"read.readahead_min", "128M"}}, -EINVAL,
     "read.readahead_min: 128M is above read.readahead_max (64M)"},
    {{{"read.readahead_min", "64M"}}, 0, NULL},
    {{{"cache.size", "16M"}, {"cache.chunk_size", "2M"},
      {"read.readahead_max", "8M"}}, -EINVAL,
     "cache.chunk_size: 2M is above cache.size/16 (1M): the cache needs at "
     "least 16 chunks"},
    {{{"cache.size", "16M"}, {"read.readahead_max", "8M"}}, 0, NULL},
    {{{"cache.size", "16M"}, {"read.readahead_max", "8M"},
      {"read.dense_block", "8M"}}, -EINVAL,
     "read.dense_block: 8M is above cache.size/4 (4M)"},
    {{{"read.dense_block", "0"}}, 0, NULL},
    {{{"read.lookup_bytes", "2M"}}, -EINVAL,
     "read.lookup_bytes: 2M is above cache.chunk_size (1M)"},
    {{{"read.lookup_bytes", "0"}}, 0, NULL},
    {{{"cache.size", "64M"}}, -EINVAL,
     "read.readahead_max: 64M is above cache.size/2 (32M)"},
    {{{"write.part_size", "64M"}}, -EINVAL,
     "write.max_memory: 256M is below write.part_size * "
     "write.max_parts_inflight (512M)"},
    {{{"write.part_size", "64M"}, {"write.max_memory", "512M"}}, 0, NULL},
    {{{"read.max_inflight_per_file", "200"}}, -EINVAL,
     "read.max_inflight_per_file: 200 is above s3.max_inflight (128)"},
    {{{"write.max_parts_inflight", "129"}, {"write.max_memory", "2G"}},
     -EINVAL, "write.max_parts_inflight: 129 is above s3.max_inflight (128)"},
    {{{"s3.retry.base_ms", "6s"}}, -EINVAL,
     "s3.retry.base_ms: 6000ms is above s3.retry.max_backoff_ms (5000ms)"},
    /* credentials */
    {{{"credentials.source", "config"}}, -EINVAL,
     "credentials.source: is config, but credentials.access_key and "
     "secret_key are not set"},
    {{{"credentials.source", "config"}, {"credentials.access_key", "AK"},
      {"credentials.secret_key", "SK"}}, 0, NULL},
    {{{"credentials.access_key", "AK"}, {"credentials.secret_key", "SK"},
      {"credentials.session_token", "TK"}}, 0, NULL},
    {{{"credentials.access_key", "AK"}}, -EINVAL,
     "credentials.secret_key: not set, but credentials.access_key is: give "
     "both"},
    {{{"credentials.secret_key", "SK"}}, -EINVAL,
     "credentials.access_key: not set, but credentials.secret_key is"},
    {{{"credentials.session_token", "TK"}}, -EINVAL,
     "credentials.session_token: set without credentials.access_key"},
    {{{"credentials.source", "env"}, {"credentials.access_key", "AK"},
      {"credentials.secret_key", "SK"}}, -EINVAL,
     "credentials.access_key: is set, but credentials.source is env (use "
     "config or auto)"},
    {{{"credentials.source", "anonymous"}, {"profile", "dev"}}, -EINVAL,
     "credentials.profile: is set, but credentials.source is anonymous"},
    {{{"credentials.source", "profile"}, {"profile", "dev"}}, 0, NULL},
    {{{"credentials.source", "anonymous"}}, 0, NULL},
    {{{"profile", "dev"}, {"credentials.access_key", "AK"},
      {"credentials.secret_key", "SK"}}, -EINVAL,
     "credentials.profile: is set together with credentials.access_key: "
     "choose one"},
};

static void test_validate(void **state)
{
  char err[512];
  struct cfg c;

  (void)state;
  clear_env();
  for (size_t i = 0; i < sizeof(validate_cases) / sizeof(validate_cases[0]);
       i++) {
    const struct validate_case *t = &validate_cases[i];
    int rc;

    cfg_init_defaults(&c);
    assert_int_equal(cfg_set(&c, "endpoint", "http://h:1", err, sizeof(err)),
                     0);
    for (size_t j = 0; j < 6 && t->set[j][0]; j++)
      if (cfg_set(&c, t->set[j][0], t->set[j][1], err, sizeof(err)))
        fail_msg("case %zu: %s", i, err);
    rc = cfg_validate(&c, err, sizeof(err));
    if (rc != t->rc)
      fail_msg("case %zu: rc %d, want %d (%s)", i, rc, t->rc, err);
    if (t->want)
      assert_contains(err, t->want);
    else
      assert_string_equal(err, "");
    /* validating again gives the same answer */
    assert_int_equal(cfg_validate(&c, err, sizeof(err)), t->rc);
    cfg_cleanup(&c);
  }
}

static void test_env_endpoint(void **state)
{
  char err[512];
  struct cfg c;

  (void)state;
  clear_env();
  cfg_init_defaults(&c);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), -EINVAL);
  assert_string_equal(err, "endpoint: not set (give it in the config file, "
                           "as -o endpoint=URL, or in $S3R_ENDPOINT or "
                           "$AWS_ENDPOINT_URL)");

  setenv("AWS_ENDPOINT_URL", "http://aws:1", 1);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(c.endpoint, "http://aws:1");
  cfg_cleanup(&c);

  /* S3R_ENDPOINT first; an empty one counts as unset */
  cfg_init_defaults(&c);
  setenv("S3R_ENDPOINT", "http://s3r:2", 1);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(c.endpoint, "http://s3r:2");
  cfg_cleanup(&c);
  cfg_init_defaults(&c);
  setenv("S3R_ENDPOINT", "", 1);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(c.endpoint, "http://aws:1");
  cfg_cleanup(&c);

  /* the config wins over the environment */
  cfg_init_defaults(&c);
  setenv("S3R_ENDPOINT", "http://s3r:2", 1);
  assert_int_equal(cfg_set(&c, "endpoint", "https://cfg:3", err, sizeof(err)),
                   0);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(c.endpoint, "https://cfg:3");
  /* "" unsets it again, and the environment applies */
  assert_int_equal(cfg_set(&c, "endpoint", "", err, sizeof(err)), 0);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  assert_string_equal(c.endpoint, "http://s3r:2");
  cfg_cleanup(&c);

  /* a bad variable is named */
  cfg_init_defaults(&c);
  setenv("S3R_ENDPOINT", "bogus", 1);
  assert_int_equal(cfg_validate(&c, err, sizeof(err)), -EINVAL);
  assert_string_equal(err, "$S3R_ENDPOINT: \"bogus\" is not an http:// or "
                           "https:// URL");
  assert_null(c.endpoint);
  cfg_cleanup(&c);
  clear_env();
}

/* ---- secrets -------------------------------------------------------------- */

static void test_secrets_never_printed(void **state)
{
  char err[512], path[64], buf[8192], *help = NULL;
  size_t helplen = 0;
  struct cfg c;
  FILE *f;
  int stars = 0;

  (void)state;
  cfg_init_defaults(&c);
  assert_int_equal(cfg_set(&c, "credentials.access_key", "AKIDSECRETVALUE1",
                           err, sizeof(err)), 0);
  assert_int_equal(cfg_set(&c, "credentials.secret_key", "SKSECRETVALUE2",
                           err, sizeof(err)), 0);
  assert_int_equal(load_text(&c, "{\"credentials\": {\"session_token\": "
                                 "\"TKSECRETVALUE3\"}}", err, sizeof(err),
                             path, sizeof(path)), 0);
  cfg_dump(&c, buf, sizeof(buf));
  assert_null(strstr(buf, "SECRETVALUE"));
  for (const char *p = buf; (p = strstr(p, " = ***\n")); p++)
    stars++;
  assert_int_equal(stars, 3);
  assert_contains(buf, "credentials.secret_key = ***\n");

  /* nor in error messages, from -o or from a file */
  assert_int_equal(cfg_set(&c, "credentials.secret_key", "SECRETVALUE4 x",
                           err, sizeof(err)), -EINVAL);
  assert_null(strstr(err, "SECRETVALUE"));
  assert_int_equal(load_text(&c, "{\"credentials\": {\"secret_key\": "
                                 "\"SECRETVALUE5\\n\"}}", err, sizeof(err),
                             path, sizeof(path)), -EINVAL);
  assert_null(strstr(err, "SECRETVALUE"));
  assert_contains(err, "credentials.secret_key: (hidden value)");
  assert_string_equal(c.credentials.secret_key, "SKSECRETVALUE2");

  /* nor in --help */
  f = open_memstream(&help, &helplen);
  assert_non_null(f);
  cfg_help(f);
  fclose(f);
  assert_null(strstr(help, "SECRETVALUE"));
  free(help);

  cfg_cleanup(&c);
  assert_null(c.credentials.access_key);
  assert_null(c.credentials.secret_key);
  assert_null(c.credentials.session_token);
}

/* ---- dump, help, docs ----------------------------------------------------- */

static void test_dump(void **state)
{
  char buf[8192], small[16], line[128];
  struct cfg c;
  size_t n;

  (void)state;
  cfg_init_defaults(&c);
  n = cfg_dump(&c, NULL, 0);
  assert_true(n > 0 && n < sizeof(buf));
  assert_int_equal(cfg_dump(&c, buf, sizeof(buf)), n);
  assert_int_equal(strlen(buf), n);
  assert_int_equal(cfg_dump(&c, small, sizeof(small)), n);
  assert_int_equal(strlen(small), sizeof(small) - 1);
  assert_int_equal(strncmp(small, buf, sizeof(small) - 1), 0);
  assert_int_equal(cfg_dump(&c, buf, n), n);   /* one short for the NUL */
  assert_int_equal(strlen(buf), n - 1);
  assert_int_equal(cfg_dump(&c, buf, n + 1), n);
  assert_int_equal(strlen(buf), n);

  /* one line per key, in table order */
  {
    const char *p = buf;
    for (size_t i = 0; i < cfg_nkeys; i++) {
      snprintf(line, sizeof(line), "%s = ", cfg_keys[i].name);
      assert_int_equal(strncmp(p, line, strlen(line)), 0);
      p = strchr(p, '\n');
      assert_non_null(p);
      p++;
    }
    assert_int_equal(*p, 0);
  }
  cfg_cleanup(&c);
}

static void test_help_and_docs(void **state)
{
  char path[PATH_MAX], *help = NULL, *doc = NULL, want[128];
  size_t helplen = 0, doclen = 0, got;
  FILE *f;

  (void)state;
  f = open_memstream(&help, &helplen);
  assert_non_null(f);
  cfg_help(f);
  fclose(f);

  src_path("docs/config.md", path, sizeof(path));
  f = fopen(path, "r");
  if (!f)
    fail_msg("cannot open %s", path);
  doc = malloc(1 << 20);
  assert_non_null(doc);
  got = fread(doc, 1, (1 << 20) - 1, f);
  doc[got] = 0;
  fclose(f);
  (void)doclen;

  for (size_t i = 0; i < cfg_nkeys; i++) {
    const struct cfg_key *k = &cfg_keys[i];

    snprintf(want, sizeof(want), "\n  %s (%s, default ", k->name,
             cfg_type_word(k));
    assert_contains(help, want);
    snprintf(want, sizeof(want), "| `%s` | %s |", k->name, cfg_type_word(k));
    if (!strstr(doc, want))
      fail_msg("docs/config.md lacks the row \"%s\"", want);
  }
  assert_contains(help, "ro = mount.ro");
  assert_contains(help, "rw = mount.ro=false");
  assert_contains(help, "profile = credentials.profile");
  assert_contains(help, "relatime = mount.atime=relatime");
  free(help);
  free(doc);
}

/* A file that sets a secret key must be private; one without may be open. */
static void test_secret_file_mode(void **state)
{
  static const char with_secret[] =
      "{\"credentials\": {\"access_key\": \"AK\", \"secret_key\": \"SK\"}}";
  static const char with_token[] =
      "{\"credentials.session_token\": \"TK\"}";
  static const char *const without[] = {
      "{\"cache\": {\"size\": \"64M\"}}",
      "{\"credentials\": {\"access_key\": \"AK\"}}", /* not a secret key */
      "{\"credentials\": {\"secret_key\": null}}",
      "{\"credentials\": {\"secret_key\": \"\"}}",  /* "" unsets */
  };
  static const struct {
    mode_t mode;
    const char *word;
  } open_modes[] = {{0644, "readable"}, {0640, "readable"},
                    {0604, "readable"}, {0620, "writable"},
                    {0610, "accessible"}, {0666, "readable"}};
  char err[512], path[64], want[600];
  struct cfg c;

  (void)state;
  cfg_init_defaults(&c);
  assert_int_equal(load_text_mode(&c, with_secret, 0600, err, sizeof(err),
                                  path, sizeof(path)), 0);
  assert_string_equal(c.credentials.secret_key, "SK");
  assert_int_equal(load_text_mode(&c, with_secret, 0400, err, sizeof(err),
                                  path, sizeof(path)), 0);
  for (size_t i = 0; i < sizeof(open_modes) / sizeof(*open_modes); i++) {
    assert_int_equal(load_text_mode(&c, with_secret, open_modes[i].mode, err,
                                    sizeof(err), path, sizeof(path)),
                     -EACCES);
    snprintf(want, sizeof(want), "%s: %s by group or others (mode %04o); "
             "chmod 600 it (it holds credentials.secret_key)", path,
             open_modes[i].word, (unsigned)open_modes[i].mode);
    assert_string_equal(err, want);
    assert_null(strstr(err, "SK\""));
  }
  assert_int_equal(load_text_mode(&c, with_token, 0644, err, sizeof(err),
                                  path, sizeof(path)), -EACCES);
  assert_contains(err, "(it holds credentials.session_token)");
  for (size_t i = 0; i < sizeof(without) / sizeof(*without); i++)
    if (load_text_mode(&c, without[i], 0644, err, sizeof(err), path,
                       sizeof(path)))
      fail_msg("%s: %s", without[i], err);
  if (geteuid() == 0) {  /* only root can give a file away */
    write_tmp(path, sizeof(path), with_secret);
    assert_int_equal(chown(path, 4321, 4321), 0);
    assert_int_equal(cfg_load_file(&c, path, err, sizeof(err)), -EACCES);
    unlink(path);
    assert_contains(err, "owned by uid 4321, not by root; chown it");
  }
  cfg_cleanup(&c);

  /* which -o keys are secret keys (the daemon warns about those) */
  assert_true(cfg_key_is_secret("credentials.secret_key"));
  assert_true(cfg_key_is_secret("credentials.session_token"));
  assert_false(cfg_key_is_secret("credentials.access_key"));
  assert_false(cfg_key_is_secret("credentials.profile"));
  assert_false(cfg_key_is_secret("profile"));
  assert_false(cfg_key_is_secret("secret_key"));
  assert_false(cfg_key_is_secret(""));
  assert_false(cfg_key_is_secret(NULL));
}

/* ---- memory --------------------------------------------------------------- */

static void test_reload_no_leaks(void **state)
{
  static const char *const dirs[] = {"/a", "/b/c", "/var/cache/s3rdmafs"};
  char err[512], path[64], val[64];
  struct cfg c;

  (void)state;
  clear_env();
  cfg_init_defaults(&c);
  for (int round = 0; round < 3; round++) {
    assert_int_equal(load_text(&c, full_file, err, sizeof(err), path,
                               sizeof(path)), 0);
    assert_int_equal(cfg_validate(&c, err, sizeof(err)), 0);
  }
  for (int i = 0; i < 100; i++) {
    snprintf(val, sizeof(val), "http://h%d:1", i);
    assert_int_equal(cfg_set(&c, "endpoint", val, err, sizeof(err)), 0);
    snprintf(val, sizeof(val), "SECRET%d", i);
    assert_int_equal(cfg_set(&c, "credentials.secret_key", val, err,
                             sizeof(err)), 0);
    assert_int_equal(cfg_set(&c, "region", i % 2 ? "" : "r", err,
                             sizeof(err)), 0);
    assert_int_equal(cfg_set(&c, "cache.dir", dirs[i % 3], err, sizeof(err)),
                     0);
    assert_int_equal(cfg_set(&c, "rdma.token_header", "x-h", err,
                             sizeof(err)), 0);
  }
  /* setting a string to itself is safe */
  assert_int_equal(cfg_set(&c, "cache.dir", c.cache.dir, err, sizeof(err)),
                   0);
  assert_string_equal(c.cache.dir, "/a");
  /* null puts the static defaults back */
  assert_int_equal(load_text(&c, "{\"cache\": {\"dir\": null}, \"rdma\": "
                                 "{\"token_header\": null}, \"endpoint\": "
                                 "null}", err, sizeof(err), path,
                             sizeof(path)), 0);
  assert_string_equal(c.cache.dir, "/var/cache/s3rdmafs");
  assert_null(c.endpoint);
  cfg_cleanup(&c);
  cfg_cleanup(&c);   /* twice is harmless */
  assert_null(c.cache.dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_sane),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_parse_size),
      cmocka_unit_test(test_parse_duration),
      cmocka_unit_test(test_parse_bool),
      cmocka_unit_test(test_set_values),
      cmocka_unit_test(test_json_values),
      cmocka_unit_test(test_json_null_uid),
      cmocka_unit_test(test_file_errors),
      cmocka_unit_test(test_example_file),
      cmocka_unit_test(test_fuzz_dict),
      cmocka_unit_test(test_full_file),
      cmocka_unit_test(test_overrides),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_env_endpoint),
      cmocka_unit_test(test_secrets_never_printed),
      cmocka_unit_test(test_secret_file_mode),
      cmocka_unit_test(test_dump),
      cmocka_unit_test(test_help_and_docs),
      cmocka_unit_test(test_reload_no_leaks),
  };

  clear_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
