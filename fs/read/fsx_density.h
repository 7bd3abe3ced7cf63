/*
 * fsx_density: how densely one open file is read at random, pure. The
 * read path (fsx_read.c) fetches exactly what a random read asks for when
 * reads are sparse (a 256 KiB read costs one 256 KiB GET), and a whole
 * aligned block into the page cache once reads come back to it (dense:
 * the block's later reads hit the cache, a few large GETs instead of many
 * small ones).
 *
 * The file is cut into blocks of `block` bytes (read.dense_block, grown
 * for large files so that at most FSX_DENSITY_BLOCKS_MAX counters exist);
 * each random read that misses counts a touch on every block it covers,
 * and the read that makes a block's count reach FSX_DENSITY_TOUCHES
 * fetches that block whole. Once FSX_DENSITY_FILE_MIN blocks have been
 * fetched whole and they are at least 1 in FSX_DENSITY_FILE_SHARE of the
 * blocks touched, the file is dense: from then on the first miss in a
 * block fetches it whole. With 256 KiB reads and 2 MiB blocks: a file
 * read all over at random fetches a few exact reads per block until it is
 * known dense, then about 1 byte per byte delivered, a group of blocks
 * at a time (FSX_DENSITY_GROUP, fewer where some are fetched already:
 * larger GETs, as many); one read at 1 in 16
 * places (64 MiB of a 1 GiB file: 0.5 a block) leaves almost every block
 * under three touches (Poisson: 1.4% reach three, far from 1 in 4), so
 * nearly every read stays exact.
 *
 * A struct fsx_density is owned by its caller (the open file, under its
 * lock); nothing here locks or allocates after init.
 */
#ifndef S3R_FSX_DENSITY_H
#define S3R_FSX_DENSITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Touches of a block by reads that missed, the last one fetching it. */
#define FSX_DENSITY_TOUCHES 3
/* Blocks fetched whole, and their share of the blocks touched, that make
   the whole file dense. */
#define FSX_DENSITY_FILE_MIN 8u
#define FSX_DENSITY_FILE_SHARE 16u
/* Once the file is dense, a miss fetches the blocks of its aligned group
   of this many not fetched yet (one larger GET). */
#define FSX_DENSITY_GROUP 4u
/* Groups looked at for one to fetch ahead. */
#define FSX_DENSITY_AHEAD_SCAN 16u
/* Counters per open file at most (a byte each). */
#define FSX_DENSITY_BLOCKS_MAX 65536u

struct fsx_density {
  uint64_t block;     /* bytes a block, a multiple of the chunk; 0: off */
  uint32_t nblocks;
  uint8_t *touches;   /* nblocks counters, saturating; NULL until used */
  uint32_t touched;   /* blocks touched at least once */
  uint32_t whole;     /* blocks fetched whole */
  uint32_t again;     /* blocks missed again after fetched whole */
  bool dense;         /* the file: every miss fetches its block */
};

/*
 * Set d up for a file of size bytes: blocks of want bytes (0: off),
 * rounded up to a multiple of chunk and grown (doubled) until at most
 * FSX_DENSITY_BLOCKS_MAX cover the file. Counters are allocated on the
 * first note. Never fails.
 */
void fsx_density_init(struct fsx_density *d, uint64_t size, uint64_t want,
                      uint64_t chunk);

/*
 * A random read of [off, off + len) missed the cache: count it. Returns
 * true, with the block-aligned byte range to fetch whole in [*from, *to)
 * (clipped to size), when this read makes a block it covers dense; false:
 * read exactly what was asked. A block fetched whole and missed again
 * (pages the kernel did not keep of it, or evicted) counts again, and is
 * fetched whole again on its FSX_DENSITY_TOUCHES-th such miss even in a
 * dense file: a hole of a few pages is read exactly. false when off, or
 * when the counters cannot be allocated (-ENOMEM is not worth failing a
 * read for).
 */
bool fsx_density_note(struct fsx_density *d, uint64_t size, uint64_t off,
                      uint64_t len, uint64_t *from, uint64_t *to);

/*
 * The file being dense, the first group at or after byte `after` (within
 * FSX_DENSITY_AHEAD_SCAN groups) with blocks not fetched yet: their range
 * in [*from, *to) (clipped to size), now counted as fetched; false: none.
 */
bool fsx_density_ahead(struct fsx_density *d, uint64_t size, uint64_t after,
                       uint64_t *from, uint64_t *to);

/*
 * The first group at or after byte `after` (within scan groups) with
 * blocks not fetched yet, whether or not the file is dense: as
 * fsx_density_ahead. false: none, or no counters yet.
 */
bool fsx_density_next(struct fsx_density *d, uint64_t size, uint64_t after,
                      unsigned scan, uint64_t *from, uint64_t *to);

/*
 * The blocks of [from, to) that were counted as fetched never reached the
 * kernel (their GET failed, or their store was dropped): counted as
 * touched once again, so a miss there is counted as in a block never
 * fetched (in a dense file, the next one fetches it).
 */
void fsx_density_forget(struct fsx_density *d, uint64_t from, uint64_t to);

/* Free the counters; d is then off. */
void fsx_density_free(struct fsx_density *d);

#endif
