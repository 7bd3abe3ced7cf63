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
#include "fs/meta/fsx_ns_i.h"

#define MAX_LIST_PAGES 1000000
#define LOGGED_SLOTS 4096

static pthread_mutex_t logged_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t logged[LOGGED_SLOTS]; /* protected by logged_lock */

void fsx_ns_skip_once(struct fsx_mount *m, const char *key, const char *why)
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

const char *fsx_ns_bad_name(const char *name, size_t len)
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

const char fsx_ns_both_names[] =
    "an object and a prefix have this name; the directory is shown";

void fsx_ns_dup_name(void *arg, const char *name)
{
  struct fsx_ns_dup *d = arg;
  char key[1024];

  snprintf(key, sizeof(key), "%s%s", d->prefix, name);
  fsx_ns_skip_once(d->m, key, fsx_ns_both_names);
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
    if (fsx_ns_bad_name(n, strlen(n)) || !strcmp(n, FSX_STATS_NAME))
      fsx_ns_skip_once(m, n, "bucket name unusable as a directory name");
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

int fsx_ns_add_page(struct fsx_mount *m, struct fsx_dirsnap *b, bool root,
                    const char *prefix, const struct s3_list_result *res)
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
    if ((why = fsx_ns_bad_name(name, strlen(name)))) {
      fsx_ns_skip_once(m, o->key, why);
      continue;
    }
    if (root && !strcmp(name, FSX_STATS_NAME)) {
      fsx_ns_skip_once(m, o->key, "the name of the stats file");
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
    if ((why = fsx_ns_bad_name(p + pl, len - pl - 1))) {
      fsx_ns_skip_once(m, p, why);
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
  struct fsx_ns_dup dc = {m, dkey};
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
      rc = fsx_ns_add_page(m, b, is_root(dir), dkey, &res);
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
  fsx_dirsnap_seal(b, t0, fsx_ns_dup_name, &dc);
  *out = b;
  return 0;
}

void fsx_ns_attr_from_meta(const struct s3_object_meta *mt, struct fsx_attr *a)
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

void fsx_ns_dir_of_marker(int hrc, const struct s3_object_meta *mt,
                          struct fsx_attr *a)
{
  struct fsx_attr x;

  memset(a, 0, sizeof(*a));
  a->kind = FSX_DIR;
  a->from_head = true;
  a->as_of_ms = clock_mono_ms();
  if (!hrc) {
    fsx_ns_attr_from_meta(mt, &x);
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
  fsx_ns_attr_from_meta(&mt, a);
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
      fsx_ns_dir_of_marker(hrc, &mt, &out[i]);
      ok[i] = !hrc || hrc == -ENOENT; /* -ENOENT: an implicit directory */
    } else if (!hrc) {
      fsx_ns_attr_from_meta(&mt, &out[i]);
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
    fsx_ns_dir_of_marker(-ENOENT, NULL, a); /* a bucket's root: no marker */
    return 0;
  }
  atomic_fetch_add(&m->st.heads, 1);
  rc = s3_head_object(m->s3, bucket, dkey, &mt);
  if (rc && rc != -ENOENT)
    return rc;
  fsx_ns_dir_of_marker(rc, &mt, a); /* -ENOENT: an implicit directory */
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
