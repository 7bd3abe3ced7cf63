/*
 * fsx_memory: how much memory the mount may hold, and whether the system
 * is short of it.
 *
 * The target bounds the page cache and the write buffers together
 * (mount.memory_target; unset: half the memory cgroup's limit, else a
 * quarter of the machine's memory). At mount fsx_memory_fit cuts
 * cache.size and write.max_memory to fit it; while mounted the watcher
 * (fsx_memwatch.h) gives idle cache segments back and, under pressure,
 * half of those in use.
 *
 * Every reader takes root, the directory /proc and /sys are found under
 * ("/" but in tests), and reads only files there.
 */
#ifndef S3R_FSX_MEMORY_H
#define S3R_FSX_MEMORY_H

#include <stddef.h>
#include <stdint.h>

struct cfg;

#define FSX_MEMORY_MIN (48ull << 20) /* the least target honoured */

/*
 * The tightest memory limit of this process's cgroup and its ancestors,
 * bytes (v2: memory.max and memory.high; v1: memory.limit_in_bytes),
 * 0 when none is set; where says which file.
 */
uint64_t fsx_memory_cgroup_limit(const char *root, char *where,
                                 size_t wlen);

/* MemTotal of <root>/proc/meminfo, bytes; 0 if unknown. */
uint64_t fsx_memory_total(const char *root);

/*
 * The target: set when nonzero, else half the cgroup's limit, else a
 * quarter of MemTotal (0 if none is known: no bound). why says which.
 */
uint64_t fsx_memory_target(const char *root, uint64_t set, char *why,
                           size_t wlen);

/*
 * Cut c's cache.size and write.max_memory (and what must stay below
 * them: read.readahead_max, read.readahead_min, write.max_parts_inflight)
 * so that the two fit in target, never below the smallest that works
 * (16 chunks and 16 MiB; two parts and 16 MiB: with large parts or
 * chunks the two may pass a small target). Returns 1 if anything changed
 * (said in msg), 0 if not.
 */
int fsx_memory_fit(struct cfg *c, uint64_t target, char *msg, size_t mlen);

/*
 * Memory pressure now: the "some avg10" share (percent) of the cgroup's
 * memory.pressure (v2), else of <root>/proc/pressure/memory; -1 when
 * neither can be read.
 */
double fsx_memory_pressure(const char *root);

#endif
