/*
 * Internals shared by the fs/ files: the mount context and the options the
 * daemon hands every module (read-only after start-up).
 */
#ifndef S3R_FSX_I_H
#define S3R_FSX_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/mem/fsx_cache.h"
#include "fs/meta/fsx_inode.h"
#include "s3/s3_client.h"

/* The name of the stats file in the mount's root (not listed). */
#define FSX_STATS_NAME ".s3rdmafs-stats"

/* the kernel's readahead on a mount, in max_read requests: that many
   may be in flight at once, in any order */
#define FSX_KERNEL_RA 4

struct fuse_session;
struct fsx_rdma;
struct fsx_space;
struct fsx_stage;
struct fsx_wb;

struct fsx_opts {
  uint64_t attr_ttl_ms;
  uint64_t dir_ttl_ms;
  uint64_t neg_ttl_ms;
  uint64_t burst_ttl_ms;      /* cache.burst_ttl (fsx_ns_lookup) */
  bool kernel_cache;          /* keep the kernel's cache while ETag holds */
  uid_t uid;
  gid_t gid;
  mode_t umask;
  mode_t file_mode;           /* 0: 0666 & ~umask */
  mode_t dir_mode;            /* 0: 0777 & ~umask */
  bool ro;
  bool all_buckets;
  int atime;                  /* enum cfg_atime */
  bool listing_attrs;         /* mount.listing_attrs, false with
                                 allow_other */
  uint64_t readahead_min;
  uint64_t readahead_max;
  uint64_t readahead_far;     /* the window's cap far from the server:
                                 cache.size / 4 (fsx_read_cap) */
  uint64_t dense_block;       /* read.dense_block */
  uint64_t idle_fetch;        /* read.idle_fetch */
  uint64_t lookup_bytes;      /* read.lookup_bytes (fsx_ns_lookup) */
  bool rdma_named;            /* rdma.transport named (not auto, not
                                 off): a data plane is meant to carry
                                 every byte */
  unsigned max_inflight_per_file;
  size_t max_read;            /* the kernel reads ahead FSX_KERNEL_RA of
                                 these at once (fsx_ops' init) */
  time_t mount_time;          /* the times of directories without one */
  uint64_t part_size;
  unsigned max_parts_inflight; /* per file */
  uint64_t max_memory;        /* part bytes uploading, all files */
  unsigned rename_dir_max;
  uint64_t retry_interval_ms;
};

