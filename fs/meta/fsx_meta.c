/*
 * fsx_meta: s3fs's x-amz-meta-mode|uid|gid|mtime, encoded for a write and
 * decoded from a HEAD (see fsx_meta.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fs/meta/fsx_meta.h"

/* ---- the pairs ---- */

/* A time as s3fs writes it: seconds, and nanoseconds after a '.' in nine
   digits where there are any (s3fs reads both; the times this mount
   takes itself are whole seconds, a utimens's are as given, so a stat
   before and after a remount agree). */
static void put_time(struct s3_kv *kv, const char *key, char v[32],
                     const struct timespec *t)
{
  if (t->tv_nsec > 0 && t->tv_nsec < 1000000000)
    snprintf(v, 32, "%lld.%09ld", (long long)t->tv_sec, t->tv_nsec);
  else
    snprintf(v, 32, "%lld", (long long)t->tv_sec);
  *kv = (struct s3_kv){key, v};
}

size_t fsx_wmeta_kv(const struct fsx_wmeta *mt,
                    struct s3_kv kv[FSX_META_MAX], char v[FSX_META_MAX][32])
{
  size_t n = 0;

  snprintf(v[0], 32, "%u", (unsigned)mt->mode);
  snprintf(v[1], 32, "%u", (unsigned)mt->uid);
  snprintf(v[2], 32, "%u", (unsigned)mt->gid);
  kv[n++] = (struct s3_kv){"mode", v[0]};
  kv[n++] = (struct s3_kv){"uid", v[1]};
  kv[n++] = (struct s3_kv){"gid", v[2]};
  if (mt->has_mtime)
    put_time(&kv[n++], "mtime", v[3], &mt->mtime);
  if (mt->has_ctime)
    put_time(&kv[n++], "ctime", v[4], &mt->ctime);
  if (mt->has_atime)
    put_time(&kv[n++], "atime", v[5], &mt->atime);
  if (S_ISCHR(mt->mode) || S_ISBLK(mt->mode)) {
    snprintf(v[6], 32, "%llu", (unsigned long long)mt->rdev);
    kv[n++] = (struct s3_kv){"rdev", v[6]};
  }
  return n;
}

/* One of the pairs fsx_wmeta_kv writes (what a rewrite replaces). */
static bool ours(const char *key)
{
  static const char *const k[] = {"mode",  "uid",   "gid", "mtime",
                                  "ctime", "atime", "rdev"};

  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
    if (!strcasecmp(key, k[i]))
      return true;
  return false;
}

static bool same_time(bool ha, const struct timespec *a, bool hb,
                      const struct timespec *b)
{
  return ha == hb &&
         (!ha || (a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec));
}

bool fsx_meta_same(const struct fsx_wmeta *a, const struct fsx_wmeta *b)
{
  return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
         same_time(a->has_mtime, &a->mtime, b->has_mtime, &b->mtime) &&
         same_time(a->has_ctime, &a->ctime, b->has_ctime, &b->ctime) &&
         same_time(a->has_atime, &a->atime, b->has_atime, &b->atime) &&
         ((!S_ISCHR(a->mode) && !S_ISBLK(a->mode)) || a->rdev == b->rdev);
}

bool fsx_meta_matches(const struct s3_object_meta *cur,
                      const struct fsx_wmeta *mt)
{
  struct s3_kv kv[FSX_META_MAX];
  char v[FSX_META_MAX][32];
  size_t n = fsx_wmeta_kv(mt, kv, v), found = 0;

  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < cur->n_meta; j++)
      if (!strcasecmp(kv[i].key, cur->meta[j].key) &&
          !strcmp(kv[i].val, cur->meta[j].val)) {
        found++;
        break;
      }
  return found == n;
}

/* ---- decoding a HEAD ---- */

/* The pair k as a 32-bit number in base (0: a leading 0 is octal, as
   s3fs reads a mode), if present and valid (the last wins). */
