/*
 * Unit tests for the recovery walk of fsx_stage_recover.c as the recovery
 * thread (fsx_recover_thread) drives it: what dead mounts left is counted
 * (fsx_stage_leftovers), and a walk told to stop (fsx_stage_recover_until)
 * touches nothing more, leaving the rest as it was for the next mount; a
 * streamed file's upload holding acknowledged parts is never aborted (the
 * walks here have no S3 client: an abort would crash them), and a file
 * whose recovery never ended 3 times is set aside untried.
 * Real files in a temporary directory; the callback stands in for the S3
 * side (test_fs_crash runs the whole on a real mount).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/stage/fsx_stage.h"
#include "s3/s3_xml.h"

#define ENDPOINT "http://e"

static char root[256];

static int setup(void **state)
{
  (void)state;
  snprintf(root, sizeof(root), "/tmp/s3r-stage-rec-XXXXXX");
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

/* A mount that dies with n staging files, each with its record (dirty). */
static void dead_mount(int n)
{
  struct fsx_stage *s;
  char err[256] = "", path[4096], key[32];

  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  for (int i = 0; i < n; i++) {
    struct fsx_stage_rec r = {.bucket = "bkt", .key = key, .base_etag = "",
                              .part_size = 5u << 20, .mode = 0100644,
                              .map_ok = true};
    int fd = fsx_stage_create(s, 10 + (uint64_t)i, path, sizeof(path));
    assert_true(fd >= 0);
    snprintf(key, sizeof(key), "file-%d", i);
    assert_int_equal(write(fd, "data", 4), 4);
    assert_int_equal(fsx_stage_rec_write(s, path, &r), 0);
    close(fd);
  }
  fsx_stage_close(s); /* its files keep the directory: "killed" */
}

/* The fake upload: counts, and tells the walk to stop after stop_after. */
struct fake {
  int calls, stop_after;
  atomic_bool stop;
};

static int fake_upload(void *arg, const struct fsx_stage_rec *r,
                       const char *path, int fd, int map_fd, char *reason,
                       size_t reasonlen)
{
  struct fake *f = arg;

  (void)r, (void)path, (void)fd, (void)map_fd, (void)reason, (void)reasonlen;
  if (++f->calls == f->stop_after)
    atomic_store(&f->stop, true); /* as fsx_recover_thread_stop does */
  return 0;
}

/* A mount that dies with one streamed file whose completion failed: its
   record (24 MiB, 16 MiB sent), its .parts (parts 1 and 2 acknowledged)
   and the upload's journal record. Its staging file's path in path. */
static void dead_stream(char *path, size_t len)
{
  static const struct s3_part_etag pe[2] = {{1, "aa"}, {2, "bb"}};
  struct fsx_stage *s;
  struct fsx_stage_rec r = {.bucket = "bkt", .key = "streamed",
                            .base_etag = "", .part_size = 8u << 20,
                            .mode = 0100644, .map_ok = true,
                            .size = 24u << 20, .sent = 16u << 20};
  char err[256] = "";
  long jid;
  int fd;

  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 7, path, len);
  assert_true(fd >= 0);
  close(fd);
  jid = fsx_stage_note_upload(s, "bkt", "streamed", "upload-1");
  assert_true(jid > 0);
  assert_int_equal(fsx_stage_rec_write(s, path, &r), 0);
  assert_int_equal(fsx_stage_parts_write(path, jid, "upload-1", pe, 2, true),
                   0);
  fsx_stage_close(s);
}

