/*
 * gw_limits: per-address counters (see gw_limits.h). A small chained hash
 * table keyed by the address bytes (IPv4, IPv6, v4-mapped IPv6 as IPv4),
 * entries freed when both counters reach zero.
 */
#include "gateway/gw_limits.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "gateway/gw_peer.h"

#define BUCKETS 256

struct addr_key {
  uint8_t b[16];
  uint8_t len; /* 4 or 16; 0: not an IP address */
};

struct entry {
  struct addr_key k;
  unsigned conns, uploads;
  struct entry *next;
};

struct gw_limits {
  unsigned conns_max, uploads_max;
  pthread_mutex_t mu;
  struct entry *tab[BUCKETS]; /* protected by mu */
};

static struct addr_key key_of(const struct sockaddr *a)
{
  struct addr_key k = {{0}, 0};

  if (a && a->sa_family == AF_INET) {
    memcpy(k.b, &((const struct sockaddr_in *)a)->sin_addr, 4);
    k.len = 4;
  } else if (a && a->sa_family == AF_INET6) {
    const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(x)) {
      memcpy(k.b, x->s6_addr + 12, 4);
      k.len = 4;
    } else {
      memcpy(k.b, x->s6_addr, 16);
      k.len = 16;
    }
  }
  return k;
}

static unsigned hash(const struct addr_key *k)
{
  uint32_t h = 2166136261u;

  for (unsigned i = 0; i < k->len; i++)
    h = (h ^ k->b[i]) * 16777619u;
  return h % BUCKETS;
}

/* Under mu: k's entry, created when create (NULL: none, or no memory). */
static struct entry *find(struct gw_limits *l, const struct addr_key *k,
                          bool create)
{
  struct entry **head = &l->tab[hash(k)], *e;

  for (e = *head; e; e = e->next)
    if (e->k.len == k->len && memcmp(e->k.b, k->b, k->len) == 0)
      return e;
  if (!create)
    return NULL;
  e = calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  e->k = *k;
  e->next = *head;
  *head = e;
  return e;
}

/* Under mu: free e if it counts nothing. */
static void maybe_free(struct gw_limits *l, struct entry *e)
{
  struct entry **p = &l->tab[hash(&e->k)];

  if (e->conns || e->uploads)
    return;
  while (*p != e)
    p = &(*p)->next;
  *p = e->next;
  free(e);
}

struct gw_limits *gw_limits_create(unsigned conns_per_addr,
                                   unsigned uploads_per_addr)
{
  struct gw_limits *l = calloc(1, sizeof(*l));

  if (!l)
    return NULL;
  l->conns_max = conns_per_addr;
  l->uploads_max = uploads_per_addr;
  pthread_mutex_init(&l->mu, NULL);
  return l;
}

void gw_limits_destroy(struct gw_limits *l)
{
  if (!l)
    return;
  for (unsigned i = 0; i < BUCKETS; i++)
    while (l->tab[i]) {
      struct entry *e = l->tab[i];
      l->tab[i] = e->next;
      free(e);
    }
  pthread_mutex_destroy(&l->mu);
  free(l);
}

/*
 * Count one more (delta 1, if under max: else false) or one fewer (delta
 * -1) of a's connections (upload false) or uploads (upload true).
 */
static bool change(struct gw_limits *l, const struct sockaddr *a, bool upload,
                   int delta, unsigned max)
{
  struct addr_key k = key_of(a);
  struct entry *e;
  unsigned *n;
  bool ok = false;

  pthread_mutex_lock(&l->mu);
  e = find(l, &k, delta > 0);
  if (e) {
    n = upload ? &e->uploads : &e->conns;
    if (delta > 0 && (*n < max || max == 0)) {
      ++*n;
      ok = true;
    } else if (delta < 0 && *n) {
      --*n;
      ok = true;
    }
    maybe_free(l, e);
  }
  pthread_mutex_unlock(&l->mu);
  return ok;
}

bool gw_limits_conn_ok(struct gw_limits *l, const struct sockaddr *a)
{
  struct addr_key k = key_of(a);
  struct entry *e;
  bool ok;

  if (!l->conns_max || gw_addr_is_loopback(a))
    return true;
  pthread_mutex_lock(&l->mu);
  e = find(l, &k, false);
  ok = !e || e->conns < l->conns_max;
  pthread_mutex_unlock(&l->mu);
  return ok;
}

/* Connections are counted even past the limit (MHD may accept one that
   gw_limits_conn_ok saw under it), so that closes balance opens. */
void gw_limits_conn_open(struct gw_limits *l, const struct sockaddr *a)
{
  if (l->conns_max && !gw_addr_is_loopback(a))
    change(l, a, false, 1, 0);
}

void gw_limits_conn_close(struct gw_limits *l, const struct sockaddr *a)
{
  if (l->conns_max && !gw_addr_is_loopback(a))
    change(l, a, false, -1, 0);
}

bool gw_limits_upload_take(struct gw_limits *l, const struct sockaddr *a)
{
  return !l->uploads_max || change(l, a, true, 1, l->uploads_max);
}

void gw_limits_upload_done(struct gw_limits *l, const struct sockaddr *a)
{
  if (l->uploads_max)
    change(l, a, true, -1, 0);
}
