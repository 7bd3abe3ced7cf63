/*
 * test_fsx_wb_crash: the write path killed (SIGKILL) at a chosen point,
 * then the next mount's recovery of what it left, as the daemon runs it
 * (fsx_stage_recover, fsx_recover_file). The daemon is a forked child
 * with an S3 client of its own; the fake S3 server lives in the parent
 * and outlives it.
 *
 *   committed: a file rewritten with the same bytes (one part, streamed),
 *     killed as its record goes: the object keeps its bytes (the record
 *     used to go after the staging file was cut to the file's size, holes
 *     that recovery then uploaded as the file)
 *   open: a streamed file still open, killed after two parts were
 *     acknowledged and their buffers given back: the upload, the only copy
 *     of those bytes, is kept (never aborted), named in MANIFEST with its
 *     list of parts beside the file kept in unsaved/
 *   direct: the same, its two parts sent straight from the caller's buffer
 *     (the direct-write path), which it may reuse once the write returns
 *   keep: the same, and the recovery that keeps it killed as the file
 *     lands in unsaved/: the next one still names it in MANIFEST (the file
 *     used to move before its line was written, and the line was lost)
 *   whole: an object written over in place (4 KiB of 3 MiB), killed still
 *     open: the file kept in unsaved/ is the object with that write (its
 *     bytes never read used to be zeros there)
 *   unmount: no kill, two faults: the server failing the last commit and
 *     the list of parts not rewritable then: the upload is left with the
 *     file for the next mount, never aborted (the list written as its
 *     parts were acknowledged holds; it was aborted, those bytes lost)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_mount.h"
#include "fs/meta/fsx_inode.h"
#include "fs/mount/fsx_setup.h"
#include "fs/stage/fsx_recover.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb.h"
#include "s3/s3_client.h"

#define MiB (1024u * 1024u)

static struct fake_mount fm;

/* The crash point: SIGKILL at the unlink of a staging record (this
   binary's unlink is the write path's). */
static volatile int kill_at_rec, kill_at_keep;

int unlink(const char *p)
{
  size_t n = strlen(p);

  if (kill_at_rec && n > 4 && !strcmp(p + n - 4, ".rec"))
    raise(SIGKILL);
  return (int)syscall(SYS_unlinkat, AT_FDCWD, p, 0);
}

/* The other: SIGKILL right after a staging file is moved into unsaved/
   (the two ways it may be moved). */
static int moved(int rc, const char *to)
{
  if (!rc && kill_at_keep && strstr(to, "/unsaved/") && !strstr(to, ".parts"))
    raise(SIGKILL);
  return rc;
}

int renameat2(int ofd, const char *from, int nfd, const char *to,
              unsigned flags)
{
  return moved((int)syscall(SYS_renameat2, ofd, from, nfd, to, flags), to);
}

int rename(const char *from, const char *to)
{
  return moved((int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0),
               to);
}

static ssize_t wb_write(struct fsx_wb *wb, uint64_t off, const void *p,
                        size_t len)
{
  return fake_mount_write(&fm, wb, off, p, len);
}

static void tune(struct cfg *c)
{
  char err[256];

  cfg_set(c, "write.part_size", "5M", err, sizeof(err));
}

static int setup(void **state)
{
  (void)state;
  return fake_mount_up(&fm, tune);
}

static int teardown(void **state)
{
  (void)state;
  fake_mount_down(&fm);
  return 0;
}

/* In the child: a client of its own (the parent's engine thread did not
   come along with the fork). */
static void child_client(void)
{
  struct s3_client_config sc;
  char err[256];

  fsx_setup_s3(&fm.c, &sc);
  if (!(fm.m.s3 = s3_client_create(&sc, err, sizeof(err))))
    _exit(2);
}

static int run_req(void *arg, struct s3_req *q)
{
  (void)arg;
  s3_req_submit(q, NULL, NULL);
  return s3_req_wait(q);
}

static int recover_one(void *arg, const struct fsx_stage_rec *r,
                       const char *path, int fd, int map_fd, char *reason,
                       size_t reasonlen)
{
  struct fsx_recover_io io = {&fm.m, run_req, NULL};

  (void)arg;
  return fsx_recover_file(&io, r, path, fd, map_fd, reason, reasonlen);
}

