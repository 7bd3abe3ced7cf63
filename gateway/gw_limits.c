/*
 * gw_limits: per-peer counters (see gw_limits.h). A small chained hash
 * table keyed by the peer's identity, entries freed when every counter is
 * back at zero.
 */
#include "gateway/gw_limits.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "gateway/gw_peer.h"

#define BUCKETS 256

struct entry {
  struct gw_peer_id id;
  unsigned conns;     /* open, verified or not */
  unsigned strangers; /* open, not verified */
  unsigned uploads;
  struct entry *next;
};

struct gw_limits {
  struct gw_limits_cfg cfg;
  pthread_mutex_t mu;
  struct entry *tab[BUCKETS]; /* protected by mu */
  unsigned strangers;         /* protected by mu */
};

struct gw_peer_id gw_peer_id_of(const struct sockaddr *a, bool local,
                                int64_t uid)
{
  struct gw_peer_id p;

  memset(&p, 0, sizeof(p));
  if (local) {
    p.kind = 'u';
    memcpy(p.b, &uid, sizeof(uid));
  } else if (a && a->sa_family == AF_INET) {
    memcpy(p.b, &((const struct sockaddr_in *)a)->sin_addr, 4);
    p.kind = 4;
  } else if (a && a->sa_family == AF_INET6) {
    const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(x)) {
      memcpy(p.b, x->s6_addr + 12, 4);
      p.kind = 4;
    } else {
      memcpy(p.b, x->s6_addr, 8); /* its /64: one host has them all */
      p.kind = 6;
    }
  }
  return p;
}

static bool is_remote(const struct gw_peer_id *p)
{
  return p->kind == 4 || p->kind == 6;
}

/* A local peer whose uid is unknown (all such share one entry). */
static bool uid_unknown(const struct gw_peer_id *p)
{
  int64_t uid;

  memcpy(&uid, p->b, sizeof(uid));
  return p->kind == 'u' && uid < 0;
}

static unsigned hash(const struct gw_peer_id *p)
{
  uint32_t h = 2166136261u ^ p->kind;

  for (unsigned i = 0; i < sizeof(p->b); i++)
    h = (h ^ p->b[i]) * 16777619u;
  return h % BUCKETS;
}

/* Under mu: p's entry, created when create (NULL: none, or no memory). */
static struct entry *find(struct gw_limits *l, const struct gw_peer_id *p,
                          bool create)
{
  struct entry **head = &l->tab[hash(p)], *e;

  for (e = *head; e; e = e->next)
    if (memcmp(&e->id, p, sizeof(*p)) == 0)
      return e;
  if (!create)
    return NULL;
  e = calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  e->id = *p;
  e->next = *head;
  *head = e;
  return e;
}

/* Under mu: free e if it counts nothing. */
static void maybe_free(struct gw_limits *l, struct entry *e)
{
  struct entry **p = &l->tab[hash(&e->id)];

  if (e->conns || e->uploads)
    return;
  while (*p != e)
    p = &(*p)->next;
  *p = e->next;
  free(e);
}

struct gw_limits *gw_limits_create(const struct gw_limits_cfg *cfg)
{
  struct gw_limits *l = calloc(1, sizeof(*l));

  if (!l)
    return NULL;
  l->cfg = *cfg;
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

static bool full(unsigned n, unsigned max)
{
  return max && n >= max;
}

/* Under mu: p's share of strangers (e: its entry, NULL when it has none). */
static unsigned peer_share(const struct gw_limits *l, const struct gw_peer_id *p,
                           const struct entry *e)
{
  /* a peer with a verified connection open has proved its key: room for
     a pool of connections opening at once, still bounded */
  if (e && e->conns > e->strangers && !uid_unknown(p))
    return l->cfg.strangers_per_peer * 4;
  return l->cfg.strangers_per_peer;
}

/* Under mu: the checks of peer p alone (e: its entry or NULL). */
static enum gw_refusal admit_peer(const struct gw_limits *l,
                                  const struct gw_peer_id *p,
                                  const struct entry *e)
{
  if (e && is_remote(p) && full(e->conns, l->cfg.conns_per_addr))
    return GW_REFUSE_ADDR;
  if (e && full(e->strangers, peer_share(l, p, e)))
    return GW_REFUSE_PEER;
  return GW_ADMIT;
}

/* Under mu: the peer holding the most strangers (NULL: none). */
static struct entry *largest(struct gw_limits *l)
{
  struct entry *big = NULL;

