/*
 * fsx_meta: s3fs's x-amz-meta-mode|uid|gid|mtime, encoded for a write and
 * decoded from a HEAD; the pairs a write sends read back the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fs/fsx_meta.h"

/* A HEAD's pairs from n key/value strings. */
static struct s3_object_meta head_of(struct s3_meta_kv *kv, size_t n)
{
  struct s3_object_meta o;

  memset(&o, 0, sizeof(o));
  o.meta = kv;
  o.n_meta = n;
  return o;
}

static void test_encode(void **state)
{
  struct fsx_wmeta mt = {.mode = S_IFREG | 0640, .uid = 1000, .gid = 100};
  struct s3_kv kv[4];
  char v[4][32];

  (void)state;
  assert_int_equal(fsx_wmeta_kv(&mt, kv, v), 3);
  assert_string_equal(kv[0].key, "mode");
  assert_string_equal(kv[0].val, "33184");
  assert_string_equal(kv[1].val, "1000");
  assert_string_equal(kv[2].val, "100");
  mt.has_mtime = true;
  mt.mtime.tv_sec = 1700000000;
  mt.mtime.tv_nsec = 5;
  assert_int_equal(fsx_wmeta_kv(&mt, kv, v), 4);
  assert_string_equal(kv[3].key, "mtime");
  assert_string_equal(kv[3].val, "1700000000");
}

static void test_decode(void **state)
{
  struct s3_meta_kv kv[] = {
      {"mode", "33184"}, {"uid", "1000"}, {"gid", "x"}, {"mtime", "1700000000"},
  };
  struct s3_object_meta o = head_of(kv, 4);
  struct fsx_attr a;

  (void)state;
  memset(&a, 0, sizeof(a));
  a.mtime.tv_sec = 7;
  a.gid = 9;
  fsx_meta_decode(&o, &a);
  assert_true(a.has_mode && a.has_uid);
  assert_false(a.has_gid); /* not a number: not known, left as it was */
  assert_int_equal(a.mode, S_IFREG | 0640);
  assert_int_equal(a.uid, 1000);
  assert_int_equal(a.gid, 9);
  assert_int_equal(a.mtime.tv_sec, 1700000000);
  /* no mtime pair: the time stays */
  o = head_of(kv, 3);
  memset(&a, 0, sizeof(a));
  a.mtime.tv_sec = 7;
  fsx_meta_decode(&o, &a);
  assert_int_equal(a.mtime.tv_sec, 7);
}

static void test_round_trip(void **state)
{
  struct fsx_wmeta mt = {.mode = S_IFREG | 0600, .uid = 5, .gid = 6,
                         .has_mtime = true, .mtime = {1600000000, 0}};
  struct fsx_wmeta other = mt;
  struct s3_meta_kv hk[4];
  struct s3_object_meta o;
  struct s3_kv kv[4];
  char v[4][32];
  size_t n = fsx_wmeta_kv(&mt, kv, v);
  struct fsx_attr a, b;

  (void)state;
  for (size_t i = 0; i < n; i++)
    hk[i] = (struct s3_meta_kv){(char *)kv[i].key, (char *)kv[i].val};
  o = head_of(hk, n);
  assert_true(fsx_meta_matches(&o, &mt));
  other.uid = 7;
  assert_false(fsx_meta_matches(&o, &other));
  assert_false(fsx_meta_same(&mt, &other));
  other = mt;
  other.mtime.tv_nsec = 3; /* stored in whole seconds */
  assert_true(fsx_meta_same(&mt, &other));
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  fsx_meta_decode(&o, &a);
  fsx_meta_to_attr(&b, &mt);
  assert_true(a.has_mode && a.has_uid && a.has_gid);
  assert_true(b.has_mode && b.has_uid && b.has_gid);
  assert_int_equal(a.mode, b.mode);
  assert_int_equal(a.uid, b.uid);
  assert_int_equal(a.gid, b.gid);
  assert_int_equal(a.mtime.tv_sec, b.mtime.tv_sec);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode),
      cmocka_unit_test(test_decode),
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
