/*
 * test_gw_secret: where the gateway's secret keys come from
 * (gateway/gw_secret.h): the command-line value, else the key file, else
 * the environment; a value and a file together are an error; a file that
 * is not private is refused, not skipped.
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

#include "common/secret.h"
#include "gateway/gw_secret.h"

#define ENV "S3R_TEST_GW_SECRET"

struct fixture {
  char dir[64];
  char path[128];
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  FILE *fp;

  if (!f)
    return -1;
  strcpy(f->dir, "/tmp/test_gw_secret.XXXXXX");
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->path, sizeof(f->path), "%s/sk", f->dir);
  fp = fopen(f->path, "w");
  if (!fp || fputs("SKFROMFILE\n", fp) < 0 || fclose(fp) ||
      chmod(f->path, 0600))
    return -1;
  unsetenv(ENV);
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;

  unlink(f->path);
  rmdir(f->dir);
  unsetenv(ENV);
  free(f);
  return 0;
}

static void test_precedence(void **state)
{
  static const char arg[] = "SKFROMARG";
  struct fixture *f = *state;
  struct gw_secret_src s = {"--secret-key", NULL, NULL, ENV};
  enum gw_secret_from from;
  char err[256] = "", *key;

  /* nothing anywhere: no key, no error (the caller says what is missing) */
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)), 0);
  assert_null(key);
  assert_int_equal(from, GW_SECRET_NONE);
  setenv(ENV, "", 1); /* empty counts as unset */
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)), 0);
  assert_null(key);

  /* the environment */
  setenv(ENV, "SKFROMENV", 1);
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)), 0);
  assert_string_equal(key, "SKFROMENV");
  assert_int_equal(from, GW_SECRET_ENV);
  secret_free(key);

  /* the file wins over the environment */
  s.file = f->path;
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)), 0);
  assert_string_equal(key, "SKFROMFILE");
  assert_int_equal(from, GW_SECRET_FILE);
  secret_free(key);

  /* the command line wins over the environment; a copy */
  s.file = NULL;
  s.arg = arg;
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)), 0);
  assert_string_equal(key, "SKFROMARG");
  assert_ptr_not_equal(key, arg);
  assert_int_equal(from, GW_SECRET_ARG);
  secret_free(key);

  /* the command line and a file together: an error, whichever order */
  s.file = f->path;
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)),
                   -EINVAL);
  assert_null(key);
  assert_string_equal(err, "--secret-key and --secret-key-file: give one, "
                           "not both");
}

static void test_bad_file(void **state)
{
  struct fixture *f = *state;
  struct gw_secret_src s = {"--upstream-secret-key", NULL, f->path, ENV};
  enum gw_secret_from from;
  char err[512], want[512], *key;

  /* refused, not passed over for the environment */
  setenv(ENV, "SKFROMENV", 1);
  assert_int_equal(chmod(f->path, 0644), 0);
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)),
                   -EACCES);
  assert_null(key);
  assert_int_equal(from, GW_SECRET_NONE);
  snprintf(want, sizeof(want), "--upstream-secret-key-file %s: readable by "
           "group or others (mode 0644); chmod 600 it", f->path);
  assert_string_equal(err, want);
  assert_null(strstr(err, "SKFROM"));

  assert_int_equal(chmod(f->path, 0640), 0);
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)),
                   -EACCES);
  assert_non_null(strstr(err, "(mode 0640)"));

  s.file = f->dir;
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)),
                   -EINVAL);
  snprintf(want, sizeof(want), "--upstream-secret-key-file %s: not a regular "
           "file (a directory)", f->dir);
  assert_string_equal(err, want);

  unlink(f->path);
  s.file = f->path;
  assert_int_equal(gw_secret_load(&s, &key, &from, err, sizeof(err)),
                   -ENOENT);
  assert_non_null(strstr(err, "cannot open: No such file or directory"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_file, setup, teardown),
  };
  return cmocka_run_group_tests_name("gw_secret", tests, NULL, NULL);
}
