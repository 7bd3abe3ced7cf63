/*
 * fsx_recover_proc: recovery of dead mounts' files in processes of their
 * own, so that a fault in one file's recovery (a bug, a signal) ends that
 * process, never the mount.
 *
 * DESIGN
 * - main forks a small process, the zygote, before any thread exists (the
 *   configuration read and checked, nothing mounted yet): a clean,
 *   single-threaded copy of the daemon that never starts a thread. The
 *   daemon (fsx_recover_thread) tells it over a pipe to go (or that there
 *   is nothing to do, or to stop); for each run it forks a worker, which
 *   makes its own S3 client and staging directory and walks the dead
 *   mounts' directories (fsx_stage_recover_until, fsx_recover_file).
 * - A worker that dies of a signal is reported and another is forked
 *   (at most FSX_RECOVER_WORKERS): each attempt at a file is counted in
 *   its <file>.try before it begins, so the file a worker died in is set
 *   aside after 3 and the rest goes on. The failpoints the daemon was
 *   started with go to the first worker only (to every one with
 *   S3R_FAILPOINTS_EVERY_WORKER set: a fault that comes back).
 * - Events, one line each, worker and zygote to the daemon: "B bucket key
 *   token" (hex, and a token of the worker's own) a file's upload is about
 *   to begin (the worker then waits for that token back on a third pipe:
 *   fsx_recover_proc_ack; a token meant for a worker that died is passed
 *   over), "E" it ended, "U bucket key" it is on
 *   the server, "S aborted uploaded kept left unknown" a worker's summary,
 *   "D signal" a worker died, "X" recovery is over. Commands, daemon to
 *   zygote: "G syslog" go, "N" nothing to do, "Q" stop (the worker is sent
 *   SIGTERM: its requests are cancelled and what it had not done stays for
 *   the next mount).
 * - The zygote ends with the daemon (end of file on its pipe) and a worker
 *   with the zygote (PR_SET_PDEATHSIG).
 */
#ifndef S3R_FSX_RECOVER_PROC_H
#define S3R_FSX_RECOVER_PROC_H

#include <stdbool.h>

struct cfg;
struct fsx_mount;
struct s3_client_config;

#define FSX_RECOVER_WORKERS 64

/* The daemon's end: the zygote's pid, commands in, events out. */
struct fsx_recover_proc {
  int pid;
  int cmd_fd;                 /* commands to the zygote */
  int event_fd;               /* events from it and its workers */
  int ack_fd;                 /* to the worker: go on after a "B" */
};

/*
 * Fork the zygote (m: the daemon's mount record as it is now, copied;
 * c and sc: the configuration it recovers with). In the daemon: 0 and *p;
 * never returns in the zygote. -errno when it could not be made.
 */
int fsx_recover_proc_fork(const struct fsx_mount *m, const struct cfg *c,
                          const struct s3_client_config *sc,
                          struct fsx_recover_proc *p);
/* A command ("G 0", "N", "Q"): 0 or -errno. */
int fsx_recover_proc_say(struct fsx_recover_proc *p, const char *cmd);
/* The worker that said "B ... token" may go on: no unlink or rename of
   its name is under way, and none will begin before its "E". */
void fsx_recover_proc_ack(struct fsx_recover_proc *p, const char *token);
/* The zygote waited for once it was told N or Q; the fds closed. */
void fsx_recover_proc_end(struct fsx_recover_proc *p);

#endif
