/*
 * fsx_ns: the namespace. Directories are ListObjectsV2 with the '/'
 * delimiter (every page), implicit directories come from common prefixes,
 * attributes come from the listing: no HEAD per entry. A name not in a fresh
 * listing is resolved in one round of requests issued together (see
 * fsx_ns_lookup).
 * Keys FUSE cannot show ("a//b", ".", "..", names over 255 bytes, a file and
 * a directory of the same name) are skipped and logged once each.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mount/fsx_i.h"
#include "fs/meta/fsx_meta.h"
#include "fs/plane/fsx_rdma.h"

#define MAX_LIST_PAGES 1000000
#define LOGGED_SLOTS 4096

static pthread_mutex_t logged_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t logged[LOGGED_SLOTS]; /* protected by logged_lock */

/* Log a skipped key once (per hash slot, so a few may repeat). */
static void skip_once(struct fsx_mount *m, const char *key, const char *why)
{
  uint64_t h = fsx_etag_gen(key) | 1;
  size_t slot = (size_t)(h % LOGGED_SLOTS);
  bool first;

  atomic_fetch_add(&m->st.skipped_keys, 1);
  pthread_mutex_lock(&logged_lock);
  first = logged[slot] != h;
  logged[slot] = h;
  pthread_mutex_unlock(&logged_lock);
  if (first)
    log_notice("key '%s' is not shown: %s", key, why);
}

/* Can this name be a directory entry? NULL if yes, else why not. */
static const char *bad_name(const char *name, size_t len)
{
  if (len == 0)
    return "empty path component (\"//\" in the key)";
  if ((len == 1 && name[0] == '.') || (len == 2 && !strncmp(name, "..", 2)))
    return "'.' and '..' are reserved names";
  if (len > 255)
    return "name longer than 255 bytes";
  if (memchr(name, '\0', len))
    return "NUL in name";
  if (memchr(name, '/', len))
    return "'/' in a name";
  return NULL;
}

static void attr_from_time(struct fsx_attr *a, time_t t)
{
  a->mtime.tv_sec = t;
  a->mtime.tv_nsec = 0;
}

/* Where a file and a directory share a name, the directory is shown. */
static const char both_names[] =
    "an object and a prefix have this name; the directory is shown";

struct dup_ctx {
  struct fsx_mount *m;
  const char *prefix;
};

static void dup_name(void *arg, const char *name)
{
  struct dup_ctx *d = arg;
  char key[1024];

  snprintf(key, sizeof(key), "%s%s", d->prefix, name);
  skip_once(d->m, key, both_names);
}

static int load_buckets(struct fsx_mount *m, struct fsx_dirsnap *b)
{
  struct s3_buckets_result res;
  struct fsx_attr a = {.kind = FSX_DIR};
  int rc;

  atomic_fetch_add(&m->st.lists, 1);
  rc = s3_list_buckets(m->s3, &res);
  if (rc)
    return rc;
  for (size_t i = 0; !rc && i < res.n_buckets; i++) {
    const char *n = res.buckets[i].name;
    attr_from_time(&a, res.buckets[i].created);
    if (bad_name(n, strlen(n)) || !strcmp(n, FSX_STATS_NAME))
      skip_once(m, n, "bucket name unusable as a directory name");
    else
      rc = fsx_dirsnap_add(b, n, strlen(n), &a);
  }
  s3_buckets_result_cleanup(&res);
  return rc;
}

/* The root of the mount: where the stats file lives. */
static bool is_root(const struct fsx_inode *dir)
{
  return fsx_inode_ino(dir) == FSX_ROOT_INO;
}

