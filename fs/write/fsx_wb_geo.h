/*
 * fsx_wb_geo: the part geometry of write-back uploads, pure and below
 * write-back, so that what checks a multipart ETag (fsx_etag) and
 * recovery cut a file into the parts fsx_wb does. Parts 1..1000 have the
 * base size (rounded up to FSX_WB_BLOCK), each next thousand twice the
 * size, capped at 5 GiB, so 10000 parts of base 5 MiB hold more than 5 TB.
 */
#ifndef S3R_FSX_WB_GEO_H
#define S3R_FSX_WB_GEO_H

#include <stdint.h>

#define FSX_WB_BLOCK (64u * 1024u)
#define FSX_WB_MAX_PARTS 10000u
#define FSX_WB_MAX_PART (5ull << 30)

/* The part (0-based index) holding offset off, and its start and length. */
unsigned fsx_wb_part_of(uint64_t part_size, uint64_t off, uint64_t *start,
                        uint64_t *len);
/* Start and length of part idx (0-based). */
void fsx_wb_part_span(uint64_t part_size, unsigned idx, uint64_t *start,
                      uint64_t *len);
/* The largest file 10000 parts can hold. */
uint64_t fsx_wb_max_size(uint64_t part_size);

#endif
