/*
 * The write-back's commit (fsx_wb: fsx_wb_open, _write, _read, _commit)
 * against an S3 server in the test's process (fake_s3), request by
 * request: a small new file is one conditional PUT; one block written
 * into a large object is one part sent and the others copied on the
 * server; a failed upload is EIO with the bytes kept and goes up at the
 * next commit; a PUT that landed but whose answer was lost is settled by
 * looking, not sent again over another writer's; a completion that
 * landed as RGW was killed (the upload left listed, answered 500) is
 * settled by looking and its upload never aborted; a write that comes
 * during a commit's upload lands in the next one; a CreateMultipartUpload
 * whose answer was lost is asked again, the commit going on; after a
 * commit, what the staging file lacks is fetched from the new object; a removed file still
 * open, emptied and written past a part, starts no upload under the name
 * it had, nor does a file whose open attached only after its unlink
 * (streamed files: the mount's default).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
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

#include "fake_mount.h"
#include "fs/meta/fsx_inode.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb.h"

#define MiB (1024u * 1024u)

static struct fake_mount fm;

/* ---- a write's bytes, from memory ---- */

static ssize_t wb_write(struct fsx_wb *wb, uint64_t off, const void *p,
                        size_t len)
{
  return fake_mount_write(&fm, wb, off, p, len);
}

/* ---- setup ---- */

static void tune(struct cfg *c)
{
  char err[256];

  cfg_set(c, "write.part_size", "5M", err, sizeof(err));
  cfg_set(c, "write.stream", "false", err, sizeof(err)); /* staging file */
}

/* The object key holds exactly p[0, n). */
static bool holds(const char *key, const void *p, size_t n)
{
  return fake_s3_holds(fm.s3, FAKE_BUCKET, key, p, n);
}

static int setup(void **state)
{
  (void)state;
  return fake_mount_up(&fm, tune);
}

static void tune_stream(struct cfg *c)
{
  char err[256];

  cfg_set(c, "write.part_size", "5M", err, sizeof(err));
}

static int setup_stream(void **state)
{
  (void)state;
  return fake_mount_up(&fm, tune_stream);
}

static int teardown(void **state)
{
  (void)state;
  fake_mount_down(&fm);
  return 0;
}

/* The write-back state of name: an existing object (its HEAD the base), or
   a new empty file. *in holds an internal reference. */
static struct fsx_wb *open_wb(const char *name, bool existing,
                              struct fsx_inode **in)
{
  struct fsx_wmeta meta = {.mode = S_IFREG | 0644};
  struct fsx_inode_view v;
  struct fsx_wb *wb = NULL;

  if (existing) {
    *in = fake_mount_file(&fm, name);
    assert_non_null(*in);
    fsx_inode_view(fm.m.tab, *in, &v);
    assert_int_equal(fsx_wb_open(&fm.m, *in, &v.attr, false, &meta, &wb), 0);
  } else {
    struct fsx_attr a = {.kind = FSX_FILE};
    struct fsx_inode *root = fsx_inode_get(fm.m.tab, FSX_ROOT_INO);
    *in = fsx_inode_child(fm.m.tab, root, name, &a, NULL, 0, false);
    fsx_inode_put(fm.m.tab, root);
    assert_non_null(*in);
    assert_int_equal(fsx_wb_open(&fm.m, *in, NULL, true, &meta, &wb), 0);
  }
  return wb;
}

static void close_wb(struct fsx_wb *wb, struct fsx_inode *in)
{
  fsx_wb_put(&fm.m, wb);
  fsx_inode_put(fm.m.tab, in);
}

/* ---- tests ---- */

static void test_new_small_file_one_put(void **state)
{
  struct fsx_inode *in;
  struct fsx_wb *wb;
  char data[100];

  (void)state;
  fake_fill(data, sizeof(data), 0, 1);
  wb = open_wb("small.bin", false, &in);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(wb_write(wb, 0, data, sizeof(data)), sizeof(data));
  assert_false(fake_s3_has(fm.s3, FAKE_BUCKET, "small.bin")); /* at close */
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("small.bin", data, sizeof(data)));
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), 1);
  /* clean now: another commit sends nothing */
  assert_false(fsx_wb_dirty(wb));
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), 1);
  close_wb(wb, in);
}