static int add_page(struct fsx_mount *m, struct fsx_dirsnap *b,
                    const struct fsx_inode *dir, const char *prefix,
                    const struct s3_list_result *res)
{
  size_t pl = strlen(prefix);
  const char *why;
  int rc = 0;

  for (size_t i = 0; !rc && i < res->n_objects; i++) {
    const struct s3_object_info *o = &res->objects[i];
    const char *name = o->key + pl;
    struct fsx_attr a = {.kind = FSX_FILE, .size = (uint64_t)o->size};
    if (strncmp(o->key, prefix, pl) != 0)
      continue; /* not ours: the server ignored the prefix */
    if (!*name)
      continue; /* the "dir/" marker of this very directory */
    if (strchr(name, '/') && name[strlen(name) - 1] == '/' &&
        strchr(name, '/') == name + strlen(name) - 1)
      continue; /* a subdirectory's "x/" marker: its prefix shows it */
    if ((why = bad_name(name, strlen(name)))) {
      skip_once(m, o->key, why);
      continue;
    }
    if (is_root(dir) && !strcmp(name, FSX_STATS_NAME)) {
      skip_once(m, o->key, "the name of the stats file");
      continue;
    }
    attr_from_time(&a, o->mtime);
    snprintf(a.etag, sizeof(a.etag), "%s", o->etag);
    rc = fsx_dirsnap_add(b, name, strlen(name), &a);
  }
  for (size_t i = 0; !rc && i < res->n_prefixes; i++) {
    const char *p = res->prefixes[i];
    size_t len = strlen(p);
    struct fsx_attr a = {.kind = FSX_DIR};
    if (len <= pl || strncmp(p, prefix, pl) != 0 || p[len - 1] != '/')
      continue;
    if ((why = bad_name(p + pl, len - pl - 1))) {
      skip_once(m, p, why);
      continue;
    }
    rc = fsx_dirsnap_add(b, p + pl, len - pl - 1, &a);
  }
  return rc;
}

int fsx_ns_load_dir(struct fsx_mount *m, struct fsx_inode *dir,
                    struct fsx_dirsnap **out)
{
  const char *dkey = fsx_inode_key(m->tab, dir);
  /* after the directory's own marker: 1000 names fill one page */
  struct s3_list_params p = {.prefix = dkey, .delimiter = "/",
                             .start_after = dkey};
  struct fsx_dirsnap *b = fsx_dirsnap_new();
  struct s3_list_result res;
  struct dup_ctx dc = {m, dkey};
  char *token = NULL;
  int rc = 0, pages = 0;
  uint64_t t0 = clock_mono_ms(); /* the listing is as old as its start */

  *out = NULL;
  if (!b)
    return -ENOMEM;
  if (!fsx_inode_bucket(dir)) {
    rc = load_buckets(m, b);
  } else {
    do {
      p.continuation = token;
      atomic_fetch_add(&m->st.lists, 1);
      rc = s3_list_objects(m->s3, fsx_inode_bucket(dir), &p, &res);
      free(token);
      token = NULL;
      if (rc)
        break;
      rc = add_page(m, b, dir, dkey, &res);
      if (!rc && res.truncated && !(token = strdup(res.next_token)))
        rc = -ENOMEM;
      s3_list_result_cleanup(&res);
    } while (!rc && token && ++pages < MAX_LIST_PAGES);
    free(token);
  }
  if (rc) {
    fsx_dirsnap_put(b);
    return rc;
  }
  fsx_dirsnap_seal(b, t0, dup_name, &dc);
  *out = b;
  return 0;
}

/* s3fs-compatible x-amz-meta-* into attributes. */
static void attr_from_meta(const struct s3_object_meta *mt, struct fsx_attr *a)
{
  memset(a, 0, sizeof(*a));
  a->kind = FSX_FILE;
  a->from_head = true;
  a->as_of_ms = clock_mono_ms();
  a->size = mt->size;
  snprintf(a->etag, sizeof(a->etag), "%s", mt->etag);
  attr_from_time(a, mt->mtime);
  a->ctime = a->atime = a->mtime; /* s3fs: Last-Modified where none is kept */
  fsx_meta_decode(mt, a); /* over them: x-amz-meta-mtime|ctime|atime */
  if (a->has_mode && S_ISLNK(a->mode))
    a->kind = FSX_SYMLINK;
  else if (a->has_mode && (S_ISFIFO(a->mode) || S_ISSOCK(a->mode) ||
                           S_ISCHR(a->mode) || S_ISBLK(a->mode)))
    a->kind = FSX_NODE;
}