/* The next mount: the dead daemon's directory (unlocked now) recovered. */
static void next_mount_recovers(struct fsx_recovery *rv)
{
  struct fsx_stage *next;
  char err[256] = "";

  fsx_stage_close(fm.m.stage);
  fm.m.stage = NULL;
  assert_int_equal(fsx_stage_open(fm.dir, fm.c.endpoint, &next, err,
                                  sizeof(err)), 0);
  fm.m.stage = next;
  fsx_stage_recover(next, fm.m.s3, recover_one, NULL, rv);
}

/* The unsaved/ MANIFEST, whole ("" when there is none; free it). */
static char *manifest(void)
{
  char p[512], *text = malloc(1 << 16);
  ssize_t n = -1;
  int fd;

  assert_non_null(text);
  snprintf(p, sizeof(p), "%s/unsaved/MANIFEST", fm.dir);
  if ((fd = open(p, O_RDONLY)) >= 0) {
    n = read(fd, text, (1 << 16) - 1);
    close(fd);
  }
  text[n > 0 ? n : 0] = '\0';
  return text;
}

/* A daemon killed: fn(arg) runs in a forked child with a client of its
   own. at_rest: it returns 0 at rest, and is SIGKILLed once ready() holds
   (NULL: at once; bounded: 30 s); else it dies at a crash point of its
   own (SIGKILL raised there). Anything else fails: a nonzero return (the
   crash point missed), or a death before or instead of the one meant. */
static void killed_child(int (*fn)(void *), void *arg, bool at_rest,
                         bool (*ready)(void))
{
  int p[2], st;
  pid_t pid;
  char c;

  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    child_client();
    if (fn(arg) || write(p[1], "w", 1) != 1)
      _exit(3);
    for (;;)
      pause();
  }
  close(p[1]);
  assert_int_equal(read(p[0], &c, 1), at_rest ? 1 : 0);
  if (at_rest) { /* killed from here */
    for (int i = 0; ready && i < 3000 && !ready(); i++)
      usleep(10000);
    kill(pid, SIGKILL);
  }
  close(p[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* A new file named name in the root, open for writing in the child. */
static struct fsx_wb *child_new_file(const char *name)
{
  struct fsx_wmeta meta = {.mode = S_IFREG | 0644};
  struct fsx_attr a = {.kind = FSX_FILE};
  struct fsx_inode *root = fsx_inode_get(fm.m.tab, FSX_ROOT_INO), *in;
  struct fsx_wb *wb = NULL;

  in = fsx_inode_child(fm.m.tab, root, name, &a, NULL, 0, false);
  if (!in || fsx_wb_open(&fm.m, in, NULL, true, &meta, &wb))
    _exit(3);
  return wb;
}

/* The existing file in open for writing in the child (trunc: as with
   O_TRUNC). */
static struct fsx_wb *child_old_file(struct fsx_inode *in, bool trunc)
{
  struct fsx_wmeta meta = {.mode = S_IFREG | 0644};
  struct fsx_inode_view v;
  struct fsx_wb *wb = NULL;

  fsx_inode_view(fm.m.tab, in, &v);
  if (fsx_wb_open(&fm.m, in, &v.attr, trunc, &meta, &wb))
    _exit(3);
  return wb;
}

enum { SAME_N = 100000 };
static char same[SAME_N];

/* The file written over with the same bytes, killed as its record goes. */
static int same_written(void *arg)
{
  struct fsx_wb *wb = child_old_file(arg, true);

  if (wb_write(wb, 0, same, SAME_N) != SAME_N)
    return -1;
  kill_at_rec = 1;
  fsx_wb_commit(&fm.m, wb);
  return -1; /* (not reached: the commit removes the record) */
}

static void test_committed(void **state)
{
  struct fsx_recovery rv;
  struct fsx_inode *in;

  (void)state;
  fake_fill(same, SAME_N, 0, 42);
  assert_int_equal(
      fake_s3_put(fm.s3, FAKE_BUCKET, "same.bin", same, SAME_N), 0);
  in = fake_mount_file(&fm, "same.bin");
  assert_non_null(in);
  killed_child(same_written, in, false, NULL);
  assert_true(fake_s3_holds(fm.s3, FAKE_BUCKET, "same.bin", same, SAME_N));
  next_mount_recovers(&rv);
  assert_true(fake_s3_holds(fm.s3, FAKE_BUCKET, "same.bin", same, SAME_N));
  fsx_inode_put(fm.m.tab, in);
}

/* The one staging file of this mount's directory. */
static void staging_path(char *out, size_t len)
{
  const char *dir = fsx_stage_dir(fm.m.stage);
  struct dirent *e;
  DIR *d = opendir(dir);

  assert_non_null(d);
  out[0] = '\0';
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "ino-", 4) && !strchr(e->d_name, '.'))
      snprintf(out, len, "%s/%s", dir, e->d_name);
  closedir(d);
  assert_true(out[0]);
}