struct fsx_stats {
  _Atomic uint64_t lookups, getattrs, readdirs, opens, reads, read_bytes;
  _Atomic uint64_t lists, heads, gets, get_bytes;
  _Atomic uint64_t heads_ahead; /* lookups answered by fsx_ahead */
  _Atomic uint64_t opens_known; /* opens on known attributes: no HEAD */
  _Atomic uint64_t opens_reverified; /* ... whose first GET found the
                                   object changed: asked then */
  _Atomic uint64_t lookup_gets; /* cold lookups that GOT a file's first
                                   bytes instead of a HEAD */
  _Atomic uint64_t lookup_whole; /* ... and so had the whole file, kept */
  _Atomic uint64_t dir_times_stored, dir_times_failed; /* fsx_dirtimes */
  _Atomic uint64_t dir_times_storing; /* ... on the wire now */
  _Atomic uint64_t bytes_from_cache, bytes_direct;
  _Atomic uint64_t readahead_chunks, readahead_resets;
  _Atomic uint64_t readahead_peak; /* the widest window a reader had */
  _Atomic uint64_t dense_blocks, dense_exact; /* random misses: fetched a
                                                 block whole, or exactly */
  _Atomic uint64_t kstore_bytes, kstore_dropped, kstore_undone; /* fsx_kstore */
  _Atomic uint64_t dense_ahead; /* dense groups fetched ahead */
  _Atomic uint64_t idle_groups; /* groups fetched with idle capacity */
  _Atomic uint64_t dense_again; /* blocks missed again after fetched whole */
  _Atomic uint64_t ahead_waits; /* misses answered from a group on its way */
  _Atomic uint64_t errors, skipped_keys;
  _Atomic uint64_t writes, write_bytes, commits, commit_errors;
  _Atomic uint64_t parts_sent, parts_copied, base_fetches, base_fetch_bytes;
  _Atomic uint64_t stream_bytes, unstreams; /* fsx_wb_stream.c */
  _Atomic uint64_t creates, unlinks, renames, objects_copied, setattrs;
  _Atomic uint64_t releases; /* of files (not the stats file) */
  _Atomic uint64_t recovery_running, recovery_uploaded, recovery_kept;
  _Atomic uint64_t uploads_unknown; /* creations whose answer was lost:
                                       never aborted (fsx_stage_unknown) */
  _Atomic uint64_t direct_reads, direct_bytes; /* fsx_direct */
  _Atomic uint64_t direct_regs, direct_regs_now, direct_refused;
  /* direct reads by the library's path: host buffers, GPU staging ring
     slots, device memory by dma-buf; dma-buf registrations and reads
     turned back to the staged path */
  _Atomic uint64_t direct_host_reads, direct_host_bytes;
  _Atomic uint64_t direct_staged_reads, direct_staged_bytes;
  _Atomic uint64_t direct_gpudirect_reads, direct_gpudirect_bytes;
  _Atomic uint64_t direct_gpudirect_regs, direct_gpudirect_refused;
  /* direct writes (fsx_direct_write), by path the same way, and the parts
     sent straight from a caller's buffer */
  _Atomic uint64_t direct_writes, direct_write_bytes, direct_write_parts;
  _Atomic uint64_t direct_host_writes, direct_host_write_bytes;
  _Atomic uint64_t direct_staged_writes, direct_staged_write_bytes;
  _Atomic uint64_t direct_gpudirect_writes, direct_gpudirect_write_bytes;
};

struct fsx_bufs;
struct fsx_memwatch;
struct fsx_inval;
struct fsx_direct;
struct fsx_dirtimes;

struct fsx_mount {
  struct fsx_opts o;
  struct s3_client *s3;
  struct fsx_table *tab;
  struct fsx_cache *cache;
  char *bucket;               /* NULL in all-buckets mode */
  char *prefix;               /* "" or "some/prefix/" */
  struct fsx_stats st;
  struct fuse_session *se;    /* for kernel cache notifications */
  bool single_loop;           /* one thread serves every request (-s): no
                                 operation may wait for another's reply */
  struct fsx_kstore *kstore;  /* dense blocks into the kernel's cache; NULL:
                                 none (kernel_cache off) */
  struct fsx_reads *reads;    /* the read path's mount-wide load
                                 (fsx_read_i.h), from fsx_read_start */
  _Atomic bool peek_off;      /* the server answered a cold lookup's range
                                 with a whole object: HEADs from then on */
  struct fsx_bufs *bufs;      /* the buffers of reads outside the cache */
  struct fsx_direct *direct;  /* fsx_direct's state (its fd taker, the
                                 registrations per user, the open files
                                 holding some) */
  struct fsx_stage *stage;    /* cache.dir: staging files, upload journal */
  struct fsx_space *space;    /* the staging files' disk use and limit;
                                 NULL when read-only */
  struct fsx_rdma *rdma;      /* the data plane; NULL: HTTP bodies only */
  struct fsx_memwatch *memwatch; /* memory following use; NULL: none */
  struct fsx_dirtimes *dirtimes; /* directories' times stored on their
                                 markers; NULL: kept in memory only */
  struct fsx_inval *inval;    /* names the kernel is told to forget;
                                 NULL: none (tests without a session) */
  struct fsx_pool *pool;      /* write buffers (write.stream); NULL: none,
                                 every write goes to the staging file */
  struct fsx_wbm *wbm;        /* write-back's mount-wide side (fsx_wb_i.h),
                                 from fsx_wb_start; NULL: read-only */
  _Atomic bool no_cond;       /* the server answered a conditional write
                                 with 501: uploads go without conditions */
  /* the rename lock: taken only through fsx_renlock.h (its rules) */
  pthread_rwlock_t rename_lock;
  /* the name recovery uploads now (fsx_recover_thread): an unlink or a
     rename of it waits for that upload to land first; the upload begins
     only once those of it under way have ended (recover_holds) */
  pthread_mutex_t recover_lock;
  pthread_cond_t recover_cond;  /* recover_lock: the name or holds changed */
  const char *recover_bucket, *recover_key; /* recover_lock; NULL: none */
  struct fsx_recover_hold *recover_holds; /* recover_lock */
};