/* A directory's times, mode and owner from its marker's attributes x. */
static void dir_meta_from(const struct fsx_attr *x, struct fsx_attr *a)
{
  a->mtime = x->mtime;
  a->has_ctime = x->has_ctime;
  a->ctime = x->ctime;
  a->has_atime = x->has_atime;
  a->atime = x->atime;
  a->has_mode = x->has_mode; /* s3fs writes it with or without S_IFDIR */
  a->mode = x->mode;
  a->has_uid = x->has_uid;
  a->uid = x->uid;
  a->has_gid = x->has_gid;
  a->gid = x->gid;
}

/*
 * A directory's attributes from the answer to its marker's HEAD (hrc 0:
 * mt; -ENOENT: an implicit directory, the defaults); either way from_head:
 * nothing more to ask.
 */
static void dir_of_marker(int hrc, const struct s3_object_meta *mt,
                          struct fsx_attr *a)
{
  struct fsx_attr x;

  memset(a, 0, sizeof(*a));
  a->kind = FSX_DIR;
  a->from_head = true;
  a->as_of_ms = clock_mono_ms();
  if (!hrc) {
    attr_from_meta(mt, &x);
    dir_meta_from(&x, a);
  }
}

int fsx_ns_head_key(struct fsx_mount *m, const char *bucket, const char *key,
                    struct fsx_attr *a)
{
  struct s3_object_meta mt;
  int rc;

  atomic_fetch_add(&m->st.heads, 1);
  rc = s3_head_object(m->s3, bucket, key, &mt);
  if (rc)
    return rc;
  attr_from_meta(&mt, a);
  s3_object_meta_cleanup(&mt);
  return 0;
}

int fsx_ns_head_many(struct fsx_mount *m, struct fsx_inode *dir,
                     const char *const *names, const struct fsx_attr *const *a,
                     size_t n, struct fsx_attr *out, bool *ok)
{
  const char *bucket = fsx_inode_bucket(dir);
  struct s3_req **r = calloc(n ? n : 1, sizeof(*r));
  int rc = 0;

  memset(ok, 0, n * sizeof(*ok));
  if (!r)
    return -ENOMEM;
  for (size_t i = 0; i < n && !rc; i++) {
    char *key = fsx_inode_key_of(m->tab, dir, names[i], a[i]->kind);
    if (key)
      r[i] = s3_req_create(m->s3, "HEAD", bucket, key);
    free(key);
    if (!r[i])
      rc = -ENOMEM;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    atomic_fetch_add(&m->st.heads, 1);
    s3_req_submit(r[i], NULL, NULL);
  }
  for (size_t i = 0; i < n && !rc; i++) {
    struct s3_object_meta mt;
    int hrc;

    s3_req_wait(r[i]);
    hrc = s3_head_object_result(r[i], &mt);
    if (a[i]->kind == FSX_DIR) {
      dir_of_marker(hrc, &mt, &out[i]);
      ok[i] = !hrc || hrc == -ENOENT; /* -ENOENT: an implicit directory */
    } else if (!hrc) {
      attr_from_meta(&mt, &out[i]);
      ok[i] = out[i].kind == a[i]->kind ||
              (a[i]->kind == FSX_FILE && out[i].kind != FSX_DIR);
    }
    if (!hrc)
      s3_object_meta_cleanup(&mt);
  }
  for (size_t i = 0; i < n; i++)
    s3_req_destroy(r[i]);
  free(r);
  return rc;
}

int fsx_ns_head(struct fsx_mount *m, struct fsx_inode *in, struct fsx_attr *a)
{
  return fsx_ns_head_key(m, fsx_inode_bucket(in), fsx_inode_key(m->tab, in), a);
}

int fsx_ns_head_dir(struct fsx_mount *m, const char *bucket, const char *dkey,
                    struct fsx_attr *a)
{
  struct s3_object_meta mt;
  int rc;

