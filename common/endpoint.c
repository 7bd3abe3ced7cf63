/* endpoint: see endpoint.h. */
#include "common/endpoint.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

static bool has_space_or_cntrl(const char *s)
{
  for (; *s; s++)
    if (isspace((unsigned char)*s) || iscntrl((unsigned char)*s))
      return true;
  return false;
}

/* The host starting at s into ep->host; *end is just after it. */
static const char *parse_host(const char *s, struct endpoint *ep,
                              const char **end)
{
  const char *h = s, *e;
  char addr[ENDPOINT_HOST_MAX];
  struct in6_addr a6;
  size_t n;

  if (*s == '[') {
    e = strchr(++h, ']');
    if (!e)
      return "has an IPv6 host without its closing ']'";
    *end = e + 1;
    ep->ipv6 = true;
  } else {
    e = s + strcspn(s, ":/?#");
    *end = e;
  }
  n = (size_t)(e - h);
  if (n == 0)
    return "has no host name";
  if (n >= sizeof(ep->host))
    return "has a host name that is too long";
  memcpy(ep->host, h, n);
  ep->host[n] = '\0';
  /* an IPv6 zone ("%25eth0" in a URL) is kept for the caller's resolver;
     the address before it must be one */
  memcpy(addr, ep->host, n + 1);
  addr[strcspn(addr, "%")] = '\0';
  if (ep->ipv6 ? inet_pton(AF_INET6, addr, &a6) != 1
               : strpbrk(ep->host, "[]") != NULL)
    return "has a bad host name";
  return NULL;
}

/* An optional ":port" at s; *end is just after it. */
static const char *parse_port(const char *s, struct endpoint *ep,
                              const char **end)
{
  unsigned long v = 0;
  const char *p = s + 1;

  *end = s;
  if (*s != ':')
    return NULL;
  if (!*p || *p == '/') { /* "host:": the scheme's port, as curl has it */
    *end = p;
    return NULL;
  }
  for (; isdigit((unsigned char)*p) && p - s <= 5; p++)
    v = v * 10 + (unsigned long)(*p - '0');
  if (p == s + 1 || v == 0 || v > 65535 || isdigit((unsigned char)*p))
    return "has a bad port (1 to 65535)";
  ep->port = (unsigned)v;
  ep->port_given = true;
  *end = p;
  return NULL;
}

static const char *parse(const char *url, struct endpoint *ep)
{
  const char *hs, *hend, *pend, *why;

  if (strncasecmp(url, "http://", 7) == 0)
    hs = url + 7;
  else if (strncasecmp(url, "https://", 8) == 0)
    hs = url + 8, ep->https = true;
  else
    return "is not an http:// or https:// URL";
  if (!*hs || strchr("/?#:", *hs))
    return "has no host name";
  if (has_space_or_cntrl(url))
    return "contains spaces or control characters";
  hend = hs + strcspn(hs, "/?#");
  if (memchr(hs, '@', (size_t)(hend - hs)))
    return "has a user name (user@host)";
  ep->port = ep->https ? 443 : 80;
  if ((why = parse_host(hs, ep, &hend)) || (why = parse_port(hend, ep, &pend)))
    return why;
  if (*pend && *pend != '/')
    return strchr("?#", *pend) ? "has a query or fragment (? or #)"
                               : "has a bad host name";
  if (strpbrk(pend, "?#"))
    return "has a query or fragment (? or #)";
  ep->authority = hs;
  ep->authority_len = (size_t)(pend - hs);
  ep->path = pend;
  ep->path_len = strlen(pend);
  while (ep->path_len > 0 && pend[ep->path_len - 1] == '/')
    ep->path_len--;
  return NULL;
}

int endpoint_parse(const char *url, struct endpoint *ep, const char **why)
{
  memset(ep, 0, sizeof(*ep));
  *why = url ? parse(url, ep) : "is not set";
  return *why ? -EINVAL : 0;
}

bool endpoint_is_loopback(const struct endpoint *ep)
{
  struct in6_addr a6;
  struct in_addr a4;

  if (ep->ipv6)
    return inet_pton(AF_INET6, ep->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
  if (!strcasecmp(ep->host, "localhost"))
    return true;
  return inet_pton(AF_INET, ep->host, &a4) == 1 &&
         (ntohl(a4.s_addr) >> 24) == 127;
}

bool endpoint_list_next(const char **list, const char **url, size_t *len)
{
  const char *p = *list + strspn(*list, ";");

  *url = p;
  *len = strcspn(p, ";");
  *list = p + *len;
  return *len > 0;
}

bool endpoint_same(const struct endpoint *a, const struct endpoint *b)
{
  return a->https == b->https && a->port == b->port &&
         !strcasecmp(a->host, b->host) && a->path_len == b->path_len &&
         !strncmp(a->path, b->path, a->path_len);
}

/* Item [u, u + len) of a list parsed into *ep (its text in buf). */
static bool parse_item(const char *u, size_t len, char *buf, size_t buflen,
                       struct endpoint *ep)
{
  const char *why;

  if (len >= buflen)
    return false;
  memcpy(buf, u, len);
  buf[len] = '\0';
  return endpoint_parse(buf, ep, &why) == 0;
}

bool endpoint_lists_meet(const char *a, const char *b)
{
  char ba[2048], bb[2048];
  struct endpoint ea, eb;
  const char *ua, *ub, *pb;
  size_t la, lb;

  while (a && endpoint_list_next(&a, &ua, &la)) {
    if (!parse_item(ua, la, ba, sizeof(ba), &ea))
      continue;
    for (pb = b; pb && endpoint_list_next(&pb, &ub, &lb);)
      if (parse_item(ub, lb, bb, sizeof(bb), &eb) && endpoint_same(&ea, &eb))
        return true;
  }
  return false;
}
