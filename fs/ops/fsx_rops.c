/*
 * fsx_rops: lookup, forget, getattr, the directory handles (opendir,
 * readdir(plus), releasedir), statfs and readlink. Each runs on a FUSE
 * worker thread, pins the inodes it uses (fsx_inode_get/put) and waits for
 * its S3 requests. Names resolve from the parent's listing snapshot while
 * it is fresh, else by asking S3 (fsx_ns).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_ahead.h"
#include "fs/mem/fsx_cache.h"
#include "fs/meta/fsx_dirsnap.h"
#include "fs/ops/fsx_node.h"
#include "fs/ops/fsx_rops.h"
#include "fs/write/fsx_space.h"

struct fsx_dirh {
  struct fsx_dirsnap *snap;
  uint64_t ino, parent;
};

#define M fsx_req_mount
#define secs fsx_secs

/* A listed entry's metadata: a directory's from its marker (its first
   page with it, into pk), an object's from a HEAD (which may find it
   changed or gone since the listing). */
static int entry_meta(struct fsx_mount *m, struct fsx_inode *dir,
                      const char *name, struct fsx_attr *a,
                      struct fsx_peek *pk)
{
  char *key;
  int rc;

  if (a->kind == FSX_DIR)
    return fsx_ns_dir_round(m, dir, name, a, pk);
  if (!(key = fsx_inode_key_of(m->tab, dir, name, a->kind)))
    return -ENOMEM;
  rc = fsx_ns_head_key(m, fsx_inode_bucket(dir), key, a);
  free(key);
  return rc;
}

/*
 * entry_meta, on a mount that shows no listing's attributes: from the
 * HEADs asked ahead for a reader going through dir's listing (fsx_ahead),
 * else its own.
 */
static int listed_meta(struct fsx_mount *m, struct fsx_inode *dir,
                       const char *name, struct fsx_attr *a)
{
  struct fsx_dirsnap *s = fsx_dir_get_snap(m->tab, dir, true);
  const struct fsx_dirent *e = s ? fsx_dirsnap_find(s, name) : NULL;
  int rc = 1;

  if (e && e->attr.kind == a->kind)
    rc = fsx_ahead_meta(m, dir, s, (size_t)(e - s->ents), a);
  fsx_dirsnap_put(s);
  return rc == 1 ? entry_meta(m, dir, name, a, NULL) : rc;
}

/* in's first chunk from a cold lookup's GET (pk: the whole object), when
   in is still that object (a's ETag); pk's bytes freed either way. */
static void peek_keep(struct fsx_mount *m, struct fsx_inode *in,
                      const struct fsx_attr *a, struct fsx_peek *pk)
{
  struct fsx_chunk *ch;
  struct fsx_attr cur;
  bool fill;

  if (pk->buf && a->kind == FSX_FILE && a->etag[0]) {
    fsx_attr_of(m, in, &cur);
    if (cur.kind == FSX_FILE && cur.size == pk->len &&
        !strcmp(cur.etag, a->etag) &&
        !fsx_cache_get(m->cache, fsx_inode_ino(in), fsx_etag_gen(a->etag), 0,
                       true, &ch, &fill)) {
      if (fill) { /* (else a reader's fill got there first) */
        memcpy(fsx_chunk_data(ch), pk->buf, pk->len);
        fsx_chunk_fill_done(m->cache, ch, 0, pk->len);
        fsx_inode_set_peek(m->tab, in);
        atomic_fetch_add(&m->st.lookup_whole, 1);
      }
      fsx_cache_put_cold(m->cache, ch); /* (a stat alone evicts nothing) */
    }
  }
  free(pk->buf);
  pk->buf = NULL;
}

