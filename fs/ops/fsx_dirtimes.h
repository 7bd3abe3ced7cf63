/*
 * fsx_dirtimes: a directory's mtime and ctime, moved by this mount's
 * creates, removes and renames in it (fsx_inode_dir_touch), stored on its
 * marker object where s3fs keeps them, in the background: never a request
 * on the operation's path. A directory is stored FSX_DIRTIMES_DELAY_MS
 * after the last change in it (a burst of creates makes one store; one
 * changed all along, 10 s after its first change at the latest), and
 * every one still waiting at unmount before the mount ends. Stored only
 * where the directory has a marker (one this mount made or a HEAD found):
 * an implicit directory (keys below it, no marker) gets none made for it,
 * and its times live while the mount runs.
 *
 * Threads: one; any thread queues (at most FSX_DIRTIMES_MAX directories
 * waiting: past that a change is kept in memory only). A store lands in
 * order with the operations on the directory's name (fsx_inode_store_begin:
 * rmdir and rename wait for it, and none lands after them).
 */
#ifndef S3R_FSX_DIRTIMES_H
#define S3R_FSX_DIRTIMES_H

struct fsx_mount;
struct fsx_inode;
struct fsx_dirtimes;

#define FSX_DIRTIMES_DELAY_MS 1000
#define FSX_DIRTIMES_MAX 4096

/* The thread, for m: 0 or -errno. */
int fsx_dirtimes_start(struct fsx_mount *m, struct fsx_dirtimes **out);
/* Every directory waiting stored now, then the thread ends; NULL: none. */
void fsx_dirtimes_stop(struct fsx_dirtimes *dt);

/* This mount made, removed or renamed a name in dir now: its times move
   (fsx_inode_dir_touch) and are stored later (m->dirtimes NULL: not). */
void fsx_dir_changed(struct fsx_mount *m, struct fsx_inode *dir);

#endif
