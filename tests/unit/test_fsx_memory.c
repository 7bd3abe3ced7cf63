/*
 * Unit tests for fs/mem/fsx_memory.c: the memory target read from a fake
 * /proc and /sys (cgroup v2, v1, an ancestor's tighter limit, none: the
 * machine's memory), the pressure line, and the fit of cache.size and
 * write.max_memory (and what must stay below them) into a target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/cfg.h"
#include "fs/mem/fsx_memory.h"

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static char root[64];

/* root/rel with text, its directories made */
static void put(const char *rel, const char *text)
{
  char path[512];
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(path, 0700);
    *p = '/';
  }
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state)
{
  (void)state;
  snprintf(root, sizeof(root), "/tmp/s3r-memory-XXXXXX");
  assert_non_null(mkdtemp(root));
  put("proc/meminfo", "MemTotal:       16384000 kB\nMemFree: 1 kB\n");
  return 0;
}

static int teardown(void **state)
{
  char cmd[128];

  (void)state;
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_no_cgroup(void **state)
{
  char why[256];

  (void)state;
  put("proc/self/cgroup", "0::/\n");
  assert_int_equal(fsx_memory_cgroup_limit(root, why, sizeof(why)), 0);
  assert_int_equal(fsx_memory_target(root, 0, why, sizeof(why)),
                   16384000ull * 1024 / 4);
  assert_non_null(strstr(why, "quarter"));
  /* set: taken as it is */
  assert_int_equal(fsx_memory_target(root, 3 * GiB, why, sizeof(why)),
                   3 * GiB);
}

static void test_v2(void **state)
{
  char why[512];

  (void)state;
  put("proc/self/cgroup", "0::/app/worker\n");
  put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  put("sys/fs/cgroup/app/worker/memory.max", "max\n");
  put("sys/fs/cgroup/app/worker/memory.high", "1073741824\n");
  put("sys/fs/cgroup/app/memory.max", "536870912\n"); /* tighter, above */
  assert_int_equal(fsx_memory_cgroup_limit(root, why, sizeof(why)),
                   512 * MiB);
  assert_non_null(strstr(why, "app/memory.max"));
  assert_int_equal(fsx_memory_target(root, 0, why, sizeof(why)), 256 * MiB);
  assert_non_null(strstr(why, "half of 512 MiB"));
  put("sys/fs/cgroup/app/memory.max", "max\n");
  assert_int_equal(fsx_memory_cgroup_limit(root, why, sizeof(why)), 1 * GiB);
  /* pressure: the cgroup's own file first */
  put("sys/fs/cgroup/app/worker/memory.pressure",
      "some avg10=12.50 avg60=3.00 avg300=1.00 total=10\n"
      "full avg10=1.00 avg60=0.00 avg300=0.00 total=5\n");
  put("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 "
                              "total=0\n");
  assert_true(fsx_memory_pressure(root) > 12.4 &&
              fsx_memory_pressure(root) < 12.6);
}

static void test_v1(void **state)
{
  char why[512];

  (void)state;
  put("proc/self/cgroup", "9:pids:/\n4:memory:/box\n0::/\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/fs/cgroup/memory/box/memory.limit_in_bytes", "805306368\n");
  assert_int_equal(fsx_memory_cgroup_limit(root, why, sizeof(why)),
                   768 * MiB);
  assert_non_null(strstr(why, "box/memory.limit_in_bytes"));
  /* no memory.pressure of a cgroup: the system's */
  put("proc/pressure/memory", "some avg10=3.25 avg60=0.00 avg300=0.00 "
                              "total=0\n");
  assert_true(fsx_memory_pressure(root) > 3.2 &&
              fsx_memory_pressure(root) < 3.3);
  /* unlimited everywhere: none */
  put("sys/fs/cgroup/memory/box/memory.limit_in_bytes",
      "9223372036854771712\n");
  assert_int_equal(fsx_memory_cgroup_limit(root, why, sizeof(why)), 0);
}

static void test_fit(void **state)
{
  char msg[256];
  struct cfg c;

  (void)state;
  cfg_init_defaults(&c);
  assert_int_equal(cfg_set(&c, "endpoint", "http://127.0.0.1:1", msg,
                           sizeof(msg)), 0);
  /* room enough: nothing changes */
  assert_int_equal(fsx_memory_fit(&c, 4 * GiB, msg, sizeof(msg)), 0);
  assert_int_equal(fsx_memory_fit(&c, 0, msg, sizeof(msg)), 0);
  assert_int_equal(c.cache.size, 1 * GiB);
  /* 256 MiB: a quarter for writes, the rest for the cache */
  assert_int_equal(fsx_memory_fit(&c, 256 * MiB, msg, sizeof(msg)), 1);
  assert_int_equal(c.write.max_memory, 64 * MiB);
  assert_int_equal(c.cache.size, 192 * MiB);
  assert_true(c.read.readahead_max <= c.cache.size / 2);
  assert_true(c.read.dense_block <= c.cache.size / 4);
  assert_true((uint64_t)c.write.max_parts_inflight * c.write.part_size <=
              c.write.max_memory);
  assert_non_null(strstr(msg, "cache.size 1024 MiB -> 192 MiB"));
  if (cfg_validate(&c, msg, sizeof(msg)))
    fail_msg("%s", msg);
  cfg_cleanup(&c);
  /* below the least: FSX_MEMORY_MIN, two parts and 16 chunks at least */
  cfg_init_defaults(&c);
  assert_int_equal(cfg_set(&c, "endpoint", "http://127.0.0.1:1", msg,
                           sizeof(msg)), 0);
  assert_int_equal(fsx_memory_fit(&c, 1 * MiB, msg, sizeof(msg)), 1);
  assert_int_equal(c.write.max_memory, 2 * c.write.part_size);
  assert_true(c.cache.size >= 16 * c.cache.chunk_size);
  assert_true(c.cache.size + c.write.max_memory <= FSX_MEMORY_MIN);
  if (cfg_validate(&c, msg, sizeof(msg)))
    fail_msg("%s", msg);
  cfg_cleanup(&c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_no_cgroup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
      cmocka_unit_test(test_fit),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
