/*
 * test_rdx_transport: the client half without a second process: opening
 * each kind, registration in segments (over a PROT_NONE reservation larger
 * than a segment: cma registration is bookkeeping, nothing is touched),
 * tokens for ranges inside and outside regions and segments, and the
 * /proc parsers the cma token relies on (a comm with spaces and ')').
 * test_rdx_cma moves bytes between processes.
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdma/rdx_i.h"
#include "rdma/rdx_transport.h"

#define SEG RDX_SEG_MAX
#define MiB (1024ULL * 1024)

static struct rdx_transport *open_cma(void)
{
  struct rdx_transport *t = NULL;
  char err[RDX_ERR_MAX];
  int rc = rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &t, err, sizeof(err));

  if (rc)
    fail_msg("cma open: %d %s", rc, err);
  assert_non_null(t);
  return t;
}

static void assert_one_line(const char *s)
{
  assert_true(s[0] != '\0');
  assert_null(strchr(s, '\n'));
}

/* ---- open --------------------------------------------------------------- */

static void test_kind_names(void **state)
{
  assert_string_equal(rdx_transport_kind_name(RDX_TRANSPORT_OFF), "off");
  assert_string_equal(rdx_transport_kind_name(RDX_TRANSPORT_AUTO), "auto");
  assert_string_equal(rdx_transport_kind_name(RDX_TRANSPORT_CMA), "cma");
  assert_string_equal(rdx_transport_kind_name(RDX_TRANSPORT_RC), "rc");
  assert_string_equal(rdx_transport_kind_name(RDX_TRANSPORT_DC), "dc");
  assert_string_equal(rdx_transport_kind_name((enum rdx_transport_kind)9), "?");
  /* the token kind each transport's tokens carry (rdx_kinds.h) */
  assert_int_equal(rdx_transport_token_kind(RDX_TRANSPORT_OFF), 0);
  assert_int_equal(rdx_transport_token_kind(RDX_TRANSPORT_AUTO), 0);
  assert_int_equal(rdx_transport_token_kind(RDX_TRANSPORT_CMA), RDX_CMA);
  assert_int_equal(rdx_transport_token_kind(RDX_TRANSPORT_RC), RDX_RC);
  assert_int_equal(rdx_transport_token_kind(RDX_TRANSPORT_DC), RDX_DC);
  assert_int_equal(rdx_transport_token_kind((enum rdx_transport_kind)9), 0);
  assert_string_equal(rdx_kind_name((enum rdx_kind)rdx_transport_token_kind(
                          RDX_TRANSPORT_RC)),
                      rdx_transport_kind_name(RDX_TRANSPORT_RC));
}

