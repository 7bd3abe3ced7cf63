/* clock: see clock.h. */
#include "common/clock.h"

static uint64_t ms_of(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t clock_mono_ms(void)
{
  return ms_of(CLOCK_MONOTONIC);
}

uint64_t clock_mono_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t clock_wall_ms(void)
{
  return ms_of(CLOCK_REALTIME);
}

int clock_cond_init(pthread_cond_t *cv)
{
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);

  if (!rc) {
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!rc)
      rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  if (rc) /* never on Linux: a condition variable all the same */
    pthread_cond_init(cv, NULL);
  return -rc;
}

struct timespec clock_at(uint64_t mono_ms)
{
  struct timespec ts = {.tv_sec = (time_t)(mono_ms / 1000),
                        .tv_nsec = (long)(mono_ms % 1000) * 1000000L};
  return ts;
}

struct timespec clock_deadline(uint64_t ms)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}
