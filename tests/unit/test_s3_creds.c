/*
 * test_s3_creds: s3_creds_resolve over explicit options, the environment and
 * shared files written into a mkdtemp() home. Every test starts with the
 * AWS_* variables (and HOME) cleared and gets them back afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_creds.h"

static const char *const env_names[] = {
    "AWS_ACCESS_KEY_ID",     "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_PROFILE",           "AWS_REGION",            "AWS_DEFAULT_REGION",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME",
};
#define NENV (sizeof(env_names) / sizeof(env_names[0]))

struct fixture {
  char *saved[NENV];
  char home[64];
  char path[6][128]; /* files this test wrote, removed in teardown */
  int npaths;
  char err[512];
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  char dir[96];

  if (!f)
    return -1;
  for (size_t i = 0; i < NENV; i++) {
    const char *v = getenv(env_names[i]);
    f->saved[i] = v ? strdup(v) : NULL;
    unsetenv(env_names[i]);
  }
  strcpy(f->home, "/tmp/test_creds.XXXXXX");
  if (!mkdtemp(f->home))
    return -1;
  snprintf(dir, sizeof(dir), "%s/.aws", f->home);
  if (mkdir(dir, 0700))
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  char dir[96];

  for (int i = 0; i < f->npaths; i++)
    unlink(f->path[i]);
  snprintf(dir, sizeof(dir), "%s/.aws", f->home);
  rmdir(dir);
  rmdir(f->home);
  for (size_t i = 0; i < NENV; i++) {
    if (f->saved[i])
      setenv(env_names[i], f->saved[i], 1);
    else
      unsetenv(env_names[i]);
    free(f->saved[i]);
  }
  free(f);
  return 0;
}

/* Write `text` to home/<rel> (rel "" for a file directly in home), mode
   `mode`. */
static const char *put_file_mode(struct fixture *f, const char *rel,
                                 const char *text, mode_t mode)
{
  char *p = f->path[f->npaths++];
  FILE *fp;

  snprintf(p, sizeof(f->path[0]), "%s/%s", f->home, rel);
  fp = fopen(p, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
  assert_int_equal(chmod(p, mode), 0);
  return p;
}

/* Mode 0600, as "aws configure" writes them: secrets are used only from
   private files. */
static const char *put_file(struct fixture *f, const char *rel,
                            const char *text)
{
  return put_file_mode(f, rel, text, 0600);
}

static int resolve(struct fixture *f, const struct s3_creds_opts *o,
                   struct s3_creds *c)
{
  struct s3_creds_opts local = o ? *o : (struct s3_creds_opts){0};
  if (!local.home)
    local.home = f->home;
  f->err[0] = 'x';
  return s3_creds_resolve(&local, c, f->err, sizeof(f->err));
}

static void assert_contains(const char *hay, const char *needle)
{
  if (!strstr(hay, needle))
    fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

/* ---- explicit, environment ----------------------------------------------- */

static void test_explicit(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.access_key = "AKCFG", .secret_key = "SKCFG",
                            .session_token = "TOKCFG",
                            .region = "eu-west-3"};

  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1); /* explicit wins */
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.source, "config");
  assert_string_equal(c.access_key, "AKCFG");
  assert_string_equal(c.secret_key, "SKCFG");
  assert_string_equal(c.session_token, "TOKCFG");
  assert_string_equal(c.region, "eu-west-3");
  assert_false(c.anonymous);
  assert_string_equal(f->err, "");
  s3_creds_cleanup(&c);
  assert_null(c.access_key);
  s3_creds_cleanup(&c); /* twice is harmless */
  s3_creds_cleanup(NULL);
}

static void test_explicit_half(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.access_key = "AKCFG"};

  assert_int_equal(resolve(f, &o, &c), -EINVAL);
  assert_contains(f->err, "secret_key");
  assert_null(c.access_key);
  assert_null(c.region);

  o = (struct s3_creds_opts){.secret_key = "SK"};
  assert_int_equal(resolve(f, &o, &c), -EINVAL);
  assert_contains(f->err, "access_key");

  o = (struct s3_creds_opts){.session_token = "T"};
  assert_int_equal(resolve(f, &o, &c), -EINVAL);
  assert_contains(f->err, "session_token");
}