/* fsx_ns.c, fsx_ns_lookup.c: the namespace */

/* List a directory from S3 (every page) into a new snapshot. */
int fsx_ns_load_dir(struct fsx_mount *m, struct fsx_inode *dir,
                    struct fsx_dirsnap **out);
/* What a lookup's round brought besides the attributes, for the lookup to
   keep: a file's first bytes when they are the whole object (buf:
   malloc'd; NULL: none), a directory's first page when it holds all its
   names (names only, a reference; NULL: none). Zeroed before. */
struct fsx_peek {
  char *buf;
  size_t len;
  struct fsx_dirsnap *page;
};
/*
 * Resolve name in dir: from the directory's fresh snapshot when there is
 * one, else by asking S3 (HEAD name and LIST name/ at once; with pk and
 * read.lookup_bytes, a GET of the name's first bytes instead of its HEAD,
 * the whole object in *pk when it fits; with pk, a directory's first page
 * in pk->page). 0 and *a, or -ENOENT, or another negative errno.
 */
int fsx_ns_lookup(struct fsx_mount *m, struct fsx_inode *dir, const char *name,
                  struct fsx_attr *a, struct fsx_peek *pk);
/*
 * The attributes of dir's subdirectory name, which a listing or a page
 * showed: its marker's HEAD (as fsx_ns_head_dir), and with pk its first
 * page (LIST name/) in the same round, in pk->page when that is all of it.
 */
int fsx_ns_dir_round(struct fsx_mount *m, struct fsx_inode *dir,
                     const char *name, struct fsx_attr *a, struct fsx_peek *pk);
/*
 * A directory's attributes from its "dir/" marker (dkey), where s3fs keeps
 * its mode, owner and mtime; an implicit directory (no marker) gets the
 * defaults. Either way a->from_head: nothing more to ask.
 */
int fsx_ns_head_dir(struct fsx_mount *m, const char *bucket, const char *dkey,
                    struct fsx_attr *a);
/* HEAD an object by key (ignoring every cache). */
int fsx_ns_head_key(struct fsx_mount *m, const char *bucket, const char *key,
                    struct fsx_attr *a);
/* The same for dir's child name, as a file. */
int fsx_ns_head_child(struct fsx_mount *m, struct fsx_inode *dir,
                      const char *name, struct fsx_attr *a);
/*
 * The metadata of n listed entries of dir (a[i] as listed; their names
 * names[i]) at once: every HEAD in flight together (a directory's its
 * marker, as fsx_ns_head_dir). out[i] is filled and ok[i] set where one
 * answered; an entry gone or failing since the listing is left !ok (its
 * lookup asks again). 0, or -ENOMEM with nothing asked.
 */
int fsx_ns_head_many(struct fsx_mount *m, struct fsx_inode *dir,
                     const char *const *names, const struct fsx_attr *const *a,
                     size_t n, struct fsx_attr *out, bool *ok);
/* HEAD a file inode's object: size, ETag, mtime and s3fs metadata. */
int fsx_ns_head(struct fsx_mount *m, struct fsx_inode *in, struct fsx_attr *a);
/* struct stat from attributes and the mount's defaults. */
void fsx_ns_stat(const struct fsx_mount *m, uint64_t ino,
                 const struct fsx_attr *a, struct stat *st);

#endif
