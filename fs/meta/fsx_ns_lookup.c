/*
 * fsx_ns_lookup: a name resolved in one round of requests sent together
 * (fsx_ns_lookup), and a listed directory's marker asked with its first
 * page (fsx_ns_dir_round). A directory learnt so brings its first
 * CHILD_PAGE names: when they are all of them, the lookups in it are
 * answered with fewer requests (a file by its own GET, a subdirectory by
 * its marker and page), so past its first name a path walked cold costs one
 * request or two per name, not three (docs/paths.md, "Round trips").
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_ns_i.h"
#include "fs/plane/fsx_rdma.h"

/* names a directory's LIST brings with it: all of most directories', and
   little for a big one (one 64-name page of XML) */
#define CHILD_PAGE 64

/*
 * How long a cold lookup's page answers (cache.burst_ttl; 0, the default:
 * no page is listed), never past cache.negative_ttl or cache.dir_ttl. It
 * answers directories, and files by their own GET (their metadata); an
 * absent name is still asked for (another client may have made it since).
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
 * files still ask for their metadata; absent names are asked; directories
 * are answered); a longer one marks the directory big instead.
 */
static void keep_page(struct fsx_mount *m, struct fsx_inode *dir,
                      const struct s3_list_result *res, uint64_t t0,
                      uint64_t changes)
{
  const char *dkey = fsx_inode_key(m->tab, dir);
  struct fsx_ns_dup dc = {m, dkey};
  struct fsx_dirsnap *b;

  if (res->truncated) {
    fsx_dir_set_big(m->tab, dir, m->o.dir_ttl_ms);
    return;
  }
  b = fsx_dirsnap_new();
  if (!b)
    return;
  b->names_only = true;
  if (!fsx_ns_add_page(m, b, fsx_inode_ino(dir) == FSX_ROOT_INO, dkey, res)) {
    fsx_dirsnap_seal(b, t0, fsx_ns_dup_name, &dc);
    fsx_dir_set_snap_since(m->tab, dir, b, page_ttl(m), changes);
  }
  fsx_dirsnap_put(b);
}

/*
 * res, the LIST below a directory's name (after its marker), as that
 * directory's first page when it holds all of its names (names only, as
 * of t0): the lookups in it then need fewer requests (fsx_ns_lookup). NULL
 * when it does not (or without memory).
 */