static void test_env(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;

  put_file(f, ".aws/credentials", "[default]\naws_access_key_id = AKFILE\n"
                                  "aws_secret_access_key = SKFILE\n");
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.source, "environment");
  assert_string_equal(c.access_key, "AKENV");
  assert_string_equal(c.secret_key, "SKENV");
  assert_string_equal(c.session_token, "TOKENV");
  assert_string_equal(c.region, "us-east-1");
  s3_creds_cleanup(&c);

  unsetenv("AWS_SESSION_TOKEN");
  setenv("AWS_SECRET_ACCESS_KEY", "", 1); /* empty counts as unset */
  assert_int_equal(resolve(f, NULL, &c), -EINVAL);
  assert_contains(f->err, "AWS_ACCESS_KEY_ID");
  assert_contains(f->err, "AWS_SECRET_ACCESS_KEY");

  unsetenv("AWS_ACCESS_KEY_ID");
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  assert_int_equal(resolve(f, NULL, &c), -EINVAL);
  assert_contains(f->err, "AWS_ACCESS_KEY_ID");
}

/* ---- profiles ------------------------------------------------------------ */

static const char creds_file[] =
    "# shared credentials\n"
    "[default]\n"
    "aws_access_key_id=AKDEF\n"
    "aws_secret_access_key   =   SKDEF   \n"
    "\n"
    "  ; indented comment\n"
    "[ dev ]   # trailing comment\n"
    "  AWS_ACCESS_KEY_ID = AKDEV ; inline comment\n" /* same indent: keys */
    "  aws_secret_access_key = SK/DEV+x==\n"
    "  aws_session_token = TOKDEV==\n"
    "\n"
    "[profile dev]\n" /* a literal name in this file, not "dev" */
    "aws_access_key_id = WRONG\n"
    "aws_secret_access_key = WRONG\n"
    "[halfkey]\n"
    "aws_access_key_id = AKHALF\n";

static const char config_file[] =
    "[default]\n"
    "region = ap-south-1\n"
    "s3 =\n"
    "    region = nested-not-this\n"
    "    max_concurrent_requests = 10\n"
    "[dev]\n" /* not a profile in the config file */
    "region = wrong-1\n"
    "[profile dev]\n"
    "region=eu-central-1\n"
    "[profile cfgonly]\n"
    "aws_access_key_id = AKCFGONLY\n"
    "aws_secret_access_key = SKCFGONLY\n"
    "[profile sso]\n"
    "sso_session = corp\n"
    "region = us-west-2\n"
    "[profile regiononly]\n"
    "region = sa-east-1\n";

static void test_profile_default(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;

  put_file(f, ".aws/credentials", creds_file);
  put_file(f, ".aws/config", config_file);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.source, "profile");
  assert_string_equal(c.access_key, "AKDEF");
  assert_string_equal(c.secret_key, "SKDEF");
  assert_null(c.session_token);
  assert_string_equal(c.region, "ap-south-1");
  s3_creds_cleanup(&c);

  /* HOME is used when opts->home is not given */
  setenv("HOME", f->home, 1);
  struct s3_creds_opts o = {.home = NULL};
  assert_int_equal(s3_creds_resolve(&o, &c, NULL, 0), 0);
  assert_string_equal(c.access_key, "AKDEF");
  s3_creds_cleanup(&c);
}

static void test_profile_named(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.profile = "dev"};

  put_file(f, ".aws/credentials", creds_file);
  put_file(f, ".aws/config", config_file);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.access_key, "AKDEV");
  assert_string_equal(c.secret_key, "SK/DEV+x==");
  assert_string_equal(c.session_token, "TOKDEV==");
  assert_string_equal(c.region, "eu-central-1");
  s3_creds_cleanup(&c);

  /* $AWS_PROFILE names it too; opts->profile wins over it */
  setenv("AWS_PROFILE", "cfgonly", 1);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.access_key, "AKCFGONLY"); /* keys in config only */
  assert_string_equal(c.region, "us-east-1");
  s3_creds_cleanup(&c);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.access_key, "AKDEV");
  s3_creds_cleanup(&c);
}

