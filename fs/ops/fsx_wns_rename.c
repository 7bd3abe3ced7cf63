/*
 * fsx_wns_rename: rename(2). S3 has no rename: a file is copied on the
 * server and the source deleted; a directory is every object below it,
 * copied, then deleted (at most write.rename_dir_max of them, else EXDEV,
 * after which mv(1) copies by itself). Runs on FUSE worker threads; the
 * locks it takes and their order: fsx_wns_rename's comments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_dirsnap.h"
#include "fs/mount/fsx_inval.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/ops/fsx_dirtimes.h"
#include "fs/ops/fsx_node.h"
#include "fs/ops/fsx_wns.h"
#include "fs/ops/fsx_wns_i.h"
#include "fs/stage/fsx_recover_thread.h"
#include "fs/write/fsx_wb.h"

#define COPY_MAX_SINGLE (5ull << 30) /* CopyObject's limit */

static int copy_object(struct fsx_mount *m, const char *bucket,
                       const char *src, const char *dst, uint64_t size,
                       char etag[S3_ETAG_MAX])
{
  uint64_t ps = m->o.part_size < 64ull << 20 ? 64ull << 20 : m->o.part_size;

  atomic_fetch_add(&m->st.objects_copied, 1);
  if (size > COPY_MAX_SINGLE)
    return s3_copy_object_any(m->s3, bucket, src, bucket, dst, false, NULL,
                              size, COPY_MAX_SINGLE, ps, etag);
  return s3_copy_object(m->s3, bucket, src, bucket, dst, false, NULL, etag);
}

struct objlist {
  char **keys;
  uint64_t *sizes;
  size_t n, cap;
};

static void objlist_free(struct objlist *l)
{
  for (size_t i = 0; i < l->n; i++)
    free(l->keys[i]);
  free(l->keys);
  free(l->sizes);
}

/* Every object below prefix (no delimiter), at most max + 1 of them. */
static int list_below(struct fsx_mount *m, const char *bucket,
                      const char *prefix, size_t max, struct objlist *l)
{
  struct s3_list_params p = {.prefix = prefix};
  char *token = NULL;
  int rc;

  memset(l, 0, sizeof(*l));
  do {
    struct s3_list_result r;
    p.continuation = token;
    rc = s3_list_objects(m->s3, bucket, &p, &r);
    free(token);
    token = NULL;
    if (rc)
      break;
    for (size_t i = 0; !rc && i < r.n_objects && l->n <= max; i++) {
      if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        char **nk = realloc(l->keys, nc * sizeof(*nk));
        uint64_t *ns = nk ? realloc(l->sizes, nc * sizeof(*ns)) : NULL;
        if (nk)
          l->keys = nk;
        if (!ns) {
          rc = -ENOMEM;
          break;
        }
        l->sizes = ns;
        l->cap = nc;
      }
      l->keys[l->n] = strdup(r.objects[i].key);
      l->sizes[l->n] = (uint64_t)r.objects[i].size;
      if (!l->keys[l->n])
        rc = -ENOMEM;
      else
        l->n++;
    }
    if (!rc && r.truncated && r.next_token && l->n <= max &&
        !(token = strdup(r.next_token)))
      rc = -ENOMEM;
    s3_list_result_cleanup(&r);
  } while (!rc && token);
  free(token);
  return rc;
}

#define DELETE_TRIES 5 /* a rename's deletes, after the first: ~10 s */

static int delete_keys(struct fsx_mount *m, const char *bucket,
                       char *const *keys, size_t n)
{
  int rc = 0;

  for (size_t i = 0; i < n && !rc; i += 1000) {
    struct s3_delete_result r;
    size_t k = n - i < 1000 ? n - i : 1000;
    rc = s3_delete_objects(m->s3, bucket, (const char *const *)keys + i, k,
                           &r);
    if (!rc && r.n_errors) {
      log_err("%s: %zu objects could not be deleted", bucket, r.n_errors);
      rc = -EIO;
    }
    if (!rc || rc == -EIO)
      s3_delete_result_cleanup(&r);
  }
  return rc;
}

/* delete_keys, tried again a while (~10 s) on failure: a rename half done
   is finished or undone if the server comes back (deleting twice is
   harmless, and the answer may be lost after the deletes were done) */
