/*
 * Unit tests for fsx_stage: staging records written and read back, a dead
 * mount's directory recovered (uploaded, removed, kept, or left), names in
 * unsaved/ unique across mounts sharing cache.dir, and the MANIFEST lines.
 * Real files in a temporary directory; the recovery callback stands in for
 * the S3 side (fsx_recover, tested on a real mount by test_fs_crash).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/stage/fsx_stage.h"
#include "fs/stage/fsx_stage_i.h"

static char root[256];

static int setup(void **state)
{
  (void)state;
  snprintf(root, sizeof(root), "/tmp/s3r-stage-XXXXXX");
  assert_non_null(mkdtemp(root));
  return 0;
}

static int teardown(void **state)
{
  char cmd[300];

  (void)state;
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

/* what the fake recovery saw and answers */
struct seen {
  int calls;
  int answer;                 /* 0: uploaded; else kept with a reason */
  char key[256], base[64], bucket[64];
  uint64_t base_len, part_size, size;
  unsigned mode;
  bool partial, has_map, map_ok;
  int fills; /* keep_only calls */
};

static int fake_recover(void *arg, const struct fsx_stage_rec *r,
                        const char *path, int fd, int map_fd, char *reason,
                        size_t reasonlen)
{
  struct seen *s = arg;
  struct stat st;

  (void)path;
  if (r->keep_only) { /* set aside: only its base filled in */
    s->fills++;
    return 1;
  }
  s->calls++;
  snprintf(s->key, sizeof(s->key), "%s", r->key);
  snprintf(s->base, sizeof(s->base), "%s", r->base_etag);
  snprintf(s->bucket, sizeof(s->bucket), "%s", r->bucket);
  s->base_len = r->base_len;
  s->part_size = r->part_size;
  s->mode = r->mode;
  s->partial = r->partial;
  s->map_ok = r->map_ok;
  s->has_map = map_fd >= 0;
  assert_int_equal(fstat(fd, &st), 0);
  s->size = (uint64_t)st.st_size;
  if (s->answer)
    snprintf(reason, reasonlen, "the object changed on the server");
  return s->answer;
}

static int count_entries(const char *dir, const char *prefix)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  while (d && (e = readdir(d)))
    n += !strncmp(e->d_name, prefix, strlen(prefix));
  if (d)
    closedir(d);
  return n;
}

static char *read_all(const char *path)
{
  static char buf[8192];
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

  if (fd >= 0)
    close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

/* A staging file with data and (optionally) a record, in a mount that
   then "dies" (its directory is left as a SIGKILL leaves it). */
static void dead_mount_with(const char *key, bool partial, bool with_rec,
                            const char *endpoint)
{
  struct fsx_stage *s;
  char err[256] = "", path[4096];
  struct fsx_stage_rec r = {.bucket = "bkt", .key = key,
                            .base_etag = "abc\"def", .base_len = 70000,
                            .part_size = 5u << 20, .mode = 0100640,
                            .uid = 7, .gid = 8, .partial = partial,
                            .map_ok = true};
  int fd, mfd;

  assert_int_equal(fsx_stage_open(root, endpoint, &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 42, path, sizeof(path));
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "hello, world", 12), 12);
  mfd = fsx_stage_map_open(path, 2);
  assert_true(mfd >= 0);
  if (with_rec)
    assert_int_equal(fsx_stage_rec_write(s, path, &r), 0);
  assert_int_equal(fsx_stage_sync(path, fd, mfd), 0);
  close(fd);
  close(mfd);
  /* "killed": the lock is dropped without cleaning up (fsx_stage_close
     would remove the directory only when nothing is left in it) */
  fsx_stage_close(s);
}

static void test_recover_uploads_a_recorded_file(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "";

  (void)state;
  dead_mount_with("dir/a\tb\n.bin", false, true, "http://e");
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 1);
  assert_string_equal(seen.key, "dir/a\tb\n.bin"); /* any byte survives */
  assert_string_equal(seen.base, "abc\"def");
  assert_string_equal(seen.bucket, "bkt");
  assert_int_equal(seen.base_len, 70000);
  assert_int_equal(seen.part_size, 5u << 20);
  assert_int_equal(seen.mode, 0100640);
  assert_int_equal(seen.size, 12);
  assert_true(seen.has_map);
  assert_true(seen.map_ok);
  assert_false(seen.partial);
  assert_int_equal(rv.uploaded, 1);
  assert_int_equal(rv.kept + rv.left, 0);
  /* the dead directory is gone; only ours is left */
  assert_int_equal(count_entries(root, "mount-"), 1);
  fsx_stage_close(s);
  assert_int_equal(count_entries(root, "mount-"), 0);
}