  if (!bucket || !dkey[0]) {
    dir_of_marker(-ENOENT, NULL, a); /* a bucket's root: no marker */
    return 0;
  }
  atomic_fetch_add(&m->st.heads, 1);
  rc = s3_head_object(m->s3, bucket, dkey, &mt);
  if (rc && rc != -ENOENT)
    return rc;
  dir_of_marker(rc, &mt, a); /* -ENOENT: an implicit directory */
  if (!rc)
    s3_object_meta_cleanup(&mt);
  return 0;
}

int fsx_ns_head_child(struct fsx_mount *m, struct fsx_inode *dir,
                      const char *name, struct fsx_attr *a)
{
  char *key = fsx_inode_key_of(m->tab, dir, name, FSX_FILE);
  int rc = key ? fsx_ns_head_key(m, fsx_inode_bucket(dir), key, a) : -ENOMEM;

  free(key);
  return rc;
}

/*
 * How long a cold lookup's page answers (cache.burst_ttl; 0, the default:
 * no page is listed), never past cache.negative_ttl or cache.dir_ttl. It
 * answers directories, and files by one HEAD (their metadata); an absent
 * name is still asked for (another client may have made it since).
 */
static uint64_t page_ttl(const struct fsx_mount *m)
{
  uint64_t t = m->o.burst_ttl_ms;

  t = m->o.neg_ttl_ms < t ? m->o.neg_ttl_ms : t;
  return m->o.dir_ttl_ms < t ? m->o.dir_ttl_ms : t;
}

/*
 * A directory's first listing page, complete (not truncated), as its
 * snapshot from t0 on for page_ttl (names only: lookups of its
 * files still HEAD them for their metadata; absent names and directories
 * are answered); a longer one marks the directory big instead.
 */
static void keep_page(struct fsx_mount *m, struct fsx_inode *dir,
                      const struct s3_list_result *res, uint64_t t0,
                      uint64_t changes)
{
  const char *dkey = fsx_inode_key(m->tab, dir);
  struct dup_ctx dc = {m, dkey};
  struct fsx_dirsnap *b;

  if (res->truncated) {
    fsx_dir_set_big(m->tab, dir, m->o.dir_ttl_ms);
    return;
  }
  b = fsx_dirsnap_new();
  if (!b)
    return;
  b->names_only = true;
  if (!add_page(m, b, dir, dkey, res)) {
    fsx_dirsnap_seal(b, t0, dup_name, &dc);
    fsx_dir_set_snap_since(m->tab, dir, b, page_ttl(m), changes);
  }
  fsx_dirsnap_put(b);
}

/*
 * The file's metadata from a cold lookup's GET of its first bytes (its
 * HEAD when the GET cannot say: an empty object answers a range with 416,
 * a server may ignore the range); those bytes in *pk when they are the
 * whole object.
 */
static int peek_result(struct fsx_mount *m, struct s3_req *get,
                       const char *bucket, const char *key,
                       struct s3_object_meta *mt, char **buf,
                       struct fsx_peek *pk)
{
  int rc = s3_get_meta_result(get, mt);
  size_t got = s3_req_received(get);

  if (rc == -ENOENT)
    return rc;
  if (rc == -EBADMSG && s3_req_status(get) == 200 &&
      !atomic_exchange(&m->peek_off, true))
    log_notice("lookups: the server answers a range with the whole object: "
               "a cold lookup asks with a HEAD from now on");
  if (rc) {
    atomic_fetch_add(&m->st.heads, 1);
    return s3_head_object(m->s3, bucket, key, mt);
  }
  if (got == mt->size && got <= m->o.lookup_bytes) {
    pk->buf = *buf;
    pk->len = got;
    *buf = NULL;
  }
  return 0;
}

/*
 * A cold lookup's one round, all at once: HEAD the name as a file (with
 * pk and read.lookup_bytes: GET its first bytes instead, the metadata from
 * the GET's headers, the bytes kept when they are all of it), HEAD
 * its directory marker, LIST one key below it (after the marker), and,
 * unless the directory is known to be big or was just paged, LIST the
 * directory's first page (cache.burst_ttl set): when that is all of it,
 * it answers for a moment (page_ttl) the lookups after this one:
 * directories at once, files with a HEAD for their metadata, absent names
 * with the name's own requests only. A directory (marker or keys below)
 * wins over a file of the same name.
 */
