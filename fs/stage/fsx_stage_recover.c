/*
 * fsx_stage_recover: a dead mount's directory recovered (its uploads
 * aborted, its staging files uploaded or kept in unsaved/, which
 * fsx_stage_unsaved.c holds; the design is in fsx_stage.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/endpoint.h"
#include "common/failpoint.h"
#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/mem/fsx_pool.h"
#include "fs/meta/fsx_etag.h"
#include "fs/stage/fsx_stage_i.h"
#include "s3/s3_client.h"

/* ---- recovery ---- */

struct guard;
static bool guard_uid(const struct guard *g, const char *upload_id);
static bool guard_unsure(const struct guard *g);

/* Abort the upload in one record; true when it is gone (or not ours, or
   kept with its file: the record goes, the upload stays). */
static bool recover_upload(struct fsx_stage *s, struct s3_client *c,
                           const char *path, const struct guard *g,
                           struct fsx_recovery *out)
{
  char *text = NULL, *f[5] = {NULL}, *save = NULL;
  int n = 0, rc;
  bool done = true;

  if (fsx_stage_read_text(path, &text))
    return true;
  for (char *l = strtok_r(text, "\n", &save); l && n < 5;
       l = strtok_r(NULL, "\n", &save)) {
    if (!hex_decode_str(l) || !*l)
      break;
    f[n++] = l;
  }
  if (n < 4) {
    log_warn("%s: not an upload record, removed", path);
    goto out;
  }
  if (!endpoint_lists_meet(f[0], s->endpoint)) {
    done = false; /* another endpoint's: for a mount of that one */
    goto out;
  }
  if (!strncmp(f[3], "?since=", 7)) { /* its creation's answer was lost */
    out->unknown +=
        (int)fsx_stage_unknown(f[1], f[2], (time_t)atoll(f[3] + 7), 0, 0);
    goto out;
  }
  if (guard_uid(g, f[3])) { /* its parts' list kept in unsaved/ */
    log_info("%s: upload %s of %s is kept with its file in unsaved/", f[1],
             f[3], f[2]);
    goto out;
  }
  if (guard_unsure(g)) {
    done = false; /* a list of parts unread may name it */
    goto out;
  }
  /* a completion sent may have landed: then the upload is the object */
  rc = fsx_etag_abort_upload(c, f[1], f[2], f[3],
                             n == 5 && !strcmp(f[4], "completing"));
  if (rc && rc != -ENOENT) {
    log_warn("%s: could not abort the unfinished upload of %s: %s", f[1],
             f[2], strerror(-rc));
    done = false;
    goto out;
  }
  log_info("%s: aborted the unfinished upload of %s left by a dead mount",
           f[1], f[2]);
  if (!rc)
    out->aborted++;
out:
  free(text);
  return done;
}

static bool is_staging_name(const char *n)
{
  return !strncmp(n, "ino-", 4) && !strchr(n, '.');
}

/* What becomes of the unfinished upload a streamed file's <file>.parts
   names, once the file is dealt with. */
enum resumed_end {
  RESUMED_COMPLETED,          /* forgotten: it is the object now */
  RESUMED_ABORT,              /* aborted: it holds nothing only it has */
  RESUMED_KEPT,               /* kept with the file in unsaved/ */
};

/* The upload's record in uploads/ goes in every case (an abort that fails
   leaves it: the next mount's); nothing aborts an upload kept. */
static void end_resumed(struct s3_client *c, const char *path,
                        const struct fsx_stage_rec *r,
                        const struct fsx_stage_parts *pp, enum resumed_end how)
{
  char up[4200];
  const char *slash = strrchr(path, '/');
  int rc = how == RESUMED_ABORT
               ? s3_abort_multipart(c, r->bucket, r->key, pp->upload_id)
               : 0;

  if (how != RESUMED_KEPT)
    fsx_stage_parts_remove(path);
  if (rc && rc != -ENOENT) {
    log_warn("%s: could not abort the unfinished upload of %s: %s", r->bucket,
             r->key, strerror(-rc));
    return;
  }
  snprintf(up, sizeof(up), "%.*s/uploads/%ld", (int)(slash - path), path,
           pp->journal_id);
  unlink(up);
}

/* One staging file of a dead mount: uploaded, removed, kept or left. */
static void recover_file(struct fsx_stage *s, struct s3_client *c,
                         const char *path, bool known, bool pool_lost,
                         fsx_stage_recover_fn fn, void *arg,
                         struct fsx_recovery *out)
{
  char reason[512], mp[4200];
  struct fsx_rec_text rt;
  struct fsx_stage_parts pp;
  int rc = fsx_stage_rec_read(path, &rt), fd, map_fd;
  unsigned tries;
  bool resume, has_parts;