static int delete_firmly(struct fsx_mount *m, const char *bucket,
                         char *const *keys, size_t n)
{
  int rc = delete_keys(m, bucket, keys, n);

  for (unsigned t = 0; rc && rc != -ENOMEM && t < DELETE_TRIES; t++) {
    sleep(t ? 2 : 1);
    rc = delete_keys(m, bucket, keys, n);
  }
  return rc;
}

/*
 * Copy and delete every object below src. The caller holds m->rename_lock
 * for writing (no new write-back state below src); *held: every one there
 * is, committed and gated until the caller has moved src
 * (fsx_wb_ungate_all), so nothing written lands on an old name.
 */
static int rename_dir(struct fsx_mount *m, struct fsx_inode *src,
                      const char *dstpfx, struct fsx_wb ***held,
                      size_t *nheld, time_t *ctime)
{
  const char *srcpfx = fsx_inode_key(m->tab, src);
  size_t sl = strlen(srcpfx);
  struct objlist l;
  char (*etags)[S3_ETAG_MAX] = NULL, **copies = NULL;
  size_t ncopies = 0;
  int rc;

  *held = NULL;
  *nheld = 0;
  if (!strncmp(dstpfx, srcpfx, sl))
    return -EINVAL; /* into itself */
  if ((rc = fsx_wb_gate_below(m, fsx_inode_bucket(src), srcpfx, held, nheld)))
    return rc;
  rc = list_below(m, fsx_inode_bucket(src), srcpfx, m->o.rename_dir_max, &l);
  if (!rc && l.n > m->o.rename_dir_max) {
    log_err("rename of %s: more than write.rename_dir_max (%u) objects to "
            "copy; refused with EXDEV (mv copies by itself then)",
            srcpfx, m->o.rename_dir_max);
    rc = -EXDEV;
  }
  /* a key below that would pass S3's limit under the new name: refused
     before anything is copied */
  for (size_t i = 0; !rc && i < l.n; i++)
    if (strlen(dstpfx) + strlen(l.keys[i] + sl) > FSX_KEY_MAX)
      rc = -ENAMETOOLONG;
  copies = l.n ? calloc(l.n, sizeof(*copies)) : NULL;
  etags = l.n ? calloc(l.n, sizeof(*etags)) : NULL;
  if (!rc && l.n && (!copies || !etags))
    rc = -ENOMEM;
  for (size_t i = 0; !rc && i < l.n; i++) {
    size_t dl = strlen(dstpfx), rl = strlen(l.keys[i] + sl);
    char *dst = malloc(dl + rl + 1);
    if (!dst) {
      rc = -ENOMEM;
      break;
    }
    memcpy(dst, dstpfx, dl);
    memcpy(dst + dl, l.keys[i] + sl, rl + 1);
    /* the directory's own marker: its ctime moves (s3fs's does; what is
       below keeps its own) */
    if (!l.keys[i][sl])
      rc = fsx_copy_stamped(m, fsx_inode_bucket(src), l.keys[i], dst,
                            "ctime", NULL, etags[i], ctime);
    else
      rc = copy_object(m, fsx_inode_bucket(src), l.keys[i], dst, l.sizes[i],
                       etags[i]);
    if (rc) {
      free(dst);
      break;
    }
    copies[ncopies++] = dst;
  }
  if (!rc && (rc = delete_firmly(m, fsx_inode_bucket(src), l.keys, l.n)))
    /* every copy is made, and the originals perhaps not all deleted */
    log_err("rename of %s: copied to %s, but deleting the originals "
            "failed: %s (both may be on the server)", srcpfx, dstpfx,
            strerror(-rc));
  else if (rc && ncopies &&
           delete_firmly(m, fsx_inode_bucket(src), copies, ncopies))
    /* the copies failed half way: undone (the originals are all there, so
       nothing is lost either way) */
    log_err("rename of %s failed, and %zu copies made under %s could not "
            "all be removed", srcpfx, ncopies, dstpfx);
  for (size_t i = 0; !rc && i < l.n; i++) {
    /* an open file's base is now its copy */
    struct fsx_wb *wb = fsx_wb_find(m, *held, *nheld, l.keys[i]);
    if (wb)
      fsx_wb_renamed(wb, etags[i]);
  }
  for (size_t i = 0; i < ncopies; i++)
    free(copies[i]);
  free(copies);
  free(etags);
  objlist_free(&l);
  if (rc) {
    fsx_wb_ungate_all(m, *held, *nheld);
    *held = NULL;
    *nheld = 0;
  }
  return rc;
}