static void test_open_kinds(void **state)
{
  static const enum rdx_transport_kind verbs[] = {RDX_TRANSPORT_RC,
                                                  RDX_TRANSPORT_DC};
  struct rdx_params local = {.endpoint_local = true};
  struct rdx_params remote = {.endpoint_local = false};
  struct rdx_transport *t = (struct rdx_transport *)&local;
  char err[RDX_ERR_MAX];
  int rc;

  assert_int_equal(rdx_transport_open(RDX_TRANSPORT_OFF, NULL, &t, err,
                                      sizeof(err)),
                   -ENODEV);
  assert_null(t);
  assert_string_equal(err, "rdma transport is off");

  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
    t = (struct rdx_transport *)&local;
    rc = rdx_transport_open(verbs[i], &local, &t, err, sizeof(err));
    assert_null(t);
    assert_one_line(err);
    if (rc == -ENODEV)
      assert_true(strstr(err, "no RDMA device") ||
                  (verbs[i] == RDX_TRANSPORT_DC &&
                   strstr(err, "no mlx5 device")));
    else
      fail_msg("%s: %d %s", rdx_transport_kind_name(verbs[i]), rc, err);
    print_message("  %s: %s\n", rdx_transport_kind_name(verbs[i]), err);
  }

  rc = rdx_transport_open(RDX_TRANSPORT_CMA, &remote, &t, err, sizeof(err));
  assert_int_equal(rc, 0);
  assert_int_equal(rdx_transport_kind(t), RDX_TRANSPORT_CMA);
  rdx_transport_close(t);

  /* auto: dc and rc passed over (said once), cma taken */
  rc = rdx_transport_open(RDX_TRANSPORT_AUTO, &local, &t, err, sizeof(err));
  assert_int_equal(rc, 0);
  assert_int_equal(rdx_transport_kind(t), RDX_TRANSPORT_CMA);
  assert_one_line(err);
  assert_non_null(strstr(err, "dc, rc: no RDMA device"));
  print_message("  auto, local endpoint: cma (%s)\n", err);
  rdx_transport_close(t);

  rc = rdx_transport_open(RDX_TRANSPORT_AUTO, &remote, &t, err, sizeof(err));
  assert_int_equal(rc, -ENODEV);
  assert_null(t);
  assert_one_line(err);
  assert_non_null(strstr(err, "no rdma transport available"));
  assert_non_null(strstr(err, "cma: the endpoint is not on this host"));
  print_message("  auto, remote endpoint: %s\n", err);
  assert_int_equal(
      rdx_transport_open(RDX_TRANSPORT_AUTO, NULL, &t, err, sizeof(err)),
      -ENODEV);

  assert_int_equal(rdx_transport_open((enum rdx_transport_kind)42, NULL, &t,
                                      err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "unknown"));
  assert_int_equal(
      rdx_transport_open(RDX_TRANSPORT_CMA, NULL, NULL, err, sizeof(err)),
      -EINVAL);
  /* a short err buffer is truncated, NUL-terminated; none at all is fine */
  memset(err, 'x', sizeof(err));
  assert_int_equal(rdx_transport_open(RDX_TRANSPORT_OFF, NULL, &t, err, 6),
                   -ENODEV);
  assert_string_equal(err, "rdma ");
  assert_int_equal(rdx_transport_open(RDX_TRANSPORT_OFF, NULL, &t, NULL, 0),
                   -ENODEV);
  rdx_transport_close(NULL);
  assert_int_equal(rdx_transport_kind(NULL), RDX_TRANSPORT_OFF);
}

/* ---- registration and tokens ------------------------------------------- */

static void test_register_args(void **state)
{
  struct rdx_transport *t = open_cma();
  struct rdx_region *r = (struct rdx_region *)t;
  char buf[64];

  assert_int_equal(rdx_register(NULL, buf, sizeof(buf), 0, &r), -EINVAL);
  assert_null(r);
  assert_int_equal(rdx_register(t, NULL, sizeof(buf), 0, &r), -EINVAL);
  assert_int_equal(rdx_register(t, buf, 0, 0, &r), -EINVAL);
  assert_int_equal(rdx_register(t, buf, sizeof(buf), 0, NULL), -EINVAL);
  assert_int_equal(rdx_register(t, buf, sizeof(buf), SEG + 1, &r), -EINVAL);
  /* a range that wraps past the top of the address space */
  assert_int_equal(rdx_register(t, (void *)(UINTPTR_MAX - 9), 11, 0, &r),
                   -EINVAL);
  assert_int_equal(rdx_register(t, (void *)(UINTPTR_MAX - 9), 10, 0, &r), 0);
  assert_int_equal(rdx_region_len(r), 10);
  rdx_unregister(r);
  rdx_unregister(NULL);
  assert_int_equal(rdx_region_len(NULL), 0);
  assert_int_equal(rdx_region_seg_len(NULL), 0);
  assert_int_equal(rdx_region_nseg(NULL), 0);
  rdx_transport_close(t);
}

/* cma cannot register device memory (a dma-buf): refused before the fd
   is looked at, and said beforehand (GPUDirect falls back to staging). */
static void test_register_dmabuf_cma(void **state)
{
  struct rdx_transport *t = open_cma();
  struct rdx_region *r = (struct rdx_region *)t;

  assert_false(rdx_transport_dmabuf(t));
  assert_false(rdx_transport_dmabuf(NULL));
  assert_int_equal(rdx_register_dmabuf(t, 0, 1ull << 32, 4096, false, &r),
                   -EOPNOTSUPP);
  assert_null(r);
  /* no transport cannot either */
  assert_int_equal(rdx_register_dmabuf(NULL, 0, 1ull << 32, 4096, true, &r),
                   -EOPNOTSUPP);
  rdx_transport_close(t);
}

/* Parse the token text and check it names exactly [base + off, +len). */
static void assert_token(const char *text, int n, uint64_t addr, uint64_t len,
                         enum rdx_op op)
{
  struct rdx_token tok;
  uint64_t start;