  if (rc == -ENOENT && known) { /* nothing the server lacked */
    fsx_stage_remove(path);
    return;
  }
  if (rc) {
    struct stat st;
    if (!lstat(path, &st) && st.st_size == 0 && !known) {
      fsx_stage_remove(path);
      return;
    }
    if (fsx_stage_keep(s, path, "?", strrchr(path, '/') + 1,
                       known ? "its record is unreadable"
                             : "left by a mount of an older version"))
      out->left++;
    else
      out->kept++;
    return;
  }
  if (!endpoint_lists_meet(rt.r.endpoint, s->endpoint)) {
    out->left++; /* for a mount of that endpoint */
    free(rt.text);
    return;
  }
  /* streamed, its upload failed: the parts the server holds are named */
  /* (not when the write buffers are lost: the staging file lacks what
     only they held, and would be completed with zeros in its place) */
  has_parts = rt.r.sent && !fsx_stage_parts_read(path, &pp);
  resume = has_parts && !pool_lost && !rt.r.partial;
  if (!resume && (rt.r.partial || rt.r.sent)) {
    /* never closed: uploading it would show a part; streamed: bytes the
       unfinished upload held are missing from it */
    snprintf(reason, sizeof(reason), "%s%s",
             rt.r.partial ? "the daemon stopped while it was being written "
                            "(never closed or synced since)"
             : pool_lost && rt.r.sent
                 ? "the daemon stopped with its upload unfinished and its "
                   "write buffers were lost (the machine restarted?)"
                 : "the daemon stopped with its upload unfinished",
             rt.r.sent ? "; bytes its upload already held (streamed, up to "
                         "byte " : "");
    if (rt.r.sent)
      snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
               "%llu) read as zeros where no write buffer kept them",
               (unsigned long long)rt.r.sent);
    rc = -ENOTRECOVERABLE;
    /* kept whole: what it never read of the object it was written over */
    if (fsx_stage_fill_kept(path, &rt.r, fn, arg, reason, sizeof(reason)) ==
        -EAGAIN) {
      log_warn("%s: %s, left by a dead mount, is left for the next mount "
               "(%s): %s", rt.r.bucket, rt.r.key, reason, path);
      out->left++;
      goto free_parts;
    }
    goto set_aside;
  }
  if (!fsx_stage_try_begin(path, &tries)) {
    snprintf(reason, sizeof(reason), "its recovery was begun %u times and "
             "never ended (its process died in it each time)", tries);
    rc = -ENOTRECOVERABLE;
    goto set_aside;
  }
  rt.r.resume = resume ? &pp : NULL;
  (void)FP("recover.file"); /* (kill only: counted, not yet tried) */
  /* never through a symlink, only a file of ours */
  fd = fsx_stage_open_file(path, O_RDWR, 0);
  fsx_stage_side_path(mp, sizeof(mp), path, "map");
  map_fd = fsx_stage_open_file(mp, O_RDWR, 0);
  reason[0] = '\0';
  if (fd < 0)
    snprintf(reason, sizeof(reason), "staging file: %s", fd == -EPERM
             ? "not a plain file of this user's with one link (refused)"
             : strerror(-fd));
  else if ((rc = fn(arg, &rt.r, path, fd, map_fd, reason, sizeof(reason))))
    snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason), "%s",
             reason[0] ? "" : strerror(-rc));
  if (fd >= 0)
    close(fd);
  if (map_fd >= 0)
    close(map_fd);
  fsx_stage_try_end(path);
  if (!reason[0]) {
    (void)FP("recover.done"); /* uploaded, nothing here knows yet */
    /* the record first: a crash after it leaves a file to remove, never
       one kept as unfinished (its .parts, if left, is kept aside) */
    fsx_stage_rec_remove(path);
    if (resume)
      end_resumed(c, path, &rt.r, &pp, RESUMED_COMPLETED);
    log_notice("%s: %s, left by a dead mount, is uploaded", rt.r.bucket,
               rt.r.key);
    fsx_stage_remove(path);
    out->uploaded++;
    goto free_parts;
  }
  if (rc == -EAGAIN) { /* the next mount takes it up again */
    log_warn("%s: %s, left by a dead mount, is left for the next mount "
             "(%s): %s", rt.r.bucket, rt.r.key, reason, path);
    out->left++;
    goto free_parts;
  }