static void test_block_in_large_object(void **state)
{
  size_t size = 12 * MiB;
  char *want = malloc(size), block[4096];
  struct fsx_inode *in;
  struct fsx_wb *wb;

  (void)state;
  fake_fill(want, size, 0, 2);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "large.bin", want, size), 0);
  wb = open_wb("large.bin", true, &in);
  fake_s3_reset_counts(fm.s3);
  fake_fill(block, sizeof(block), 7 * MiB, 3);
  memcpy(want + 7 * MiB, block, sizeof(block));
  assert_int_equal(wb_write(wb, 7 * MiB, block, sizeof(block)), sizeof(block));
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("large.bin", want, size));
  /* parts of 5 MiB: the written one sent (the rest of it fetched first),
     the other two copied on the server, never through us */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_INITIATE), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PART), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PART_COPY), 2);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COMPLETE), 1);
  assert_int_equal(fake_s3_uploads(fm.s3), 0);
  /* after the commit the new object is the base: part 0's bytes, never
     fetched, come from it (If-Match its ETag) */
  {
    char got[4096];
    fake_s3_reset_counts(fm.s3);
    assert_int_equal(fsx_wb_read(&fm.m, wb, MiB, got, sizeof(got)),
                     sizeof(got));
    assert_memory_equal(got, want + MiB, sizeof(got));
    assert_int_equal(fake_s3_count(fm.s3, FAKE_GET), 1);
  }
  close_wb(wb, in);
  free(want);
}

/* CreateMultipartUpload's answer lost once, then twice (the uploads made
   all the same): asked again, the commit goes on; each upload before the
   last, nobody's provably, is counted and never aborted. */
static void create_answers_lost(unsigned lost)
{
  size_t size = 12 * MiB;
  char *want = malloc(size), block[4096];
  struct fsx_inode *in;
  struct fsx_wb *wb;
  uint64_t unknown0 = atomic_load(&fm.m.st.uploads_unknown);
  unsigned uploads0 = fake_s3_uploads(fm.s3);

  assert_non_null(want);
  fake_fill(want, size, 0, 11);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "created.bin", want, size),
                   0);
  wb = open_wb("created.bin", true, &in);
  fake_fill(block, sizeof(block), 3 * MiB, 12);
  memcpy(want + 3 * MiB, block, sizeof(block));
  assert_int_equal(wb_write(wb, 3 * MiB, block, sizeof(block)),
                   sizeof(block));
  fake_s3_fault(fm.s3, FAKE_INITIATE, "created.bin", -500, lost, 0);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0); /* (the upload begins) */
  assert_true(holds("created.bin", want, size));
  assert_int_equal(fake_s3_count(fm.s3, FAKE_INITIATE), lost + 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
  assert_int_equal(fake_s3_uploads(fm.s3) - uploads0, lost);
  assert_int_equal(atomic_load(&fm.m.st.uploads_unknown) - unknown0, lost);
  close_wb(wb, in);
  free(want);
}

static void test_create_answer_lost(void **state)
{
  (void)state;
  create_answers_lost(0); /* (none lost: nothing counted) */
  create_answers_lost(1);
  create_answers_lost(2);
}

static void test_failed_upload_kept(void **state)
{
  struct fsx_inode *in;
  struct fsx_wb *wb;
  char data[5000];

  (void)state;
  fake_fill(data, sizeof(data), 0, 4);
  wb = open_wb("fails.bin", false, &in);
  assert_int_equal(wb_write(wb, 0, data, sizeof(data)), sizeof(data));
  /* every attempt of the client's (s3.retry.max_attempts, 5) refused */
  fake_s3_fault(fm.s3, FAKE_PUT, "fails.bin", 500, 5, 0);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), -EIO);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 5);
  assert_false(fake_s3_has(fm.s3, FAKE_BUCKET, "fails.bin"));
  assert_true(fsx_wb_dirty(wb)); /* kept */
  {
    char got[5000];
    assert_int_equal(fsx_wb_read(&fm.m, wb, 0, got, sizeof(got)),
                     sizeof(got));
    assert_memory_equal(got, data, sizeof(got));
  }
  /* the server is back: the next commit sends it */
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("fails.bin", data, sizeof(data)));
  close_wb(wb, in);
}