static void meta_u32(const struct s3_object_meta *o, const char *k, int base,
                     bool *has, unsigned *v)
{
  for (size_t i = 0; i < o->n_meta; i++) {
    char *end;
    unsigned long x;
    if (strcmp(o->meta[i].key, k))
      continue;
    errno = 0;
    x = strtoul(o->meta[i].val, &end, base);
    if (!errno && end != o->meta[i].val && !*end && x <= 0xffffffffu) {
      *has = true;
      *v = (unsigned)x;
    }
  }
}

/*
 * The pair k as a time, if present and valid (the last wins): decimal
 * seconds (a sign allowed), then optionally "." and nanoseconds as an
 * integer below 10^9 (s3fs writes 9 digits and reads them so).
 */
static void meta_time(const struct s3_object_meta *o, const char *k,
                      bool *has, struct timespec *t)
{
  for (size_t i = 0; i < o->n_meta; i++) {
    const char *s = o->meta[i].val;
    char *end;
    long long sec;
    unsigned long ns = 0;
    if (strcmp(o->meta[i].key, k))
      continue;
    errno = 0;
    sec = strtoll(s, &end, 10);
    if (errno || end == s || (*end && *end != '.'))
      continue;
    if (*end == '.') {
      const char *f = end + 1;
      if (*f < '0' || *f > '9')
        continue;
      ns = strtoul(f, &end, 10);
      if (errno || *end || ns >= 1000000000ul)
        continue;
    }
    *has = true;
    t->tv_sec = (time_t)sec;
    t->tv_nsec = (long)ns;
  }
}

void fsx_meta_decode(const struct s3_object_meta *o, struct fsx_attr *a)
{
  bool has_mtime = false;
  unsigned mode = 0, uid = 0, gid = 0;
  struct timespec mtime;

  meta_u32(o, "mode", 0, &a->has_mode, &mode);
  meta_u32(o, "uid", 10, &a->has_uid, &uid);
  meta_u32(o, "gid", 10, &a->has_gid, &gid);
  meta_time(o, "mtime", &has_mtime, &mtime);
  meta_time(o, "ctime", &a->has_ctime, &a->ctime);
  meta_time(o, "atime", &a->has_atime, &a->atime);
  if (a->has_mode)
    a->mode = (mode_t)mode;
  if (a->has_uid)
    a->uid = (uid_t)uid;
  if (a->has_gid)
    a->gid = (gid_t)gid;
  if (has_mtime)
    a->mtime = mtime;
  for (size_t i = 0; i < o->n_meta; i++) {
    char *end;
    unsigned long long x;
    if (strcmp(o->meta[i].key, "rdev"))
      continue;
    errno = 0;
    x = strtoull(o->meta[i].val, &end, 10);
    if (!errno && end != o->meta[i].val && !*end)
      a->rdev = (dev_t)x;
  }
}

void fsx_meta_to_attr(struct fsx_attr *a, const struct fsx_wmeta *mt)
{
  static const struct timespec none;

  a->has_mode = a->has_uid = a->has_gid = true;
  a->mode = mt->mode;
  a->uid = mt->uid;
  a->gid = mt->gid;
  if (mt->has_mtime)
    a->mtime = mt->mtime;
  a->has_ctime = mt->has_ctime;
  a->ctime = mt->has_ctime ? mt->ctime : none;
  a->has_atime = mt->has_atime;
  a->atime = mt->has_atime ? mt->atime : none;
  a->rdev = mt->rdev;
}

/* ---- writing ---- */

int fsx_wopts_make(struct fsx_mount *m, const char *bucket, const char *key,
                   bool keep, const struct fsx_wmeta *mt, struct fsx_wopts *w)
{
  size_t n;
  int rc;

  memset(w, 0, sizeof(*w));
  if (keep) {
    rc = s3_head_object(m->s3, bucket, key, &w->cur);
    if (rc && rc != -ENOENT)
      return rc;
    w->have_cur = !rc;
  }
  w->kv = calloc(FSX_META_MAX + (w->have_cur ? w->cur.n_meta : 0), sizeof(*w->kv));
  if (!w->kv) {
    fsx_wopts_cleanup(w);
    return -ENOMEM;
  }
  n = fsx_wmeta_kv(mt, w->kv, w->v);
  for (size_t i = 0; w->have_cur && i < w->cur.n_meta; i++)
    if (!ours(w->cur.meta[i].key))
      w->kv[n++] = (struct s3_kv){w->cur.meta[i].key, w->cur.meta[i].val};
  w->o.meta = w->kv;
  w->o.n_meta = n;
  if (w->have_cur && w->cur.content_type[0])
    w->o.content_type = w->cur.content_type;
  return 0;
}