set_aside:
  /* an upload holding acknowledged parts is their only copy: kept with
     the file (never aborted); one holding none goes */
  if (has_parts && pp.n && rc != -EIDRM) {
    if (fsx_stage_keep_file(s, path, rt.r.bucket, rt.r.key, reason,
                            pp.upload_id)) {
      out->left++;
    } else {
      end_resumed(c, path, &rt.r, &pp, RESUMED_KEPT);
      out->kept++;
    }
    goto free_parts;
  }
  if (has_parts)
    end_resumed(c, path, &rt.r, &pp, RESUMED_ABORT);
  if (fsx_stage_keep(s, path, rt.r.bucket, rt.r.key, reason))
    out->left++;
  else
    out->kept++;
free_parts:
  if (has_parts)
    fsx_stage_parts_free(&pp);
  free(rt.text);
}

/* A record or map whose staging file is gone (a crash while removing
   them): nothing to describe any more. */
static void remove_orphan_side(char *p, size_t ext)
{
  size_t len = strlen(p);
  struct stat st;

  p[len - ext] = '\0';
  if (stat(p, &st) && errno == ENOENT) {
    p[len - ext] = '.';
    unlink(p);
  }
}

static bool told_to_stop(const atomic_bool *stop)
{
  return stop && atomic_load(stop);
}

/*
 * The multipart uploads never to abort: those a .parts names, for they
 * alone hold a file's acknowledged parts. A .parts in the dead mount's
 * directory (its file taken up later, or gone) keeps its upload's record
 * there (by journal id); one in unsaved/ (its file kept) lets the record
 * go, the upload left. A .parts that cannot be read leaves every upload
 * of the directory alone.
 */
struct guard {
  long *jids;                 /* journal ids, from the directory */
  size_t njids;
  char **uids;                /* upload ids, from unsaved/ */
  size_t nuids;
  bool unsure;
};

static void guard_add(struct guard *g, const struct fsx_stage_parts *pp,
                      bool in_unsaved)
{
  if (in_unsaved) {
    char **v = realloc(g->uids, (g->nuids + 1) * sizeof(*v));
    char *id = strdup(pp->upload_id);
    if (!v || !id) {
      if (v)
        g->uids = v;
      free(id);
      g->unsure = true;
      return;
    }
    g->uids = v;
    g->uids[g->nuids++] = id;
  } else {
    long *v = realloc(g->jids, (g->njids + 1) * sizeof(*v));
    if (!v) {
      g->unsure = true;
      return;
    }
    g->jids = v;
    g->jids[g->njids++] = pp->journal_id;
  }
}

/*
 * A .parts the strict reading refused (another owner, a second link, a
 * line it does not take), read for its journal id and upload id alone:
 * only ever to keep an upload from an abort, never to complete anything.
 */
static int parts_loose(const char *path, struct fsx_stage_parts *pp)
{
  char p[4200], buf[8192], *nl, *id, *end;
  ssize_t n;
  int fd;

  memset(pp, 0, sizeof(*pp));
  fsx_stage_side_path(p, sizeof(p), path, "parts");
  fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return -EBADMSG;
  buf[n] = '\0';
  pp->journal_id = strtol(buf, &end, 10);
  if (*end != '\n' || pp->journal_id <= 0)
    return -EBADMSG;
  id = end + 1;
  if ((nl = strchr(id, '\n')))
    *nl = '\0';
  if (!hex_decode_str(id) || !*id || !(pp->text = strdup(id)))
    return -EBADMSG;
  pp->upload_id = pp->text;
  return 0;
}

static void guard_scan(struct guard *g, const char *dir, bool in_unsaved)
{
  struct dirent *e;
  DIR *d = opendir(dir);

  if (!d && errno != ENOENT)
    g->unsure = true;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    struct fsx_stage_parts pp;
    char *p;
    if (len <= 6 || strcmp(e->d_name + len - 6, ".parts"))
      continue;
    p = fsx_stage_path_join(dir, e->d_name);
    if (!p) {
      g->unsure = true;
      continue;
    }
    p[strlen(p) - 6] = '\0'; /* (fsx_stage_parts_read adds it) */
    if (!fsx_stage_parts_read(p, &pp) || !parts_loose(p, &pp)) {
      guard_add(g, &pp, in_unsaved);
      fsx_stage_parts_free(&pp);
    } else if (!in_unsaved) {
      log_warn("%s.parts: unreadable: no upload of %s is aborted", p, dir);
      g->unsure = true;
    } else {
      log_warn("%s.parts: unreadable: it names no upload that can be kept "
               "from an abort", p);
    }
    free(p);
  }
  if (d)
    closedir(d);
}

