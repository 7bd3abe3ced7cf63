/*
 * gw_peer: peer identity of loopback TCP connections (see gw_peer.h).
 *
 * The peer's socket is the one whose source is our remote end and whose
 * destination is our local end. NETLINK_SOCK_DIAG answers an exact lookup of
 * that 4-tuple (inet_diag_req_v2 without NLM_F_DUMP) with an inet_diag_msg
 * carrying idiag_uid; /proc/net/tcp(6) lists the same sockets with their uid
 * when netlink is not available.
 */
#include "gateway/gw_peer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>

bool gw_addr_is_loopback(const struct sockaddr *a)
{
  if (!a)
    return false;
  if (a->sa_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)a;
    return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
  }
  if (a->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
    if (IN6_IS_ADDR_LOOPBACK(&s->sin6_addr))
      return true;
    return IN6_IS_ADDR_V4MAPPED(&s->sin6_addr) && s->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

/* Address bytes and port of a sockaddr; family AF_INET or AF_INET6. */
struct ep {
  int family;
  uint8_t addr[16]; /* network order; v4 in addr[0..3] */
  uint16_t port;    /* host order */
};

static int ep_from(const struct sockaddr *a, struct ep *e)
{
  memset(e, 0, sizeof(*e));
  if (a->sa_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)a;
    e->family = AF_INET;
    memcpy(e->addr, &s->sin_addr, 4);
    e->port = ntohs(s->sin_port);
    return 0;
  }
  if (a->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
    e->family = AF_INET6;
    memcpy(e->addr, &s->sin6_addr, 16);
    e->port = ntohs(s->sin6_port);
    return 0;
  }
  return -EAFNOSUPPORT;
}

static int64_t uid_netlink(const struct ep *src, const struct ep *dst)
{
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 r;
  } req;
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  struct timeval tv = {.tv_sec = 1};
  union {
    char buf[8192];
    struct nlmsghdr align;
  } u;
  int64_t uid = -1;
  ssize_t n;
  int fd;

  fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  memset(&req, 0, sizeof(req));
  req.nlh.nlmsg_len = sizeof(req);
  req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.nlh.nlmsg_flags = NLM_F_REQUEST;
  req.nlh.nlmsg_seq = 1;
  req.r.sdiag_family = (uint8_t)src->family;
  req.r.sdiag_protocol = IPPROTO_TCP;
  /* a full socket only: a TIME_WAIT one (the client closed at once) is
     reported with uid 0, which would let anyone pass for root */
  req.r.idiag_states = (1u << TCP_ESTABLISHED) | (1u << TCP_CLOSE_WAIT);
  req.r.id.idiag_sport = htons(src->port);
  req.r.id.idiag_dport = htons(dst->port);
  memcpy(req.r.id.idiag_src, src->addr, src->family == AF_INET ? 4 : 16);
  memcpy(req.r.id.idiag_dst, dst->addr, dst->family == AF_INET ? 4 : 16);
  req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
    goto out;
  n = recv(fd, u.buf, sizeof(u.buf), 0);
  if (n <= 0)
    goto out;
  uid = GW_PEER_GONE; /* answered: found below, or no such full socket */
  for (struct nlmsghdr *h = &u.align; NLMSG_OK(h, (size_t)n);
       h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
      break;
    if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
        h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
      const struct inet_diag_msg *m = NLMSG_DATA(h);
      if (m->id.idiag_sport == htons(src->port) &&
          m->id.idiag_dport == htons(dst->port) && m->idiag_inode != 0 &&
          (m->idiag_state == TCP_ESTABLISHED ||
           m->idiag_state == TCP_CLOSE_WAIT)) {
        uid = m->idiag_uid;
        break;
      }
    }
  }
out:
  close(fd);
  return uid;
}

/* Parse "HEX:PORT" as /proc/net/tcp(6) prints it. */
static bool proc_ep(const char *s, int family, struct ep *e)
{
  unsigned words[4], port;
  int nw = family == AF_INET ? 1 : 4;

  memset(e, 0, sizeof(*e));
  e->family = family;
  for (int i = 0; i < nw; i++)
    if (sscanf(s + 8 * i, "%8x", &words[i]) != 1)
      return false;
  if (s[8 * nw] != ':' || sscanf(s + 8 * nw + 1, "%x", &port) != 1)
    return false;
  /* Each 32-bit word is printed as the host-order value of its bytes. */
  for (int i = 0; i < nw; i++)
    memcpy(e->addr + 4 * i, &words[i], 4);
  e->port = (uint16_t)port;
  return true;
}

static bool ep_eq(const struct ep *a, const struct ep *b)
{
  return a->family == b->family && a->port == b->port &&
         memcmp(a->addr, b->addr, 16) == 0;
}

static int64_t uid_proc(const struct ep *src, const struct ep *dst)
{
  const char *path = src->family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6";
  char line[512], l[80], r[80];
  int64_t uid = -1;
  FILE *f = fopen(path, "re");

  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f)) {
    unsigned st;
    long u;
    unsigned long inode;
    struct ep a, b;
    if (sscanf(line, " %*d: %79s %79s %x %*s %*s %*s %ld %*d %lu", l, r, &st,
               &u, &inode) != 5)
      continue;
    /* a full socket only (see uid_netlink): established or close-wait */
    if ((st != TCP_ESTABLISHED && st != TCP_CLOSE_WAIT) || inode == 0)
      continue;
    if (proc_ep(l, src->family, &a) && proc_ep(r, src->family, &b) &&
        ep_eq(&a, src) && ep_eq(&b, dst)) {
      uid = u;
      break;
    }
  }
  fclose(f);
  return uid;
}

static int endpoints(const struct sockaddr *local, const struct sockaddr *remote,
                     struct ep *src, struct ep *dst)
{
  if (!local || !remote || ep_from(remote, src) || ep_from(local, dst) ||
      src->family != dst->family)
    return -EINVAL;
  return 0;
}

int64_t gw_peer_uid_proc(const struct sockaddr *local,
                         const struct sockaddr *remote)
{
  struct ep src, dst;

  if (endpoints(local, remote, &src, &dst))
    return -1;
  return uid_proc(&src, &dst);
}

int64_t gw_peer_uid_netlink(const struct sockaddr *local,
                            const struct sockaddr *remote)
{
  struct ep src, dst;

  if (endpoints(local, remote, &src, &dst))
    return -1;
  return uid_netlink(&src, &dst);
}

int64_t gw_peer_uid(const struct sockaddr *local, const struct sockaddr *remote)
{
  struct ep src, dst;
  int64_t uid;

  if (endpoints(local, remote, &src, &dst))
    return -1;
  uid = uid_netlink(&src, &dst);
  if (uid == -1) /* netlink unavailable (not: the socket not found) */
    uid = uid_proc(&src, &dst);
  return uid;
}