  assert_int_equal(n, RDX_CMA_TOKEN_LEN);
  assert_int_equal(strlen(text), RDX_CMA_TOKEN_LEN);
  assert_int_equal(rdx_token_parse(text, strlen(text), &tok), 0);
  assert_int_equal(tok.kind, RDX_CMA);
  assert_int_equal(tok.op, op);
  assert_true(tok.addr == addr);
  assert_true(tok.len == len);
  assert_int_equal(tok.cma.pid, getpid());
  assert_int_equal(rdx_proc_stat(0, NULL, &start), 0);
  assert_true(tok.cma.start_time == start);
  assert_int_equal(rdx_token_check(&tok, op, len, NULL, 0), 0);
}

/* A token for [off, off + len) of r: expect rc (or success). */
static void expect(struct rdx_transport *t, struct rdx_region *r,
                   uint64_t base, uint64_t off, uint64_t len, enum rdx_op op,
                   int want)
{
  char buf[RDX_TOKEN_MAX];
  int n;

  memset(buf, 'x', sizeof(buf));
  n = rdx_token_for(t, r, off, len, op, buf, sizeof(buf));
  if (want) {
    if (n != want)
      fail_msg("token_for(%#llx, %#llx) = %d, want %d",
               (unsigned long long)off, (unsigned long long)len, n, want);
    assert_string_equal(buf, "");
    return;
  }
  if (n < 0)
    fail_msg("token_for(%#llx, %#llx) = %d", (unsigned long long)off,
             (unsigned long long)len, n);
  assert_token(buf, n, base + off, len, op);
}

/* 3 full segments and a short one, over a PROT_NONE reservation. */
static void test_segments(void **state)
{
  const uint64_t len = 3 * SEG + 12345;
  struct rdx_transport *t = open_cma();
  struct rdx_region *r;
  uint64_t b;
  void *base;

  base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
              -1, 0);
  assert_true(base != MAP_FAILED);
  b = (uint64_t)(uintptr_t)base;
  assert_int_equal(rdx_register(t, base, len, 0, &r), 0);
  assert_int_equal(rdx_region_len(r), len);
  assert_int_equal(rdx_region_seg_len(r), SEG);
  assert_int_equal(rdx_region_nseg(r), 4);

  /* inside one segment, up to its edges */
  expect(t, r, b, 0, 1, RDX_GET, 0);
  expect(t, r, b, 0, SEG, RDX_PUT, 0);
  expect(t, r, b, SEG - 1, 1, RDX_GET, 0);
  expect(t, r, b, SEG, SEG, RDX_GET, 0);
  expect(t, r, b, 2 * SEG + 7, SEG - 7, RDX_PUT, 0);
  expect(t, r, b, 3 * SEG, 12345, RDX_GET, 0);
  expect(t, r, b, len - 1, 1, RDX_PUT, 0);
  /* across a segment boundary */
  expect(t, r, b, SEG - 1, 2, RDX_GET, -EXDEV);
  expect(t, r, b, 0, SEG + 1, RDX_GET, -EXDEV);
  expect(t, r, b, 1, SEG, RDX_PUT, -EXDEV);
  expect(t, r, b, 3 * SEG - 1, 12346, RDX_GET, -EXDEV);
  expect(t, r, b, 0, len, RDX_GET, -EXDEV);
  /* outside the region */
  expect(t, r, b, len, 1, RDX_GET, -ERANGE);
  expect(t, r, b, len - 1, 2, RDX_GET, -ERANGE);
  expect(t, r, b, 3 * SEG, 12346, RDX_GET, -ERANGE);
  expect(t, r, b, 0, len + 1, RDX_GET, -ERANGE);
  expect(t, r, b, UINT64_MAX, 1, RDX_GET, -ERANGE);
  expect(t, r, b, 1, UINT64_MAX, RDX_GET, -ERANGE);
  expect(t, r, b, UINT64_MAX - 2, 5, RDX_PUT, -ERANGE);
  /* bad requests */
  expect(t, r, b, 0, 0, RDX_GET, -EINVAL);
  expect(t, r, b, 0, 1, RDX_OP_NONE, -EINVAL);
  expect(t, r, b, 0, 1, (enum rdx_op)7, -EINVAL);

  rdx_unregister(r);
  munmap(base, len);
  rdx_transport_close(t);
}

