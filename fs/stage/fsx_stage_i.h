/* Internals shared by fsx_stage.c (the directory), fsx_stage_rec.c
   (records, journal) and fsx_stage_recover.c (recovery, unsaved/). */
#ifndef S3R_FSX_STAGE_I_H
#define S3R_FSX_STAGE_I_H

#include <pthread.h>

#include "fs/stage/fsx_stage.h"

#define FORMAT "s3rdmafs-stage 2\n"
#define REC_MAGIC "s3rdmafs-staging-record 1"

struct fsx_stage {
  char *root;                 /* cache.dir, or its s3rdmafs-<uid> (shared) */
  char *dir;                  /* root/mount-PID-N */
  char *endpoint;
  char mount_id[17];          /* random, names files in unsaved/ */
  int lock_fd;                /* flock held while we live */
  pthread_mutex_t lock;
  long next_id;               /* lock */
  unsigned long next_kept;    /* lock */
};

/* A parsed record: r's strings point into text (freed by the caller). */
struct fsx_rec_text {
  char *text;
  struct fsx_stage_rec r;
};

char *fsx_stage_path_join(const char *a, const char *b);
/* mkdir -p for an absolute path, mode 0700 for what it creates. */
int fsx_stage_mkdirs(const char *path);
int fsx_stage_write_file(const char *path, const char *text, bool sync);
/* Read a whole (small) file; the text is malloc'd. */
int fsx_stage_read_text(const char *path, char **out);
void fsx_stage_side_path(char *out, size_t len, const char *path,
                         const char *ext);
/* text (malloc'd, freed here; NULL: out of memory) as the file beside
   path with extension ext, replaced whole (written as <ext>.tmp, synced
   with sync, renamed into place). */
int fsx_stage_write_side(const char *path, const char *ext, char *text,
                         bool sync);
/* The directory path is in, synced: 0 or -errno. */
int fsx_stage_sync_dir(const char *path);
/* The record beside path: 0, -ENOENT (none) or -EBADMSG (unreadable). */
int fsx_stage_rec_read(const char *path, struct fsx_rec_text *rt);
/* rmdir a mount directory holding only what a finished mount leaves. */
bool fsx_stage_remove_finished(const char *dir);

/* fsx_stage_try.c: an attempt at path counted in <file>.try (synced),
   false (and not counted) when 3 began and never ended; its end. */
bool fsx_stage_try_begin(const char *path, unsigned *n);
void fsx_stage_try_end(const char *path);
/* A file to set aside (r as read): the old object's bytes it never read
   filled in by fn (r->keep_only), else reason says they read as zeros;
   -EAGAIN when the server could not say (left for the next mount). */
int fsx_stage_fill_kept(const char *path, struct fsx_stage_rec *r,
                        fsx_stage_recover_fn fn, void *arg, char *reason,
                        size_t reasonlen);

/* fsx_stage_unsaved.c: path kept in unsaved/ (see fsx_stage_keep); with
   upload, its .parts goes beside it and the MANIFEST line names the
   upload, kept too: it holds the file's first parts. */
int fsx_stage_keep_file(struct fsx_stage *s, const char *path,
                        const char *bucket, const char *key,
                        const char *reason, const char *upload);

/* fsx_stage_safe.c: cache.dir made (mkdir -p) and checked; the directory
   the mount's files go under in *root (malloc'd: cache.dir, or the user's
   own subdirectory of a shared sticky one), else -errno with err saying
   which directory, its owner and mode, and the fix. */
int fsx_stage_safe_root(const char *cache_dir, char **root, char *err,
                        size_t errlen);
/* A regular file of the mount's user with one link: 0 or -EPERM. */
int fsx_stage_file_ok(int fd);
/* A directory (not a symlink) of the mount's user, writable by no one
   else: 0 or -EPERM. */
int fsx_stage_dir_ok(const char *dir);
/* open(2) never through a symlink, O_CLOEXEC, the file checked
   (fsx_stage_file_ok) before O_TRUNC takes effect: its fd or -errno. */
int fsx_stage_open_file(const char *path, int flags, mode_t mode);

#endif
