/* fsx_node: the helpers of the FUSE operations (see fsx_node.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "config/cfg.h"
#include "fs/meta/fsx_dirsnap.h"
#include "fs/ops/fsx_node.h"

void fsx_stats_attr(struct fsx_attr *a)
{
  memset(a, 0, sizeof(*a));
  a->kind = FSX_SPECIAL;
}

void fsx_attr_of(struct fsx_mount *m, struct fsx_inode *in,
                 struct fsx_attr *a)
{
  struct fsx_inode_view v;
  struct fsx_wb *wb;

  fsx_inode_view(m->tab, in, &v);
  *a = v.attr;
  /* a directory whose names this mount changed: that time at least (a
     ctime of 0 is the mtime's) */
  if (a->kind == FSX_DIR && v.entries_at > a->mtime.tv_sec)
    a->mtime = (struct timespec){v.entries_at, 0};
  if (a->kind == FSX_DIR && a->ctime.tv_sec &&
      v.entries_at > a->ctime.tv_sec)
    a->ctime = (struct timespec){v.entries_at, 0};
  wb = fsx_wb_get(m, in);
  if (wb) {
    fsx_wb_attr(wb, a);
    fsx_wb_put(m, wb);
  }
}

void fsx_entry_of(struct fsx_mount *m, struct fsx_inode *in,
                  struct fuse_entry_param *e)
{
  struct fsx_attr a;

  fsx_attr_of(m, in, &a);
  memset(e, 0, sizeof(*e));
  e->ino = fsx_inode_ino(in);
  e->attr_timeout = fsx_secs(m->o.attr_ttl_ms);
  e->entry_timeout = fsx_secs(m->o.attr_ttl_ms);
  fsx_stat_of(m, in, &a, &e->attr);
  log_debug("entry %llu: size %lld mtime %lld", (unsigned long long)e->ino,
            (long long)e->attr.st_size, (long long)e->attr.st_mtime);
}

void fsx_stat_of(struct fsx_mount *m, struct fsx_inode *in,
                 const struct fsx_attr *a, struct stat *st)
{
  struct fsx_inode_view v;
  struct fsx_dirsnap *s;

  fsx_ns_stat(m, fsx_inode_ino(in), a, st);
  if (S_ISDIR(st->st_mode)) {
    s = fsx_dir_get_snap(m->tab, in, true); /* (a whole page, or all) */
    if (s)
      st->st_nlink = 2 + (nlink_t)s->ndirs;
    fsx_dirsnap_put(s);
  }
  fsx_inode_view(m->tab, in, &v);
  if (v.unlinked)
    st->st_nlink = 0; /* still open */
}

struct fsx_inode *fsx_child_of(struct fsx_mount *m, struct fsx_inode *dir,
                               const char *name, const struct fsx_attr *a)
{
  /* in all-buckets mode the root's children are buckets */
  return fsx_inode_child(m->tab, dir, name, a,
                         fsx_inode_bucket(dir) ? NULL : name, m->o.attr_ttl_ms,
                         true);
}

/* The metadata a file shows now (its stat), to be stored. */
void fsx_shown_meta(struct fsx_mount *m, uint64_t ino,
                    const struct fsx_attr *a, struct fsx_wmeta *mt)
{
  struct stat st;

  fsx_ns_stat(m, ino, a, &st);
  memset(mt, 0, sizeof(*mt));
  mt->mode = st.st_mode;
  mt->uid = st.st_uid;
  mt->gid = st.st_gid;
  mt->has_atime = a->has_atime; /* kept as it is; ctime: the caller's */
  mt->atime = a->atime;
  mt->rdev = a->rdev;
}

static int open_for_write(struct fsx_mount *m, struct fsx_inode *in,
                          const struct fsx_attr *a, int flags, bool held,
                          struct fsx_wb **wb)
{
  struct fsx_wmeta mt;

  if (a->kind != FSX_FILE)
    return a->kind == FSX_DIR ? -EISDIR : -EACCES;
  fsx_shown_meta(m, fsx_inode_ino(in), a, &mt);
  return (held ? fsx_wb_open_held : fsx_wb_open)(
      m, in, a, (flags & O_TRUNC) != 0, &mt, wb);
}

int fsx_open_for_write(struct fsx_mount *m, struct fsx_inode *in,
                       const struct fsx_attr *a, int flags, struct fsx_wb **wb)
{
  return open_for_write(m, in, a, flags, false, wb);
}

int fsx_open_for_write_held(struct fsx_mount *m, struct fsx_inode *in,
                            const struct fsx_attr *a, int flags,
                            struct fsx_wb **wb)
{
  return open_for_write(m, in, a, flags, true, wb);
}

/* A directory the caller may create entries in: the bucket's, not the
   all-buckets root, and name a name S3 and FUSE can both hold. */
int fsx_check_new_name(struct fsx_mount *m, struct fsx_inode *dir,
                       const char *name, enum fsx_kind kind)
{
  int rc;

  if (m->o.ro)
    return -EROFS;
  if ((rc = fsx_inode_name_fits(m->tab, dir, name, kind)))
    return rc;
  if (fsx_inode_ino(dir) == FSX_ROOT_INO && !strcmp(name, FSX_STATS_NAME))
    return -EEXIST;
  if (!fsx_inode_bucket(dir))
    return -EPERM; /* the root of an all-buckets mount holds buckets */
  return 0;
}

