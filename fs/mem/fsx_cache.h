/*
 * fsx_cache: the page cache. One arena of fixed-size chunks (mmap'ed, pinned
 * with mlock where allowed: this arena is what the RDMA data plane registers),
 * bounded in size, LRU eviction of unreferenced chunks, and a single fetch
 * per chunk however many readers want it.
 *
 * A chunk is named by (file id, generation, index): the generation changes
 * when the object does (its ETag), so stale data is never served; index is
 * offset / chunk_size.
 *
 * Life of a chunk: fsx_cache_get() with create returns it referenced; the
 * first caller gets must_fill = true and owns the fetch: it writes the bytes
 * into fsx_chunk_data() and calls fsx_chunk_fill_done() with the result.
 * Everyone else calls fsx_chunk_wait(), which sleeps until the fill is done.
 * Each reference is dropped with fsx_cache_put(). Chunks that failed are
 * forgotten once unreferenced, so the next reader fetches again.
 */
#ifndef S3R_FSX_CACHE_H
#define S3R_FSX_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsx_cache;
struct fsx_chunk;

struct fsx_cache_stats {
  uint64_t hits;          /* get found the chunk (ready or being filled) */
  uint64_t misses;        /* get created it (the caller fetches) */
  uint64_t evictions;
  uint64_t fill_errors;
  uint64_t invalidated;
  uint64_t nobufs;        /* get failed: every chunk referenced */
  uint64_t chunks_total;
  uint64_t chunks_used;   /* holding data or being filled */
  uint64_t chunk_size;
  uint64_t locked_bytes;  /* of the arena, mlock'ed now (a segment at a
                             time, as reads first claim its chunks) */
  uint64_t backed_bytes;  /* of the arena, in segments backed now */
  uint64_t segments_added;    /* backed (again) by a read */
  uint64_t segments_released; /* given back (fsx_cache_release) */
  bool pinned;            /* asked, and no segment was refused so far */
};

/*
 * Create a cache of total_bytes (rounded down to whole chunks, at least 2)
 * of chunk_size each (a power of two). The arena is backed a segment at a
 * time as gets first claim its chunks (an idle cache holds nothing); with
 * want_mlock each segment is pinned as it is backed; failure is a warning
 * (logged once, naming RLIMIT_MEMLOCK), not an error. Returns NULL with a
 * reason in err.
 */
struct fsx_cache *fsx_cache_create(uint64_t total_bytes, size_t chunk_size,
                                   bool want_mlock, char *err, size_t errlen);
/* All chunks must have been put back; if some were not, the arena is left
   mapped (a server may still write into a chunk held for it). */
void fsx_cache_destroy(struct fsx_cache *c);

/* The arena (for registration with the RDMA transport): base and length. */
void *fsx_cache_arena(struct fsx_cache *c, size_t *len);
size_t fsx_cache_chunk_size(const struct fsx_cache *c);
/* A segment's bytes (the arena is backed, locked, registered and given
   back in these; the last may be shorter). */
size_t fsx_cache_seg_bytes(const struct fsx_cache *c);

/*
 * Find chunk (file, gen, index). Found: *out referenced, *must_fill false.
 * Not found and create: a free or evicted chunk is claimed, *must_fill true.
 * Not found and !create: -ENOENT. Nothing evictable: -ENOBUFS.
 */
int fsx_cache_get(struct fsx_cache *c, uint64_t file, uint64_t gen,
                  uint64_t index, bool create, struct fsx_chunk **out,
                  bool *must_fill);

/* The chunk's memory (chunk_size bytes). */
void *fsx_chunk_data(struct fsx_chunk *ch);
/*
 * For the filler of a claimed chunk (must_fill): true once per backing of
 * its segment, when its pages are still to be faulted in. The filler then
 * faults them in (fsx_populate) while its request is on the wire, so that
 * the fill (the event loop's copy, or the server's write) meets them
 * present; a segment is locked as its pages are touched, not at once.
 */
bool fsx_chunk_take_populate(struct fsx_cache *c, struct fsx_chunk *ch);
/* Its offset in the arena. */
size_t fsx_chunk_arena_offset(const struct fsx_cache *c,
                              const struct fsx_chunk *ch);

/*
 * The filler reports: rc 0 and valid bytes (short at the end of the object),
 * or a negative errno. Wakes every waiter.
 */
void fsx_chunk_fill_done(struct fsx_cache *c, struct fsx_chunk *ch, int rc,
                         size_t valid);
/* Is the fill finished? (without blocking) */
bool fsx_chunk_ready(struct fsx_cache *c, struct fsx_chunk *ch);
/* Wait for the fill; returns its rc and *valid. */
int fsx_chunk_wait(struct fsx_cache *c, struct fsx_chunk *ch, size_t *valid);

/* One more reference to a chunk the caller already holds. */
void fsx_chunk_hold(struct fsx_cache *c, struct fsx_chunk *ch);

/* Drop one reference. */
void fsx_cache_put(struct fsx_cache *c, struct fsx_chunk *ch);
/* The same, the chunk (unread yet) the first to go when room is needed:
   bytes fetched on speculation push out none that were read. */
void fsx_cache_put_cold(struct fsx_cache *c, struct fsx_chunk *ch);

/*
 * Forget every chunk of a file (any generation): unreferenced ones are freed
 * now, referenced ones as soon as their last reference goes.
 */
void fsx_cache_invalidate(struct fsx_cache *c, uint64_t file);

void fsx_cache_stats(struct fsx_cache *c, struct fsx_cache_stats *out);

/*
 * Give segments back (their chunks forgotten, pages unlocked and dropped):
 * every one no chunk of which was got for idle_ms (UINT64_MAX: none for
 * age), then the least recently used while more than keep bytes are
 * backed. A segment with a chunk referenced stays. Returns the bytes given
 * back. Reads go on meanwhile: they back segments again as they need them.
 */
uint64_t fsx_cache_release(struct fsx_cache *c, uint64_t idle_ms,
                           uint64_t keep);

/*
 * hook(arg, off, len, back) is told of each segment [off, off + len) of
 * the arena before it is backed (back true; a get that claims a chunk of
 * it returns only after) and before its pages are given back (false, no
 * chunk of it referenced): the RDMA plane registers segments as they
 * come. Set before the first get.
 */
void fsx_cache_set_hook(struct fsx_cache *c,
                        void (*hook)(void *arg, size_t off, size_t len,
                                     bool back),
                        void *arg);

#endif