/* Copy and delete; *gated: src's write-back state, held from its last
   commit until the caller has moved the inode (fsx_wb_ungate, put). */
static int rename_file(struct fsx_mount *m, struct fsx_inode *src,
                       const struct fsx_attr *a, const char *dstkey,
                       char etag[S3_ETAG_MAX], struct fsx_wb **gated,
                       time_t *ctime)
{
  struct fsx_wb *wb = fsx_wb_get(m, src);
  const char *srckey = fsx_inode_key(m->tab, src);
  int rc = 0;

  /* what is written so far goes first, to the old name */
  if (wb && (rc = fsx_wb_gate(m, wb))) {
    fsx_wb_put(m, wb);
    return rc;
  }
  rc = -EFBIG; /* above 5 GiB the parts' copy keeps the ctime, as s3fs */
  if (a->size <= COPY_MAX_SINGLE) { /* the ctime moves, as s3fs's does */
    atomic_fetch_add(&m->st.objects_copied, 1);
    rc = fsx_copy_stamped(m, fsx_inode_bucket(src), srckey, dstkey, "ctime",
                          NULL, etag, ctime);
  }
  if (rc == -EFBIG)
    rc = copy_object(m, fsx_inode_bucket(src), srckey, dstkey, a->size, etag);
  if (!rc)
    rc = s3_delete_object(m->s3, fsx_inode_bucket(src), srckey);
  if (!rc && wb)
    fsx_wb_renamed(wb, etag);
  *gated = wb;
  return rc;
}

