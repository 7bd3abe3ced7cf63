/*
 * libs3rdmafs's mount check (s3rdmafs_mnt.c): lines of mountinfo read for
 * the mount's owner and whether it is s3rdmafs's; and the check on files
 * of this host's own mounts (/proc, a temporary file: not s3rdmafs). The
 * hostile case, another user's FUSE mount answering the ioctls, and a
 * user's own mount, are test_lib_share.sh's.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "libs3rdmafs/s3rdmafs_mnt.h"

static void test_lines(void **state)
{
  uid_t owner = 7;
  bool ours = true;

  (void)state;
  /* root's s3rdmafs mount */
  assert_int_equal(s3r_mnt_line("41 28 0:44 / /mnt/b rw,nosuid,nodev,"
                                "relatime shared:23 - fuse.s3rdmafs s3rdmafs "
                                "rw,user_id=0,group_id=0,allow_other\n",
                                41, &owner, &ours), 1);
  assert_int_equal(owner, 0);
  assert_true(ours);
  /* another mount's line */
  assert_int_equal(s3r_mnt_line("41 28 0:44 / /mnt/b rw - fuse.s3rdmafs "
                                "s3rdmafs rw,user_id=0\n", 42, &owner, &ours),
                   0);
  /* a user's FUSE mount calling itself s3rdmafs, user_id last, no
     optional fields */
  assert_int_equal(s3r_mnt_line("50 28 0:50 / /home/u/m rw - fuse.s3rdmafs "
                                "s3rdmafs rw,group_id=1000,user_id=1000",
                                50, &owner, &ours), 1);
  assert_int_equal(owner, 1000);
  assert_true(ours);
  /* another FUSE file system: not s3rdmafs; its owner still read */
  assert_int_equal(s3r_mnt_line("51 28 0:51 / /m rw master:1 - fuse.sshfs "
                                "u@h:/ rw,user_id=65534,group_id=65534\n",
                                51, &owner, &ours), 1);
  assert_int_equal(owner, 65534);
  assert_false(ours);
  /* a user_id inside another option's value is not the owner */
  assert_int_equal(s3r_mnt_line("52 28 0:52 / /m rw - fuse.x s3rdmafs "
                                "rw,xuser_id=0,user_id=12\n", 52, &owner,
                                &ours), 1);
  assert_int_equal(owner, 12);
  assert_true(ours); /* (its source) */
  /* no FUSE owner: ext4 */
  assert_int_equal(s3r_mnt_line("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 "
                                "rw,errors=remount-ro\n", 22, &owner, &ours),
                   1);
  assert_int_equal(owner, (uid_t)-1);
  assert_false(ours);
  /* not lines of mountinfo */
  assert_int_equal(s3r_mnt_line("x 1 2", 1, &owner, &ours), -EINVAL);
  assert_int_equal(s3r_mnt_line("22 1 8:1 / / rw", 22, &owner, &ours),
                   -EINVAL);
  assert_int_equal(s3r_mnt_line("22 1 8:1 / / rw - ext4", 22, &owner, &ours),
                   -EINVAL);
}

static void test_not_s3rdmafs(void **state)
{
  char path[] = "/tmp/test_lib_mnt.XXXXXX";
  int fd = mkstemp(path), pfd = open("/proc/self/status", O_RDONLY);

  (void)state;
  assert_true(fd >= 0 && pfd >= 0);
  unlink(path);
  assert_int_equal(s3r_mnt_trusted(fd), -ENOTTY);
  assert_int_equal(s3r_mnt_trusted(pfd), -ENOTTY);
  assert_int_equal(s3r_mnt_trusted(9999), -EBADF);
  close(fd);
  close(pfd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lines),
      cmocka_unit_test(test_not_s3rdmafs),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
