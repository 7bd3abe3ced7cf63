/*
 * gw_dcallow: the DC target rule (see gw_dcallow.h). Addresses are kept
 * and compared as 16 bytes, an IPv4 address as its IPv4-mapped IPv6 form
 * (::ffff:a.b.c.d), which is also how RoCE v2 writes an IPv4 GID.
 */
#include "gateway/gw_dcallow.h"

#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "gateway/gw_peer.h"

#define ENTRIES_MAX 64

enum rule { RULE_PEER, RULE_LIST, RULE_ANY };

struct entry {
  bool lid;          /* a LID range, else an address prefix */
  uint8_t addr[16];  /* the prefix (bits past plen zero) */
  unsigned plen;     /* 0..128 */
  uint32_t lid_lo, lid_hi;
};

struct gw_dcallow {
  enum rule rule;
  size_t n;
  struct entry e[ENTRIES_MAX];
};

static void v4_mapped(uint8_t out[16], const void *v4)
{
  memset(out, 0, 10);
  out[10] = out[11] = 0xff;
  memcpy(out + 12, v4, 4);
}

/* a's address as 16 bytes; false when it is neither IPv4 nor IPv6. */
static bool addr16(const struct sockaddr *a, uint8_t out[16])
{
  if (a && a->sa_family == AF_INET) {
    v4_mapped(out, &((const struct sockaddr_in *)a)->sin_addr);
    return true;
  }
  if (a && a->sa_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    return true;
  }
  return false;
}

