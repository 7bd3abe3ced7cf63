/*
 * cfg: the daemon's configuration. One table (cfg_table.c) describes every
 * key: its dotted name, type, place in struct cfg, default, bounds, optional
 * validator and a one-line doc. The JSON file, -o overrides, --help,
 * --print-config and docs/config.md all follow that table.
 *
 * Life cycle, in main():
 *   cfg_init_defaults(&c);
 *   cfg_load_file(&c, path, ...)        optional, config=PATH from -o
 *   cfg_set(&c, key, value, ...)        each -o key[=value], in order
 *   cfg_validate(&c, ...)               once, after everything is applied
 *   ... hand &c.s3, &c.cache, ... to the modules as const pointers ...
 *   cfg_cleanup(&c);
 *
 * The file is one JSON object whose sections nest ("s3": {"retry": {...}});
 * a dotted name ("s3.retry.max_attempts": 5) is accepted at any level too.
 * null for any key means its default. Value syntax, for -o and for JSON
 * strings alike:
 *   size      bytes, or a number with K, M, G or T (binary: 1K = 1024;
 *             "KB" and "KiB" read the same); JSON integers are bytes
 *   duration  a whole number in the key's unit (seconds, or ms for *_ms
 *             keys), or with a suffix ms, s, m, h, d; stored in ms
 *   integer   decimal, or hex with 0x; JSON integers too
 *   mode      octal ("022"); a JSON integer is read as octal digits, so 22
 *             and "022" are the same umask
 *   bool      JSON true/false; for -o also 1/0, yes/no, on/off
 *   enum      one of the listed names
 *   string    an empty string unsets a key whose default is unset
 *
 * Not thread-safe: the struct is built on one thread before the modules
 * start, and is read-only afterwards.
 */
#ifndef S3R_CFG_H
#define S3R_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rdma/rdx_kinds.h"

enum cfg_style {
  CFG_STYLE_PATH = 0,     /* http://host/bucket/key */
  CFG_STYLE_VIRTUAL,      /* http://bucket.host/key */
};

enum cfg_creds_source {
  CFG_CREDS_AUTO = 0,     /* config keys, else environment, else profile */
  CFG_CREDS_CONFIG,
  CFG_CREDS_ENV,
  CFG_CREDS_PROFILE,
  CFG_CREDS_ANONYMOUS,
};

/* rdma.transport: the transports of rdma/rdx_kinds.h, in its order (as
   enum rdx_transport_kind, made from the same list). */
enum cfg_rdma_transport {
#define X(name, up, low, tok) CFG_RDMA_##up,
  RDX_TRANSPORTS(X)
#undef X
};

/* mount.atime: when a read stores the time (x-amz-meta-atime). */
enum cfg_atime {
  CFG_ATIME_NO = 0,           /* never: reads write nothing */
  CFG_ATIME_REL,              /* as Linux's relatime */
  CFG_ATIME_STRICT,           /* every time a file read is closed */
};

/* mount.file_mode / mount.dir_mode when not given. */
#define CFG_MODE_UNSET 0xffffffffu

/*
 * Strings are owned by the struct: never free or assign them directly; they
 * change only through cfg_load_file/cfg_set/cfg_validate and are released by
 * cfg_cleanup. NULL means unset. Durations are milliseconds whatever unit the
 * key is written in.
 */
struct cfg_credentials {
  enum cfg_creds_source source;
  const char *access_key;     /* secret: never log */
  const char *secret_key;     /* secret: never log */
  const char *session_token;  /* secret: never log */
  const char *profile;        /* NULL: $AWS_PROFILE, else "default" */
};

struct cfg_retry {
  unsigned max_attempts;      /* including the first */
  unsigned base_ms;
  unsigned max_backoff_ms;
  unsigned budget_ms;
};

struct cfg_s3 {
  unsigned max_inflight;      /* requests on the wire at once */
  unsigned connect_timeout_ms;
  unsigned request_timeout_ms; /* per attempt; 0 = none */
  unsigned low_speed_time_ms; /* an attempt idle this long is aborted; a
                                 whole number of seconds */
  struct cfg_retry retry;
};

struct cfg_cache {
  uint64_t size;              /* page cache bytes */
  uint64_t chunk_size;        /* power of two */
  bool mlock;
  const char *dir;            /* write staging directory, absolute */
  unsigned attr_ttl_ms;
  unsigned dir_ttl_ms;
  unsigned negative_ttl_ms;
  unsigned burst_ttl_ms;
  bool kernel_cache;          /* keep kernel pages while the ETag holds */
  unsigned idle_release_ms;   /* segments unused this long given back;
                                 0: never */
};

struct cfg_read {
  uint64_t readahead_min;
  uint64_t readahead_max;
  unsigned max_inflight_per_file;
  uint64_t max_read;          /* FUSE max_read, multiple of 4096 */
  uint64_t dense_block;       /* random reads: block fetched whole once
                                 dense (fs/read/fsx_density.h); 0: off */
  uint64_t idle_fetch;        /* largest file fetched with idle capacity
                                 for a lone random reader; 0: off */
  uint64_t lookup_bytes;      /* a cold lookup's GET of a file's first
                                 bytes (fs/meta/fsx_ns.c); 0: a HEAD */
};

