/* fsx_density: see fsx_density.h. */
#include "fs/fsx_density.h"

#include <stdlib.h>

void fsx_density_init(struct fsx_density *d, uint64_t size, uint64_t want,
                      uint64_t chunk)
{
  uint64_t b, n;

  d->block = 0;
  d->nblocks = 0;
  d->touches = NULL;
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
    if (d->touches[i] + 1 < FSX_DENSITY_TOUCHES) {
      d->touches[i]++;
      continue;
    }
    d->touches[i] = 0; /* fetched whole: counts again if evicted */
    if (!dense)
      *from = i * d->block;
    *to = (i + 1) * d->block;
    dense = true;
  }
  if (dense && *to > size)
    *to = size;
  return dense;
}

void fsx_density_free(struct fsx_density *d)
{
  free(d->touches);
  d->touches = NULL;
  d->block = 0;
  d->nblocks = 0;
}
