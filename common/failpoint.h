/*
 * failpoint: named points in the write path where a test makes the daemon
 * fail or die there (the crash matrix, tests/integration/test_fs_crashpoints).
 * Compiled in only with the CMake option S3R_FAILPOINTS (the sanitizer
 * build of scripts/setup.sh); elsewhere FP() is the constant 0.
 *
 * Armed from the environment when the process starts:
 *   S3R_FAILPOINTS="NAME=ACTION[@N][,NAME=ACTION[@N]...]"
 * ACTION is "error" (FP returns -EIO there, and the caller fails as it
 * does for an I/O error) or "kill" (the process dies there, SIGKILL, as
 * OOM or a power cut would); @N fires at the Nth time the point is passed
 * (the first by default), once. Each firing writes one line to stderr,
 * "s3rdmafs: failpoint NAME: ACTION (hit N)", before it acts: the test's
 * proof that the point was reached. Unknown names are refused at start
 * (fp_check), as are entries that cannot be armed (no "=", another
 * action, more than 16), so a typo never passes as "not reached".
 */
#ifndef S3R_COMMON_FAILPOINT_H
#define S3R_COMMON_FAILPOINT_H

#ifdef S3R_FAILPOINTS
/* 0, or -EIO when an error fires; never returns when a kill fires. */
int fp_hit(const char *name);
/* The armed names all known (names, NULL-terminated): 0, or -EINVAL with
   the first unknown one in *bad. */
int fp_check(const char *const *names, const char **bad);
/* Nothing armed from here on in this process (a child that must not
   inherit its parent's failpoints). */
void fp_disarm(void);
#define FP(name) fp_hit(name)
#define FP_DISARM() fp_disarm()
#else
#define FP(name) 0
#define FP_DISARM() ((void)0)
#endif

#endif