static void test_lost_answer_settled_by_looking(void **state)
{
  struct fsx_inode *in;
  struct fsx_wb *wb;
  char data[3000];

  (void)state;
  fake_fill(data, sizeof(data), 0, 5);
  wb = open_wb("lost.bin", false, &in);
  assert_int_equal(wb_write(wb, 0, data, sizeof(data)), sizeof(data));
  /* the PUT lands, its answer is lost: the retry (If-None-Match: *) is
     refused (412) and the object already holds our bytes: success */
  fake_s3_fault(fm.s3, FAKE_PUT, "lost.bin", -500, 1, 0);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("lost.bin", data, sizeof(data)));
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 2);
  assert_false(fsx_wb_dirty(wb));
  close_wb(wb, in);
}

#define LANDED_SIZE (11 * MiB)

/*
 * RGW killed in the middle of a CompleteMultipartUpload: the object is
 * written, the upload stays listed and every later completion of it is
 * answered 500 for minutes. A new file of 3 parts named name, its first
 * completion's answer lost so: its bytes in *data (freed by the caller).
 */
static struct fsx_wb *write_interrupted(const char *name, char **data,
                                        struct fsx_inode **in)
{
  struct fsx_wb *wb;

  *data = malloc(LANDED_SIZE);
  fake_fill(*data, LANDED_SIZE, 0, 11);
  fake_s3_interrupt_completions(fm.s3);
  wb = open_wb(name, false, in);
  assert_int_equal(wb_write(wb, 0, *data, LANDED_SIZE), LANDED_SIZE);
  fake_s3_fault(fm.s3, FAKE_COMPLETE, name, -500, 1, 0);
  return wb;
}

/* Settled by looking (the object is ours), not failed for minutes. */
static void test_interrupted_completion_landed(void **state)
{
  struct fsx_inode *in;
  char *data;
  struct fsx_wb *wb = write_interrupted("landed.bin", &data, &in);

  (void)state;
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("landed.bin", data, LANDED_SIZE));
  assert_false(fsx_wb_dirty(wb));
  /* the client's 5 attempts (each 500), then one look */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COMPLETE), 5);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_HEAD), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
  assert_int_equal(fake_s3_uploads(fm.s3), 1); /* RGW's to end, not ours */
  close_wb(wb, in);
  free(data);
}

static int no_file(void *arg, const struct fsx_stage_rec *r, const char *path,
                   int fd, int map_fd, char *reason, size_t reasonlen)
{
  (void)arg, (void)r, (void)path, (void)fd, (void)map_fd, (void)reason;
  (void)reasonlen;
  fail_msg("no staging file was left to recover");
  return 0;
}

/*
 * The same, with the server unable to say so (every HEAD refused): the
 * commit fails and the file is kept at unmount, but the upload, which is
 * the object now, is never aborted (an abort deletes its parts: the
 * object's data): not at the unmount, nor by the next mount's recovery of
 * what this one left (its record marked "completing").
 */
static void test_landed_upload_never_aborted(void **state)
{
  struct fsx_inode *in;
  char *data;
  struct fsx_wb *wb = write_interrupted("spared.bin", &data, &in);

  (void)state;
  fake_s3_fault(fm.s3, FAKE_HEAD, "spared.bin", 500, 1000, 0);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), -EIO);
  close_wb(wb, in);
  fake_s3_reset_counts(fm.s3);
  fsx_wb_stop(&fm.m); /* the last commit fails too: kept in unsaved/ */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
  fake_s3_clear(fm.s3);
  assert_true(holds("spared.bin", data, LANDED_SIZE));
  {
    struct fsx_stage *next;
    struct fsx_recovery rv;
    char err[256] = "";
    fsx_stage_close(fm.m.stage); /* this mount is gone; the next one */
    fm.m.stage = NULL;
    assert_int_equal(fsx_stage_open(fm.dir, fm.c.endpoint, &next, err,
                                    sizeof(err)), 0);
    fsx_stage_recover(next, fm.m.s3, no_file, NULL, &rv);
    assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
    assert_true(holds("spared.bin", data, LANDED_SIZE));
    fsx_stage_close(next);
  }
  free(data);
}