void fsx_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct fsx_mount *m = M(req);
  struct fuse_entry_param e;
  struct fsx_peek pk = {NULL, 0, NULL};
  struct fsx_inode *dir, *in;
  bool writing = false;
  struct fsx_attr a;
  uint64_t was = 0, changes = 0; /* the inode before the round, its count */
  int rc;

  atomic_fetch_add(&m->st.lookups, 1);
  if (parent == FSX_ROOT_INO && !strcmp(name, FSX_STATS_NAME)) {
    memset(&e, 0, sizeof(e));
    e.ino = FSX_STATS_INO;
    fsx_stats_attr(&a);
    fsx_ns_stat(m, FSX_STATS_INO, &a, &e.attr);
    fuse_reply_entry(req, &e);
    return;
  }
  dir = fsx_inode_get(m->tab, parent);
  if (!dir) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  /* a file being written is ours to describe, on the server or not */
  in = fsx_inode_find(m->tab, parent, name);
  if (in) {
    struct fsx_inode_view v;
    fsx_inode_view(m->tab, in, &v);
    writing = v.writing;
    a = v.attr;
    was = fsx_inode_ino(in);
    changes = fsx_dir_changes(m->tab, in);
    fsx_inode_put(m->tab, in);
  }
  rc = writing ? 0 : fsx_ns_lookup(m, dir, name, &a, &pk);
  /* a listing's attributes: a directory's marker is always asked for; an
     object's too unless the mount shows what listings say */
  if (!rc && !writing && !a.from_head && fsx_inode_bucket(dir) &&
      (a.kind == FSX_DIR || !m->o.listing_attrs) &&
      !fsx_inode_child_meta_known(m->tab, dir, name, &a))
    rc = m->o.listing_attrs ? entry_meta(m, dir, name, &a, &pk)
                            : listed_meta(m, dir, name, &a);
  if (rc == -ENOENT) {
    memset(&e, 0, sizeof(e)); /* a negative entry the kernel caches */
    e.entry_timeout = secs(m->o.neg_ttl_ms);
    fuse_reply_entry(req, &e);
  } else if (rc) {
    fsx_reply_err(req, -rc);
  } else if (!(in = fsx_child_of(m, dir, name, &a))) {
    fsx_reply_err(req, ENOMEM);
  } else {
    peek_keep(m, in, &a, &pk); /* before the kernel can open it */
    /* the page, unless this mount changed a name in the directory since
       the round began, or the name is another inode now (a rename); a
       fresh listing stays */
    if (pk.page && a.kind == FSX_DIR && (!was || fsx_inode_ino(in) == was))
      fsx_dir_set_snap_since(m->tab, in, pk.page, m->o.dir_ttl_ms, changes);
    fsx_entry_of(m, in, &e);
    if (fuse_reply_entry(req, &e))
      fsx_inode_forget(m->tab, fsx_inode_ino(in), 1);
  }
  free(pk.buf);
  fsx_dirsnap_put(pk.page);
  fsx_inode_put(m->tab, dir);
}

void fsx_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
  if (ino != FSX_STATS_INO)
    fsx_inode_forget(M(req)->tab, ino, nlookup);
  fuse_reply_none(req);
}

void fsx_op_forget_multi(fuse_req_t req, size_t count,
                         struct fuse_forget_data *forgets)
{
  for (size_t i = 0; i < count; i++)
    if (forgets[i].ino != FSX_STATS_INO)
      fsx_inode_forget(M(req)->tab, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void fsx_op_getattr(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in;
  struct fsx_attr a;
  struct fsx_inode_view v;
  struct stat st;
  bool stale;
  int rc = 0;

  atomic_fetch_add(&m->st.getattrs, 1);
  if (ino == FSX_STATS_INO) {
    fsx_stats_attr(&a);
    fsx_ns_stat(m, ino, &a, &st);
    fuse_reply_attr(req, &st, 0);
    return;
  }
  in = fsx_inode_get(m->tab, ino);
  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  fsx_inode_view(m->tab, in, &v);
  v.named = v.named || ino == FSX_ROOT_INO;
  /* a listing's guess is never shown where the mount shows no guesses;
     an unlinked file (still open) has no name to ask by */
  stale = (v.stale || (!m->o.listing_attrs && !v.meta_known)) &&
          !v.writing && v.named;
  fsx_attr_of(m, in, &a);
  if (stale && a.kind != FSX_DIR && fsx_inode_bucket(in)) {
    rc = fsx_ns_head(m, in, &a);
    if (!rc)
      fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  } else if (stale && a.kind == FSX_DIR && fsx_inode_bucket(in)) {
    rc =
        fsx_ns_head_dir(m, fsx_inode_bucket(in), fsx_inode_key(m->tab, in), &a);
    if (!rc) {
      fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
      fsx_attr_of(m, in, &a); /* (the times of names changed here) */
    }
  }
  if (rc) {
    fsx_reply_err(req, -rc);
  } else {
    fsx_stat_of(m, in, &a, &st);
    log_debug("getattr %llu: size %lld mtime %lld%s", (unsigned long long)ino,
              (long long)st.st_size, (long long)st.st_mtime,
              stale ? " (asked the server)" : "");
    fuse_reply_attr(req, &st, secs(m->o.attr_ttl_ms));
  }
  fsx_inode_put(m->tab, in);
}

void fsx_op_opendir(fuse_req_t req, fuse_ino_t ino,
                    struct fuse_file_info *fi)
{
  struct fsx_mount *m = M(req);
  struct fsx_dirh *dh = calloc(1, sizeof(*dh));
  struct fsx_inode *in = fsx_inode_get(m->tab, ino);
  struct fsx_inode_view v;
  struct fsx_dirsnap *s;
  int rc = 0;

  if (!in || !dh) {
    rc = in ? ENOMEM : ENOENT;
    goto out;
  }
  s = fsx_dir_get_snap(m->tab, in, true);
  if (s && s->names_only) { /* a cold lookup's: a listing of its own */
    fsx_dirsnap_put(s);
    s = NULL;
  }
  if (!s) {
    rc = -fsx_ns_load_dir(m, in, &s);
    if (rc)
      goto out;
    fsx_dir_set_snap(m->tab, in, s, m->o.dir_ttl_ms);
    fsx_dirsnap_put(s);
    /* files created here and not uploaded yet are listed too */
    fsx_wb_list_pending(m, in);
    s = fsx_dir_get_snap(m->tab, in, false);
    if (!s) {
      rc = ENOMEM;
      goto out;
    }
  }
  dh->snap = s;
  dh->ino = ino;
  fsx_inode_view(m->tab, in, &v);
  dh->parent = v.parent;
  fi->fh = (uintptr_t)dh;
  fi->cache_readdir = 0;
  if (fuse_reply_open(req, fi)) {
    fsx_dirsnap_put(s);
    free(dh);
  }
  fsx_inode_put(m->tab, in);
  return;
out:
  free(dh);
  fsx_inode_put(m->tab, in);
  fsx_reply_err(req, rc);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi, bool plus)
{
  struct fsx_mount *m = M(req);
  struct fsx_dirh *dh = (struct fsx_dirh *)(uintptr_t)fi->fh;
  struct fsx_inode *dir = fsx_inode_get(m->tab, ino);
  char *buf = malloc(size);
  size_t used = 0;
  off_t i;

  atomic_fetch_add(&m->st.readdirs, 1);
  if (!buf || !dir) {
    fsx_reply_err(req, buf ? ENOENT : ENOMEM);
    goto out;
  }
  for (i = off; (size_t)i < dh->snap->n + 2; i++) {
    struct fuse_entry_param e;
    struct fsx_inode *in = NULL;
    const char *name;
    size_t need;
    memset(&e, 0, sizeof(e));
    if (i < 2) {
      name = i == 0 ? "." : "..";
      e.attr.st_ino = i == 0 ? dh->ino : dh->parent;
      e.attr.st_mode = S_IFDIR;
    } else {
      const struct fsx_dirent *d = &dh->snap->ents[i - 2];
      name = d->name;
      fsx_ns_stat(m, 0, &d->attr, &e.attr);
    }
    need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)
                : fuse_add_direntry(req, NULL, 0, name, NULL, 0);
    if (used + need > size)
      break;
    if (i >= 2) {
      in = fsx_child_of(m, dir, name, &dh->snap->ents[i - 2].attr);
      if (!in) {
        if (!used) { /* an empty reply would read as the end */
          fsx_reply_err(req, ENOMEM);
          goto out;
        }
        break;
      }
      fsx_entry_of(m, in, &e);
      /* attributes only a listing gave (mode, owner: the mount's
         defaults) go to the kernel only where the mount shows them;
         else the name alone, and the kernel's lookup asks for them */
      if (!plus || (!m->o.listing_attrs &&
                    !fsx_inode_meta_known(m->tab, in,
                                          &dh->snap->ents[i - 2].attr))) {
        e.attr.st_ino = fsx_inode_ino(in);
        e.ino = 0; /* (the kernel takes no reference) */
        fsx_inode_forget(m->tab, fsx_inode_ino(in),
                         1); /* no lookup for plain */
      }
    }
    if (plus)
      used += fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
                                     i + 1);
    else
      used += fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
                                i + 1);
  }
  fuse_reply_buf(req, buf, used);