struct cfg_write {
  uint64_t part_size;
  unsigned max_parts_inflight; /* per file */
  uint64_t max_memory;        /* all write buffers together */
  unsigned rename_dir_max;    /* objects a directory rename may copy */
  unsigned retry_interval_ms; /* background retries of failed uploads */
  uint64_t staging_max;       /* cache.dir bytes for staging; 0: half the
                                 filesystem's free space at mount */
  unsigned staging_wait_ms;   /* a write waits this long for space */
  bool stream;                /* files written in order go through
                                 registered part buffers (fs/mem/fsx_pool.h) */
  const char *pool_dir;       /* where their file goes; "": cache.dir */
};

struct cfg_mount {
  unsigned uid;
  unsigned gid;
  unsigned umask;
  unsigned file_mode;         /* CFG_MODE_UNSET: per object */
  unsigned dir_mode;          /* CFG_MODE_UNSET: per object */
  bool allow_other;
  bool ro;
  bool all_buckets;
  int atime;                  /* enum cfg_atime */
  bool listing_attrs;         /* show a listing's attributes unasked */
  uint64_t memory_target;     /* cache and write buffers together; 0: from
                                 the cgroup's limit or the machine's memory
                                 (fs/mem/fsx_memory.h) */
};

struct cfg_log {
  int level;                  /* syslog level, LOG_ERR..LOG_DEBUG */
  bool syslog;
};

struct cfg_rdma {
  enum cfg_rdma_transport transport;
  const char *token_header;
  unsigned dc_access_key;
  unsigned timeout_ms;        /* a token attempt's deadline (before the
                                 second per 8 MiB it moves) */
  const char *devices;        /* NULL: any; else device names or IP
                                 addresses, ';', ',' or blank separated */
  const char *gid_index;      /* "auto" or 0..255 */
};

struct cfg {
  const char *endpoint;       /* NULL until cfg_validate fills it */
  const char *region;         /* NULL: resolved by s3_creds */
  enum cfg_style style;
  const char *ca_bundle;      /* NULL: $AWS_CA_BUNDLE, else system CAs */
  bool insecure;
  struct cfg_credentials credentials;
  struct cfg_s3 s3;
  struct cfg_cache cache;
  struct cfg_read read;
  struct cfg_write write;
  struct cfg_mount mount;
  struct cfg_log log;
  struct cfg_rdma rdma;
};

/*
 * Set every key to its default (mount.uid/gid: the calling user's). Cannot
 * fail and allocates nothing; *c needs no prior initialisation.
 */
void cfg_init_defaults(struct cfg *c);

/*
 * Apply a JSON config file on top of *c. Returns 0; -EINVAL for a syntax
 * error, duplicate, unknown key, wrong type or bad value; -errno when the
 * file cannot be read; -ENOMEM; -EACCES (or -EINVAL) when the file sets a
 * secret key (credentials.secret_key, credentials.session_token) but is not
 * private: readable by group or others, owned by another user than us or
 * root, or not a regular file (common/secret.h). A file without secrets may
 * be world-readable. err receives one line naming the file and either
 * line:column (syntax), the dotted key, or the file's mode and
 * "chmod 600 it". On error *c may be partly updated, but stays valid for
 * cfg_cleanup.
 */
int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen);

/*
 * Apply one "-o key=value" (value NULL for a bare "-o key", which means true
 * for booleans). Accepts the dotted names and the aliases ro, rw, allow_other,
 * uid, gid, umask and profile (endpoint and region are keys already).
 * "config" is the caller's: load that file with cfg_load_file before the
 * other options; cfg_set rejects it. Returns 0; -ENOENT for an unknown key
 * (so the caller may hand it on to libfuse); -EINVAL for a bad or missing
 * value; -ENOMEM. err starts with the key's dotted name.
 */
int cfg_set(struct cfg *c, const char *key, const char *value, char *err,
            size_t errlen);

/*
 * Is key (a dotted name or an -o alias) a secret key, one that should not
 * be given on a command line (credentials.secret_key,
 * credentials.session_token)? The daemon warns when -o gives one.
 */
bool cfg_key_is_secret(const char *key);

/*
 * Cross-key checks, once everything is applied, and defaults that come from
 * the environment (endpoint: $S3R_ENDPOINT, else $AWS_ENDPOINT_URL). Returns
 * 0, -EINVAL with the reason in err, or -ENOMEM.
 */
int cfg_validate(struct cfg *c, char *err, size_t errlen);

/*
 * Free the strings (secrets wiped first) and leave every string NULL; a
 * second call is harmless. Reuse needs cfg_init_defaults.
 */
void cfg_cleanup(struct cfg *c);

/*
 * Write "key = value\n" for every key, in table order, secrets as "***",
 * into buf (NUL-terminated when len > 0; buf may be NULL when len is 0).
 * Returns the length the whole dump needs, without the NUL, as snprintf
 * does: a result >= len means it was cut short.
 */
size_t cfg_dump(const struct cfg *c, char *buf, size_t len);

/* Print every key with its type, default, bounds and doc (for --help). */
void cfg_help(FILE *f);

/*
 * Parse a size: digits with an optional K/M/G/T suffix (binary units, case
 * ignored, "B", "KB" and "KiB" forms accepted). Returns 0, -EINVAL when it
 * is not a size, -ERANGE when it does not fit in 64 bits.
 */
int cfg_parse_size(const char *s, uint64_t *out);

/*
 * Parse a duration: digits in unit_ms (1 or 1000) or with a suffix ms, s, m,
 * h or d; *out_ms in milliseconds. Returns 0, -EINVAL or -ERANGE.
 */
int cfg_parse_duration(const char *s, unsigned unit_ms, uint64_t *out_ms);

/* true/false, 1/0, yes/no, on/off (case ignored). Returns 0 or -EINVAL. */
int cfg_parse_bool(const char *s, bool *out);

#endif
