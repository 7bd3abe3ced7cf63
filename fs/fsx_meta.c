/*
 * fsx_meta: s3fs's x-amz-meta-mode|uid|gid|mtime, encoded for a write and
 * decoded from a HEAD (see fsx_meta.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fs/fsx_meta.h"

/* ---- the pairs ---- */

size_t fsx_wmeta_kv(const struct fsx_wmeta *mt, struct s3_kv kv[4],
                    char v[4][32])
{
  size_t n = 0;

  snprintf(v[0], 32, "%u", (unsigned)mt->mode);
  snprintf(v[1], 32, "%u", (unsigned)mt->uid);
  snprintf(v[2], 32, "%u", (unsigned)mt->gid);
  kv[n++] = (struct s3_kv){"mode", v[0]};
  kv[n++] = (struct s3_kv){"uid", v[1]};
  kv[n++] = (struct s3_kv){"gid", v[2]};
  if (mt->has_mtime) {
    snprintf(v[3], 32, "%lld", (long long)mt->mtime.tv_sec);
    kv[n++] = (struct s3_kv){"mtime", v[3]};
  }
  return n;
}

/* One of the pairs fsx_wmeta_kv writes (what a rewrite replaces). */
static bool ours(const char *key)
{
  return !strcasecmp(key, "mode") || !strcasecmp(key, "uid") ||
         !strcasecmp(key, "gid") || !strcasecmp(key, "mtime");
}

bool fsx_meta_same(const struct fsx_wmeta *a, const struct fsx_wmeta *b)
{
  return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
         a->has_mtime == b->has_mtime &&
         (!a->has_mtime || a->mtime.tv_sec == b->mtime.tv_sec);
}

bool fsx_meta_matches(const struct s3_object_meta *cur,
                      const struct fsx_wmeta *mt)
{
  struct s3_kv kv[4];
  char v[4][32];
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

/* The pair k as a 32-bit decimal, if present and valid (the last wins). */
static void meta_u32(const struct s3_object_meta *o, const char *k,
                     bool *has, unsigned *v)
{
  for (size_t i = 0; i < o->n_meta; i++) {
    char *end;
    unsigned long x;
    if (strcmp(o->meta[i].key, k))
      continue;
    errno = 0;
    x = strtoul(o->meta[i].val, &end, 10);
    if (!errno && end != o->meta[i].val && x <= 0xffffffffu) {
      *has = true;
      *v = (unsigned)x;
    }
  }
}

void fsx_meta_decode(const struct s3_object_meta *o, struct fsx_attr *a)
{
  bool has_mtime = false;
  unsigned mode = 0, uid = 0, gid = 0, mtime = 0;

  meta_u32(o, "mode", &a->has_mode, &mode);
  meta_u32(o, "uid", &a->has_uid, &uid);
  meta_u32(o, "gid", &a->has_gid, &gid);
  meta_u32(o, "mtime", &has_mtime, &mtime);
  if (a->has_mode)
    a->mode = (mode_t)mode;
  if (a->has_uid)
    a->uid = (uid_t)uid;
  if (a->has_gid)
    a->gid = (gid_t)gid;
  if (has_mtime) {
    a->mtime.tv_sec = (time_t)mtime;
    a->mtime.tv_nsec = 0;
  }
}

void fsx_meta_to_attr(struct fsx_attr *a, const struct fsx_wmeta *mt)
{
  a->has_mode = a->has_uid = a->has_gid = true;
  a->mode = mt->mode;
  a->uid = mt->uid;
  a->gid = mt->gid;
  if (mt->has_mtime)
    a->mtime = mt->mtime;
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
  w->kv = calloc(4 + (w->have_cur ? w->cur.n_meta : 0), sizeof(*w->kv));
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
