/*
 * fuzz_config: the configuration loader of config/cfg.h: cfg_load_file on
 * a JSON file (held in a memfd, read through /proc/self/fd), then cfg_set
 * for each "-o key[=value]", cfg_validate and cfg_dump.
 *
 * Input: the JSON text, a NUL byte, then the -o options separated by ','
 * as one -o string ("cache.size=4G,ro,read.readahead_max=128M"); a key
 * without '=' is a bare option (value NULL). At most MAX_OPTIONS are
 * applied, and of them at most one name not in the key table (an alias or
 * an unknown key, of at most 40 bytes).
 *
 * Properties (abort() on violation):
 *  - every value the struct holds after loading, setting and validating
 *    (whatever failed on the way) prints in a form that parses again: for
 *    each key not secret and not unset, cfg_set(fresh, key, printed) is 0
 *    and prints the same (cfg_value.c: "printing back in a form that parses
 *    again");
 *  - cfg_dump returns the same length whatever buffer it is given, never
 *    writes past it, always NUL-terminates it, and shows every secret key
 *    as "***" or "(unset)";
 *  - return values are the documented ones, err NUL-terminated;
 *  - cfg_cleanup frees every string (LeakSanitizer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/cfg.h"
#include "config/cfg_i.h"
#include "tests/fuzz/fuzz_common.h"

#define ERR_LEN 256
#define MAX_OPTIONS 8
#define MAX_OTHER 1

static int json_fd = -1;
static char json_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  /* cfg_validate falls back on these: keep every run the same */
  unsetenv("S3R_ENDPOINT");
  unsetenv("AWS_ENDPOINT_URL");
  json_fd = memfd_create("fuzz_config.json", MFD_CLOEXEC);
  if (json_fd < 0) {
    perror("memfd_create");
    abort();
  }
  /* private: a file that sets secret keys must be (cfg.h) */
  if (fchmod(json_fd, 0600) != 0) {
    perror("fchmod");
    abort();
  }
  snprintf(json_path, sizeof(json_path), "/proc/self/fd/%d", json_fd);
  return 0;
}

static void write_file(const char *s, size_t n)
{
  if (ftruncate(json_fd, 0) != 0 ||
      (n && pwrite(json_fd, s, n, 0) != (ssize_t)n)) {
    perror("memfd write");
    abort();
  }
}

static void apply_options(struct cfg *c, char *opts)
{
  char err[ERR_LEN];
  unsigned n = 0, other = 0;

  for (char *save = NULL, *o = strtok_r(opts, ",", &save);
       o && n < MAX_OPTIONS; o = strtok_r(NULL, ",", &save), n++) {
    char *eq = strchr(o, '=');
    int rc;

    if (eq)
      *eq = '\0';
    /* a name not in the table (an alias, or unknown: ~150 edit distances
       for the suggestion, most of the time spent): one a run, short */
    if (!cfg_key_find(o) && (++other > MAX_OTHER || strlen(o) > 40))
      continue;
    rc = cfg_set(c, o, eq ? eq + 1 : NULL, err, sizeof(err));
    FUZZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -ENOENT || FUZZ_OOM(rc),
                "cfg_set returned %d", rc);
    FUZZ_ASSERT(memchr(err, '\0', sizeof(err)), "err not terminated");
    FUZZ_ASSERT(rc == 0 || err[0], "cfg_set failed (%d) without a reason", rc);
  }
}

/* Each value prints as text that cfg_set takes back unchanged. */
static void check_round_trip(const struct cfg *c)
{
  char text[512], again[512], err[ERR_LEN];
  struct cfg fresh;
  union cfg_val v;
  int n, rc;

  for (size_t i = 0; i < cfg_nkeys; i++) {
    const struct cfg_key *k = &cfg_keys[i];

    if (k->flags & CFG_F_SECRET)
      continue;
    cfg_value_get(c, k, &v);
    n = cfg_value_format(k, &v, text, sizeof(text));
    if (n < 0 || (size_t)n >= sizeof(text) || strcmp(text, "(unset)") == 0)
      continue;
    cfg_init_defaults(&fresh);
    rc = cfg_set(&fresh, k->name, text, err, sizeof(err));
    if (FUZZ_OOM(rc)) {
      cfg_cleanup(&fresh);
      continue;
    }
    FUZZ_ASSERT(rc == 0, "%s: its value prints as '%s', which cfg_set "
                "refuses: %s", k->name, text, err);
    cfg_value_get(&fresh, k, &v);
    cfg_value_format(k, &v, again, sizeof(again));
    FUZZ_ASSERT(strcmp(text, again) == 0, "%s: '%s' set back prints '%s'",
                k->name, text, again);
    cfg_cleanup(&fresh);
  }
}

static void check_dump(const struct cfg *c, size_t cut)
{
  size_t need = cfg_dump(c, NULL, 0), len = cut % (need + 2), got;
  char *full = malloc(need + 1), *part = malloc(len ? len : 1);

  if (!full || !part)
    goto out;
  got = cfg_dump(c, full, need + 1);
  FUZZ_ASSERT(got == need && strlen(full) == need,
              "dump: %zu needed, %zu returned, %zu written", need, got,
              strlen(full));
  for (size_t i = 0; i < cfg_nkeys; i++) {
    char line[128], unset[128];
    if (!(cfg_keys[i].flags & CFG_F_SECRET))
      continue;
    snprintf(line, sizeof(line), "\n%s = ***\n", cfg_keys[i].name);
    snprintf(unset, sizeof(unset), "\n%s = (unset)\n", cfg_keys[i].name);
    FUZZ_ASSERT(strstr(full, line) || strstr(full, unset),
                "secret %s shown in the dump", cfg_keys[i].name);
  }
  part[0] = 'X';
  got = cfg_dump(c, len ? part : NULL, len);
  FUZZ_ASSERT(got == need, "dump into %zu bytes returned %zu, not %zu", len,
              got, need);
  if (len)
    FUZZ_ASSERT(memchr(part, '\0', len) && strncmp(part, full, len - 1) == 0,
                "dump into %zu bytes: not a terminated prefix", len);
out:
  free(full);
  free(part);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  char *json, *opts = NULL, err[ERR_LEN];
  size_t json_len;
  struct cfg c;
  int rc;

  json = fz_str_until(&f, '\0', &json_len);
  opts = fz_rest(&f, NULL);
  if (!json || !opts)
    goto out;

  cfg_init_defaults(&c);
  write_file(json, json_len);
  rc = cfg_load_file(&c, json_path, err, sizeof(err));
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -EACCES || FUZZ_OOM(rc),
              "cfg_load_file returned %d: %s", rc, err);
  FUZZ_ASSERT(memchr(err, '\0', sizeof(err)), "err not terminated");
  FUZZ_ASSERT(rc == 0 || err[0], "load failed (%d) without a reason", rc);
  apply_options(&c, opts);
  rc = cfg_validate(&c, err, sizeof(err));
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL || FUZZ_OOM(rc),
              "cfg_validate returned %d", rc);
  FUZZ_ASSERT(rc == 0 || err[0], "validate failed (%d) without a reason", rc);
  check_round_trip(&c);
  check_dump(&c, json_len + size);
  cfg_cleanup(&c);
  cfg_cleanup(&c); /* documented harmless */
out:
  free(json);
  free(opts);
  return 0;
}