static int count_files(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  while (d && (e = readdir(d)))
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

/* unsaved/MANIFEST holds a line containing what */
static bool manifest_says(const char *what)
{
  char p[512], line[2048];
  bool found = false;
  FILE *f;

  snprintf(p, sizeof(p), "%s/unsaved/MANIFEST", root);
  f = fopen(p, "r");
  while (f && !found && fgets(line, sizeof(line), f))
    found = strstr(line, what) != NULL;
  if (f)
    fclose(f);
  return found;
}

/* The unsaved/ file kept for the streamed file has its .parts beside it. */
static bool parts_kept(void)
{
  char p[512];
  DIR *d;
  struct dirent *e;
  bool found = false;

  snprintf(p, sizeof(p), "%s/unsaved", root);
  d = opendir(p);
  while (d && (e = readdir(d)))
    found |= strstr(e->d_name, "streamed.parts") != NULL;
  if (d)
    closedir(d);
  return found;
}

/* n attempts at path's recovery begun and never ended: its .try (p) */
static void tried(const char *path, char *p, size_t len, int n)
{
  FILE *f;

  snprintf(p, len, "%s.try", path);
  f = fopen(p, "w");
  assert_non_null(f);
  fprintf(f, "%d\n", n);
  fclose(f);
}

static int refuse(void *arg, const struct fsx_stage_rec *r, const char *path,
                  int fd, int map_fd, char *reason, size_t reasonlen)
{
  int *calls = arg;

  (void)path, (void)fd, (void)map_fd;
  (*calls)++;
  assert_true(r->has_size);
  assert_int_equal(r->size, 24u << 20);
  assert_non_null(r->resume);
  assert_int_equal(r->resume->n, 2);
  snprintf(reason, reasonlen, "part 2 is listed with another ETag");
  return -ENOTRECOVERABLE;
}

static void test_unrecoverable_keeps_the_upload(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  char err[256] = "", path[4096], up[600];
  int calls = 0, dirs;

  (void)state;
  dead_stream(path, sizeof(path));
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, refuse, &calls, &rv); /* no client: no abort */
  assert_int_equal(calls, 1);
  assert_int_equal(rv.kept, 1);
  assert_int_equal(rv.aborted, 0);
  assert_true(manifest_says("part 2 is listed with another ETag; multipart "
                            "upload upload-1 of the key holds the parts"));
  assert_true(parts_kept());
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 0);
  assert_int_equal(dirs, 0); /* its journal record went too: nobody aborts */
  snprintf(up, sizeof(up), "%s/unsaved", root);
  assert_int_equal(count_files(up), 3); /* the file, its .parts, MANIFEST */
  fsx_stage_close(s);
}

static int counted(void *arg, const struct fsx_stage_rec *r, const char *path,
                   int fd, int map_fd, char *reason, size_t reasonlen)
{
  char p[4200], text[16] = "";
  FILE *f;

  (void)r, (void)fd, (void)map_fd, (void)reason, (void)reasonlen;
  (*(int *)arg)++;
  snprintf(p, sizeof(p), "%s.try", path);
  f = fopen(p, "r");
  assert_non_null(f); /* counted (and synced) before the attempt */
  assert_non_null(fgets(text, sizeof(text), f));
  fclose(f);
  assert_string_equal(text, "2\n");
  return 0;
}

static void test_attempts_counted_and_cleared(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  char err[256] = "", path[4096], p[4200];
  int calls = 0;

  (void)state;
  dead_stream(path, sizeof(path));
  tried(path, p, sizeof(p), 1); /* one attempt that never ended */
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, counted, &calls, &rv);
  assert_int_equal(calls, 1);
  assert_int_equal(rv.uploaded, 1);
  assert_int_equal(access(p, F_OK), -1); /* gone with the file */
  fsx_stage_close(s);
}

static void test_set_aside_after_three_attempts(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  char err[256] = "", path[4096], p[4200];
  int calls = 0;

  (void)state;
  dead_stream(path, sizeof(path));
  tried(path, p, sizeof(p), 3);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover(s, NULL, refuse, &calls, &rv);
  assert_int_equal(calls, 0); /* untried */
  assert_int_equal(rv.kept, 1);
  assert_true(manifest_says("its recovery was begun 3 times and never "
                            "ended"));
  assert_true(parts_kept()); /* its upload kept for it */
  fsx_stage_close(s);
}