static void guard_free(struct guard *g)
{
  for (size_t i = 0; i < g->nuids; i++)
    free(g->uids[i]);
  free(g->uids);
  free(g->jids);
}

static bool guard_jid(const struct guard *g, const char *name)
{
  char *end;
  long id = strtol(name, &end, 10);

  for (size_t i = 0; !*end && i < g->njids; i++)
    if (g->jids[i] == id)
      return true;
  return false;
}

static bool guard_unsure(const struct guard *g)
{
  return g->unsure;
}

static bool guard_uid(const struct guard *g, const char *upload_id)
{
  for (size_t i = 0; i < g->nuids; i++)
    if (!strcmp(g->uids[i], upload_id))
      return true;
  return false;
}

/* A .parts whose staging file is gone (a crash while its file was kept,
   or once it was uploaded): kept in unsaved/ with a MANIFEST line, for
   the upload it names may hold the only copy of acknowledged parts. */
static void keep_orphan_parts(struct fsx_stage *s, char *p)
{
  size_t len = strlen(p);
  struct fsx_stage_parts pp;
  char why[512];
  struct stat st;

  p[len - 6] = '\0';
  if (!(lstat(p, &st) && errno == ENOENT)) {
    p[len - 6] = '.';
    return; /* its file is there: recover_file's */
  }
  snprintf(why, sizeof(why), "a list of the parts a multipart upload "
           "holds, whose file is gone from its directory (kept in unsaved/ "
           "before, or uploaded: look at the key)");
  if (!fsx_stage_parts_read(p, &pp)) {
    snprintf(why + strlen(why), sizeof(why) - strlen(why), "; upload %s "
             "is not aborted", pp.upload_id);
    fsx_stage_parts_free(&pp);
  }
  p[len - 6] = '.';
  fsx_stage_keep(s, p, "?", strrchr(p, '/') + 1, why);
}

/* Recover one dead mount's directory; removed if nothing is left in it.
   Once *stop, what is not done yet stays as it is. */
static void recover_dir(struct fsx_stage *s, struct s3_client *c,
                        const char *dir, fsx_stage_recover_fn fn, void *arg,
                        const atomic_bool *stop, struct fsx_recovery *out)
{
  char *up = fsx_stage_path_join(dir, "uploads");
  char *fmt = fsx_stage_path_join(dir, "format"), *text = NULL;
  char *unsaved = fsx_stage_path_join(s->root, "unsaved");
  struct guard g = {0};
  bool known = false, pool_lost = false;
  struct dirent *e;
  DIR *d;

  if (fmt && !fsx_stage_read_text(fmt, &text))
    known = !strcmp(text, FORMAT);
  free(text);
  free(fmt);
  /* first the uploads: a staging file is uploaded anew, never resumed,
     but for a streamed file's whose parts the server holds (its .parts) */
  guard_scan(&g, dir, false);
  if (unsaved)
    guard_scan(&g, unsaved, true);
  else
    g.unsure = true;
  d = up ? opendir(up) : NULL;
  while (d && !told_to_stop(stop) && (e = readdir(d))) {
    char *p;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    if (guard_jid(&g, e->d_name))
      continue;
    p = fsx_stage_path_join(up, e->d_name);
    if (p && e->d_name[0] == '.') /* a record never renamed into place */
      unlink(p);
    else if (p && recover_upload(s, c, p, &g, out))
      unlink(p);
    free(p);
  }
  if (d)
    closedir(d);
  free(up);
  free(unsaved);
  guard_free(&g);
  /* the write buffers' bytes into their staging files, before those */
  if (!told_to_stop(stop)) {
    int runs;
    (void)FP("pool.recover"); /* (kill only) */
    runs = fsx_pool_recover(dir);
    pool_lost = runs < 0;
    if (runs == -ENOENT)
      log_err("%s: its write buffers are gone (their file in write.pool_dir "
              "did not outlive a restart): what only they held is lost",
              dir);
    else if (runs < 0)
      log_err("%s: write buffers not read back: %s (left in place)", dir,
              strerror(-runs));
    else if (runs)
      log_notice("%s: %d write buffer(s) written back into their files",
                 dir, runs);
  }
  d = told_to_stop(stop) ? NULL : opendir(dir);
  while (d && !told_to_stop(stop) && (e = readdir(d))) {
    char *p = fsx_stage_path_join(dir, e->d_name);
    size_t n = strlen(e->d_name);
    if (p && is_staging_name(e->d_name))
      recover_file(s, c, p, known, pool_lost, fn, arg, out);
    else if (p && n > 4 && !strcmp(e->d_name + n - 4, ".tmp"))
      unlink(p); /* a record (.rec, .parts, .try) never renamed into place */
    else if (p && n > 4 && (!strcmp(e->d_name + n - 4, ".rec") ||
                            !strcmp(e->d_name + n - 4, ".map")))
      remove_orphan_side(p, 4);
    else if (p && n > 6 && !strcmp(e->d_name + n - 6, ".parts"))
      keep_orphan_parts(s, p);
    else if (p && n > 4 && !strcmp(e->d_name + n - 4, ".try"))
      remove_orphan_side(p, 4);
    free(p);
  }
  if (d)
    closedir(d);
  if (fsx_stage_remove_finished(dir))
    return;
  if (told_to_stop(stop))
    log_notice("%s: left for the next mount (this one stopped first)", dir);
  else
    log_warn("%s: left in place: it still holds files or uploads of "
             "another endpoint or that could not be kept", dir);
}