static void test_recover_keeps_what_it_cannot_upload(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {.answer = -116};
  char err[256] = "", udir[300], mpath[320], *man;

  (void)state;
  dead_mount_with("x/conflict.bin", false, true, "http://e");
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(rv.kept, 1);
  snprintf(udir, sizeof(udir), "%s/unsaved", root);
  snprintf(mpath, sizeof(mpath), "%s/MANIFEST", udir);
  man = read_all(mpath);
  /* time, name, size, bucket, key, reason */
  assert_non_null(strstr(man, "\t12\tbkt\tx/conflict.bin\tthe object "
                              "changed on the server\n"));
  assert_non_null(strstr(man, "-conflict.bin\t"));
  assert_int_equal(count_entries(root, "mount-"), 1);
  fsx_stage_close(s);
}

static void test_unreachable_server_leaves_it_for_later(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {.answer = -EAGAIN};
  char err[256] = "";

  (void)state;
  dead_mount_with("later.bin", false, true, "http://e");
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 1);
  assert_int_equal(rv.left, 1);
  assert_int_equal(rv.kept, 0);
  assert_int_equal(count_entries(root, "mount-"), 2); /* with its record */
  fsx_stage_close(s);
  /* the next mount, the server back: uploaded then */
  seen.answer = 0;
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(rv.uploaded, 1);
  assert_string_equal(seen.key, "later.bin");
  fsx_stage_close(s);
  assert_int_equal(count_entries(root, "mount-"), 0);
}

static void test_partial_file_is_kept_not_uploaded(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "", mpath[320];

  (void)state;
  dead_mount_with("half\x01written", true, true, "http://e");
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 0); /* never offered for upload */
  assert_int_equal(seen.fills, 1); /* its base's bytes asked for */
  assert_int_equal(rv.kept, 1);
  snprintf(mpath, sizeof(mpath), "%s/unsaved/MANIFEST", root);
  /* control bytes escaped: one line per file */
  assert_non_null(strstr(read_all(mpath), "\thalf%01written\tthe daemon "
                                          "stopped while it was being"));
  fsx_stage_close(s);
}

static void test_unrecorded_file_is_removed(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "";

  (void)state;
  dead_mount_with("clean", false, false, "http://e"); /* no record: clean */
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 0);
  assert_int_equal(rv.uploaded + rv.kept + rv.left, 0);
  assert_int_equal(count_entries(root, "mount-"), 1);
  fsx_stage_close(s);
}

static void test_other_endpoint_is_left(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "";

  (void)state;
  dead_mount_with("k", false, true, "http://other");
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 0);
  assert_int_equal(rv.left, 1);
  assert_int_equal(count_entries(root, "mount-"), 2); /* still there */
  fsx_stage_close(s);
}

/* A list of endpoints reordered, or with one taken out, is the same
   service: its files are recovered. */
static void test_endpoint_list_changed(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "";

  (void)state;
  dead_mount_with("k", false, true, "http://a;http://e");
  assert_int_equal(fsx_stage_open(root, "http://e;http://c", &s, err,
                                  sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(seen.calls, 1);
  assert_int_equal(rv.left, 0);
  fsx_stage_close(s);
}

static void test_older_format_keeps_everything(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct seen seen = {0};
  char err[256] = "", dir[300], p[400];
  int fd;

  (void)state;
  /* a directory as the previous version left it: no format, no record */
  snprintf(dir, sizeof(dir), "%s/mount-1-0", root);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(p, sizeof(p), "%s/lock", dir);
  close(open(p, O_CREAT | O_WRONLY, 0600));
  snprintf(p, sizeof(p), "%s/ino-5-1", dir);
  fd = open(p, O_CREAT | O_WRONLY, 0600);
  assert_int_equal(write(fd, "data", 4), 4);
  close(fd);
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, fake_recover, &seen, &rv);
  assert_int_equal(rv.kept, 1);
  assert_int_equal(count_entries(dir, "ino-"), 0);
  fsx_stage_close(s);
}

static void test_kept_names_unique_across_mounts(void **state)
{
  struct fsx_stage *a, *b;
  char err[256] = "", pa[4096], pb[4096], udir[300];
  int fa, fb;

  (void)state;
  assert_int_equal(fsx_stage_open(root, "http://e", &a, err, sizeof(err)), 0);
  assert_int_equal(fsx_stage_open(root, "http://e", &b, err, sizeof(err)), 0);
  /* the same inode number and counter in both mounts */
  fa = fsx_stage_create(a, 9, pa, sizeof(pa));
  fb = fsx_stage_create(b, 9, pb, sizeof(pb));
  assert_true(fa >= 0 && fb >= 0);
  assert_int_equal(write(fa, "A", 1), 1);
  assert_int_equal(write(fb, "BB", 2), 2);
  assert_int_equal(fsx_stage_keep(a, pa, "bkt", "same/key", "test"), 0);
  assert_int_equal(fsx_stage_keep(b, pb, "bkt", "same/key", "test"), 0);
  snprintf(udir, sizeof(udir), "%s/unsaved", root);
  assert_int_equal(count_entries(udir, ""), 2 + 2 + 1); /* . .. MANIFEST */
  close(fa);
  close(fb);
  fsx_stage_close(a);
  fsx_stage_close(b);
}

static void test_keep_failure_leaves_the_file(void **state)
{
  struct fsx_stage *s;
  char err[256] = "", p[4096], udir[300];
  int fd;

  (void)state;
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 1, p, sizeof(p));
  assert_int_equal(write(fd, "xyz", 3), 3);
  /* unsaved/ cannot be made: a plain file has its name */
  snprintf(udir, sizeof(udir), "%s/unsaved", root);
  close(open(udir, O_CREAT | O_WRONLY, 0600));
  assert_true(fsx_stage_keep(s, p, "bkt", "k", "test") < 0);
  assert_int_equal(access(p, F_OK), 0); /* never unlinked */
  close(fd);
  fsx_stage_close(s); /* and the directory holding it stays */
  assert_int_equal(count_entries(root, "mount-"), 1);
}