int fsx_ns_lookup(struct fsx_mount *m, struct fsx_inode *dir, const char *name,
                  struct fsx_attr *a, struct fsx_peek *pk)
{
  struct s3_list_params p = {.delimiter = "/", .max_keys = 1};
  struct s3_list_params dp = {.prefix = fsx_inode_key(m->tab, dir),
                              .delimiter = "/",
                              .start_after = fsx_inode_key(m->tab, dir)};
  const struct fsx_dirent *e;
  struct s3_list_result lres, dres;
  struct s3_object_meta mt, dmt;
  struct fsx_dirsnap *s;
  struct s3_req *head = NULL, *dhead = NULL, *list = NULL, *dlist = NULL;
  char *key = NULL, *dkey = NULL, *peek = NULL;
  uint64_t t0 = clock_mono_ms(), changes = fsx_dir_changes(m->tab, dir);
  bool names_only, paged = false;
  int rc, hrc, drc, lrc;

  if ((rc = fsx_inode_name_fits(m->tab, dir, name, FSX_FILE)))
    return rc;
  if (bad_name(name, strlen(name)))
    return -ENOENT;
  s = fsx_dir_get_snap(m->tab, dir, true);
  if (!s && !fsx_inode_bucket(dir)) {
    /* the all-buckets root: the bucket list is the only truth */
    rc = fsx_ns_load_dir(m, dir, &s);
    if (rc)
      return rc;
    fsx_dir_set_snap(m->tab, dir, s, m->o.dir_ttl_ms); /* s: ours too */
  }
  if (s) {
    e = fsx_dirsnap_find(s, name);
    if (e)
      *a = e->attr;
    names_only = s->names_only;
    fsx_dirsnap_put(s);
    if (e && (!names_only || a->kind != FSX_FILE))
      return 0;
    if (e) /* a file a cold lookup's page showed: its metadata, one HEAD */
      return fsx_ns_head_child(m, dir, name, a);
    /* absent: so says a listing; a cold lookup's page does not, since
       another client may have made the name after it: ask */
    if (!names_only)
      return -ENOENT;
    paged = true;
  }

  key = fsx_inode_key_of(m->tab, dir, name, FSX_FILE);
  dkey = fsx_inode_key_of(m->tab, dir, name, FSX_DIR);
  if (!key || !dkey) {
    rc = -ENOMEM;
    goto out;
  }
  p.prefix = dkey;
  p.start_after = dkey; /* keys below it: the marker is HEADed */
  /* (with a data plane named, a HEAD: the bytes go by RDMA) */
  if (pk && m->cache && m->o.lookup_bytes && !atomic_load(&m->peek_off) &&
      !(m->o.rdma_named && fsx_rdma_active(m)) &&
      (peek = malloc(m->o.lookup_bytes))) {
    head = s3_get_object_req(m->s3, fsx_inode_bucket(dir), key, 0,
                             m->o.lookup_bytes, peek);
    if (head)
      s3_req_set_range_only(head);
  } else {
    head = s3_req_create(m->s3, "HEAD", fsx_inode_bucket(dir), key);
  }
  dhead = s3_req_create(m->s3, "HEAD", fsx_inode_bucket(dir), dkey);
  list = s3_list_objects_req(m->s3, fsx_inode_bucket(dir), &p, &lres);
  if (!paged && page_ttl(m) && !fsx_dir_is_big(m->tab, dir))
    dlist = s3_list_objects_req(m->s3, fsx_inode_bucket(dir), &dp, &dres);
  if (!head || !dhead || !list) {
    rc = -ENOMEM;
    goto out;
  }
  atomic_fetch_add(&m->st.heads, peek ? 1 : 2);
  if (peek)
    atomic_fetch_add(&m->st.lookup_gets, 1);
  atomic_fetch_add(&m->st.lists, dlist ? 2 : 1);
  s3_req_submit(head, NULL, NULL);
  s3_req_submit(dhead, NULL, NULL);
  s3_req_submit(list, NULL, NULL);
  if (dlist)
    s3_req_submit(dlist, NULL, NULL);
  s3_req_wait(head);
  s3_req_wait(dhead);
  lrc = s3_req_wait(list);
  if (dlist) {
    if (!s3_req_wait(dlist))
      keep_page(m, dir, &dres, t0, changes);
    s3_list_result_cleanup(&dres);
  }
  hrc = peek ? peek_result(m, head, fsx_inode_bucket(dir), key, &mt, &peek, pk)
             : s3_head_object_result(head, &mt);
  drc = s3_head_object_result(dhead, &dmt);
  if ((drc || lrc) && fsx_inode_name_fits(m->tab, dir, name, FSX_DIR)) {
    /* a file's key of S3's longest: no directory can have it (a server
       may refuse the question, say with KeyTooLongError) */
    drc = drc ? -ENOENT : drc;
    lrc = lrc ? -ENOENT : lrc;
  }
  if (!drc || (!lrc && (lres.n_objects || lres.n_prefixes))) {
    /* a directory wins over a file of the same name */
    if (!hrc)
      skip_once(m, key, both_names);
    dir_of_marker(drc, &dmt, a); /* its marker asked (absent: implicit) */
    rc = 0;
  } else if (!hrc) {
    attr_from_meta(&mt, a);
    rc = 0;
  } else {
    /* no object: a failed LIST or marker HEAD (say EACCES) explains more
       than ENOENT */
    rc = hrc != -ENOENT ? hrc : drc != -ENOENT ? drc : lrc ? lrc : -ENOENT;
  }
  if (!hrc)
    s3_object_meta_cleanup(&mt);
  if (!drc)
    s3_object_meta_cleanup(&dmt);
  s3_list_result_cleanup(&lres);
out:
  s3_req_destroy(head);
  s3_req_destroy(dhead);
  s3_req_destroy(list);
  s3_req_destroy(dlist);
  free(key);
  free(dkey);
  free(peek);
  return rc;
}

