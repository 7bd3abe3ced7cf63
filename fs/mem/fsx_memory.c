/*
 * fsx_memory: the memory target and pressure (see fsx_memory.h).
 */
#include "fs/mem/fsx_memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"

#define NO_LIMIT ((uint64_t)1 << 62) /* v1 writes ~2^63 for none */
#define MiB ((uint64_t)1 << 20)

/* The first line of file, NUL-ended, newline cut: 0 or -1. */
static int read_line(const char *path, char *buf, size_t len)
{
  FILE *f = fopen(path, "re");
  int rc = -1;

  if (!f)
    return -1;
  if (fgets(buf, (int)len, f)) {
    buf[strcspn(buf, "\n")] = '\0';
    rc = 0;
  }
  fclose(f);
  return rc;
}

/* A limit file's value: bytes, 0 for none ("max", unreadable, ~2^63). */
static uint64_t limit_of(const char *path)
{
  char line[64], *end;
  unsigned long long v;

  if (read_line(path, line, sizeof(line)) || !strcmp(line, "max"))
    return 0;
  v = strtoull(line, &end, 10);
  if (end == line || *end || v >= NO_LIMIT)
    return 0;
  return v;
}

/* This process's cgroup path: v2 (the "0::" line) or v1 memory's. */
static int cgroup_path(const char *root, bool v2, char *out, size_t len)
{
  char path[4096], line[4096];
  FILE *f;
  int rc = -1;

  snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
  if (!(f = fopen(path, "re")))
    return -1;
  while (rc && fgets(line, sizeof(line), f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *ctl;

    if (!c2)
      continue;
    *c1 = *c2 = '\0';
    c2[1 + strcspn(c2 + 1, "\n")] = '\0';
    ctl = c1 + 1;
    if (v2 ? (!strcmp(line, "0") && !*ctl)
           : (strstr(ctl, "memory") != NULL)) {
      snprintf(out, len, "%s", c2 + 1);
      rc = 0;
    }
  }
  fclose(f);
  return rc;
}

/* The v2 hierarchy's mount: <root>/sys/fs/cgroup, or its unified part. */
static void v2_base(const char *root, char *out, size_t len)
{
  char probe[4096];
  FILE *f;

  snprintf(probe, sizeof(probe), "%s/sys/fs/cgroup/cgroup.controllers", root);
  if ((f = fopen(probe, "re"))) {
    fclose(f);
    snprintf(out, len, "%s/sys/fs/cgroup", root);
  } else {
    snprintf(out, len, "%s/sys/fs/cgroup/unified", root);
  }
}

/* The least of files in dir base + cg and each of its ancestors (the root
   too), into *best (where: that file). */
static void walk(const char *base, char *cg, const char *const *files,
                 uint64_t *best, char *where, size_t wlen)
{
  char path[8192];

  for (;;) {
    for (const char *const *f = files; *f; f++) {
      uint64_t v;

      snprintf(path, sizeof(path), "%s%s/%s", base, strcmp(cg, "/") ? cg : "",
               *f);
      v = limit_of(path);
      if (v && (!*best || v < *best)) {
        *best = v;
        snprintf(where, wlen, "%s", path);
      }
    }
    char *slash = strrchr(cg, '/');
    if (!slash || !strcmp(cg, "/"))
      return;
    if (slash == cg)
      cg[1] = '\0';
    else
      *slash = '\0';
  }
}

uint64_t fsx_memory_cgroup_limit(const char *root, char *where, size_t wlen)
{
  static const char *const v2_files[] = {"memory.max", "memory.high", NULL};
  static const char *const v1_files[] = {"memory.limit_in_bytes", NULL};
  char cg[4096], base[4096];
  uint64_t best = 0;

  if (wlen)
    where[0] = '\0';
  if (!cgroup_path(root, true, cg, sizeof(cg))) {
    v2_base(root, base, sizeof(base));
    walk(base, cg, v2_files, &best, where, wlen);
  }
  if (!cgroup_path(root, false, cg, sizeof(cg))) {
    snprintf(base, sizeof(base), "%s/sys/fs/cgroup/memory", root);
    walk(base, cg, v1_files, &best, where, wlen);
  }
  return best;
}

uint64_t fsx_memory_total(const char *root)
{
  char path[4096], line[256];
  unsigned long long kb = 0;
  FILE *f;

  snprintf(path, sizeof(path), "%s/proc/meminfo", root);
  if (!(f = fopen(path, "re")))
    return 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
      break;
  fclose(f);
  return (uint64_t)kb * 1024u;
}

uint64_t fsx_memory_target(const char *root, uint64_t set, char *why,
                           size_t wlen)
{
  char where[4096];
  uint64_t v;

  if (set) {
    snprintf(why, wlen, "mount.memory_target");
    return set;
  }
  if ((v = fsx_memory_cgroup_limit(root, where, sizeof(where)))) {
    snprintf(why, wlen, "half of %" PRIu64 " MiB, %s", v / MiB, where);
    return v / 2;
  }
  if ((v = fsx_memory_total(root))) {
    snprintf(why, wlen, "a quarter of the machine's %" PRIu64 " MiB",
             v / MiB);
    return v / 4;
  }
  snprintf(why, wlen, "no limit known");
  return 0;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

int fsx_memory_fit(struct cfg *c, uint64_t target, char *msg, size_t mlen)
{
  uint64_t cache = c->cache.size, write = c->write.max_memory;
  uint64_t part = c->write.part_size, chunk = c->cache.chunk_size;
  uint64_t least_cache = 16 * chunk > 16 * MiB ? 16 * chunk : 16 * MiB;
  uint64_t least_write;

  if (mlen)
    msg[0] = '\0';
  if (!target || cache + write <= target)
    return 0;
  if (target < FSX_MEMORY_MIN)
    target = FSX_MEMORY_MIN;
  least_write = 2 * part > 16 * MiB ? 2 * part : 16 * MiB;
  write = min64(write, target / 4 > least_write ? target / 4 : least_write);
  cache = target > write + least_cache ? target - write : least_cache;
  cache = min64(cache, c->cache.size) / chunk * chunk;
  if (cache == c->cache.size && write == c->write.max_memory)
    return 0; /* (nothing can be cut: the least that works is more) */
  snprintf(msg, mlen,
           "cache.size %" PRIu64 " MiB -> %" PRIu64 " MiB, write.max_memory "
           "%" PRIu64 " MiB -> %" PRIu64 " MiB",
           c->cache.size / MiB, cache / MiB, c->write.max_memory / MiB,
           write / MiB);
  c->cache.size = cache;
  c->write.max_memory = write;
  if ((uint64_t)c->write.max_parts_inflight * part > write)
    c->write.max_parts_inflight = (unsigned)(write / part);
  c->read.readahead_max = min64(c->read.readahead_max, cache / 2);
  c->read.readahead_min = min64(c->read.readahead_min, c->read.readahead_max);
  c->read.dense_block = min64(c->read.dense_block, cache / 4);
  return 1;
}

double fsx_memory_pressure(const char *root)
{
  char cg[4096], base[4096], path[8320], line[256];
  double some;

  line[0] = '\0';
  if (!cgroup_path(root, true, cg, sizeof(cg))) {
    v2_base(root, base, sizeof(base));
    snprintf(path, sizeof(path), "%s%s/memory.pressure", base,
             strcmp(cg, "/") ? cg : "");
    if (read_line(path, line, sizeof(line)))
      line[0] = '\0';
  }
  if (!line[0]) {
    snprintf(path, sizeof(path), "%s/proc/pressure/memory", root);
    if (read_line(path, line, sizeof(line)))
      return -1;
  }
  if (sscanf(line, "some avg10=%lf", &some) != 1)
    return -1;
  return some;
}