out:
  fsx_inode_put(m->tab, dir);
  free(buf);
}

void fsx_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
  do_readdir(req, ino, size, off, fi, false);
}

void fsx_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                        off_t off, struct fuse_file_info *fi)
{
  do_readdir(req, ino, size, off, fi, true);
}

void fsx_op_releasedir(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
  struct fsx_dirh *dh = (struct fsx_dirh *)(uintptr_t)fi->fh;

  fsx_dirsnap_put(dh->snap);
  free(dh);
  fsx_reply_err(req, 0);
}

/*
 * S3 has no capacity to report; what runs out first is the staging space
 * in cache.dir (write.staging_max): its limit is the size, what is left of
 * it is free, so df tells how much more can be written before ENOSPC. A
 * read-only mount shows a large, constant, mostly free disk.
 */
void fsx_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
  struct fsx_mount *m = M(req);
  struct fsx_space_info si;
  struct statvfs sv;

  memset(&sv, 0, sizeof(sv));
  if (m->space) {
    fsx_space_info(m->space, &si);
    sv.f_bsize = sv.f_frsize = 4096;
    sv.f_blocks = si.cap / 4096;
    sv.f_bfree = sv.f_bavail = si.room / 4096;
  } else {
    sv.f_bsize = sv.f_frsize = 1 << 20;
    sv.f_blocks = 1ull << 30; /* 1 PiB */
    sv.f_bfree = sv.f_bavail = sv.f_blocks;
  }
  sv.f_files = 1ull << 32;
  sv.f_ffree = sv.f_files - fsx_table_count(m->tab);
  sv.f_favail = sv.f_ffree;
  sv.f_namemax = 255;
  fuse_reply_statfs(req, &sv);
}

void fsx_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
  struct fsx_mount *m = M(req);
  struct fsx_inode *in = fsx_inode_get(m->tab, ino);
  char buf[4097];
  size_t got = 0;
  int rc;

  if (!in) {
    fsx_reply_err(req, ENOENT);
    return;
  }
  rc = s3_get_object(m->s3, fsx_inode_bucket(in), fsx_inode_key(m->tab, in), 0,
                     sizeof(buf) - 1, buf, &got);
  fsx_inode_put(m->tab, in);
  if (rc) {
    fsx_reply_err(req, -rc);
    return;
  }
  buf[got] = '\0';
  fuse_reply_readlink(req, buf);
}