/* How many parts <staging file>.parts lists (its two header lines aside;
   -1 while there is none). */
static int parts_listed(void)
{
  char p[4400], line[256];
  FILE *f;
  int n = -2;

  staging_path(p, sizeof(p));
  snprintf(p + strlen(p), sizeof(p) - strlen(p), ".parts");
  if (!(f = fopen(p, "r")))
    return -1;
  while (fgets(line, sizeof(line), f))
    n++;
  fclose(f);
  return n;
}

static bool two_parts_listed(void) { return parts_listed() >= 2; }

/* 12 MiB written in order into the new file big.bin, left open. */
static int big_written(void *arg)
{
  struct fsx_wb *wb = child_new_file("big.bin");
  const char *data = arg;

  for (size_t off = 0; off < 12 * MiB; off += MiB)
    if (wb_write(wb, off, data + off, MiB) != MiB)
      return -1;
  return 0;
}

/* A new file of 12 MiB written in order by a child, still open when it is
   killed after its first two parts were acknowledged. */
static void killed_open(void)
{
  enum { N = 12 * MiB };
  char *data = malloc(N);

  assert_non_null(data);
  fake_fill(data, N, 0, 7);
  /* killed once parts 1 and 2 (10 MiB) are acknowledged and listed,
     their buffers given back */
  killed_child(big_written, data, true, two_parts_listed);
  assert_int_equal(parts_listed(), 2);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PART), 2);
  assert_int_equal(fake_s3_uploads(fm.s3), 1);
  fake_s3_reset_counts(fm.s3);
  free(data);
}

/* Kept: the upload (never aborted), the file, a line naming both. */
static void kept_with_upload(void)
{
  char *man = manifest();

  assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
  assert_int_equal(fake_s3_uploads(fm.s3), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COMPLETE), 0);
  assert_non_null(strstr(man, "big.bin"));
  assert_non_null(strstr(man, "kept, not aborted"));
  free(man);
}

/* The direct-write path's run: every request at once, then waited for. */
static int run_all(struct fsx_wparts *w, struct s3_req **r, int n,
                   const uint64_t *at, const size_t *len)
{
  (void)w;
  (void)at;
  (void)len;
  for (int i = 0; i < n; i++)
    s3_req_submit(r[i], NULL, NULL);
  for (int i = 0; i < n; i++)
    s3_req_wait(r[i]);
  return 0;
}

/* Two whole parts of big.bin sent from the caller's buffer, left open. */
static int big_direct(void *arg)
{
  struct fsx_wb *wb = child_new_file("big.bin");
  struct fsx_wparts w = {run_all, arg};

  return fsx_wb_write_parts(&fm.m, wb, 0, 10 * MiB, &w) == 10 * MiB ? 0
                                                                      : -1;
}

static void test_direct(void **state)
{
  enum { N = 10 * MiB };
  char *data = malloc(N);
  struct fsx_recovery rv;

  (void)state;
  assert_non_null(data);
  fake_fill(data, N, 0, 9);
  killed_child(big_direct, data, true, NULL);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PART), 2);
  fake_s3_reset_counts(fm.s3);
  next_mount_recovers(&rv);
  kept_with_upload();
  free(data);
}

static void test_open(void **state)
{
  struct fsx_recovery rv;

  (void)state;
  killed_open();
  next_mount_recovers(&rv);
  assert_int_equal(rv.kept, 1);
  kept_with_upload();
}

/* A recovery killed as it keeps the file. */
static int recovery_keeps(void *arg)
{
  kill_at_keep = 1;
  next_mount_recovers(arg);
  return -1; /* (not reached) */
}

static void test_keep(void **state)
{
  struct fsx_recovery rv;

  (void)state;
  killed_open();
  /* (the dead daemon's directory: unlocked in this process too, for the
     child's recovery to take) */
  fsx_stage_close(fm.m.stage);
  fm.m.stage = NULL;
  killed_child(recovery_keeps, &rv, false, NULL);
  next_mount_recovers(&rv);
  kept_with_upload();
}