static void test_leftovers_counts_dead_mounts_only(void **state)
{
  struct fsx_stage *s;
  char err[256] = "", path[4096];
  int dirs = -1, fd;

  (void)state;
  dead_mount(2);
  dead_mount(3);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 99, path, sizeof(path)); /* ours: not counted */
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 5);
  assert_int_equal(dirs, 2);
  fsx_stage_remove(path);
  fsx_stage_close(s);
}

static void test_leftovers_none(void **state)
{
  struct fsx_stage *s;
  char err[256] = "";
  int dirs = -1;

  (void)state;
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 0);
  assert_int_equal(dirs, 0);
  fsx_stage_close(s);
}

static void test_stop_leaves_the_rest_in_place(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct fake f = {.stop_after = 1};
  char err[256] = "";
  int dirs;

  (void)state;
  atomic_init(&f.stop, false);
  dead_mount(3);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 1); /* told to stop: no other file touched */
  assert_int_equal(rv.uploaded, 1);
  assert_int_equal(rv.kept, 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 2);
  assert_int_equal(dirs, 1); /* the directory stays, for the next mount */
  /* the next walk (not stopped) does the rest */
  atomic_store(&f.stop, false);
  f.stop_after = 0;
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 3);
  assert_int_equal(rv.uploaded, 2);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 0);
  assert_int_equal(dirs, 0);
  fsx_stage_close(s);
}

static void test_stopped_before_it_starts(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct fake f = {0};
  char err[256] = "";
  int dirs;

  (void)state;
  atomic_init(&f.stop, true);
  dead_mount(2);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 0);
  assert_int_equal(rv.uploaded + rv.kept + rv.left + rv.aborted, 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 2);
  assert_int_equal(dirs, 1);
  fsx_stage_close(s);
}

/* Parts listed one by one as they are acknowledged (appended): a part
   sent again counts as its last line says, once. */
static void test_parts_added(void **state)
{
  char path[4096];
  struct fsx_stage_parts pp;

  (void)state;
  snprintf(path, sizeof(path), "%s/ino-9-1", root);
  assert_int_equal(fsx_stage_parts_add(path, 5, "up-1", 1, "e1"), 0);
  assert_int_equal(fsx_stage_parts_add(path, 5, "up-1", 2, "e2"), 0);
  assert_int_equal(fsx_stage_parts_add(path, 5, "up-1", 1, "e1b"), 0);
  assert_int_equal(fsx_stage_parts_read(path, &pp), 0);
  assert_int_equal(pp.journal_id, 5);
  assert_string_equal(pp.upload_id, "up-1");
  assert_int_equal(pp.n, 2);
  assert_int_equal(pp.pe[0].part_number, 2);
  assert_string_equal(pp.pe[0].etag, "e2");
  assert_int_equal(pp.pe[1].part_number, 1);
  assert_string_equal(pp.pe[1].etag, "e1b");
  fsx_stage_parts_free(&pp);
  fsx_stage_parts_remove(path);
  /* a list of no part yet (a commit's before the first came back) */
  assert_int_equal(fsx_stage_parts_write(path, 6, "up-2", NULL, 0, false), 0);
  assert_int_equal(fsx_stage_parts_read(path, &pp), 0);
  assert_int_equal(pp.n, 0);
  fsx_stage_parts_free(&pp);
  fsx_stage_parts_remove(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_leftovers_counts_dead_mounts_only,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_leftovers_none, setup, teardown),
    cmocka_unit_test_setup_teardown(test_parts_added, setup, teardown),
    cmocka_unit_test_setup_teardown(test_stop_leaves_the_rest_in_place,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_stopped_before_it_starts, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_unrecoverable_keeps_the_upload,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_attempts_counted_and_cleared, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_set_aside_after_three_attempts,
                                    setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
