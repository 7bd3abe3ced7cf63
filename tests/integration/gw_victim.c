/*
 * gw_victim: the setgid victim of test_gw_hostile.sh. The same protocol as
 * gw_token_probe --victim: a page of VICTIM_FILL between two canary pages;
 * write a cma GET and a PUT token for the middle page to FILE (FILE.tmp,
 * then renamed), wait for stdin to close, exit 0 only if all three pages
 * are untouched (1 if not, 2 on a setup error).
 *
 *   gw_victim FILE
 *
 * Why a program of its own: the test runs a setgid copy of it, and
 * gw_token_probe links the ASan runtime in the sanitizer build, whose
 * LeakSanitizer cannot stop a setgid process at exit (it ptrace-attaches
 * from a clone with the real gid, which the kernel refuses: a "fatal
 * error" and exit 1 whatever the buffer holds; ASAN_OPTIONS is not read
 * by a setgid process). So this one is built without sanitizers and links
 * nothing of ours: it reads its start time itself and writes the tokens in
 * rdx_token.h's cma form by hand.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096
#define CANARY 0xa5
#define VICTIM_FILL 0x3c

/* Field 22 of /proc/self/stat (starttime); 0 when unreadable. */
static unsigned long long start_time(void)
{
  char line[1024], *p;
  unsigned long long v = 0;
  FILE *f = fopen("/proc/self/stat", "re");
  size_t n;

  if (!f)
    return 0;
  n = fread(line, 1, sizeof(line) - 1, f);
  fclose(f);
  line[n] = '\0';
  p = strrchr(line, ')'); /* comm may hold spaces and parentheses */
  if (!p)
    return 0;
  /* ") S f4 f5 ... f22": 19 more fields after the state */
  for (int field = 3; field <= 22 && p; field++)
    p = strchr(p + 1, ' ');
  if (p)
    v = strtoull(p + 1, NULL, 10);
  return v;
}

int main(int argc, char **argv)
{
  unsigned char *pages = aligned_alloc(PAGE, 3 * PAGE), *page;
  unsigned long long start = start_time();
  char tmp[4096];
  FILE *f;
  int bad = 0;

  if (argc != 2 || !pages || !start)
    return 2;
  page = pages + PAGE;
  memset(pages, CANARY, 3 * PAGE);
  memset(page, VICTIM_FILL, PAGE);
  snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
  f = fopen(tmp, "w");
  /* "s3r1:cma:" op ":" pid(8) ":" start(16) ":" addr(16) ":" len(16) */
  for (int i = 0; f && i < 2; i++)
    fprintf(f, "s3r1:cma:%s:%08x:%016llx:%016llx:%016llx\n",
            i ? "put" : "get", (unsigned)getpid(), start,
            (unsigned long long)(uintptr_t)page, (unsigned long long)PAGE);
  if (!f || ferror(f) || fclose(f) || rename(tmp, argv[1]))
    return 2;
  while (getchar() != EOF)
    ;
  for (size_t i = 0; i < 3 * PAGE; i++)
    if (pages[i] != (i >= PAGE && i < 2 * PAGE ? VICTIM_FILL : CANARY))
      bad++;
  if (bad)
    fprintf(stderr, "victim: %d bytes of the buffer or its canaries changed\n",
            bad);
  free(pages);
  return bad ? 1 : 0;
}
