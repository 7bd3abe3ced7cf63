/*
 * test_secret: common/secret.h. The rule for files holding keys (mode,
 * owner, regular file) on files made in a mkdtemp() directory, reading a
 * key file (newlines stripped, the odd files refused), scrubbing an
 * argument.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secret.h"

struct fixture {
  char dir[64];
  char path[128];
  char why[256];
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));

  if (!f)
    return -1;
  strcpy(f->dir, "/tmp/test_secret.XXXXXX");
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->path, sizeof(f->path), "%s/key", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;

  unlink(f->path);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* f->path holds n bytes of data, with mode. */
static void put(struct fixture *f, const char *data, size_t n, mode_t mode)
{
  int fd;

  unlink(f->path);
  fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, n), (ssize_t)n);
  close(fd);
  assert_int_equal(chmod(f->path, mode), 0);
}

static int check_path(struct fixture *f, const char *path)
{
  int fd = open(path, O_RDONLY | O_NONBLOCK), rc;

  assert_true(fd >= 0);
  f->why[0] = 0;
  rc = secret_check_fd(fd, f->why, sizeof(f->why));
  close(fd);
  return rc;
}

static void test_mode_rule(void **state)
{
  static const struct {
    mode_t mode;
    int rc;
    const char *why;
  } t[] = {
      {0600, 0, ""},
      {0400, 0, ""},
      {0700, 0, ""},
      {0640, -EACCES, "readable by group or others (mode 0640); chmod 600 it"},
      {0604, -EACCES, "readable by group or others (mode 0604); chmod 600 it"},
      {0644, -EACCES, "readable by group or others (mode 0644); chmod 600 it"},
      {0620, -EACCES, "writable by group or others (mode 0620); chmod 600 it"},
      {0602, -EACCES, "writable by group or others (mode 0602); chmod 600 it"},
      {0610, -EACCES, "accessible by group or others (mode 0610); chmod 600 it"},
      {0601, -EACCES, "accessible by group or others (mode 0601); chmod 600 it"},
      {04600, 0, ""}, /* setuid is no group/other permission */
      {01644, -EACCES, "readable by group or others (mode 1644); chmod 600 it"},
  };
  struct fixture *f = *state;

  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    put(f, "k\n", 2, t[i].mode);
    if (check_path(f, f->path) != t[i].rc)
      fail_msg("mode %04o: expected %d, got '%s'", (unsigned)t[i].mode,
               t[i].rc, f->why);
    if (t[i].rc)
      assert_string_equal(f->why, t[i].why);
  }
}

static void test_not_regular_or_not_ours(void **state)
{
  struct fixture *f = *state;
  char *key = (char *)"untouched";
  char fifo[160];

  assert_int_equal(check_path(f, f->dir), -EINVAL);
  assert_string_equal(f->why, "not a regular file (a directory)");
  assert_int_equal(check_path(f, "/dev/null"), -EINVAL);
  assert_string_equal(f->why, "not a regular file (a character device)");
  /* a FIFO is refused at once, not waited on */
  snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(secret_read_file(fifo, &key, f->why, sizeof(f->why)),
                   -EINVAL);
  assert_null(key);
  assert_string_equal(f->why, "not a regular file (a FIFO)");
  unlink(fifo);
  assert_int_equal(secret_check_fd(-1, f->why, sizeof(f->why)), -EBADF);
  assert_string_equal(f->why, "cannot stat: Bad file descriptor");

  put(f, "k\n", 2, 0600);
  if (geteuid() == 0) { /* only root can give a file away */
    assert_int_equal(chown(f->path, 1234, 1234), 0);
    assert_int_equal(check_path(f, f->path), -EACCES);
    assert_string_equal(f->why, "owned by uid 1234, not by root; chown it");
    assert_int_equal(chown(f->path, 0, 1234), 0); /* root's: fine */
    assert_int_equal(check_path(f, f->path), 0);
  } else { /* root's own files are fine for everyone */
    assert_int_equal(check_path(f, f->path), 0);
  }
}

static void test_read_file(void **state)
{
  static const struct {
    const char *data;
    size_t n;
    const char *key;  /* NULL: refused */
    const char *why;
  } t[] = {
      {"AKIDSECRET\n", 11, "AKIDSECRET", NULL},
      {"AKIDSECRET", 10, "AKIDSECRET", NULL},
      {"AKIDSECRET\r\n", 12, "AKIDSECRET", NULL},
      {"AKIDSECRET\n\n\n", 13, "AKIDSECRET", NULL},
      {"a/b+c==\n", 8, "a/b+c==", NULL},
      {" spaced key \n", 13, " spaced key ", NULL}, /* only newlines go */
      {"", 0, NULL, "empty: no key in it"},
      {"\n", 1, NULL, "empty: no key in it"},
      {"\r\n\r\n", 4, NULL, "empty: no key in it"},
      {"one\ntwo\n", 8, NULL, "holds more than one line: the key alone "
                              "expected"},
      {"one\rtwo", 7, NULL, "holds more than one line: the key alone "
                            "expected"},
      {"ab\0cd\n", 6, NULL, "holds a NUL byte: not a key file"},
  };
  struct fixture *f = *state;
  char *key, big[SECRET_FILE_MAX + 2];

  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    put(f, t[i].data, t[i].n, 0600);
    key = (char *)"untouched";
    int rc = secret_read_file(f->path, &key, f->why, sizeof(f->why));
    if (t[i].key) {
      if (rc)
        fail_msg("case %zu: %s", i, f->why);
      assert_string_equal(key, t[i].key);
      secret_free(key);
    } else {
      assert_int_equal(rc, -EINVAL);
      assert_null(key);
      assert_string_equal(f->why, t[i].why);
    }
  }

  /* size: a key of SECRET_FILE_MAX bytes is the most */
  memset(big, 'k', sizeof(big));
  put(f, big, SECRET_FILE_MAX, 0600);
  assert_int_equal(secret_read_file(f->path, &key, f->why, sizeof(f->why)), 0);
  assert_int_equal(strlen(key), SECRET_FILE_MAX);
  secret_free(key);
  put(f, big, SECRET_FILE_MAX + 1, 0600);
  assert_int_equal(secret_read_file(f->path, &key, f->why, sizeof(f->why)),
                   -EINVAL);
  assert_string_equal(f->why, "larger than 4096 bytes: not a key file");

  /* the mode rule first; the key never in the reason */
  put(f, "TOPSECRET\n", 10, 0644);
  assert_int_equal(secret_read_file(f->path, &key, f->why, sizeof(f->why)),
                   -EACCES);
  assert_null(key);
  assert_string_equal(f->why,
                      "readable by group or others (mode 0644); chmod 600 it");
  unlink(f->path);
  assert_int_equal(secret_read_file(f->path, &key, f->why, sizeof(f->why)),
                   -ENOENT);
  assert_string_equal(f->why, "cannot open: No such file or directory");
}

static void test_scrub_and_free(void **state)
{
  char arg[] = "--secret-key=SK/x+y", *dup;

  (void)state;
  secret_scrub_arg(arg + 13);
  assert_string_equal(arg, "--secret-key=xxxxxx");
  secret_scrub_arg(NULL);
  dup = strdup("secret");
  assert_non_null(dup);
  secret_free(dup);
  secret_free(NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mode_rule, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_regular_or_not_ours, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
      cmocka_unit_test(test_scrub_and_free),
  };
  umask(022);
  return cmocka_run_group_tests_name("secret", tests, NULL, NULL);
}
