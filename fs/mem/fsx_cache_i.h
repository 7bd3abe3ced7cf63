/*
 * fsx_cache_i: the page cache's records, shared by its two files and
 * nothing else: fsx_cache.c (chunks: hash, lists, fills) and
 * fsx_cache_seg.c (the arena's segments: backed and locked as reads first
 * claim their chunks, given back when idle or asked).
 */
#ifndef S3R_FSX_CACHE_I_H
#define S3R_FSX_CACHE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/mem/fsx_cache.h"

#define NCV 64 /* condition variables shared by waiters (a power of two) */
#define SEG_MAX (64u << 20) /* the most a segment holds */

/* a segment: not backed (its chunks' pages given back or never touched),
   being backed or given back (by whoever moved it here), backed */
enum { SEG_NONE, SEG_BUSY, SEG_LIVE };

enum chunk_state { CH_FREE, CH_FILLING, CH_READY, CH_ERROR };

struct fsx_chunk {
  unsigned char *data;             /* fixed at create */
  uint64_t file, gen, index;       /* protected by c->mu */
  struct fsx_chunk *hnext;         /* protected by c->mu: hash chain */
  struct fsx_chunk **hpprev;       /* protected by c->mu: NULL when unhashed */
  struct fsx_chunk *prev, *next;   /* protected by c->mu: LRU or free list,
                                      or no list (referenced, or set aside
                                      by a segment's release) */
  size_t valid;                    /* protected by c->mu */
  uint32_t refs;                   /* protected by c->mu */
  int rc;                          /* protected by c->mu */
  uint32_t slot;                   /* fixed: position in c->chunks */
  uint8_t state;                   /* protected by c->mu: enum chunk_state */
  bool populated;                  /* its pages faulted in (or being) since
                                      its segment was backed: owned by the
                                      filler of a claim, and by its
                                      segment's release (under c->mu) */
};

struct fsx_cache {
  pthread_mutex_t mu;
  pthread_cond_t cv[NCV];
  unsigned char *arena;            /* fixed */
  size_t arena_len, chunk_size;    /* fixed */
  size_t nchunks;                  /* fixed */
  struct fsx_chunk *chunks;        /* descriptors; fields as marked above */
  struct fsx_chunk **buckets;      /* protected by mu */
  size_t bucket_mask;              /* fixed */
  struct fsx_chunk lru;            /* protected by mu: head = most recent */
  struct fsx_chunk freel;          /* protected by mu */
  size_t nused;                    /* protected by mu */
  struct fsx_cache_stats st;       /* protected by mu (counters only) */
  bool want_mlock;                 /* fixed */
  size_t seg_chunks, nsegs;        /* fixed: chunks a segment, segments */
  _Atomic unsigned char *seg;      /* atomic: SEG_*; NONE -> BUSY -> LIVE
                                      by a get that claims a chunk of it
                                      (fsx_cache_seg_back), LIVE -> BUSY ->
                                      NONE by fsx_cache_release */
  bool *seg_locked;                /* owned by whoever moved seg[i] to BUSY;
                                      read by the other owner after */
  uint64_t *seg_used;              /* protected by mu: ms of its last get */
  uint64_t *seg_seq;               /* protected by mu: gets' count then */
  uint64_t gets;                   /* protected by mu */
  uint32_t *seg_refs;              /* protected by mu: its chunks with
                                      refs > 0 */
  pthread_cond_t seg_cv;           /* with mu: a segment left BUSY */
  void (*hook)(void *arg, size_t off, size_t len, bool back);
  void *hook_arg;                  /* fixed once set, before any get */
  _Atomic bool refused_logged;     /* atomic: the refusal was said */
  _Atomic uint64_t locked_bytes;   /* atomic: of LIVE segments, locked */
  _Atomic uint64_t backed_bytes;   /* atomic: of LIVE segments */
  _Atomic uint64_t segs_added;     /* atomic: NONE -> LIVE */
  _Atomic uint64_t segs_released;  /* atomic: LIVE -> NONE */
};

/* list operations on c->lru and c->freel (fsx_cache.c) */
void fsx_cache_list_del(struct fsx_chunk *ch);
void fsx_cache_list_add_tail(struct fsx_chunk *head, struct fsx_chunk *ch);
void fsx_cache_hash_del(struct fsx_chunk *ch);

/* The segment of chunk slot backed (and locked, when asked), if it is
   not: called by the get that claimed the chunk, without c->mu. */
void fsx_cache_seg_back(struct fsx_cache *c, uint32_t slot);

#endif