static bool prefix_has(const uint8_t *pfx, unsigned plen, const uint8_t *x)
{
  unsigned whole = plen / 8, rest = plen % 8;

  if (memcmp(pfx, x, whole))
    return false;
  return !rest || ((pfx[whole] ^ x[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static int bad(char *err, size_t errlen, const char *entry, const char *why)
{
  snprintf(err, errlen, "--rdma-dc-targets: '%s': %s", entry, why);
  return -EINVAL;
}

/* Decimal, or hex after 0x: digits only (no sign, no space). */
static bool parse_num(const char *s, unsigned long max, unsigned long *v)
{
  bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char *d = hex ? s + 2 : s;
  char *end;

  if (!d[0] || strspn(d, hex ? "0123456789abcdefABCDEF" : "0123456789") !=
                   strlen(d))
    return false;
  errno = 0;
  *v = strtoul(d, &end, hex ? 16 : 10);
  return !errno && !*end && *v <= max;
}

static bool parse_u32(const char *s, uint32_t *v)
{
  unsigned long n;

  if (!parse_num(s, 0xffff, &n))
    return false;
  *v = (uint32_t)n;
  return true;
}

/* One list entry (NUL-terminated, no comma) into e. */
static int parse_entry(char *s, struct entry *e, char *err, size_t errlen)
{
  char *slash, *dash;
  uint8_t v4[4];
  unsigned max = 128;

  memset(e, 0, sizeof(*e));
  if (strncmp(s, "lid:", 4) == 0) {
    e->lid = true;
    dash = strchr(s + 4, '-');
    if (dash)
      *dash = '\0';
    if (!parse_u32(s + 4, &e->lid_lo) ||
        !parse_u32(dash ? dash + 1 : s + 4, &e->lid_hi) ||
        e->lid_lo == 0 || e->lid_hi < e->lid_lo)
      return bad(err, errlen, s, "not lid:N or lid:N-M (1..0xffff, N <= M)");
    return 0;
  }
  slash = strchr(s, '/');
  if (slash)
    *slash = '\0';
  if (inet_pton(AF_INET, s, v4) == 1) {
    v4_mapped(e->addr, v4);
    max = 32;
  } else if (inet_pton(AF_INET6, s, e->addr) != 1) {
    return bad(err, errlen, s, "not an IPv4 or IPv6 address or prefix, or "
                               "lid:N[-M] (peer and any stand alone)");
  }
  e->plen = max;
  if (slash) {
    unsigned long n;
    if (slash[1] == '0' && (slash[2] == 'x' || slash[2] == 'X'))
      return bad(err, errlen, slash + 1, "not a prefix length");
    if (!parse_num(slash + 1, max, &n))
      return bad(err, errlen, slash + 1, "not a prefix length");
    e->plen = (unsigned)n;
  }
  if (max == 32)
    e->plen += 96;
  for (unsigned b = e->plen; b < 128; b++) /* the host bits: zero */
    e->addr[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
  return 0;
}

int gw_dcallow_parse(const char *spec, struct gw_dcallow **out, char *err,
                     size_t errlen)
{
  struct gw_dcallow *a = calloc(1, sizeof(*a));
  char *copy, *tok, *save = NULL;
  int rc = 0;

  *out = NULL;
  if (!a)
    return -ENOMEM;
  if (!spec || strcmp(spec, "peer") == 0 || strcmp(spec, "any") == 0) {
    a->rule = spec && strcmp(spec, "any") == 0 ? RULE_ANY : RULE_PEER;
    *out = a;
    return 0;
  }
  a->rule = RULE_LIST;
  copy = strdup(spec);
  if (!copy) {
    free(a);
    return -ENOMEM;
  }
  for (tok = strtok_r(copy, ",", &save); tok && !rc;
       tok = strtok_r(NULL, ",", &save)) {
    if (a->n == ENTRIES_MAX)
      rc = bad(err, errlen, tok, "more than 64 entries");
    else
      rc = parse_entry(tok, &a->e[a->n++], err, errlen);
  }
  if (!rc && a->n == 0)
    rc = bad(err, errlen, spec, "an empty list");
  free(copy);
  if (rc) {
    free(a);
    return rc;
  }
  *out = a;
  return 0;
}

void gw_dcallow_free(struct gw_dcallow *a)
{
  free(a);
}

bool gw_dcallow_is_any(const struct gw_dcallow *a)
{
  return a->rule == RULE_ANY;
}

/* Is gid an address of one of this host's interfaces? */
static bool host_has(const uint8_t gid[16])
{
  struct ifaddrs *ifs, *i;
  uint8_t x[16];
  bool found = false;

  if (getifaddrs(&ifs))
    return false;
  for (i = ifs; i && !found; i = i->ifa_next)
    found = addr16(i->ifa_addr, x) && memcmp(x, gid, 16) == 0;
  freeifaddrs(ifs);
  return found;
}

static int refuse(char *why, size_t whylen, const char *fmt)
{
  if (why && whylen)
    snprintf(why, whylen, "%s", fmt);
  return -EACCES;
}

/* Under a list: is a LID range / a prefix there that holds it? */
static bool lid_listed(const struct gw_dcallow *a, uint16_t lid)
{
  for (size_t i = 0; i < a->n; i++)
    if (a->e[i].lid && lid >= a->e[i].lid_lo && lid <= a->e[i].lid_hi)
      return true;
  return false;
}

static bool gid_listed(const struct gw_dcallow *a, const uint8_t gid[16])
{
  for (size_t i = 0; i < a->n; i++)
    if (!a->e[i].lid && prefix_has(a->e[i].addr, a->e[i].plen, gid))
      return true;
  return false;
}

int gw_dcallow_check(const struct gw_dcallow *a, const struct rdx_dc *dc,
                     const struct sockaddr *client, char *why, size_t whylen)
{
  uint8_t from[16];

  if (a->rule == RULE_ANY)
    return 0;
  if (a->rule == RULE_LIST) {
    /* every address the token gives: on InfiniBand the LID routes the
       RDMA whatever the GID says */
    if ((dc->lid && !lid_listed(a, dc->lid)) ||
        (dc->has_gid && !gid_listed(a, dc->gid)) || (!dc->lid && !dc->has_gid))
      return refuse(why, whylen,
                    "the dc token's target is not in --rdma-dc-targets");
    return 0;
  }
  if (!dc->has_gid || dc->lid)
    return refuse(why, whylen,
                  "a dc token with a LID or without a GID: this gateway "
                  "takes only RoCE targets at the client's own address "
                  "(--rdma-dc-targets peer; InfiniBand needs lid: ranges)");
  if (!addr16(client, from))
    return refuse(why, whylen, "the client's address is unknown");
  if (gw_addr_is_loopback(client) ? host_has(dc->gid)
                                  : memcmp(from, dc->gid, 16) == 0)
    return 0;
  return refuse(why, whylen,
                "the dc token's GID is not the client's own address "
                "(--rdma-dc-targets peer)");
}
