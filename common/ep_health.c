/* ep_health: servers' health and the choice among them (see ep_health.h). */
#include "common/ep_health.h"

#include <stdio.h>

#include "common/slog.h"
#include "common/stats_fmt.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

void ep_health_init(struct ep_health *v, unsigned n, const char *const *names)
{
  for (unsigned i = 0; i < n; i++) {
    v[i] = (struct ep_health){.name = names[i], .backoff_ms = BACKOFF_MIN_MS};
    atomic_init(&v[i].down, false);
  }
}

void ep_health_use(struct ep_health *h, enum ep_try *how)
{
  *how = h->down_until_ms ? EP_TRY_DOWN : EP_TRY_UP;
  if (h->down_until_ms)
    h->probing = true;
  h->inflight++;
  atomic_fetch_add(&h->attempts, 1);
}

unsigned ep_health_pick(struct ep_health *v, unsigned n, unsigned *turn,
                        uint32_t avoid, enum ep_try *how)
{
  int best = -1;

  /* the least loaded up, in turn from a moving start; the avoided ones
     only when no other is up (then tried again, the same way) */
  for (int pass = 0; n > 1 && best < 0 && pass < 2; pass++)
    for (unsigned k = 0; k < n; k++) {
      unsigned i = (*turn + k) % n;
      if ((!pass && (avoid >> i & 1)) || v[i].down_until_ms)
        continue;
      if (best < 0 || v[i].inflight < v[best].inflight)
        best = (int)i;
    }
  if (best < 0) { /* every one down (or one alone): the one back soonest */
    best = 0;
    for (unsigned i = 1; i < n; i++)
      if (v[i].down_until_ms < v[best].down_until_ms)
        best = (int)i;
  }
  (*turn)++;
  ep_health_use(&v[best], how);
  return (unsigned)best;
}

void ep_health_take(struct ep_health *h)
{
  h->probing = true;
  h->inflight++;
  atomic_fetch_add(&h->probes, 1);
}

void ep_health_release(struct ep_health *h, enum ep_try how)
{
  h->inflight--;
  if (how != EP_TRY_UP)
    h->probing = false;
}

bool ep_health_end(struct ep_health *v, unsigned n, unsigned i,
                   enum ep_try how, bool failed, uint64_t bytes,
                   uint64_t now_ms)
{
  struct ep_health *h = &v[i];

  h->inflight--;
  if (how != EP_TRY_UP)
    h->probing = false;
  atomic_fetch_add(&h->bytes, bytes);
  if (failed && how != EP_TRY_PROBE)
    atomic_fetch_add(&h->failures, 1);
  if (n == 1) /* the only one: no health to keep */
    return false;
  if (!failed) {
    if (h->down_until_ms)
      log_notice("endpoint %s answers again: back in use", h->name);
    h->fails = 0;
    h->down_until_ms = 0;
    h->backoff_ms = BACKOFF_MIN_MS;
    atomic_store(&h->down, false);
    return false;
  }
  ++h->fails;
  if (h->down_until_ms ? how != EP_TRY_UP : h->fails >= EP_HEALTH_BURST) {
    /* taken out, or a try while out failed: the next, longer spell (an
       attempt already on its way when it died starts none) */
    if (!h->down_until_ms) {
      log_warn("endpoint %s failed %u attempts in a row: taken out, tried "
               "again in %u ms", h->name, h->fails, h->backoff_ms);
      atomic_fetch_add(&h->downs, 1);
    }
    h->down_until_ms = now_ms + h->backoff_ms;
    h->backoff_ms = h->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : h->backoff_ms * 2;
    atomic_store(&h->down, true);
  }
  return ep_health_other_up(v, n, 1u << i);
}

bool ep_health_other_up(const struct ep_health *v, unsigned n,
                        uint32_t avoid)
{
  for (unsigned k = 0; k < n; k++)
    if (!(avoid >> k & 1) && !v[k].down_until_ms)
      return true;
  return false;
}

bool ep_health_probe_due(const struct ep_health *h, uint64_t now_ms,
                         uint64_t *next_ms)
{
  if (!h->down_until_ms || h->probing)
    return false;
  if (h->down_until_ms > now_ms) {
    if (h->down_until_ms < *next_ms)
      *next_ms = h->down_until_ms;
    return false;
  }
  return true;
}

size_t ep_health_format(const struct ep_health *v, unsigned n,
                        const char *prefix, const char *label, char *buf,
                        size_t len, size_t off)
{
  static const char *const what[] = {"attempts", "failures", "downs",
                                     "up",       "probes",   "bytes"};
  enum { NW = sizeof(what) / sizeof(what[0]) };

  for (unsigned i = 0; n > 1 && i < n; i++) {
    const struct ep_health *h = &v[i];
    char name[NW][80];
    struct stats_row rows[NW];

    for (int k = 0; k < NW; k++) {
      snprintf(name[k], sizeof(name[k]), "%s_%s{%s=%u}", prefix, what[k],
               label, i);
      rows[k].name = name[k];
    }
    rows[0].value = atomic_load(&h->attempts);
    rows[1].value = atomic_load(&h->failures);
    rows[2].value = atomic_load(&h->downs);
    rows[3].value = !atomic_load(&h->down);
    rows[4].value = atomic_load(&h->probes);
    rows[5].value = atomic_load(&h->bytes);
    off = stats_fmt_rows(buf, len, off, NULL, rows, NW);
  }
  return off;
}
