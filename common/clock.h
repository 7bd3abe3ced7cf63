/*
 * clock: the one clock of the project. Durations, deadlines and ages are
 * measured on CLOCK_MONOTONIC in milliseconds; condition variables made with
 * clock_cond_init wait on the same clock, so a deadline from
 * clock_deadline is never moved by a change of the wall clock. Wall time is
 * only for what leaves the process (token expiry, file times).
 */
#ifndef S3R_CLOCK_H
#define S3R_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t clock_mono_ms(void);
/* Microseconds on CLOCK_MONOTONIC: for measuring short costs only. */
uint64_t clock_mono_us(void);
/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t clock_wall_ms(void);
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
int clock_cond_init(pthread_cond_t *cv);
/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a
   clock_cond_init condition variable. */
struct timespec clock_deadline(uint64_t ms);
/* The same for an absolute time in clock_mono_ms terms. */
struct timespec clock_at(uint64_t mono_ms);

#endif