/* A lazy region: segments of the length asked, none registered until
   rdx_region_seg_set; a token for a segment not registered is -ENXIO;
   registered bytes counted; bad ranges refused. */
static void test_lazy_segments(void **state)
{
  const uint64_t seg = 4 * MiB, len = 3 * seg + 4096;
  struct rdx_transport *t = open_cma();
  struct rdx_region *r;
  uint64_t b;
  void *base;

  (void)state;
  base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
              -1, 0);
  assert_true(base != MAP_FAILED);
  b = (uint64_t)(uintptr_t)base;
  assert_int_equal(rdx_register_lazy(t, base, len, 0, &r), -EINVAL);
  assert_int_equal(rdx_register_lazy(t, base, len, seg, &r), 0);
  assert_int_equal(rdx_region_seg_len(r), seg);
  assert_int_equal(rdx_region_nseg(r), 4);
  assert_int_equal(rdx_region_live_bytes(r), 0);
  expect(t, r, b, 0, 1, RDX_GET, -ENXIO);
  expect(t, r, b, seg - 1, 2, RDX_GET, -EXDEV);
  assert_int_equal(rdx_region_seg_set(r, seg, seg, true), 0);
  assert_int_equal(rdx_region_live_bytes(r), seg);
  expect(t, r, b, seg, seg, RDX_GET, 0);
  expect(t, r, b, 0, 1, RDX_GET, -ENXIO);
  expect(t, r, b, 2 * seg, 1, RDX_GET, -ENXIO);
  assert_int_equal(rdx_region_seg_set(r, 3 * seg, 4096, true), 0); /* last */
  expect(t, r, b, 3 * seg, 4096, RDX_PUT, 0);
  assert_int_equal(rdx_region_live_bytes(r), seg + 4096);
  assert_int_equal(rdx_region_seg_set(r, seg, seg, false), 0);
  expect(t, r, b, seg, seg, RDX_GET, -ENXIO);
  assert_int_equal(rdx_region_live_bytes(r), 4096);
  /* not a segment's start, part of one, past the end */
  assert_int_equal(rdx_region_seg_set(r, 1, seg, true), -EINVAL);
  assert_int_equal(rdx_region_seg_set(r, 0, seg - 1, true), -EINVAL);
  assert_int_equal(rdx_region_seg_set(r, 0, len + 1, true), -EINVAL);
  assert_int_equal(rdx_region_seg_set(r, len, 1, true), -EINVAL);
  assert_int_equal(rdx_region_seg_set(r, 0, 0, true), -EINVAL);
  /* two at once, and unregistered with the region */
  assert_int_equal(rdx_region_seg_set(r, 0, 2 * seg, true), 0);
  assert_int_equal(rdx_region_live_bytes(r), 2 * seg + 4096);
  rdx_unregister(r);
  munmap(base, len);
  rdx_transport_close(t);
}

/* The unit keeps fixed-size chunks inside one segment each. */
static void test_segment_unit(void **state)
{
  static const struct {
    size_t unit;
    uint64_t seg_len;
  } units[] = {
      {0, SEG},
      {1, SEG},
      {3, SEG / 3 * 3},
      {4096, SEG}, /* 4 GiB - 64 KiB is a multiple of every page size */
      {64 * 1024, SEG},
      {MiB, 4095 * MiB},
      {4 * MiB, 1023 * 4 * MiB},
      {SEG, SEG},
  };
  const uint64_t len = 4096 * MiB + 5 * MiB;
  struct rdx_transport *t = open_cma();
  struct rdx_region *r;
  uint64_t b;
  void *base;

  base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
              -1, 0);
  assert_true(base != MAP_FAILED);
  b = (uint64_t)(uintptr_t)base;
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    assert_int_equal(rdx_register(t, base, len, units[i].unit, &r), 0);
    assert_int_equal(rdx_region_seg_len(r), units[i].seg_len);
    assert_int_equal(rdx_region_nseg(r), (len - 1) / units[i].seg_len + 1);
    rdx_unregister(r);
  }

  /* 1 MiB chunks: chunk 4095 straddles 4 GiB - 64 KiB unless unit = 1 MiB */
  assert_int_equal(rdx_register(t, base, len, 0, &r), 0);
  expect(t, r, b, 4095 * MiB, MiB, RDX_GET, -EXDEV);
  rdx_unregister(r);
  assert_int_equal(rdx_register(t, base, len, MiB, &r), 0);
  for (uint64_t c = 4090; c < 4101; c++)
    expect(t, r, b, c * MiB, MiB, RDX_GET, 0);
  expect(t, r, b, 4095 * MiB - 1, 2, RDX_GET, -EXDEV);
  rdx_unregister(r);

  munmap(base, len);
  rdx_transport_close(t);
}

