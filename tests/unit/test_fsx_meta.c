/*
 * fsx_meta: s3fs's x-amz-meta-mode|uid|gid|mtime|ctime|atime and our rdev,
 * encoded for a write and decoded from a HEAD (s3fs's "sec.nnnnnnnnn"
 * times and octal modes too); the pairs a write sends read back the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fs/meta/fsx_meta.h"

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
  struct s3_kv kv[FSX_META_MAX];
  char v[FSX_META_MAX][32];

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
  /* nanoseconds as s3fs writes them: nine digits after a '.' */
  assert_string_equal(kv[3].val, "1700000000.000000005");
  mt.mtime.tv_nsec = 0; /* whole seconds: no fraction */
  assert_int_equal(fsx_wmeta_kv(&mt, kv, v), 4);
  assert_string_equal(kv[3].val, "1700000000");
  mt.has_ctime = mt.has_atime = true;
  mt.ctime.tv_sec = 1700000001;
  mt.atime.tv_sec = 1700000002;
  mt.rdev = 0x0803; /* not a device: not written */
  assert_int_equal(fsx_wmeta_kv(&mt, kv, v), 6);
  assert_string_equal(kv[4].key, "ctime");
  assert_string_equal(kv[4].val, "1700000001");
  assert_string_equal(kv[5].key, "atime");
  assert_string_equal(kv[5].val, "1700000002");
  mt.mode = S_IFBLK | 0660;
  assert_int_equal(fsx_wmeta_kv(&mt, kv, v), 7);
  assert_string_equal(kv[6].key, "rdev");
  assert_string_equal(kv[6].val, "2051");
}

/* s3fs's own forms: times with 9 digits of nanoseconds, a mode in octal
   with a leading 0 (s3fs reads base 0); junk leaves things as they were */
static void test_decode_s3fs(void **state)
{
  struct s3_meta_kv kv[] = {
      {"mode", "010644"},          {"mtime", "1700000000.123456789"},
      {"ctime", "1700000003"},     {"atime", "1700000004.5x"},
      {"rdev", "2051"},            {"uid", "12abc"},
  };
  struct s3_object_meta o = head_of(kv, 6);
  struct fsx_attr a;

  (void)state;
  memset(&a, 0, sizeof(a));
  a.atime.tv_sec = 11;
  fsx_meta_decode(&o, &a);
  assert_true(a.has_mode);
  assert_int_equal(a.mode, S_IFIFO | 0644);
  assert_false(a.has_uid); /* trailing junk: not a number */
  assert_int_equal(a.mtime.tv_sec, 1700000000);
  assert_int_equal(a.mtime.tv_nsec, 123456789);
  assert_true(a.has_ctime);
  assert_int_equal(a.ctime.tv_sec, 1700000003);
  assert_false(a.has_atime); /* junk after the dot */
  assert_int_equal(a.atime.tv_sec, 11);
  assert_int_equal(a.rdev, 2051);
  /* nanoseconds of 10^9 or more, or no digits after the dot: refused */
  kv[1].val = "5.1000000000";
  kv[2].val = "6.";
  memset(&a, 0, sizeof(a));
  fsx_meta_decode(&o, &a);
  assert_int_equal(a.mtime.tv_sec, 0);
  assert_false(a.has_ctime);
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
  struct fsx_wmeta mt = {.mode = S_IFCHR | 0600, .uid = 5, .gid = 6,
                         .has_mtime = true, .mtime = {1600000000, 0},
                         .has_ctime = true, .ctime = {1600000001, 0},
                         .has_atime = true, .atime = {1600000002, 0},
                         .rdev = 0x0501};
  struct fsx_wmeta other = mt;
  struct s3_meta_kv hk[FSX_META_MAX];
  struct s3_object_meta o;
  struct s3_kv kv[FSX_META_MAX];
  char v[FSX_META_MAX][32];
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
  other.ctime.tv_sec++;
  assert_false(fsx_meta_same(&mt, &other));
  other = mt;
  other.has_atime = false;
  assert_false(fsx_meta_same(&mt, &other));
  other = mt;
  other.rdev = 1;
  assert_false(fsx_meta_same(&mt, &other));
  other = mt;
  other.mtime.tv_nsec = 3; /* stored to the nanosecond */
  assert_false(fsx_meta_same(&mt, &other));
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
  assert_true(a.has_ctime && b.has_ctime && a.has_atime && b.has_atime);
  assert_int_equal(a.ctime.tv_sec, b.ctime.tv_sec);
  assert_int_equal(a.atime.tv_sec, b.atime.tv_sec);
  assert_int_equal(a.rdev, b.rdev);
  /* no ctime or atime kept: none shown (0: the mtime, fsx_ns_stat) */
  other = mt;
  other.has_ctime = other.has_atime = false;
  fsx_meta_to_attr(&b, &other);
  assert_false(b.has_ctime || b.has_atime);
  assert_int_equal(b.ctime.tv_sec, 0);
  assert_int_equal(b.atime.tv_sec, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode),
      cmocka_unit_test(test_decode),
      cmocka_unit_test(test_decode_s3fs),
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
