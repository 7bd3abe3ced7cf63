/* fsx_density: see fsx_density.h. */
#include "fs/read/fsx_density.h"

#include <stdlib.h>

/* a block fetched whole (not counted again unless missed again) */
#define FETCHED 255
/* a block fetched whole and missed again since: AGAIN + its misses */
#define AGAIN 128

static bool fetched_once(uint8_t t)
{
  return t >= AGAIN;
}

void fsx_density_init(struct fsx_density *d, uint64_t size, uint64_t want,
                      uint64_t chunk)
{
  uint64_t b, n;

  *d = (struct fsx_density){0};
  if (!want || !size || !chunk)
    return;
  b = (want + chunk - 1) / chunk * chunk;
  n = (size - 1) / b + 1;
  while (n > FSX_DENSITY_BLOCKS_MAX) {
    b *= 2;
    n = (size - 1) / b + 1;
  }
  d->block = b;
  d->nblocks = (uint32_t)n;
}

bool fsx_density_note(struct fsx_density *d, uint64_t size, uint64_t off,
                      uint64_t len, uint64_t *from, uint64_t *to)
{
  uint64_t first, last;
  bool dense = false;

  *from = *to = 0;
  if (!d->block || !len || off >= size)
    return false;
  if (!d->touches && !(d->touches = calloc(d->nblocks, 1))) {
    d->block = 0; /* no memory for it: exact reads, as before */
    return false;
  }
  if (len > size - off)
    len = size - off;
  first = off / d->block;
  last = (off + len - 1) / d->block;
  if (last >= d->nblocks) /* the file grew since open: not counted */
    last = d->nblocks - 1;
  for (uint64_t i = first; i <= last && i >= first; i++) {
    uint8_t t = d->touches[i];

    if (t == 0 && d->touched < UINT32_MAX)
      d->touched++;
    if (t == FETCHED) { /* holes in the kernel's copy, or evicted */
      t = AGAIN;
      if (d->again < UINT32_MAX)
        d->again++;
    }
    if (fetched_once(t) ? t + 1 < AGAIN + FSX_DENSITY_TOUCHES
                        : !d->dense && t + 1 < FSX_DENSITY_TOUCHES) {
      d->touches[i] = (uint8_t)(t + 1);
      continue;
    }
    d->touches[i] = FETCHED;
    if (d->whole < UINT32_MAX)
      d->whole++;
    if (!dense)
      *from = i * d->block;
    *to = (i + 1) * d->block;
    dense = true;
  }
  if (!d->dense && d->whole >= FSX_DENSITY_FILE_MIN &&
      (uint64_t)d->whole * FSX_DENSITY_FILE_SHARE >= d->touched)
    d->dense = true;
  if (dense && d->dense) { /* grow within its group, up to fetched blocks */
    uint64_t g0 = first / FSX_DENSITY_GROUP * FSX_DENSITY_GROUP;
    uint64_t g1 = g0 + FSX_DENSITY_GROUP, b;

    if (g1 > d->nblocks)
      g1 = d->nblocks;
    for (b = *from / d->block; b > g0 && !fetched_once(d->touches[b - 1]); b--)
      d->touches[b - 1] = FETCHED;
    *from = b * d->block;
    for (b = *to / d->block; b < g1 && !fetched_once(d->touches[b]); b++)
      d->touches[b] = FETCHED;
    *to = b * d->block;
  }
  if (dense && *to > size)
    *to = size;
  return dense;
}

bool fsx_density_next(struct fsx_density *d, uint64_t size, uint64_t after,
                      unsigned scan, uint64_t *from, uint64_t *to)
{
  uint64_t g;

  if (!d->block || !d->touches)
    return false;
  g = after / d->block / FSX_DENSITY_GROUP;
  for (unsigned n = 0; n < scan; n++, g++) {
    uint64_t b = g * FSX_DENSITY_GROUP, end = b + FSX_DENSITY_GROUP;

    if (b >= d->nblocks)
      return false;
    if (end > d->nblocks)
      end = d->nblocks;
    while (b < end && fetched_once(d->touches[b]))
      b++;
    if (b == end)
      continue;
    *from = b * d->block;
    while (b < end && !fetched_once(d->touches[b]))
      d->touches[b++] = FETCHED;
    *to = b * d->block < size ? b * d->block : size;
    return true;
  }
  return false;
}

bool fsx_density_ahead(struct fsx_density *d, uint64_t size, uint64_t after,
                       uint64_t *from, uint64_t *to)
{
  return d->dense &&
         fsx_density_next(d, size, after, FSX_DENSITY_AHEAD_SCAN, from, to);
}

void fsx_density_forget(struct fsx_density *d, uint64_t from, uint64_t to)
{
  if (!d->block || !d->touches || from >= to)
    return;
  for (uint64_t b = from / d->block; b < d->nblocks && b * d->block < to; b++)
    if (d->touches[b] == FETCHED)
      d->touches[b] = 1;
}

void fsx_density_free(struct fsx_density *d)
{
  free(d->touches);
  *d = (struct fsx_density){0};
}