static void test_token_errors(void **state)
{
  struct rdx_transport *t = open_cma(), *other = open_cma();
  struct rdx_region *r;
  char mem[256], buf[RDX_TOKEN_MAX];
  uint64_t b = (uint64_t)(uintptr_t)mem;

  assert_int_equal(rdx_register(t, mem, sizeof(mem), 0, &r), 0);
  expect(t, r, b, 10, 100, RDX_GET, 0);
  expect(t, r, b, 0, sizeof(mem), RDX_PUT, 0);
  /* the region belongs to another transport; NULL arguments */
  assert_int_equal(rdx_token_for(other, r, 0, 1, RDX_GET, buf, sizeof(buf)),
                   -EINVAL);
  assert_int_equal(rdx_token_for(NULL, r, 0, 1, RDX_GET, buf, sizeof(buf)),
                   -EINVAL);
  assert_int_equal(rdx_token_for(t, NULL, 0, 1, RDX_GET, buf, sizeof(buf)),
                   -EINVAL);
  /* buffer too short for the token and its NUL */
  memset(buf, 'x', sizeof(buf));
  assert_int_equal(
      rdx_token_for(t, r, 0, 1, RDX_GET, buf, RDX_CMA_TOKEN_LEN), -ENOSPC);
  assert_string_equal(buf, "");
  assert_int_equal(rdx_token_for(t, r, 0, 1, RDX_GET, NULL, 0), -ENOSPC);
  assert_int_equal(
      rdx_token_for(t, r, 0, 1, RDX_GET, buf, RDX_CMA_TOKEN_LEN + 1),
      RDX_CMA_TOKEN_LEN);
  rdx_unregister(r);
  rdx_transport_close(other);
  rdx_transport_close(t);
}

/* A PUT source (rdx_register_src) makes PUT tokens only, and may be a
   read-only mapping. */
static void test_register_src(void **state)
{
  struct rdx_transport *t = open_cma();
  struct rdx_region *r;
  char buf[RDX_TOKEN_MAX];
  void *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint64_t b = (uint64_t)(uintptr_t)ro;

  (void)state;
  assert_true(ro != MAP_FAILED);
  assert_int_equal(rdx_register_src(t, ro, 8192, 0, &r), 0);
  expect(t, r, b, 0, 8192, RDX_PUT, 0);
  assert_int_equal(rdx_token_for(t, r, 0, 8192, RDX_GET, buf, sizeof(buf)),
                   -EACCES);
  assert_string_equal(buf, "");
  assert_int_equal(rdx_region_len(r), 8192);
  rdx_unregister(r);
  assert_int_equal(rdx_register_src(NULL, ro, 8192, 0, &r), -EINVAL);
  assert_int_equal(rdx_register_src(t, ro, 0, 0, &r), -EINVAL);
  munmap(ro, 8192);
  rdx_transport_close(t);
}