static void test_other_writer_replaced(void **state)
{
  struct fsx_inode *in;
  struct fsx_wb *wb;
  char mine[3000], theirs[3000];

  (void)state;
  fake_fill(mine, sizeof(mine), 0, 9);
  fake_fill(theirs, sizeof(theirs), 0, 10);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "other.bin", mine, 10), 0);
  wb = open_wb("other.bin", true, &in);
  assert_int_equal(wb_write(wb, 0, mine, sizeof(mine)), sizeof(mine));
  /* another client replaces the object after our open: our conditional
     PUT is refused (412), and what is there is not ours: replaced (the
     last close wins), conditionally on that object */
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "other.bin", theirs,
                               sizeof(theirs)),
                   0);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("other.bin", mine, sizeof(mine)));
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 1);
  close_wb(wb, in);
}

struct writer {
  struct fsx_wb *wb;
  const char *p;
  ssize_t rc;
};

static void *write_thread(void *arg)
{
  struct writer *w = arg;

  w->rc = wb_write(w->wb, 8 * MiB, w->p, 4096);
  return NULL;
}

struct committer {
  struct fsx_wb *wb;
  int rc;
};

static void *commit_thread(void *arg)
{
  struct committer *c = arg;

  c->rc = fsx_wb_commit(&fm.m, c->wb);
  return NULL;
}

static void test_write_during_commit_lands_next(void **state)
{
  size_t size = 12 * MiB;
  char *want = malloc(size), a[4096], b[4096];
  struct fsx_inode *in;
  struct committer c;
  struct writer w;
  pthread_t ct, wt;
  void *got;
  size_t n;

  (void)state;
  fake_fill(want, size, 0, 6);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "during.bin", want, size),
                   0);
  c.wb = open_wb("during.bin", true, &in);
  fake_fill(a, sizeof(a), 2 * MiB, 7);
  assert_int_equal(wb_write(c.wb, 2 * MiB, a, sizeof(a)), sizeof(a));
  /* the commit's completion waits at the server while a write comes */
  fake_s3_hold(fm.s3, FAKE_COMPLETE, "during.bin");
  assert_int_equal(pthread_create(&ct, NULL, commit_thread, &c), 0);
  assert_true(fake_s3_wait_held(fm.s3, 1, 10000));
  fake_fill(b, sizeof(b), 8 * MiB, 8);
  w = (struct writer){c.wb, b, 0};
  assert_int_equal(pthread_create(&wt, NULL, write_thread, &w), 0);
  usleep(100 * 1000); /* (the write waits for the commit whatever the
                         timing: this only gives it a chance to go wrong) */
  fake_s3_release(fm.s3);
  pthread_join(ct, NULL);
  pthread_join(wt, NULL);
  assert_int_equal(c.rc, 0);
  assert_int_equal(w.rc, sizeof(b));
  memcpy(want + 2 * MiB, a, sizeof(a));
  /* the first commit holds a; b waits for the next (the file is dirty) */
  assert_int_equal(fake_s3_get(fm.s3, FAKE_BUCKET, "during.bin", &got, &n,
                               NULL),
                   0);
  assert_memory_equal((char *)got + 2 * MiB, a, sizeof(a));
  free(got);
  assert_true(fsx_wb_dirty(c.wb));
  assert_int_equal(fsx_wb_commit(&fm.m, c.wb), 0);
  memcpy(want + 8 * MiB, b, sizeof(b));
  assert_true(holds("during.bin", want, size));
  close_wb(c.wb, in);
  free(want);
}

/* A removed file's handle writes want[0, size) in order from 0, reads it
   back, commits and closes: nothing reaches the server, no upload is
   left. */
static void write_removed(struct fsx_wb *wb, struct fsx_inode *in,
                          const char *want, size_t size)
{
  char *got = malloc(size);

  assert_non_null(got);
  for (size_t off = 0; off < size; off += MiB) {
    size_t n = size - off < MiB ? size - off : MiB;
    assert_int_equal(wb_write(wb, off, want + off, n), (ssize_t)n);
  }
  assert_int_equal(fsx_wb_read(&fm.m, wb, 0, got, size), (ssize_t)size);
  assert_memory_equal(got, want, size);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  close_wb(wb, in);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), 0);
  assert_int_equal(fake_s3_uploads(fm.s3), 0);
  free(got);
}

/* Removed while open (fsx_wns_gone: held, then discarded), then emptied
   and written in order past a part: the writes stay in the daemon, for
   the open handles; nothing is sent under the name the file had (another
   file's by now), and no multipart upload is begun and left behind. */