static struct fsx_dirsnap *child_page(struct fsx_mount *m, const char *dkey,
                                      const struct s3_list_result *res,
                                      uint64_t t0)
{
  struct fsx_ns_dup dc = {m, dkey};
  struct fsx_dirsnap *b;

  if (res->truncated || !(b = fsx_dirsnap_new()))
    return NULL;
  b->names_only = true;
  if (fsx_ns_add_page(m, b, false, dkey, res)) {
    fsx_dirsnap_put(b);
    return NULL;
  }
  fsx_dirsnap_seal(b, t0, fsx_ns_dup_name, &dc);
  return b;
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

/* The round of a name no snapshot answers (file_only: a file a page
   showed, its own request alone; paged: the directory's page was just
   listed, not again); see fsx_ns_lookup. */
static int cold_round(struct fsx_mount *m, struct fsx_inode *dir,
                      const char *name, struct fsx_attr *a,
                      struct fsx_peek *pk, bool file_only, bool paged)
{
  struct s3_list_params p = {.delimiter = "/",
                             .max_keys = pk && m->o.dir_ttl_ms ? CHILD_PAGE
                                                               : 1};
  struct s3_list_params dp = {.prefix = fsx_inode_key(m->tab, dir),
                              .delimiter = "/",
                              .start_after = fsx_inode_key(m->tab, dir)};
  struct s3_list_result lres = {0}, dres;
  struct s3_object_meta mt, dmt;
  struct s3_req *head = NULL, *dhead = NULL, *list = NULL, *dlist = NULL;
  char *key = NULL, *dkey = NULL, *peek = NULL;
  uint64_t t0 = clock_mono_ms(), changes = fsx_dir_changes(m->tab, dir);
  int rc, hrc, drc = -ENOENT, lrc = -ENOENT;

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
  if (!file_only) {
    dhead = s3_req_create(m->s3, "HEAD", fsx_inode_bucket(dir), dkey);
    list = s3_list_objects_req(m->s3, fsx_inode_bucket(dir), &p, &lres);
  }
  if (!paged && page_ttl(m) && !fsx_dir_is_big(m->tab, dir))
    dlist = s3_list_objects_req(m->s3, fsx_inode_bucket(dir), &dp, &dres);
  if (!head || (!file_only && (!dhead || !list))) {
    rc = -ENOMEM;
    goto out;
  }
  atomic_fetch_add(&m->st.heads, (peek ? 0 : 1) + (file_only ? 0 : 1));
  if (peek)
    atomic_fetch_add(&m->st.lookup_gets, 1);
  atomic_fetch_add(&m->st.lists, (file_only ? 0 : 1) + (dlist ? 1 : 0));
  s3_req_submit(head, NULL, NULL);
  if (!file_only) {
    s3_req_submit(dhead, NULL, NULL);
    s3_req_submit(list, NULL, NULL);
  }
  if (dlist)
    s3_req_submit(dlist, NULL, NULL);
  s3_req_wait(head);
  if (!file_only) {
    s3_req_wait(dhead);
    lrc = s3_req_wait(list);
    drc = s3_head_object_result(dhead, &dmt);
  }
  if (dlist) {
    if (!s3_req_wait(dlist))
      keep_page(m, dir, &dres, t0, changes);
    s3_list_result_cleanup(&dres);
  }
  hrc = peek ? peek_result(m, head, fsx_inode_bucket(dir), key, &mt, &peek, pk)
             : s3_head_object_result(head, &mt);
  if ((drc || lrc) && fsx_inode_name_fits(m->tab, dir, name, FSX_DIR)) {
    /* a file's key of S3's longest: no directory can have it (a server
       may refuse the question, say with KeyTooLongError) */
    drc = drc ? -ENOENT : drc;
    lrc = lrc ? -ENOENT : lrc;
  }
  if (!drc || (!lrc && (lres.n_objects || lres.n_prefixes))) {
    /* a directory wins over a file of the same name */
    if (!hrc)
      fsx_ns_skip_once(m, key, fsx_ns_both_names);
    /* its marker asked (absent: implicit) */
    fsx_ns_dir_of_marker(drc, &dmt, a);
    if (pk && !lrc)
      pk->page = child_page(m, dkey, &lres, t0);
    rc = 0;
  } else if (!hrc) {
    fsx_ns_attr_from_meta(&mt, a);
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

/*
 * A cold lookup's one round, all at once: HEAD the name as a file (with
 * pk and read.lookup_bytes: GET its first bytes instead, the metadata from
 * the GET's headers, the bytes kept when they are all of it), HEAD
 * its directory marker, LIST below it (after the marker: with pk, its first
 * CHILD_PAGE names, in pk->page when they are all of them), and,
 * unless the directory is known to be big or was just paged, LIST the
 * directory's first page (cache.burst_ttl set): when that is all of it,
 * it answers for a moment (page_ttl) the lookups after this one.
 * A page (that one, or the one a lookup of dir brought) answers
 * directories at once, files with the file's request alone (its metadata
 * and first bytes), absent names with the name's whole round (another
 * client may have made it since). A directory (marker or keys below) wins
 * over a file of the same name.
 */
int fsx_ns_lookup(struct fsx_mount *m, struct fsx_inode *dir, const char *name,
                  struct fsx_attr *a, struct fsx_peek *pk)
{
  const struct fsx_dirent *e;
  struct fsx_dirsnap *s;
  bool names_only, paged = false, file_only = false;
  int rc;

  if ((rc = fsx_inode_name_fits(m->tab, dir, name, FSX_FILE)))
    return rc;
  if (fsx_ns_bad_name(name, strlen(name)))
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
    /* absent: so says a listing; a cold lookup's page does not, since
       another client may have made the name after it: ask */
    if (!e && !names_only)
      return -ENOENT;
    file_only = e != NULL; /* a file a page showed: its own request */
    paged = true;
  }
  rc = cold_round(m, dir, name, a, pk, file_only, paged);
  if (file_only && rc == -ENOENT) /* gone since the page: a directory now? */
    rc = cold_round(m, dir, name, a, pk, false, true);
  return rc;
}

int fsx_ns_dir_round(struct fsx_mount *m, struct fsx_inode *dir,
                     const char *name, struct fsx_attr *a, struct fsx_peek *pk)
{
  const char *bucket = fsx_inode_bucket(dir);
  char *dkey = fsx_inode_key_of(m->tab, dir, name, FSX_DIR);
  struct s3_list_params p = {.delimiter = "/", .max_keys = CHILD_PAGE};
  struct s3_list_result lres = {0};
  struct s3_object_meta mt;
  struct s3_req *head = NULL, *list = NULL;
  uint64_t t0 = clock_mono_ms();
  int rc, lrc;

  if (!dkey)
    return -ENOMEM;
  p.prefix = p.start_after = dkey; /* (the marker is HEADed) */
  head = s3_req_create(m->s3, "HEAD", bucket, dkey);
  list = pk && m->o.dir_ttl_ms ? s3_list_objects_req(m->s3, bucket, &p, &lres)
                               : NULL;
  if (!head || (pk && m->o.dir_ttl_ms && !list)) {
    rc = -ENOMEM;
    goto out;
  }
  atomic_fetch_add(&m->st.heads, 1);
  s3_req_submit(head, NULL, NULL);
  if (list) {
    atomic_fetch_add(&m->st.lists, 1);
    s3_req_submit(list, NULL, NULL);
  }
  s3_req_wait(head);
  lrc = list ? s3_req_wait(list) : -ENOENT;
  rc = s3_head_object_result(head, &mt);
  if (rc == -ENOENT && !lrc && !lres.n_objects && !lres.n_prefixes) {
    rc = -ENOENT; /* no marker, nothing below: gone since it was listed */
  } else if (!rc || rc == -ENOENT) {
    fsx_ns_dir_of_marker(rc, &mt, a); /* -ENOENT: an implicit directory */
    if (!rc)
      s3_object_meta_cleanup(&mt);
    if (!lrc)
      pk->page = child_page(m, dkey, &lres, t0);
    rc = 0;
  }
  s3_list_result_cleanup(&lres);
out:
  s3_req_destroy(head);
  s3_req_destroy(list);
  free(dkey);
  return rc;
}
