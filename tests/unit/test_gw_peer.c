/*
 * test_gw_peer: peer identity of a loopback TCP connection made here (its
 * owner is us: getuid()), by netlink and by /proc/net/tcp(6).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gateway/gw_peer.h"

/* Connect a loopback pair of family af; fills the accepted side's ends. */
static bool pair(int af, int fds[3], struct sockaddr_storage *local,
                 struct sockaddr_storage *remote)
{
  struct sockaddr_storage ss = {0};
  socklen_t sl = af == AF_INET ? sizeof(struct sockaddr_in)
                               : sizeof(struct sockaddr_in6);
  int l = socket(af, SOCK_STREAM, 0), c, a;

  if (l < 0)
    return false;
  ss.ss_family = (sa_family_t)af;
  if (af == AF_INET)
    ((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else
    ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
  if (bind(l, (struct sockaddr *)&ss, sl) || listen(l, 1) ||
      getsockname(l, (struct sockaddr *)&ss, &sl)) {
    close(l);
    return false;
  }
  c = socket(af, SOCK_STREAM, 0);
  assert_true(c >= 0);
  assert_int_equal(connect(c, (struct sockaddr *)&ss, sl), 0);
  a = accept(l, NULL, NULL);
  assert_true(a >= 0);
  sl = sizeof(*local);
  assert_int_equal(getsockname(a, (struct sockaddr *)local, &sl), 0);
  sl = sizeof(*remote);
  assert_int_equal(getpeername(a, (struct sockaddr *)remote, &sl), 0);
  fds[0] = l;
  fds[1] = c;
  fds[2] = a;
  return true;
}

static void check_family(int af)
{
  struct sockaddr_storage local, remote;
  int fds[3];

  if (!pair(af, fds, &local, &remote)) {
    print_message("no loopback for family %d: skipped\n", af);
    return;
  }
  assert_true(gw_addr_is_loopback((struct sockaddr *)&local));
  assert_true(gw_addr_is_loopback((struct sockaddr *)&remote));
  assert_int_equal(gw_peer_uid((struct sockaddr *)&local,
                               (struct sockaddr *)&remote),
                   (int64_t)getuid());
  assert_int_equal(gw_peer_uid_proc((struct sockaddr *)&local,
                                    (struct sockaddr *)&remote),
                   (int64_t)getuid());
  /* the client closed its socket: netlink finds no full socket, and the
     answer is "gone" (no scan of /proc/net/tcp, whose length other users
     control) */
  close(fds[1]);
  assert_int_equal(gw_peer_uid((struct sockaddr *)&local,
                               (struct sockaddr *)&remote), GW_PEER_GONE);
  /* a 4-tuple nobody has: the same */
  if (af == AF_INET)
    ((struct sockaddr_in *)&remote)->sin_port ^= htons(1);
  else
    ((struct sockaddr_in6 *)&remote)->sin6_port ^= htons(1);
  assert_int_equal(gw_peer_uid((struct sockaddr *)&local,
                               (struct sockaddr *)&remote), GW_PEER_GONE);
  close(fds[0]);
  close(fds[2]);
}

static void test_ipv4(void **state)
{
  (void)state;
  check_family(AF_INET);
}

static void test_ipv6(void **state)
{
  (void)state;
  check_family(AF_INET6);
}

static void test_loopback(void **state)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  struct sockaddr_in6 b = {.sin6_family = AF_INET6};

  (void)state;
  inet_pton(AF_INET, "127.1.2.3", &a.sin_addr);
  assert_true(gw_addr_is_loopback((struct sockaddr *)&a));
  inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
  assert_false(gw_addr_is_loopback((struct sockaddr *)&a));
  inet_pton(AF_INET6, "::1", &b.sin6_addr);
  assert_true(gw_addr_is_loopback((struct sockaddr *)&b));
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &b.sin6_addr);
  assert_true(gw_addr_is_loopback((struct sockaddr *)&b));
  inet_pton(AF_INET6, "fe80::1", &b.sin6_addr);
  assert_false(gw_addr_is_loopback((struct sockaddr *)&b));
  assert_false(gw_addr_is_loopback(NULL));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ipv4),
      cmocka_unit_test(test_ipv6),
      cmocka_unit_test(test_loopback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