void fsx_new_meta(fuse_req_t req, enum fsx_kind kind, mode_t mode,
                  bool with_mtime, struct fsx_wmeta *mt, struct fsx_attr *a)
{
  const struct fuse_ctx *ctx = fuse_req_ctx(req);
  struct timespec now;

  clock_gettime(CLOCK_REALTIME, &now);
  now.tv_nsec = 0; /* stored in whole seconds: shown as stored */
  memset(mt, 0, sizeof(*mt));
  mt->mode = mode;
  mt->uid = ctx->uid;
  mt->gid = ctx->gid;
  mt->has_mtime = with_mtime;
  if (with_mtime)
    mt->mtime = now;
  mt->has_ctime = with_mtime; /* a file's ctime: its upload's */
  mt->ctime = now;
  mt->has_atime = true;
  mt->atime = now;
  memset(a, 0, sizeof(*a));
  a->kind = kind;
  a->mtime = now;
  a->as_of_ms = clock_mono_ms();
  a->from_head = true;
  fsx_meta_to_attr(a, mt);
}

/* A PUT carrying s3fs's metadata (directory markers, symlinks). */
int fsx_put_with_meta(struct fsx_mount *m, const char *bucket,
                      const char *key, const char *body,
                      const struct fsx_wmeta *mt, char *etag)
{
  char v[FSX_META_MAX][32];
  struct s3_kv kv[FSX_META_MAX];
  struct s3_put_opts o = {.meta = kv};

  o.n_meta = fsx_wmeta_kv(mt, kv, v);
  return s3_put_object(m->s3, bucket, key, body, body ? strlen(body) : 0, &o,
                       etag);
}

/* ---- metadata stored ---- */

int fsx_store_meta(struct fsx_mount *m, struct fsx_inode *in,
                   struct fsx_attr *a, const struct fsx_wmeta *mt)
{
  const char *key = fsx_inode_key(m->tab, in);
  char etag[S3_ETAG_MAX];
  int rc;

  if (!fsx_inode_bucket(in) || !key[0])
    return 0; /* a bucket or the mount's root: nothing to store it in */
  if (a->kind == FSX_DIR) {
    /* the marker keeps it (created for an implicit directory) */
    rc = fsx_put_with_meta(m, fsx_inode_bucket(in), key, NULL, mt, etag);
  } else { /* after an atime store on its way, never before it */
    fsx_inode_store_block(m->tab, in);
    rc = fsx_copy_meta(m, fsx_inode_bucket(in), key, mt, etag);
    fsx_inode_store_unblock(m->tab, in);
  }
  if (rc)
    return rc;
  fsx_meta_to_attr(a, mt);
  a->as_of_ms = clock_mono_ms();
  a->from_head = true;
  if (a->kind != FSX_DIR)
    snprintf(a->etag, sizeof(a->etag), "%s", etag);
  fsx_inode_set_attr(m->tab, in, a, true, m->o.attr_ttl_ms);
  return 0;
}

/* Stored only when nothing else has the file open or holds its writes: a
   copy changes the object a reader's If-Match names, and a writer's
   upload stores its own metadata. */
void fsx_atime_closed(struct fsx_mount *m, fuse_ino_t ino, bool others)
{
  char etag[S3_ETAG_MAX];
  struct fsx_inode_view v;
  struct fsx_inode *in;
  struct fsx_wb *wb;
  struct fsx_attr a;
  struct stat st;
  time_t now;
  int rc;

  if (m->o.atime == CFG_ATIME_NO || m->o.ro || others ||
      !(in = fsx_inode_get(m->tab, ino)))
    return;
  /* in order with the name's other operations: not once it is unlinked,
     written or being replaced, and none of those lands before this */
  if (!fsx_inode_store_begin(m->tab, in)) {
    fsx_inode_put(m->tab, in);
    return;
  }
  wb = fsx_wb_get(m, in);
  fsx_inode_view(m->tab, in, &v);
  fsx_attr_of(m, in, &a);
  /* a file of this name (not one unlinked or replaced), a regular one */
  if (wb || a.kind != FSX_FILE ||
      (a.has_mode && !S_ISREG(a.mode)) || !v.named || !a.etag[0] ||
      !fsx_inode_bucket(in))
    goto put;
  fsx_ns_stat(m, ino, &a, &st);
  now = time(NULL);
  /* relatime: not newer than the last change, or a day old */
  if (m->o.atime == CFG_ATIME_REL && st.st_atime > st.st_mtime &&
      st.st_atime > st.st_ctime && now - st.st_atime < 24 * 3600)
    goto put;
  /* only the atime replaced, on the object the inode knows */
  rc = fsx_copy_stamped(m, fsx_inode_bucket(in), fsx_inode_key(m->tab, in),
                        fsx_inode_key(m->tab, in), "atime", a.etag, etag,
                        &now);
  if (rc) {
    log_info("%s: storing its atime: %s", fsx_inode_key(m->tab, in),
             strerror(-rc));
    goto put;
  }
  a.has_atime = true;
  a.atime = (struct timespec){.tv_sec = now};
  snprintf(a.etag, sizeof(a.etag), "%s", etag);
  a.as_of_ms = clock_mono_ms();
  fsx_inode_set_attr(m->tab, in, &a, false, m->o.attr_ttl_ms);
put:
  if (wb)
    fsx_wb_put(m, wb);
  fsx_inode_store_end(m->tab, in);
  fsx_inode_put(m->tab, in);
}