void fsx_ns_stat(const struct fsx_mount *m, uint64_t ino,
                 const struct fsx_attr *a, struct stat *st)
{
  mode_t perm;

  memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  switch (a->kind) {
  case FSX_DIR:
    perm = m->o.dir_mode ? m->o.dir_mode : (0777 & ~m->o.umask);
    st->st_mode = S_IFDIR | perm;
    st->st_nlink = 2;
    st->st_size = 4096;
    break;
  case FSX_SYMLINK:
    st->st_mode = S_IFLNK | 0777;
    st->st_nlink = 1;
    st->st_size = (off_t)a->size;
    break;
  case FSX_NODE: /* a->has_mode: only a HEAD (or mknod) says it is one */
    st->st_mode = a->mode & (S_IFMT | 07777);
    st->st_nlink = 1;
    st->st_rdev = a->rdev;
    break;
  case FSX_SPECIAL:
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = (off_t)a->size;
    break;
  default:
    perm = m->o.file_mode ? m->o.file_mode : (0666 & ~m->o.umask);
    st->st_mode = S_IFREG | perm;
    st->st_nlink = 1;
    st->st_size = (off_t)a->size;
    break;
  }
  /* x-amz-meta-mode, unless the mount forces a mode */
  if (a->has_mode && a->kind == FSX_FILE && !m->o.file_mode)
    st->st_mode = S_IFREG | (a->mode & 07777);
  if (a->has_mode && a->kind == FSX_DIR && !m->o.dir_mode)
    st->st_mode = S_IFDIR | (a->mode & 07777);
  if (m->o.ro)
    st->st_mode &= (mode_t)~0222;
  st->st_uid = a->has_uid ? a->uid : m->o.uid;
  st->st_gid = a->has_gid ? a->gid : m->o.gid;
  st->st_blksize = 1 << 20;
  st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
  st->st_mtim = a->mtime;
  if (!st->st_mtim.tv_sec)
    st->st_mtim.tv_sec = m->o.mount_time;
  st->st_ctim = a->ctime.tv_sec ? a->ctime : st->st_mtim;
  st->st_atim = a->atime.tv_sec ? a->atime : st->st_mtim;
}