  for (unsigned i = 0; i < BUCKETS; i++)
    for (struct entry *e = l->tab[i]; e; e = e->next)
      if (!big || e->strangers > big->strangers)
        big = e;
  return big;
}

enum gw_refusal gw_limits_precheck(struct gw_limits *l,
                                   const struct sockaddr *a)
{
  struct gw_peer_id p = gw_peer_id_of(a, false, -1);
  enum gw_refusal why = GW_ADMIT;

  if (!is_remote(&p) || gw_addr_is_loopback(a))
    return GW_ADMIT; /* its peer (a uid, or an address) is known later */
  pthread_mutex_lock(&l->mu);
  why = admit_peer(l, &p, find(l, &p, false));
  pthread_mutex_unlock(&l->mu);
  return why;
}

enum gw_refusal gw_limits_open(struct gw_limits *l, const struct gw_peer_id *p,
                               bool *evict, struct gw_peer_id *evicted)
{
  struct entry *e, *big;
  enum gw_refusal why;

  *evict = false;
  pthread_mutex_lock(&l->mu);
  e = find(l, p, false);
  why = admit_peer(l, p, e);
  if (why == GW_ADMIT && full(l->strangers, l->cfg.strangers)) {
    /* full: room only for a peer holding fewer than the largest, at the
       largest's expense */
    big = largest(l);
    if (big && big->strangers > (e ? e->strangers + 1 : 1)) {
      *evict = true;
      *evicted = big->id;
    } else {
      why = GW_REFUSE_STRANGERS;
    }
  }
  if (why == GW_ADMIT) {
    e = e ? e : find(l, p, true);
    if (e) {
      e->conns++;
      e->strangers++;
      l->strangers++;
    } else {
      why = GW_REFUSE_STRANGERS; /* no memory for its entry */
      *evict = false;
    }
  }
  pthread_mutex_unlock(&l->mu);
  return why;
}

void gw_limits_verified(struct gw_limits *l, const struct gw_peer_id *p)
{
  struct entry *e;

  pthread_mutex_lock(&l->mu);
  e = find(l, p, false);
  if (e && e->strangers) {
    e->strangers--;
    l->strangers--;
  }
  pthread_mutex_unlock(&l->mu);
}

void gw_limits_close(struct gw_limits *l, const struct gw_peer_id *p,
                     bool verified)
{
  struct entry *e;

  pthread_mutex_lock(&l->mu);
  e = find(l, p, false);
  if (e && e->conns) {
    e->conns--;
    if (!verified && e->strangers) {
      e->strangers--;
      l->strangers--;
    }
    maybe_free(l, e);
  }
  pthread_mutex_unlock(&l->mu);
}

unsigned gw_limits_strangers(struct gw_limits *l)
{
  unsigned n;

  pthread_mutex_lock(&l->mu);
  n = l->strangers;
  pthread_mutex_unlock(&l->mu);
  return n;
}

bool gw_limits_upload_take(struct gw_limits *l, const struct gw_peer_id *p)
{
  struct entry *e;
  bool ok = false;

  if (!l->cfg.uploads_per_peer)
    return true;
  pthread_mutex_lock(&l->mu);
  e = find(l, p, true);
  if (e && e->uploads < l->cfg.uploads_per_peer) {
    e->uploads++;
    ok = true;
  }
  if (e)
    maybe_free(l, e);
  pthread_mutex_unlock(&l->mu);
  return ok;
}

void gw_limits_upload_done(struct gw_limits *l, const struct gw_peer_id *p)
{
  struct entry *e;

  if (!l->cfg.uploads_per_peer)
    return;
  pthread_mutex_lock(&l->mu);
  e = find(l, p, false);
  if (e && e->uploads) {
    e->uploads--;
    maybe_free(l, e);
  }
  pthread_mutex_unlock(&l->mu);
}
