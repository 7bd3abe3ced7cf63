/*
 * fsx_wb_geo: the part geometry of write-back uploads (fsx_wb_geo.h); pure.
 */
#include "fs/write/fsx_wb_geo.h"

#define GROUP_PARTS 1000u

static uint64_t round_block(uint64_t v)
{
  return (v + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK * FSX_WB_BLOCK;
}

static uint64_t group_len(uint64_t ps, unsigned g)
{
  uint64_t cap = FSX_WB_MAX_PART / FSX_WB_BLOCK * FSX_WB_BLOCK;
  uint64_t l = round_block(ps) << g;

  return l < cap ? l : cap;
}

void fsx_wb_part_span(uint64_t part_size, unsigned idx, uint64_t *start,
                      uint64_t *len)
{
  unsigned g = idx / GROUP_PARTS;
  uint64_t s = 0;

  for (unsigned i = 0; i < g; i++)
    s += GROUP_PARTS * group_len(part_size, i);
  *len = group_len(part_size, g);
  *start = s + (idx % GROUP_PARTS) * *len;
}

unsigned fsx_wb_part_of(uint64_t part_size, uint64_t off, uint64_t *start,
                        uint64_t *len)
{
  unsigned groups = FSX_WB_MAX_PARTS / GROUP_PARTS;
  uint64_t s = 0;

  for (unsigned g = 0;; g++) {
    uint64_t gl = group_len(part_size, g);
    uint64_t idx = (off - s) / gl;
    if (idx < GROUP_PARTS || g == groups - 1) {
      if (idx >= GROUP_PARTS)
        idx = GROUP_PARTS - 1; /* past the largest file: the last part */
      *len = gl;
      *start = s + idx * gl;
      return g * GROUP_PARTS + (unsigned)idx;
    }
    s += GROUP_PARTS * gl;
  }
}

uint64_t fsx_wb_max_size(uint64_t part_size)
{
  uint64_t s, l;

  fsx_wb_part_span(part_size, FSX_WB_MAX_PARTS - 1, &s, &l);
  return s + l;
}
