/* fsx_recover_thread: recovery in the background (see fsx_recover_thread.h):
   the daemon's side of fsx_recover_proc. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/mount/fsx_i.h"
#include "fs/stage/fsx_recover_proc.h"
#include "fs/stage/fsx_recover_thread.h"
#include "fs/stage/fsx_stage.h"

struct fsx_recover_thread {
  struct fsx_mount *m;
  struct fsx_recover_proc proc;
  char *cache_dir;
  pthread_t thread;
  bool started;
  atomic_bool stop;
  char *bucket, *key;         /* the name being uploaded (m->recover_lock) */
};

/* A file inode whose object was just replaced: its attributes anew, its
   chunks dropped, the kernel's attributes too (the next open sees the new
   ETag and drops the kernel's pages itself: a page invalidation from here
   could wait on a read no thread serves once the loop has ended). */
static void refresh_file(struct fsx_mount *m, struct fsx_inode *in,
                         const char *bucket, const char *key, bool stopping)
{
  struct fsx_attr a;

  fsx_cache_invalidate(m->cache, fsx_inode_ino(in));
  if (!fsx_ns_head_key(m, bucket, key, &a))
    fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  if (m->se && !stopping)
    fuse_lowlevel_notify_inval_inode(m->se, fsx_inode_ino(in), -1, 0);
}

/*
 * bucket/key was uploaded: follow its names down from the root as far as
 * the inode table knows them. The last directory known forgets its
 * listing and the kernel its entry for the next name (perhaps a negative
 * one: "no such file", cached); the file itself, if known, is refreshed.
 */
static void forget_key(struct fsx_recover_thread *t, const char *bucket,
                       const char *key)
{
  struct fsx_mount *m = t->m;
  bool stopping = atomic_load(&t->stop);
  size_t pl = m->prefix ? strlen(m->prefix) : 0;
  struct fsx_inode *dir, *in;
  const char *rest = key;
  char name[NAME_MAX + 1];

  if (m->bucket) {
    if (strcmp(bucket, m->bucket) || (pl && strncmp(key, m->prefix, pl)))
      return; /* not under this mount */
    rest = key + pl;
    dir = fsx_inode_get(m->tab, FSX_ROOT_INO);
  } else {
    dir = fsx_inode_find(m->tab, FSX_ROOT_INO, bucket);
  }
  while (dir) {
    size_t n = strcspn(rest, "/");
    bool last = rest[n] == '\0', is_dir = false;
    if (n == 0 || n > NAME_MAX)
      break; /* "a//b": no name this mount shows */
    memcpy(name, rest, n);
    name[n] = '\0';
    in = fsx_inode_find(m->tab, fsx_inode_ino(dir), name);
    if (in) {
      struct fsx_inode_view v;
      fsx_inode_view(m->tab, in, &v);
      is_dir = v.attr.kind == FSX_DIR;
    }
    if (!last && is_dir) {
      fsx_inode_put(m->tab, dir);
      dir = in;
      rest += n + 1;
      continue;
    }
    fsx_dir_invalidate(m->tab, dir);
    if (in && last && !is_dir)
      refresh_file(m, in, bucket, key, stopping);
    else if (m->se && !stopping)
      fuse_lowlevel_notify_inval_entry(m->se, fsx_inode_ino(dir), name, n);
    fsx_inode_put(m->tab, in);
    break;
  }
  fsx_inode_put(m->tab, dir);
}

/* "C bucket key": both decoded in place. */
static bool name_of(char *line, char **bucket, char **key)
{
  char *sp;

  if (strlen(line) < 3 || line[1] != ' ' || !(sp = strchr(line + 2, ' ')))
    return false;
  *sp = '\0';
  *bucket = line + 2;
  *key = sp + 1;
  return hex_decode_str(*bucket) && hex_decode_str(*key) && **bucket &&
         **key;
}

/* The name recovery uploads (NULL: none), for fsx_recover_name_wait. */
static void set_name(struct fsx_recover_thread *t, const char *bucket,
                     const char *key)
{
  struct fsx_mount *m = t->m;
  char *b = bucket ? strdup(bucket) : NULL, *k = key ? strdup(key) : NULL;

  pthread_mutex_lock(&m->recover_lock);
  free(t->bucket);
  free(t->key);
  t->bucket = b && k ? b : NULL;
  t->key = b && k ? k : NULL;
  if (!t->key) {
    free(b);
    free(k);
  }
  m->recover_bucket = t->bucket;
  m->recover_key = t->key;
  pthread_cond_broadcast(&m->recover_cond);
  pthread_mutex_unlock(&m->recover_lock);
}

static bool same_name(const char *b1, const char *k1, const char *b2,
                      const char *k2)
{
  return k1 && k2 && !strcmp(k1, k2) && !strcmp(b1, b2);
}

void fsx_recover_name_hold(struct fsx_mount *m, struct fsx_recover_hold *h,
                           const char *bucket, const char *key)
{
  pthread_mutex_lock(&m->recover_lock);
  while (same_name(m->recover_bucket, m->recover_key, bucket, key))
    pthread_cond_wait(&m->recover_cond, &m->recover_lock);
  h->bucket = bucket;
  h->key = key;
  h->next = m->recover_holds;
  m->recover_holds = h;
  pthread_mutex_unlock(&m->recover_lock);
}

void fsx_recover_name_release(struct fsx_mount *m,
                              struct fsx_recover_hold *h)
{
  pthread_mutex_lock(&m->recover_lock);
  for (struct fsx_recover_hold **p = &m->recover_holds; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      break;
    }
  pthread_cond_broadcast(&m->recover_cond);
  pthread_mutex_unlock(&m->recover_lock);
}

