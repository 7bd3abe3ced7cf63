/*
 * fsx_bufs: reused read buffers (design in fsx_bufs.h).
 */
#include "fs/mem/fsx_bufs.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define GRAIN (64u * 1024u)
#define HEAD 4096u              /* the page in front of each buffer */

struct buf_head {               /* at the start of that page */
  size_t cap;                   /* bytes after the page */
  struct buf_head *next;        /* lock: on the free list */
};

struct fsx_bufs {
  pthread_mutex_t lock;
  struct buf_head *free;        /* lock: most recently given back first */
  size_t kept, keep_max;        /* lock: bytes on the list, and its bound */
  unsigned long reused, mapped; /* lock */
};

struct fsx_bufs *fsx_bufs_create(size_t keep_max)
{
  struct fsx_bufs *b = calloc(1, sizeof(*b));

  if (!b)
    return NULL;
  pthread_mutex_init(&b->lock, NULL);
  b->keep_max = keep_max;
  return b;
}

static void unmap(struct buf_head *h)
{
  munmap(h, HEAD + h->cap);
}

void fsx_bufs_destroy(struct fsx_bufs *b)
{
  if (!b)
    return;
  while (b->free) {
    struct buf_head *h = b->free;
    b->free = h->next;
    unmap(h);
  }
  pthread_mutex_destroy(&b->lock);
  free(b);
}

void *fsx_bufs_get(struct fsx_bufs *b, size_t len)
{
  size_t cap = (len + GRAIN - 1) / GRAIN * GRAIN;
  struct buf_head **pp, *h = NULL;

  if (!len || cap < len)
    return NULL;
  pthread_mutex_lock(&b->lock);
  for (pp = &b->free; *pp; pp = &(*pp)->next)
    if ((*pp)->cap == cap) {
      h = *pp;
      *pp = h->next;
      b->kept -= cap;
      b->reused++;
      break;
    }
  if (!h)
    b->mapped++;
  pthread_mutex_unlock(&b->lock);
  if (!h) {
    void *p = mmap(NULL, HEAD + cap, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return NULL;
    h = p;
    h->cap = cap;
  }
  h->next = NULL;
  return (char *)h + HEAD;
}

void fsx_bufs_put(struct fsx_bufs *b, void *p)
{
  struct buf_head *h, *drop = NULL;

  if (!p)
    return;
  h = (struct buf_head *)((char *)p - HEAD);
  pthread_mutex_lock(&b->lock);
  if (h->cap > b->keep_max) {
    drop = h;
  } else {
    /* room made by dropping the oldest kept (the list's tail) */
    while (b->kept + h->cap > b->keep_max) {
      struct buf_head **pp = &b->free;
      while ((*pp)->next)
        pp = &(*pp)->next;
      b->kept -= (*pp)->cap;
      (*pp)->next = drop;
      drop = *pp;
      *pp = NULL;
    }
    h->next = b->free;
    b->free = h;
    b->kept += h->cap;
  }
  pthread_mutex_unlock(&b->lock);
  while (drop) { /* unmapped outside the lock */
    struct buf_head *n = drop->next;
    unmap(drop);
    drop = n;
  }
}

size_t fsx_bufs_stats(struct fsx_bufs *b, char *buf, size_t len)
{
  int n;

  pthread_mutex_lock(&b->lock);
  n = snprintf(buf, len,
               "read.bufs_kept %zu\nread.bufs_reused %lu\n"
               "read.bufs_mapped %lu\n",
               b->kept, b->reused, b->mapped);
  pthread_mutex_unlock(&b->lock);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
}