/* A child forked after open must not make tokens naming its parent. */
static void test_fork_after_open(void **state)
{
  struct rdx_transport *t = open_cma();
  struct rdx_region *r;
  char mem[64];
  int status;
  pid_t pid;

  assert_int_equal(rdx_register(t, mem, sizeof(mem), 0, &r), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char buf[RDX_TOKEN_MAX];
    int n = rdx_token_for(t, r, 0, 8, RDX_GET, buf, sizeof(buf));
    _exit(n == -ECHILD && buf[0] == '\0' ? 0 : 1);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  expect(t, r, (uint64_t)(uintptr_t)mem, 0, 8, RDX_GET, 0);
  rdx_unregister(r);
  rdx_transport_close(t);
}

/* ---- /proc parsers ------------------------------------------------------ */

#define F4_21 "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"
#define TAIL " 4 5 6\n"

static void test_stat_parse(void **state)
{
  static const struct {
    const char *text;
    int rc;
    char state;
    uint64_t start;
  } vecs[] = {
      {"1234 (bash) S " F4_21 " 987654" TAIL, 0, 'S', 987654},
      {"1 (a b) R " F4_21 " 0" TAIL, 0, 'R', 0},
      {"77 (x) y ) z) S " F4_21 " 42" TAIL, 0, 'S', 42},
      {"77 () () S " F4_21 " 42" TAIL, 0, 'S', 42},
      {"77 ()) S " F4_21 " 43" TAIL, 0, 'S', 43},
      {"77 (a\nb) Z " F4_21 " 44" TAIL, 0, 'Z', 44},
      {"77 ((() S " F4_21 " 45" TAIL, 0, 'S', 45},
      {"77 (:-)) S " F4_21 " 18446744073709551615" TAIL, 0, 'S', UINT64_MAX},
      {"77 (a) S " F4_21 " 46\n", 0, 'S', 46},  /* field 22 last */
      {"77 (a) S " F4_21 " 47", 0, 'S', 47},    /* no newline */
      {"77 (a) S " F4_21 " 18446744073709551616" TAIL, -EINVAL, 0, 0},
      {"77 (a) S " F4_21 " 12x" TAIL, -EINVAL, 0, 0},
      {"77 (a) S " F4_21 " -1" TAIL, -EINVAL, 0, 0},
      {"77 (a) S " F4_21 " " TAIL, -EINVAL, 0, 0},
      {"77 (a) S " F4_21, -EINVAL, 0, 0},       /* too few fields */
      {"77 (a) S 1 2 3", -EINVAL, 0, 0},
      {"77 (a)S " F4_21 " 1" TAIL, -EINVAL, 0, 0},
      {"77 (a)  S " F4_21 " 1" TAIL, -EINVAL, 0, 0},
      {"77 a) S " F4_21 " 1" TAIL, -EINVAL, 0, 0},
      {"77 (a S " F4_21 " 1" TAIL, -EINVAL, 0, 0},
      {"77 )a( S " F4_21 " 1" TAIL, -EINVAL, 0, 0},
      {"", -EINVAL, 0, 0},
      {")", -EINVAL, 0, 0},
  };
  char st;
  uint64_t start;

  for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
    size_t n = strlen(vecs[i].text);
    char *copy = malloc(n ? n : 1); /* exactly n bytes: over-reads trip ASan */

    assert_non_null(copy);
    memcpy(copy, vecs[i].text, n);
    st = 0;
    start = 1;
    int rc = rdx_stat_parse(copy, n, &st, &start);
    free(copy);
    if (rc != vecs[i].rc)
      fail_msg("vector %zu: rc %d, want %d", i, rc, vecs[i].rc);
    if (rc == 0) {
      assert_int_equal(st, vecs[i].state);
      assert_true(start == vecs[i].start);
    }
  }
  /* the number must stop at a delimiter within n, even when more follows */
  {
    const char *s = "77 (a) S " F4_21 " 123456";
    assert_int_equal(rdx_stat_parse(s, strlen(s) - 3, &st, &start), 0);
    assert_true(start == 123);
  }
}

static double uptime(void)
{
  double up = -1;
  FILE *f = fopen("/proc/uptime", "r");

  assert_non_null(f);
  assert_int_equal(fscanf(f, "%lf", &up), 1);
  fclose(f);
  return up;
}