static void test_removed_open_file_never_uploads(void **state)
{
  const size_t size = 6 * MiB + 1;
  char *want = malloc(size);
  struct fsx_inode *in;
  struct fsx_wb *wb;

  (void)state;
  assert_non_null(want);
  fake_fill(want, size, 0, 9);
  wb = open_wb("gone.bin", false, &in);
  assert_int_equal(wb_write(wb, 0, want, 100), 100);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("gone.bin", want, 100));
  /* as an unlink does (fsx_wns_going, then fsx_wns_gone once the object
     is deleted) */
  fsx_wb_hold(wb);
  assert_int_equal(fsx_wb_fetch_all(&fm.m, wb, true), 0);
  fsx_wb_discard(&fm.m, wb, true);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_truncate(&fm.m, wb, 0), 0);
  write_removed(wb, in, want, size);
  assert_true(holds("gone.bin", want, 100)); /* (the fake deleted nothing) */
  free(want);
}

/* An open that attaches its write-back state only after an unlink of the
   name went through (it saw no writer and no handle): the state is a
   removed file's from the start, and sends nothing. */
static void test_open_racing_unlink_never_uploads(void **state)
{
  const size_t size = 6 * MiB + 1;
  struct fsx_wmeta meta = {.mode = S_IFREG | 0644};
  struct fsx_attr a = {.kind = FSX_FILE};
  struct fsx_inode *root = fsx_inode_get(fm.m.tab, FSX_ROOT_INO), *in;
  char *want = malloc(size);
  struct fsx_wb *wb = NULL;

  (void)state;
  assert_non_null(want);
  fake_fill(want, size, 0, 13);
  in = fsx_inode_child(fm.m.tab, root, "raced.bin", &a, NULL, 0, false);
  fsx_inode_put(fm.m.tab, root);
  assert_non_null(in);
  fsx_inode_detach(fm.m.tab, in); /* the unlink, done */
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(fsx_wb_open(&fm.m, in, NULL, true, &meta, &wb), 0);
  write_removed(wb, in, want, size);
  assert_false(fake_s3_has(fm.s3, FAKE_BUCKET, "raced.bin"));
  free(want);
}

/* The upload's record cannot be marked completing (a directory in its
   place): no completion is sent, as a crash after one would leave a record
   that a recovery aborts without looking; the commit fails, kept. */
static void test_unmarked_never_completed(void **state)
{
  const size_t size = 12 * MiB;
  char *want = malloc(size), up[4096], rec[4400] = "", in_it[4500];
  struct fsx_inode *in;
  struct fsx_wb *wb;
  struct dirent *e;
  DIR *d;

  (void)state;
  assert_non_null(want);
  fake_fill(want, size, 0, 17);
  wb = open_wb("unmarked.bin", false, &in);
  for (size_t off = 0; off < size; off += MiB) /* (its upload begins) */
    assert_int_equal(wb_write(wb, off, want + off, MiB), MiB);
  snprintf(up, sizeof(up), "%s/uploads", fsx_stage_dir(fm.m.stage));
  assert_non_null(d = opendir(up));
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      snprintf(rec, sizeof(rec), "%s/%s", up, e->d_name);
  closedir(d);
  snprintf(in_it, sizeof(in_it), "%s/x", rec);
  assert_int_equal(unlink(rec), 0);
  assert_int_equal(mkdir(rec, 0700), 0);
  assert_int_equal(mkdir(in_it, 0700), 0);
  fake_s3_reset_counts(fm.s3);
  assert_int_not_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COMPLETE), 0);
  assert_false(holds("unmarked.bin", want, size));
  /* the record can be written again: the next commit completes */
  assert_int_equal(rmdir(in_it), 0);
  assert_int_equal(rmdir(rec), 0);
  assert_int_equal(fsx_wb_commit(&fm.m, wb), 0);
  assert_true(holds("unmarked.bin", want, size));
  close_wb(wb, in);
  free(want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_new_small_file_one_put, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_block_in_large_object, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_create_answer_lost, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_failed_upload_kept, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lost_answer_settled_by_looking,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_interrupted_completion_landed,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_landed_upload_never_aborted, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_other_writer_replaced, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_write_during_commit_lands_next,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_removed_open_file_never_uploads,
                                      setup_stream, teardown),
      cmocka_unit_test_setup_teardown(test_unmarked_never_completed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_open_racing_unlink_never_uploads,
                                      setup_stream, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
