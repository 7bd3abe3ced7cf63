/*
 * fuzz_creds: the shared credentials/config file reader behind
 * s3_creds_resolve (s3/s3_creds.h): ~/.aws/credentials and ~/.aws/config,
 * INI as the AWS CLI writes them. Both files are memfds, named by
 * $AWS_SHARED_CREDENTIALS_FILE and $AWS_CONFIG_FILE (/proc/self/fd/N); the
 * AWS_* key, profile and region variables are unset, so the files decide.
 *
 * Input: byte 0 flags (bit 0: name the profile explicitly, bit 1: give
 * the region explicitly, bit 2: anonymous, bits 3-4: the err buffer's
 * size), then the profile name, a NUL, the credentials file, a NUL, the
 * config file.
 *
 * Properties (abort() on violation):
 *  - the return value is 0 or one of the documented errors (-ENOKEY,
 *    -ENOENT, -EINVAL, -EACCES, -ENOMEM), with a reason in err on failure
 *    (err NUL-terminated and never written past its size);
 *  - on success: region non-empty; anonymous has no keys; otherwise both
 *    keys present and trimmed (no leading or trailing whitespace, no line
 *    break), source "profile";
 *  - a failed resolve leaves *out empty, and s3_creds_cleanup frees all.
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

#include "common/slog.h"
#include "s3/s3_creds.h"
#include "tests/fuzz/fuzz_common.h"

static int creds_fd = -1, config_fd = -1;

static int make_file(const char *name, const char *var)
{
  char path[64];
  int fd = memfd_create(name, MFD_CLOEXEC);

  if (fd < 0) {
    perror("memfd_create");
    abort();
  }
  /* private, as a file holding secrets must be (s3_creds.c) */
  if (fchmod(fd, 0600) != 0) {
    perror("fchmod");
    abort();
  }
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  setenv(var, path, 1);
  return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  static const char *const unset[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
      "AWS_PROFILE",       "AWS_REGION",            "AWS_DEFAULT_REGION",
  };

  (void)argc, (void)argv;
  for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
    unsetenv(unset[i]);
  creds_fd = make_file("credentials", "AWS_SHARED_CREDENTIALS_FILE");
  config_fd = make_file("config", "AWS_CONFIG_FILE");
  slog_set_level(LOG_ERR);
  return 0;
}

static void write_file(int fd, const char *s, size_t n)
{
  if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, s, n, 0) != (ssize_t)n)) {
    perror("memfd write");
    abort();
  }
}

static bool trimmed(const char *s)
{
  size_t n = strlen(s);

  return n == 0 || (!strchr(" \t\r\n", s[0]) &&
                    !strchr(" \t\r\n", s[n - 1]) && !strchr(s, '\n'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const size_t err_sizes[] = {0, 1, 16, 256};
  struct fz f = {data, size};
  uint8_t flags = fz_u8(&f);
  size_t errlen = err_sizes[(flags >> 3) & 3], creds_len, config_len;
  char *profile = fz_str_until(&f, '\0', NULL);
  char *creds = fz_str_until(&f, '\0', &creds_len);
  char *config = fz_rest(&f, &config_len);
  char *err = fz_why_alloc(errlen);
  struct s3_creds_opts o = {0};
  struct s3_creds out;
  int rc;

  if (!profile || !creds || !config || !err)
    goto out;
  write_file(creds_fd, creds, creds_len);
  write_file(config_fd, config, config_len);
  if (flags & 1)
    o.profile = profile;
  if (flags & 2)
    o.region = "eu-west-1";
  o.anonymous = flags & 4;

  memset(&out, 0x5a, sizeof(out));
  rc = s3_creds_resolve(&o, &out, err, errlen);
  FUZZ_ASSERT(rc == 0 || rc == -ENOKEY || rc == -ENOENT || rc == -EINVAL ||
                  rc == -EACCES || FUZZ_OOM(rc),
              "s3_creds_resolve returned %d", rc);
  if (errlen)
    FUZZ_ASSERT(memchr(err, '\0', errlen), "err not terminated");
  else
    FUZZ_ASSERT(err[0] == 'W', "err of size 0 written");
  if (rc) {
    FUZZ_ASSERT(errlen < 2 || err[0], "failed (%d) without a reason", rc);
    FUZZ_ASSERT(!out.access_key && !out.secret_key && !out.session_token &&
                    !out.region,
                "failed resolve left strings in *out");
    goto out;
  }
  FUZZ_ASSERT(out.region && out.region[0], "no region");
  if (flags & 2)
    FUZZ_ASSERT(strcmp(out.region, "eu-west-1") == 0, "explicit region lost");
  if (o.anonymous) {
    FUZZ_ASSERT(out.anonymous && !out.access_key && !out.secret_key,
                "anonymous with keys");
  } else {
    FUZZ_ASSERT(!out.anonymous && out.source &&
                    strcmp(out.source, "profile") == 0,
                "keys from %s", out.source ? out.source : "(null)");
    FUZZ_ASSERT(out.access_key && out.secret_key, "success without keys");
    FUZZ_ASSERT(trimmed(out.access_key) && trimmed(out.secret_key) &&
                    (!out.session_token || trimmed(out.session_token)),
                "a key with whitespace: '%s'", out.access_key);
  }
  if (!(flags & 2) && strcmp(out.region, "us-east-1") != 0)
    FUZZ_ASSERT(trimmed(out.region), "region '%s' not trimmed", out.region);
  s3_creds_cleanup(&out);
out:
  free(profile);
  free(creds);
  free(config);
  free(err);
  return 0;
}