/* A streamed file's sent number is rewritten in place, as one write: the
   same file (inode, length), every other field as it was. */
static void test_sent_rewritten_in_place(void **state)
{
  struct fsx_stage_rec r = {.bucket = "bkt", .key = "a/k", .base_etag = "",
                            .part_size = 8u << 20, .mode = 0100600,
                            .has_mtime = true, .mtime = 1700000000,
                            .mtime_ns = 123456789, .has_atime = true,
                            .atime = 1700000001, .atime_ns = 200000000};
  struct fsx_rec_text rt;
  struct fsx_stage *s;
  char err[256] = "", p[4096], rec[4200];
  struct stat a, b;
  int fd;

  (void)state;
  assert_int_equal(fsx_stage_open(root, "http://e", &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 3, p, sizeof(p));
  assert_true(fd >= 0);
  snprintf(rec, sizeof(rec), "%s.rec", p);
  /* no record, then one without a sent line: written whole instead */
  assert_int_equal(fsx_stage_rec_set_sent(p, 5), -ENOENT);
  assert_int_equal(fsx_stage_rec_write(s, p, &r), 0);
  assert_int_equal(fsx_stage_rec_set_sent(p, 5), -ENODATA);
  r.sent = 8u << 20;
  assert_int_equal(fsx_stage_rec_write(s, p, &r), 0);
  assert_int_equal(stat(rec, &a), 0);
  assert_int_equal(fsx_stage_rec_set_sent(p, 12345678901234ull), 0);
  assert_int_equal(stat(rec, &b), 0);
  assert_int_equal(a.st_ino, b.st_ino);
  assert_int_equal(a.st_size, b.st_size);
  assert_int_equal(fsx_stage_rec_read(p, &rt), 0);
  assert_int_equal(rt.r.sent, 12345678901234ull);
  assert_string_equal(rt.r.key, "a/k");
  assert_int_equal(rt.r.part_size, 8u << 20);
  assert_int_equal(rt.r.mode, 0100600);
  /* times kept to the nanosecond (a crash loses no utimensat) */
  assert_true(rt.r.has_mtime && rt.r.has_atime && !rt.r.has_ctime);
  assert_int_equal(rt.r.mtime, 1700000000);
  assert_int_equal(rt.r.mtime_ns, 123456789);
  assert_int_equal(rt.r.atime_ns, 200000000);
  assert_int_equal(rt.r.ctime_ns, 0);
  free(rt.text);
  close(fd);
  unlink(rec);
  unlink(p);
  fsx_stage_close(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_recover_uploads_a_recorded_file,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_recover_keeps_what_it_cannot_upload,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_unreachable_server_leaves_it_for_later,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_partial_file_is_kept_not_uploaded,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_unrecorded_file_is_removed, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_endpoint_list_changed, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_other_endpoint_is_left, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_older_format_keeps_everything, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_kept_names_unique_across_mounts,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_sent_rewritten_in_place, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_keep_failure_leaves_the_file, setup,
                                    teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
