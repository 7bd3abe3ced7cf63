/* failpoint: test builds' named failure and crash points (see failpoint.h).
   The table is parsed once (pthread_once) and read-only afterwards; hit
   counts are atomic, so any thread may pass any point. */
#ifdef S3R_FAILPOINTS
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/failpoint.h"

#define FP_MAX 16

static struct fp {
  char name[48];
  bool kill;
  unsigned at;                /* fires at this hit (1-based) */
  atomic_uint hits;
} fps[FP_MAX];
static unsigned nfps;
static char bad_entry[64];      /* the first entry that could not be armed */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void refuse(const char *t)
{
  if (!bad_entry[0])
    snprintf(bad_entry, sizeof(bad_entry), "%s", t);
}

static void parse(void)
{
  const char *env = getenv("S3R_FAILPOINTS");
  char *copy, *save = NULL;

  if (!env || !*env || !(copy = strdup(env)))
    return;
  for (char *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '='), *at;
    struct fp *f = &fps[nfps];
    if (nfps == FP_MAX || !eq || (size_t)(eq - t) >= sizeof(f->name)) {
      refuse(t);
      continue;
    }
    memcpy(f->name, t, (size_t)(eq - t));
    f->name[eq - t] = '\0';
    at = strchr(eq + 1, '@');
    f->at = at ? (unsigned)strtoul(at + 1, NULL, 10) : 1;
    if (at)
      *at = '\0';
    f->kill = !strcmp(eq + 1, "kill");
    if (!f->kill && strcmp(eq + 1, "error")) {
      refuse(t); /* an unknown action */
      continue;
    }
    if (!f->at)
      f->at = 1;
    atomic_init(&f->hits, 0);
    nfps++;
  }
  free(copy);
}

int fp_hit(const char *name)
{
  pthread_once(&once, parse);
  for (unsigned i = 0; i < nfps; i++) {
    struct fp *f = &fps[i];
    unsigned n;
    char line[128];
    int len;
    if (strcmp(f->name, name))
      continue;
    n = atomic_fetch_add(&f->hits, 1) + 1;
    if (n != f->at)
      return 0;
    len = snprintf(line, sizeof(line), "s3rdmafs: failpoint %s: %s (hit %u)\n",
                   name, f->kill ? "kill" : "error", n);
    if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0)
      len = 0;
    if (f->kill)
      raise(SIGKILL);
    return -EIO;
  }
  return 0;
}

void fp_disarm(void)
{
  pthread_once(&once, parse);
  nfps = 0;
}

int fp_check(const char *const *names, const char **bad)
{
  pthread_once(&once, parse);
  if (bad_entry[0]) {
    *bad = bad_entry;
    return -EINVAL;
  }
  for (unsigned i = 0; i < nfps; i++) {
    bool known = false;
    for (const char *const *n = names; *n && !known; n++)
      known = !strcmp(*n, fps[i].name);
    if (!known) {
      *bad = fps[i].name;
      return -EINVAL;
    }
  }
  return 0;
}
#else
typedef int fp_unused; /* (an empty translation unit is not ISO C) */
#endif
