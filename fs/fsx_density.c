/* fsx_density: see fsx_density.h. */
#include "fs/fsx_density.h"

#include <stdlib.h>

/* a block fetched whole (not counted again unless missed again) */
#define FETCHED 255

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
    if (d->touches[i] == 0 && d->touched < UINT32_MAX)
      d->touched++;
    if (d->touches[i] == FETCHED) /* evicted since: counts again */
      d->touches[i] = 1;
    if (!d->dense && d->touches[i] + 1 < FSX_DENSITY_TOUCHES) {
      d->touches[i]++;
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
    for (b = *from / d->block; b > g0 && d->touches[b - 1] != FETCHED; b--)
      d->touches[b - 1] = FETCHED;
    *from = b * d->block;
    for (b = *to / d->block; b < g1 && d->touches[b] != FETCHED; b++)
      d->touches[b] = FETCHED;
    *to = b * d->block;
  }
  if (dense && *to > size)
    *to = size;
  return dense;
}

bool fsx_density_ahead(struct fsx_density *d, uint64_t size, uint64_t after,
                       uint64_t *from, uint64_t *to)
{
  uint64_t g = after / d->block / FSX_DENSITY_GROUP;

  if (!d->dense || !d->touches)
    return false;
  for (unsigned n = 0; n < FSX_DENSITY_AHEAD_SCAN; n++, g++) {
    uint64_t b = g * FSX_DENSITY_GROUP, end = b + FSX_DENSITY_GROUP;

    if (b >= d->nblocks)
      return false;
    if (end > d->nblocks)
      end = d->nblocks;
    while (b < end && d->touches[b] == FETCHED)
      b++;
    if (b == end)
      continue;
    *from = b * d->block;
    while (b < end && d->touches[b] != FETCHED)
      d->touches[b++] = FETCHED;
    *to = b * d->block < size ? b * d->block : size;
    return true;
  }
  return false;
}

void fsx_density_free(struct fsx_density *d)
{
  free(d->touches);
  *d = (struct fsx_density){0};
}