static void test_profile_files_from_env(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  const char *cr, *cf;

  put_file(f, ".aws/credentials", creds_file); /* must be ignored */
  cr = put_file(f, "alt-credentials",
                "[default]\naws_access_key_id = AKALT\n"
                "aws_secret_access_key = SKALT\n");
  cf = put_file(f, "alt-config",
                "\xEF\xBB\xBF[default]\r\nregion = ca-central-1\r\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", cr, 1);
  setenv("AWS_CONFIG_FILE", cf, 1);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.access_key, "AKALT");
  assert_string_equal(c.region, "ca-central-1");
  s3_creds_cleanup(&c);

  /* a named profile missing: the message names both files */
  setenv("AWS_PROFILE", "nope", 1);
  assert_int_equal(resolve(f, NULL, &c), -ENOENT);
  assert_contains(f->err, "'nope'");
  assert_contains(f->err, cr);
  assert_contains(f->err, "$AWS_CONFIG_FILE");
}

static void test_profile_missing(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.profile = "ghost"};

  put_file(f, ".aws/credentials", creds_file);
  assert_int_equal(resolve(f, &o, &c), -ENOENT);
  assert_contains(f->err, "profile 'ghost' not found");
  assert_contains(f->err, "[profile ghost]");
  assert_null(c.access_key);

  /* also when only the region is looked up in it */
  o.access_key = "AK";
  o.secret_key = "SK";
  assert_int_equal(resolve(f, &o, &c), -ENOENT);
  o.region = "us-east-2"; /* ...but not when it is not needed */
  assert_int_equal(resolve(f, &o, &c), 0);
  s3_creds_cleanup(&c);
}

static void test_profile_half_and_unsupported(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.profile = "halfkey"};
  const char *cr;

  cr = put_file(f, ".aws/credentials", creds_file);
  put_file(f, ".aws/config", config_file);
  assert_int_equal(resolve(f, &o, &c), -EINVAL);
  assert_contains(f->err, "aws_secret_access_key");
  assert_contains(f->err, "'halfkey'");
  assert_contains(f->err, cr);

  o.profile = "sso";
  assert_int_equal(resolve(f, &o, &c), -ENOKEY);
  assert_contains(f->err, "sso_session");

  o.profile = "regiononly";
  assert_int_equal(resolve(f, &o, &c), -ENOKEY);
  assert_contains(f->err, "'regiononly'");
  assert_contains(f->err, "aws_access_key_id");
}

static void test_malformed(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;

  put_file(f, ".aws/credentials", "[default]\naws_access_key_id = A\n"
                                  "this line has no equals sign\n");
  assert_int_equal(resolve(f, NULL, &c), -EINVAL);
  assert_contains(f->err, "credentials:3:");
  f->npaths = 0;

  put_file(f, ".aws/credentials", "[default\naws_access_key_id = A\n");
  assert_int_equal(resolve(f, NULL, &c), -EINVAL);
  assert_contains(f->err, "credentials:1: malformed section header");
  f->npaths = 0;

  put_file(f, ".aws/credentials", "aws_access_key_id = A\n[default]\n");
  assert_int_equal(resolve(f, NULL, &c), -EINVAL);
  assert_contains(f->err, "outside any [section]");
}

static void test_nothing(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;

  assert_int_equal(resolve(f, NULL, &c), -ENOKEY);
  assert_contains(f->err, "no credentials found");
  assert_contains(f->err, "AWS_ACCESS_KEY_ID");
  assert_contains(f->err, "~/.aws/credentials");
  assert_null(c.access_key);
  assert_null(c.region);

  /* the implicit default present but empty of keys */
  put_file(f, ".aws/config", "[default]\nregion = eu-north-1\n");
  assert_int_equal(resolve(f, NULL, &c), -ENOKEY);
  assert_contains(f->err, "'default'");
}

/* ---- region, anonymous --------------------------------------------------- */

static void test_region_precedence(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.access_key = "AK", .secret_key = "SK"};

  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "us-east-1"); /* built-in default */
  s3_creds_cleanup(&c);

  put_file(f, ".aws/config", "[default]\nregion = from-config\n"
                             "[profile p]\nregion = from-profile-p\n");
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "from-config");
  s3_creds_cleanup(&c);

  o.profile = "p";
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "from-profile-p");
  s3_creds_cleanup(&c);

  setenv("AWS_DEFAULT_REGION", "from-default-region", 1);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "from-default-region");
  s3_creds_cleanup(&c);

  setenv("AWS_REGION", "from-aws-region", 1);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "from-aws-region");
  s3_creds_cleanup(&c);

  o.region = "from-opts";
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "from-opts");
  s3_creds_cleanup(&c);
}

