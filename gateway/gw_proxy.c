/*
 * gw_proxy: upstream requests on a fixed worker pool (see gw_proxy.h).
 *
 * DESIGN (threads): --threads workers, each with its own curl easy handle
 * (curl_easy_reset between requests keeps its connection cache). The pool
 * queue (head/tail) is protected by pool->lock. A worker runs one request
 * at a time (gw_upstream_run, whose curl callbacks run on the worker). A
 * worker waits only on its own request's connection thread, which never
 * waits on another request, so the pool cannot deadlock; a request waits
 * in the queue while every worker is busy.
 */
#include "gateway/gw_proxy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "gateway/gw_upstream.h"

struct gw_proxy {
  struct gw_upstream *up;
  pthread_t *th;
  unsigned n_th;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  struct gw_req *head, *tail; /* protected by lock */
  bool stop;                  /* protected by lock */
};

/* The next request, or NULL once the pool stops. */
static struct gw_req *next_request(struct gw_proxy *p)
{
  struct gw_req *r;

  pthread_mutex_lock(&p->lock);
  while (!p->head && !p->stop)
    pthread_cond_wait(&p->cv, &p->lock);
  r = p->head;
  if (r) {
    p->head = r->next;
    if (!p->head)
      p->tail = NULL;
  }
  pthread_mutex_unlock(&p->lock);
  return r;
}

static void *worker_main(void *arg)
{
  struct gw_proxy *p = arg;
  CURL *c = curl_easy_init();
  struct gw_req *r;

  while ((r = next_request(p))) {
    if (c)
      gw_upstream_run(p->up, c, r);
    else
      gw_req_set_error(r, 500, "InternalError", "no curl handle");
    gw_req_finish(r); /* r may be freed from here on */
  }
  curl_easy_cleanup(c);
  return NULL;
}

void gw_proxy_submit(struct gw_proxy *p, struct gw_req *r)
{
  r->next = NULL;
  pthread_mutex_lock(&p->lock);
  if (p->tail)
    p->tail->next = r;
  else
    p->head = r;
  p->tail = r;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->lock);
}

int gw_proxy_create(const struct gw_config *cfg, struct gw_stats *stats,
                    struct rdx_server *rdx, struct gw_proxy **out, char *err,
                    size_t errlen)
{
  struct gw_proxy *p = calloc(1, sizeof(*p));
  int rc;

  *out = NULL;
  if (!p)
    return -ENOMEM;
  rc = gw_upstream_create(cfg, stats, rdx, &p->up, err, errlen);
  if (rc)
    goto free_p;
  p->th = calloc(cfg->threads, sizeof(*p->th));
  if (!p->th) {
    rc = -ENOMEM;
    goto destroy_upstream;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (; p->n_th < cfg->threads; p->n_th++) {
    rc = -pthread_create(&p->th[p->n_th], NULL, worker_main, p);
    if (rc) {
      snprintf(err, errlen, "cannot start worker threads: %s", strerror(-rc));
      goto stop_threads;
    }
  }
  *out = p;
  return 0;

stop_threads:
  gw_proxy_destroy(p); /* joins the workers started so far */
  return rc;
destroy_upstream:
  gw_upstream_destroy(p->up);
free_p:
  free(p);
  return rc;
}

void gw_proxy_destroy(struct gw_proxy *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->n_th; i++)
    pthread_join(p->th[i], NULL);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cv);
  free(p->th);
  gw_upstream_destroy(p->up);
  free(p);
}