void fsx_wopts_cleanup(struct fsx_wopts *w)
{
  free(w->kv);
  w->kv = NULL;
  if (w->have_cur)
    s3_object_meta_cleanup(&w->cur);
  w->have_cur = false;
}

int fsx_copy_meta(struct fsx_mount *m, const char *bucket, const char *key,
                  const struct fsx_wmeta *mt, char etag[S3_ETAG_MAX])
{
  struct fsx_wopts w;
  int rc = fsx_wopts_make(m, bucket, key, true, mt, &w);

  /* CopyObject stops at 5 GiB: a multipart copy beyond */
  if (!rc && w.have_cur && w.cur.size > (5ull << 30))
    rc = s3_copy_object_any(m->s3, bucket, key, bucket, key, true, &w.o,
                            w.cur.size, 5ull << 30, 256ull << 20, etag);
  else if (!rc)
    rc = s3_copy_object(m->s3, bucket, key, bucket, key, true, &w.o, etag);
  fsx_wopts_cleanup(&w);
  return rc;
}

int fsx_copy_stamped(struct fsx_mount *m, const char *bucket, const char *src,
                     const char *dst, const char *name, const char *if_match,
                     char etag[S3_ETAG_MAX], time_t *t)
{
  static const char *const times[3] = {"mtime", "ctime", "atime"};
  struct s3_object_meta cur;
  struct s3_put_opts o = {0};
  struct s3_kv *kv, cond;
  char now[32], lastmod[32];
  size_t n = 0;
  int rc;

  rc = s3_head_object(m->s3, bucket, src, &cur);
  if (rc)
    return rc;
  if (if_match && strcmp(if_match, cur.etag)) {
    s3_object_meta_cleanup(&cur);
    return -ESTALE; /* not the object the caller knows */
  }
  if (cur.size > (5ull << 30)) { /* one CopyObject cannot: the caller's */
    s3_object_meta_cleanup(&cur);
    return -EFBIG;
  }
  kv = calloc(cur.n_meta + 4, sizeof(*kv));
  if (!kv) {
    s3_object_meta_cleanup(&cur);
    return -ENOMEM;
  }
  for (size_t i = 0; i < cur.n_meta; i++)
    if (strcasecmp(cur.meta[i].key, name))
      kv[n++] = (struct s3_kv){cur.meta[i].key, cur.meta[i].val};
  /* times shown as Last-Modified (none stored) are pinned: the copy has a
     Last-Modified of its own */
  snprintf(lastmod, sizeof(lastmod), "%lld", (long long)cur.mtime);
  for (size_t i = 0; i < 3; i++) {
    bool has = !strcmp(times[i], name);
    for (size_t j = 0; j < cur.n_meta && !has; j++)
      has = !strcasecmp(cur.meta[j].key, times[i]);
    if (!has)
      kv[n++] = (struct s3_kv){times[i], lastmod};
  }
  *t = time(NULL);
  snprintf(now, sizeof(now), "%lld", (long long)*t);
  kv[n++] = (struct s3_kv){name, now};
  /* the version the HEAD saw, or none */
  cond = (struct s3_kv){"x-amz-copy-source-if-match", cur.etag};
  o.meta = kv;
  o.n_meta = n;
  o.content_type = cur.content_type[0] ? cur.content_type : NULL;
  o.headers = cur.etag[0] ? &cond : NULL;
  o.n_headers = cur.etag[0] ? 1 : 0;
  rc = s3_copy_object(m->s3, bucket, src, bucket, dst, true, &o, etag);
  free(kv);
  s3_object_meta_cleanup(&cur);
  return rc;
}