/* The name set: once no unlink or rename holding it is under way, the
   worker is told to go on (token: its "B"'s). */
static void name_clear_to_go(struct fsx_recover_thread *t, const char *token)
{
  struct fsx_mount *m = t->m;
  bool held = true;

  pthread_mutex_lock(&m->recover_lock);
  while (held) {
    held = false;
    for (struct fsx_recover_hold *h = m->recover_holds; h && !held;
         h = h->next)
      held = same_name(h->bucket, h->key, t->bucket, t->key);
    if (held)
      pthread_cond_wait(&m->recover_cond, &m->recover_lock);
  }
  pthread_mutex_unlock(&m->recover_lock);
  fsx_recover_proc_ack(&t->proc, token);
}

static void *recover_main(void *arg)
{
  struct fsx_recover_thread *t = arg;
  struct fsx_mount *m = t->m;
  int efd = dup(t->proc.event_fd);
  FILE *ev = efd >= 0 ? fdopen(efd, "r") : NULL;
  int aborted = 0, uploaded = 0, kept = 0, left = 0, unknown = 0, died = 0;
  bool over = false;
  char *line = NULL;
  size_t cap = 0;

  if (!ev) /* no one to read its words: stopped (nothing waits on us) */
    fsx_recover_proc_say(&t->proc, "Q\n");

  while (ev && getline(&line, &cap, ev) > 0) {
    char *bucket, *key;
    int v[5];
    line[strcspn(line, "\n")] = '\0';
    switch (line[0]) {
    case 'B': {
      char *token = strrchr(line, ' ');
      if (!token)
        break;
      *token++ = '\0';
      if (name_of(line, &bucket, &key))
        set_name(t, bucket, key);
      name_clear_to_go(t, token); /* (even for a name not understood) */
      break;
    }
    case 'E':
      set_name(t, NULL, NULL);
      break;
    case 'U':
      if (name_of(line, &bucket, &key)) {
        atomic_fetch_add(&m->st.recovery_uploaded, 1);
        forget_key(t, bucket, key);
      }
      break;
    case 'S':
      if (sscanf(line + 1, "%d %d %d %d %d", &v[0], &v[1], &v[2], &v[3],
                 &v[4]) == 5) {
        aborted += v[0];
        uploaded += v[1];
        kept += v[2];
        left = v[3]; /* (the last worker's: what is still there) */
        unknown += v[4];
      }
      break;
    case 'D':
      died++;
      set_name(t, NULL, NULL);
      log_err("recovery: its process died of signal %s with a file under "
              "way (each attempt at a file is counted: 3 and it is set "
              "aside); going on in a new one", line + 2);
      break;
    case 'X':
      over = true;
      break;
    default:
      break;
    }
    if (over)
      break;
  }
  free(line);
  if (ev)
    fclose(ev);
  else if (efd >= 0)
    close(efd);
  set_name(t, NULL, NULL);
  atomic_store(&m->st.recovery_kept, (uint64_t)kept);
  atomic_fetch_add(&m->st.uploads_unknown, (uint64_t)unknown);
  if (!over)
    log_err("recovery: its process ended without a word (what it had not "
            "done stays for the next mount)");
  log_notice("earlier mounts' leftovers: %d unfinished uploads aborted, "
             "%d files uploaded, %d kept in %s/unsaved, %d left in place, "
             "%d unknown uploads left, %d recovery process(es) died",
             aborted, uploaded, kept, t->cache_dir, left, unknown, died);
  if (atomic_load(&t->stop))
    log_notice("recovery stopped by the unmount: what it had not done "
               "is left in place for the next mount");
  atomic_store(&m->st.recovery_running, 0);
  return NULL;
}

int fsx_recover_thread_start(struct fsx_mount *m, const char *cache_dir,
                             struct fsx_recover_proc *proc,
                             struct fsx_recover_thread **out)
{
  struct fsx_recover_thread *t;
  struct fsx_recover_proc p = *proc;
  int dirs = 0, files = fsx_stage_leftovers(m->stage, &dirs), rc;

  *out = NULL;
  proc->pid = 0; /* ours now */
  if (!dirs) {
    fsx_recover_proc_say(&p, "N\n");
    fsx_recover_proc_end(&p);
    return 0;
  }
  t = calloc(1, sizeof(*t));
  if (!t) {
    rc = -ENOMEM;
    goto end_proc;
  }
  t->m = m;
  t->proc = p;
  atomic_init(&t->stop, false);
  t->cache_dir = strdup(cache_dir);
  if (!t->cache_dir) {
    rc = -ENOMEM;
    goto free_t;
  }
  log_notice("recovering %d staging file(s) left by %d dead mount(s) in %s, "
             "in the background", files, dirs, cache_dir);
  atomic_store(&m->st.recovery_running, 1);
  if ((rc = fsx_recover_proc_say(&t->proc, slog_is_syslog() ? "G 1\n"
                                                           : "G 0\n")) ||
      (rc = -pthread_create(&t->thread, NULL, recover_main, t))) {
    atomic_store(&m->st.recovery_running, 0);
    goto free_dir;
  }
  *out = t;
  return 0;

free_dir:
  free(t->cache_dir);
free_t:
  free(t);
end_proc:
  fsx_recover_proc_say(&p, "Q\n");
  fsx_recover_proc_end(&p);
  return rc;
}

void fsx_recover_thread_stop(struct fsx_recover_thread *t)
{
  if (!t)
    return;
  atomic_store(&t->stop, true);
  fsx_recover_proc_say(&t->proc, "Q\n"); /* (ignored once it is over) */
  pthread_join(t->thread, NULL);
  fsx_recover_proc_end(&t->proc);
  set_name(t, NULL, NULL);
  free(t->cache_dir);
  free(t);
}