/*
 * Each dead mount's directory under cache.dir, locked (flock) for the
 * time of visit(s, dir, arg): a live mount's is locked by it, and a
 * directory without a lock file is half-made, or not ours. false from
 * visit stops the walk.
 */
static void each_dead_dir(struct fsx_stage *s,
                          bool (*visit)(struct fsx_stage *s, const char *dir,
                                        void *arg),
                          void *arg)
{
  DIR *d = opendir(s->root);
  struct dirent *e;
  bool more = true;

  while (d && more && (e = readdir(d))) {
    char *dir, *lockp;
    int fd;
    if (strncmp(e->d_name, "mount-", 6))
      continue;
    dir = fsx_stage_path_join(s->root, e->d_name);
    if (!dir || !strcmp(dir, s->dir)) {
      free(dir);
      continue;
    }
    lockp = fsx_stage_path_join(dir, "lock");
    /* a directory of ours alone (no one else could have made it under
       a cache.dir that passed; a second wall) */
    fd = lockp && !fsx_stage_dir_ok(dir) ? fsx_stage_open_file(lockp, O_RDWR, 0)
                                         : -1;
    if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB))
      more = visit(s, dir, arg);
    if (fd >= 0)
      close(fd);
    free(lockp);
    free(dir);
  }
  if (d)
    closedir(d);
}

struct recover_walk {
  struct s3_client *c;
  fsx_stage_recover_fn fn;
  void *arg;
  const atomic_bool *stop;
  struct fsx_recovery *out;
};

static bool visit_recover(struct fsx_stage *s, const char *dir, void *arg)
{
  struct recover_walk *w = arg;

  recover_dir(s, w->c, dir, w->fn, w->arg, w->stop, w->out);
  return !told_to_stop(w->stop);
}

void fsx_stage_recover_until(struct fsx_stage *s, struct s3_client *c,
                             fsx_stage_recover_fn fn, void *arg,
                             const atomic_bool *stop,
                             struct fsx_recovery *out)
{
  struct recover_walk w = {c, fn, arg, stop, out};

  memset(out, 0, sizeof(*out));
  if (!told_to_stop(stop))
    each_dead_dir(s, visit_recover, &w);
}

void fsx_stage_recover(struct fsx_stage *s, struct s3_client *c,
                       fsx_stage_recover_fn fn, void *arg,
                       struct fsx_recovery *out)
{
  fsx_stage_recover_until(s, c, fn, arg, NULL, out);
}

struct leftovers {
  int dirs, files;
};

static bool visit_count(struct fsx_stage *s, const char *dir, void *arg)
{
  struct leftovers *n = arg;
  DIR *d = opendir(dir);
  struct dirent *e;

  (void)s;
  n->dirs++;
  while (d && (e = readdir(d)))
    n->files += is_staging_name(e->d_name);
  if (d)
    closedir(d);
  return true;
}

int fsx_stage_leftovers(struct fsx_stage *s, int *dirs)
{
  struct leftovers n = {0, 0};

  each_dead_dir(s, visit_count, &n);
  *dirs = n.dirs;
  return n.files;
}