/* A file whose secret is used must be private; others are not checked. */
static void test_profile_file_modes(void **state)
{
  static const mode_t open_modes[] = {0644, 0640, 0604, 0620, 0660, 0601};
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts dev = {.profile = "dev"};
  const char *cr, *cf;
  char want[192];

  cr = put_file(f, ".aws/credentials", creds_file);
  cf = put_file(f, ".aws/config", config_file);
  for (size_t i = 0; i < sizeof(open_modes) / sizeof(*open_modes); i++) {
    assert_int_equal(chmod(cr, open_modes[i]), 0);
    assert_int_equal(resolve(f, NULL, &c), -EACCES);
    snprintf(want, sizeof(want), "%s: %s by group or others (mode %04o); "
             "chmod 600 it (it holds the aws_secret_access_key of profile "
             "'default')", cr,
             open_modes[i] & 044 ? "readable"
             : open_modes[i] & 022 ? "writable" : "accessible",
             (unsigned)open_modes[i]);
    assert_string_equal(f->err, want);
    assert_null(c.access_key);
    assert_null(c.secret_key);
  }
  /* keys from elsewhere: the open file is only read for a region, or not
     at all */
  assert_int_equal(chmod(cr, 0644), 0);
  assert_int_equal(chmod(cf, 0644), 0);
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.secret_key, "SKENV");
  assert_string_equal(c.region, "ap-south-1");
  s3_creds_cleanup(&c);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  /* a world-readable config with a region only; secrets from 0600 */
  assert_int_equal(chmod(cr, 0600), 0);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.secret_key, "SKDEF");
  assert_string_equal(c.region, "ap-south-1");
  s3_creds_cleanup(&c);
  /* ... but a secret taken from it is refused, naming it */
  setenv("AWS_PROFILE", "cfgonly", 1);
  assert_int_equal(resolve(f, NULL, &c), -EACCES);
  assert_contains(f->err, cf);
  assert_contains(f->err, "(mode 0644); chmod 600 it");
  assert_contains(f->err, "profile 'cfgonly'");
  unsetenv("AWS_PROFILE");
  /* the credentials file's secret wins over the open config's */
  put_file_mode(f, "cfg-default-secret",
                "[default]\naws_access_key_id = AKX\n"
                "aws_secret_access_key = SKX\n", 0644);
  setenv("AWS_CONFIG_FILE", f->path[f->npaths - 1], 1);
  assert_int_equal(resolve(f, NULL, &c), 0);
  assert_string_equal(c.secret_key, "SKDEF");
  s3_creds_cleanup(&c);
  /* a session token from an open file is refused too */
  put_file_mode(f, "cfg-token",
                "[profile dev]\naws_session_token = TOKOPEN\n", 0644);
  setenv("AWS_CONFIG_FILE", f->path[f->npaths - 1], 1);
  put_file(f, "creds-no-token", "[dev]\naws_access_key_id = AKDEV\n"
                                "aws_secret_access_key = SKDEV\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", f->path[f->npaths - 1], 1);
  assert_int_equal(resolve(f, &dev, &c), -EACCES);
  assert_contains(f->err, "cfg-token: readable by group or others");
  assert_contains(f->err, "aws_session_token of profile 'dev'");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  /* owned by someone else (only root can make such a file) */
  if (geteuid() == 0) {
    assert_int_equal(chown(cr, 1234, 1234), 0);
    assert_int_equal(resolve(f, NULL, &c), -EACCES);
    assert_contains(f->err, "owned by uid 1234, not by root; chown it");
  }
}

static void test_anonymous(void **state)
{
  struct fixture *f = *state;
  struct s3_creds c;
  struct s3_creds_opts o = {.anonymous = true, .access_key = "ignored"};

  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_true(c.anonymous);
  assert_string_equal(c.source, "anonymous");
  assert_null(c.access_key);
  assert_null(c.secret_key);
  assert_null(c.session_token);
  assert_string_equal(c.region, "us-east-1");
  s3_creds_cleanup(&c);

  put_file(f, ".aws/config", "[default]\nregion = eu-south-1\n");
  assert_int_equal(resolve(f, &o, &c), 0);
  assert_string_equal(c.region, "eu-south-1");
  s3_creds_cleanup(&c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_explicit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_explicit_half, setup, teardown),
      cmocka_unit_test_setup_teardown(test_env, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_files_from_env, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_profile_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profile_half_and_unsupported,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_region_precedence, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_profile_file_modes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_anonymous, setup, teardown),
  };
  return cmocka_run_group_tests_name("creds", tests, NULL, NULL);
}
