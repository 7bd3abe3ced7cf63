/*
 * gw_conns: admission and the strangers' deadline (see gw_conns.h).
 * Strangers wait in a list in the order they opened, which is the order
 * of their deadlines (one deadline for all): the watcher sleeps until the
 * first one's.
 */
#include "gateway/gw_conns.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/slog.h"
#include "gateway/gw_peer.h"

struct gw_conn {
  struct gw_peer_id peer;
  bool admitted;        /* counted in gw_limits; else refused, shut down */
  int fd;               /* a duplicate of the connection's socket */
  uint64_t deadline_ms; /* clock_mono_ms */
  bool verified;        /* protected by gw_conns.mu */
  bool waiting;         /* in the strangers' list; protected by mu */
  struct gw_conn *prev, *next; /* protected by mu */
};

struct gw_conns {
  struct gw_limits *limits;
  struct gw_stats *stats;
  unsigned deadline_ms;
  pthread_t watcher;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct gw_conn *head, *tail; /* strangers by deadline; protected by mu */
  bool stop;                   /* protected by mu */
};

/* Under mu. */
static void unlink_conn(struct gw_conns *c, struct gw_conn *k)
{
  if (!k->waiting)
    return;
  *(k->prev ? &k->prev->next : &c->head) = k->next;
  *(k->next ? &k->next->prev : &c->tail) = k->prev;
  k->prev = k->next = NULL;
  k->waiting = false;
}