int fsx_wns_rename(struct fsx_mount *m, fuse_ino_t parent, const char *name,
                   fuse_ino_t newparent, const char *newname, unsigned flags)
{
  struct fsx_inode *dir = fsx_inode_get(m->tab, parent);
  struct fsx_inode *ndir = fsx_inode_get(m->tab, newparent);
  struct fsx_inode *src = NULL, *dst = NULL;
  struct fsx_wb *dwb = NULL, *swb = NULL, **held = NULL;
  size_t nheld = 0;
  bool locked = false, blocked = false, dst_exists = false, tried = false;
  struct fsx_recover_hold hold[2];
  struct fsx_attr sa, da;
  char etag[S3_ETAG_MAX] = "", *dstkey = NULL;
  time_t ctime = 0;             /* the ctime a copy stored, if one did */
  int rc;

  atomic_fetch_add(&m->st.renames, 1);
  if (!dir || !ndir) {
    rc = -ENOENT;
    goto out;
  }
  if (m->o.ro) {
    rc = -EROFS;
    goto out;
  }
  if (flags & ~(unsigned)RENAME_NOREPLACE) {
    rc = -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
    goto out;
  }
  /* (before anything is asked: a name that cannot be is not looked for) */
  if ((rc = fsx_inode_name_fits(m->tab, ndir, newname, FSX_FILE)) ||
      (rc = fsx_wns_resolve(m, dir, name, &src, &sa)) ||
      (rc = fsx_inode_name_fits(m->tab, ndir, newname, sa.kind)))
    goto out;
  /*
   * A directory rename excludes every other rename and unlink (they take
   * it for reading, once: fsx_wns_going() opens a state with the _held calls):
   * keys stay what they were computed to be, and its gating of the files
   * below it cannot meet a file rename holding them the other way round.
   */
  if (sa.kind == FSX_DIR)
    fsx_renlock_write(&m->rename_lock);
  else
    fsx_renlock_read(&m->rename_lock);
  locked = true;
  if (!fsx_inode_bucket(src) || !fsx_inode_bucket(ndir) ||
      strcmp(fsx_inode_bucket(src), fsx_inode_bucket(ndir)) ||
      (newparent == FSX_ROOT_INO && !strcmp(newname, FSX_STATS_NAME))) {
    rc = -EXDEV; /* between buckets: mv copies */
    goto out;
  }
  rc = fsx_wns_resolve(m, ndir, newname, &dst, &da);
  if (rc && rc != -ENOENT)
    goto out;
  dst_exists = rc == 0;
  rc = 0;
  if (dst_exists && (flags & RENAME_NOREPLACE))
    rc = -EEXIST;
  else if (dst_exists && sa.kind == FSX_DIR && da.kind != FSX_DIR)
    rc = -ENOTDIR;
  else if (dst_exists && sa.kind != FSX_DIR && da.kind == FSX_DIR)
    rc = -EISDIR;
  else if (dst_exists && da.kind == FSX_DIR)
    rc = fsx_wns_dir_is_empty(m, fsx_inode_bucket(dst),
                              fsx_inode_key(m->tab, dst));
  if (rc || (dst_exists && dst == src))
    goto out;
  dstkey = fsx_inode_key_of(m->tab, ndir, newname, sa.kind);
  if (!dstkey) {
    rc = -ENOMEM;
    goto out;
  }
  /* no store of either name's object lands after this rename */
  tried = true;
  fsx_inode_store_block(m->tab, src);
  if (dst_exists)
    fsx_inode_store_block(m->tab, dst);
  blocked = true;
  /* (a file's names: what recovery stores under either lands first) */
  fsx_recover_name_hold(m, &hold[0], fsx_inode_bucket(src),
                        fsx_inode_key(m->tab, src));
  fsx_recover_name_hold(m, &hold[1], fsx_inode_bucket(src), dstkey);
  if (dst_exists && da.kind != FSX_DIR)
    rc = fsx_wns_going(m, dst, &da, &dwb);
  if (!rc && sa.kind == FSX_DIR) {
    /* the empty directory replaced: its marker first (the copy may
       write the same key) */
    if (dst_exists)
      rc = s3_delete_object(m->s3, fsx_inode_bucket(dst),
                            fsx_inode_key(m->tab, dst));
    if (rc == -ENOENT)
      rc = 0;
    if (!rc)
      rc = rename_dir(m, src, dstkey, &held, &nheld, &ctime);
  } else if (!rc) {
    rc = rename_file(m, src, &sa, dstkey, etag, &swb, &ctime);
  }
  if (!rc)
    fsx_wns_gone(m, dst, dwb); /* replaced: never uploaded again */
  else
    fsx_wns_kept(m, dwb);
  if (!rc)
    rc = fsx_inode_move(m->tab, src, ndir, newname);
  if (swb) { /* its next commit goes to the new name */
    fsx_wb_ungate(swb);
    fsx_wb_put(m, swb);
  }
  fsx_wb_ungate_all(m, held, nheld); /* (children's keys follow src's) */
  if (!rc && ((sa.kind != FSX_DIR && etag[0]) || ctime)) {
    sa.as_of_ms = clock_mono_ms();
    if (sa.kind != FSX_DIR && etag[0])
      snprintf(sa.etag, sizeof(sa.etag), "%s", etag);
    if (ctime) { /* what the copy stored */
      sa.has_ctime = true;
      sa.ctime = (struct timespec){.tv_sec = ctime};
    }
    fsx_inode_set_attr(m->tab, src, &sa, false, m->o.attr_ttl_ms);
  }
  if (!rc) {
    fsx_dir_snap_remove(m->tab, dir, name);
    fsx_inode_note_entry(m->tab, src);
    fsx_dir_changed(m, dir);
    fsx_dir_changed(m, ndir);
  }
out:
  if (rc && tried) {
    /* failed once it began: what the server holds under either name is
       not known (a copy may have landed, a delete whose answer was lost
       may have been done): both asked again at their next lookup, the
       kernel's entries too (the negative one the kernel made for the new
       name before it asked for the rename) */
    fsx_dir_invalidate(m->tab, ndir);
    fsx_dir_invalidate(m->tab, dir);
    fsx_inval_entry(m->inval, newparent, newname);
    fsx_inval_entry(m->inval, parent, name);
  }
  if (blocked) {
    fsx_recover_name_release(m, &hold[1]);
    fsx_recover_name_release(m, &hold[0]);
    fsx_inode_store_unblock(m->tab, src);
    if (dst_exists)
      fsx_inode_store_unblock(m->tab, dst);
  }
  if (locked)
    fsx_renlock_unlock(&m->rename_lock);
  free(dstkey);
  fsx_inode_put(m->tab, src);
  fsx_inode_put(m->tab, dst);
  fsx_inode_put(m->tab, dir);
  fsx_inode_put(m->tab, ndir);
  return rc;
}