/* A real process whose comm holds spaces and ')'. */
static void test_stat_real(void **state)
{
  static const char name[] = "a) b ) (c";
  int to_parent[2], to_child[2], status;
  long hz = sysconf(_SC_CLK_TCK);
  uint64_t start, child_says;
  double before, after;
  char st, comm[64], go = 'g';
  pid_t pid;
  FILE *f;

  assert_int_equal(pipe(to_parent), 0);
  assert_int_equal(pipe(to_child), 0);
  before = uptime();
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uint64_t s = 0;
    char c;
    close(to_parent[0]);
    close(to_child[1]); /* EOF, should the parent fail before it says go */
    prctl(PR_SET_NAME, name);
    if (rdx_proc_stat(0, NULL, &s) != 0)
      s = 0;
    if (write(to_parent[1], &s, sizeof(s)) != sizeof(s))
      _exit(1);
    _exit(read(to_child[0], &c, 1) == 1 ? 0 : 1);
  }
  close(to_parent[1]);
  close(to_child[0]);
  assert_int_equal(read(to_parent[0], &child_says, sizeof(child_says)),
                   sizeof(child_says));
  after = uptime();
  snprintf(comm, sizeof(comm), "/proc/%d/comm", (int)pid);
  f = fopen(comm, "r");
  assert_non_null(f);
  assert_non_null(fgets(comm, sizeof(comm), f));
  fclose(f);
  assert_string_equal(comm, "a) b ) (c\n");

  assert_int_equal(rdx_proc_stat(pid, &st, &start), 0);
  assert_true(start == child_says);
  assert_true(st == 'S' || st == 'R');
  /* field 22 is the start in clock ticks after boot */
  assert_true((double)start / (double)hz >= before - 1.0);
  assert_true((double)start / (double)hz <= after + 1.0);

  assert_int_equal(write(to_child[1], &go, 1), 1);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(rdx_proc_stat(pid, &st, &start), -ESRCH);
  close(to_parent[0]);
  close(to_child[1]);
}

static void test_status_uids(void **state)
{
  static const struct {
    const char *text;
    int rc;
    uint64_t uids[4];
  } vecs[] = {
      {"Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", 0, {0, 0, 0, 0}},
      {"Name:\tUid:\t9\nUid:\t1000\t1001\t1002\t1003\n", 0,
       {1000, 1001, 1002, 1003}},
      {"Uid:\t4294967295\t1\t2\t3\n", 0, {4294967295u, 1, 2, 3}},
      {"Name:\tx\nUid:\t1\t2\t3\n", -EINVAL, {0}},
      {"Name:\tx\nUid:\t1\t2\t3\t4", 0, {1, 2, 3, 4}}, /* cut after fsuid */
      {"Name:\tx\nUid:\t1\t2\tx\t4\n", -EINVAL, {0}},
      {"Name:\tx\nUid:1\t2\t3\t4\n", -EINVAL, {0}},
      {"Name:\tx\nGid:\t1\t2\t3\t4\n", -EINVAL, {0}},
      {"", -EINVAL, {0}},
  };
  uint64_t uids[4];

  for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
    size_t n = strlen(vecs[i].text);
    char *copy = malloc(n ? n : 1);

    assert_non_null(copy);
    memcpy(copy, vecs[i].text, n);
    int rc = rdx_status_field(copy, n, "Uid", uids, 4);
    free(copy);
    if (rc != vecs[i].rc)
      fail_msg("vector %zu: rc %d, want %d", i, rc, vecs[i].rc);
    if (rc == 0)
      assert_memory_equal(uids, vecs[i].uids, sizeof(uids));
  }
  assert_int_equal(rdx_proc_status(0, "Uid", uids, 4), 0);
  assert_true(uids[0] == getuid());
  assert_true(uids[1] == geteuid());
  assert_int_equal(rdx_proc_status(getpid(), "Uid", uids, 4), 0);
  assert_true(uids[0] == getuid());
  /* one field; a name that is a prefix of another's is not that one */
  assert_int_equal(rdx_status_field("Tgid:\t42\nPid:\t43\n", 18, "Tgid",
                                    uids, 1),
                   0);
  assert_true(uids[0] == 42);
  assert_int_equal(rdx_status_field("TgidX:\t42\n", 10, "Tgid", uids, 1),
                   -EINVAL);
  assert_int_equal(rdx_status_field("Tgid:\t42\n", 9, "Tgid", uids, 0),
                   -EINVAL);
  assert_int_equal(rdx_proc_status(getpid(), "Tgid", uids, 1), 0);
  assert_true(uids[0] == (uint64_t)getpid());
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kind_names),
      cmocka_unit_test(test_open_kinds),
      cmocka_unit_test(test_register_args),
      cmocka_unit_test(test_register_dmabuf_cma),
      cmocka_unit_test(test_segments),
      cmocka_unit_test(test_lazy_segments),
      cmocka_unit_test(test_segment_unit),
      cmocka_unit_test(test_token_errors),
      cmocka_unit_test(test_register_src),
      cmocka_unit_test(test_fork_after_open),
      cmocka_unit_test(test_stat_parse),
      cmocka_unit_test(test_stat_real),
      cmocka_unit_test(test_status_uids),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