static void *watch(void *arg)
{
  struct gw_conns *c = arg;
  struct gw_conn *k;
  struct timespec ts;

  pthread_mutex_lock(&c->mu);
  while (!c->stop) {
    k = c->head;
    if (!k) {
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    if (clock_mono_ms() < k->deadline_ms) {
      ts = clock_at(k->deadline_ms);
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
      continue;
    }
    unlink_conn(c, k);
    /* the record (and its socket) lives until gw_conns_close, which
       takes mu: shutting it down here cannot touch another socket */
    shutdown(k->fd, SHUT_RDWR);
    gw_stat_add(c->stats, head_timeouts, 1);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

int gw_conns_create(struct gw_limits *limits, struct gw_stats *stats,
                    unsigned deadline_ms, struct gw_conns **out)
{
  struct gw_conns *c = calloc(1, sizeof(*c));
  int rc;

  *out = NULL;
  if (!c)
    return -ENOMEM;
  c->limits = limits;
  c->stats = stats;
  c->deadline_ms = deadline_ms;
  rc = -pthread_mutex_init(&c->mu, NULL);
  if (rc)
    goto free_c;
  rc = -clock_cond_init(&c->cv);
  if (rc)
    goto destroy_mu;
  rc = -pthread_create(&c->watcher, NULL, watch, c);
  if (rc)
    goto destroy_cv;
  *out = c;
  return 0;

destroy_cv:
  pthread_cond_destroy(&c->cv);
destroy_mu:
  pthread_mutex_destroy(&c->mu);
free_c:
  free(c);
  return rc;
}

void gw_conns_destroy(struct gw_conns *c)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->mu);
  c->stop = true;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->watcher, NULL);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* Our end of socket fd still established (its peer has not closed)? */
static bool still_open(int fd)
{
  struct tcp_info ti;
  socklen_t tl = sizeof(ti);

  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 &&
         ti.tcpi_state == TCP_ESTABLISHED;
}

/*
 * The peer of the client on socket fd at address a. A client on this host
 * is its user, whatever address it came from: asked of NETLINK_SOCK_DIAG
 * for every client (a remote one is simply not found). A loopback client
 * netlink does not find has closed already (GW_REFUSE_GONE), unless our
 * end is still established, which means netlink cannot see sockets here:
 * then gw_peer_uid's /proc scan, for that one connection.
 */
static enum gw_refusal peer_of(int fd, const struct sockaddr *a,
                               struct gw_peer_id *p)
{
  struct sockaddr_storage local;
  socklen_t sl = sizeof(local);
  bool lo = gw_addr_is_loopback(a);
  int64_t uid = -1;

  if (getsockname(fd, (struct sockaddr *)&local, &sl) == 0) {
    uid = gw_peer_uid_netlink((struct sockaddr *)&local, a);
    if (uid == -1 && lo) /* netlink cannot be asked here */
      uid = gw_peer_uid_proc((struct sockaddr *)&local, a);
    if (uid == GW_PEER_GONE && lo) {
      if (!still_open(fd))
        return GW_REFUSE_GONE;
      uid = gw_peer_uid_proc((struct sockaddr *)&local, a);
    }
  }
  *p = gw_peer_id_of(a, lo || uid >= 0, uid < 0 ? -1 : uid);
  return GW_ADMIT;
}

void gw_conns_count_refusal(struct gw_stats *s, enum gw_refusal why)
{
  if (why == GW_REFUSE_ADDR)
    gw_stat_add(s, refused_conns, 1);
  else if (why == GW_REFUSE_PEER)
    gw_stat_add(s, refused_peer_strangers, 1);
  else if (why == GW_REFUSE_GONE)
    gw_stat_add(s, refused_gone, 1);
  else
    gw_stat_add(s, refused_strangers, 1);
}

/* Under mu: shut down the oldest waiting stranger of peer p (its place
   taken by a newcomer of a smaller peer). */
static void evict_oldest(struct gw_conns *c, const struct gw_peer_id *p)
{
  for (struct gw_conn *k = c->head; k; k = k->next)
    if (memcmp(&k->peer, p, sizeof(*p)) == 0) {
      unlink_conn(c, k);
      shutdown(k->fd, SHUT_RDWR);
      gw_stat_add(c->stats, evicted_strangers, 1);
      return;
    }
}

struct gw_conn *gw_conns_open(struct gw_conns *c, int fd,
                              const struct sockaddr *a)
{
  struct gw_conn *k = calloc(1, sizeof(*k));
  struct gw_peer_id victim;
  enum gw_refusal why;
  bool evict = false, first;

  if (!k) {
    shutdown(fd, SHUT_RDWR);
    return NULL;
  }
  k->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (k->fd < 0) {
    log_warn("a client connection: cannot hold its socket: %s",
             strerror(errno));
    why = GW_REFUSE_STRANGERS;
  } else {
    why = peer_of(fd, a, &k->peer);
  }
  if (why == GW_ADMIT)
    why = gw_limits_open(c->limits, &k->peer, &evict, &victim);
  if (why != GW_ADMIT) {
    gw_conns_count_refusal(c->stats, why);
    shutdown(fd, SHUT_RDWR); /* and nothing it sent is served */
    return k;
  }
  k->admitted = true;
  k->deadline_ms = clock_mono_ms() + c->deadline_ms;
  pthread_mutex_lock(&c->mu);
  if (evict)
    evict_oldest(c, &victim);
  first = !c->head;
  k->prev = c->tail;
  *(c->tail ? &c->tail->next : &c->head) = k;
  c->tail = k;
  k->waiting = true;
  if (first)
    pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return k;
}

bool gw_conn_admitted(const struct gw_conn *k)
{
  return k && k->admitted;
}

void gw_conns_verified(struct gw_conns *c, struct gw_conn *k)
{
  bool was;

  if (!k || !k->admitted)
    return;
  pthread_mutex_lock(&c->mu);
  was = k->verified;
  k->verified = true;
  unlink_conn(c, k);
  pthread_mutex_unlock(&c->mu);
  if (!was)
    gw_limits_verified(c->limits, &k->peer);
}

void gw_conns_close(struct gw_conns *c, struct gw_conn *k)
{
  bool verified;

  if (!k)
    return;
  pthread_mutex_lock(&c->mu);
  unlink_conn(c, k);
  verified = k->verified;
  pthread_mutex_unlock(&c->mu);
  if (k->admitted)
    gw_limits_close(c->limits, &k->peer, verified);
  if (k->fd >= 0)
    close(k->fd);
  free(k);
}

const struct gw_peer_id *gw_conn_peer(const struct gw_conn *k)
{
  return &k->peer;
}
