/*
 * test_fsx_rdma_rc: what a failed RC connect step does to the mount's
 * endpoint (fsx_rdma_rc_next), pure: a server that does not speak the
 * dialect turns rc off for good; anything else sends that one request
 * over HTTP and the next one tries again. The connect itself runs against
 * a real device only (the soft-RoCE guest, tests/rdma-vm).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fs/plane/fsx_rdma_rc.h"
#include "s3/s3_rc.h"

static void test_next(void **state)
{
  static const int later[] = {-EAGAIN, -ETIMEDOUT, -ECONNREFUSED, -ECANCELED,
                              -ENOMEM, -EIO, -EISCONN, -EINVAL, 0};
  struct s3_rc_reply out;

  (void)state;
  /* what s3_rc says of plain S3's 405 and of s3rdma-gateway's 501 */
  assert_int_equal(fsx_rdma_rc_next(FSX_RC_TRYING, s3_rc_connect_outcome(
                                        -EOPNOTSUPP, 405, 0, 0, 0, &out)),
                   FSX_RC_OFF);
  assert_int_equal(fsx_rdma_rc_next(FSX_RC_TRYING, s3_rc_connect_outcome(
                                        -EOPNOTSUPP, 501, 0, 0, 0, &out)),
                   FSX_RC_OFF);
  /* a 200 whose values do not parse (rdx_rc_session_connect) */
  assert_int_equal(fsx_rdma_rc_next(FSX_RC_TRYING, -EBADMSG), FSX_RC_OFF);
  assert_int_equal(fsx_rdma_rc_next(FSX_RC_TRYING, s3_rc_connect_outcome(
                                        -EIO, 503, 0, 0, 0, &out)),
                   FSX_RC_TRYING);
  for (size_t i = 0; i < sizeof(later) / sizeof(*later); i++)
    assert_int_equal(fsx_rdma_rc_next(FSX_RC_TRYING, later[i]),
                     FSX_RC_TRYING);
  /* off stays off */
  for (size_t i = 0; i < sizeof(later) / sizeof(*later); i++)
    assert_int_equal(fsx_rdma_rc_next(FSX_RC_OFF, later[i]), FSX_RC_OFF);
  assert_false(fsx_rdma_rc_usable(NULL));
}

/* Replies 500 in a row turn rc off; a request moved by rc starts the
   count again; others leave it. */
static void test_count_reply(void **state)
{
  unsigned run = 0;

  (void)state;
  for (unsigned i = 1; i < FSX_RDMA_RC_FAILED_REPLIES; i++) {
    assert_false(fsx_rdma_rc_count_reply(&run, true, false));
    assert_int_equal(run, i);
  }
  /* a declined or doubtful request in between: the count stays */
  assert_false(fsx_rdma_rc_count_reply(&run, false, false));
  assert_int_equal(run, FSX_RDMA_RC_FAILED_REPLIES - 1);
  /* one moved: from zero again */
  assert_false(fsx_rdma_rc_count_reply(&run, false, true));
  assert_int_equal(run, 0);
  for (unsigned i = 1; i < FSX_RDMA_RC_FAILED_REPLIES; i++)
    assert_false(fsx_rdma_rc_count_reply(&run, true, false));
  assert_true(fsx_rdma_rc_count_reply(&run, true, false));
  /* and it stays at the limit (no wrap) */
  assert_true(fsx_rdma_rc_count_reply(&run, true, false));
  assert_int_equal(run, FSX_RDMA_RC_FAILED_REPLIES);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_next),
      cmocka_unit_test(test_count_reply),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