/* The one file in unsaved/ (its bytes, *len of them; free it). */
static char *kept_file(size_t *len)
{
  char dir[512], p[1024] = "", *buf;
  struct dirent *e;
  struct stat st;
  DIR *d;
  int fd;

  snprintf(dir, sizeof(dir), "%s/unsaved", fm.dir);
  assert_non_null(d = opendir(dir));
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && strcmp(e->d_name, "MANIFEST") &&
        !strstr(e->d_name, ".parts"))
      snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
  closedir(d);
  assert_true((fd = open(p, O_RDONLY)) >= 0);
  assert_int_equal(fstat(fd, &st), 0);
  *len = (size_t)st.st_size;
  assert_non_null(buf = malloc(*len + 1));
  assert_int_equal(read(fd, buf, *len), (ssize_t)*len);
  close(fd);
  return buf;
}

enum { OLD_N = 3 * MiB, PATCH_AT = MiB + 512 * 1024, PATCH_N = 4096 };
static char patch[PATCH_N];

/* The object written over in place (patch at PATCH_AT), left open. */
static int old_patched(void *arg)
{
  struct fsx_wb *wb = child_old_file(arg, false);

  return wb_write(wb, PATCH_AT, patch, PATCH_N) == PATCH_N ? 0 : -1;
}

static void test_whole(void **state)
{
  enum { N = OLD_N, AT = PATCH_AT, W = PATCH_N };
  static char data[N];
  struct fsx_recovery rv;
  struct fsx_inode *in;
  size_t len;
  char *got;

  (void)state;
  fake_fill(data, N, 0, 21);
  fake_fill(patch, W, AT, 22);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "old.bin", data, N), 0);
  in = fake_mount_file(&fm, "old.bin");
  assert_non_null(in);
  killed_child(old_patched, in, true, NULL);
  next_mount_recovers(&rv);
  assert_int_equal(rv.kept, 1);
  memcpy(data + AT, patch, W);
  got = kept_file(&len);
  assert_int_equal(len, N);
  assert_memory_equal(got, data, N);
  free(got);
  fsx_inode_put(fm.m.tab, in);
}

static void test_unmount(void **state)
{
  enum { N = 12 * MiB };
  struct fsx_wmeta meta = {.mode = S_IFREG | 0644};
  struct fsx_attr a = {.kind = FSX_FILE};
  struct fsx_inode *root = fsx_inode_get(fm.m.tab, FSX_ROOT_INO), *in;
  char *data = malloc(N), tmp[4400];
  struct fsx_recovery rv;
  struct fsx_wb *wb = NULL;

  (void)state;
  assert_non_null(data);
  fake_fill(data, N, 0, 5);
  in = fsx_inode_child(fm.m.tab, root, "big.bin", &a, NULL, 0, false);
  fsx_inode_put(fm.m.tab, root);
  assert_int_equal(fsx_wb_open(&fm.m, in, NULL, true, &meta, &wb), 0);
  for (size_t off = 0; off < N; off += MiB)
    assert_int_equal(wb_write(wb, off, data + off, MiB), MiB);
  for (int i = 0; i < 3000 && !two_parts_listed(); i++)
    usleep(10000); /* (bounded: 30 s) */
  assert_int_equal(parts_listed(), 2);
  /* the server fails what is left; the list cannot be written again */
  fake_s3_fault(fm.s3, FAKE_PART, NULL, 500, 1000, 0);
  fake_s3_fault(fm.s3, FAKE_COMPLETE, NULL, 500, 1000, 0);
  staging_path(tmp, sizeof(tmp));
  snprintf(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), ".parts.tmp");
  assert_int_equal(mkdir(tmp, 0700), 0);
  snprintf(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), "/x");
  assert_int_equal(mkdir(tmp, 0700), 0);
  fake_s3_reset_counts(fm.s3);
  fsx_wb_stop(&fm.m); /* the unmount: its last commits */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ABORT), 0);
  assert_int_equal(fake_s3_uploads(fm.s3), 1);
  rmdir(tmp);
  *strrchr(tmp, '/') = '\0';
  rmdir(tmp);
  fsx_inode_put(fm.m.tab, in);
  /* the next mount, the server back: the upload taken up, the file up */
  fake_s3_clear(fm.s3);
  next_mount_recovers(&rv);
  assert_int_equal(rv.uploaded, 1);
  assert_true(fake_s3_holds(fm.s3, FAKE_BUCKET, "big.bin", data, N));
  free(data);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_committed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open, setup, teardown),
      cmocka_unit_test_setup_teardown(test_direct, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keep, setup, teardown),
      cmocka_unit_test_setup_teardown(test_whole, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unmount, setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
