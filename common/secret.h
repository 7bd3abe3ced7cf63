/*
 * secret: files that hold secrets, and secrets given on a command line.
 *
 * The rule for a file holding a key (the gateway's --secret-key-file, a
 * JSON config with credentials.secret_key, an AWS credentials file whose
 * secret is used), as s3fs has it for its passwd file: a regular file,
 * owned by the user we run as or by root, with no permission bits for group
 * or others (mode & 077 == 0). Checked on the open descriptor (fstat), so
 * what is checked is what is read.
 *
 * Every string these functions hand out is the caller's; free it with
 * secret_free, which wipes it first.
 */
#ifndef S3R_SECRET_H
#define S3R_SECRET_H

#include <stddef.h>

/* Largest key file secret_read_file accepts (a key is ~40 bytes). */
#define SECRET_FILE_MAX 4096

/*
 * Is the open file fd private enough to hold a secret? Returns 0; -EACCES
 * when group or others have any permission bit or the owner is neither the
 * effective user nor root; -EINVAL when it is not a regular file; -errno
 * when fstat fails. The reason goes to why, worded to follow "PATH: ", e.g.
 * "readable by group or others (mode 0644); chmod 600 it".
 */
int secret_check_fd(int fd, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/*
 * Read a key from path: the file must pass secret_check_fd; its content is
 * the key, trailing newlines ("\n", "\r\n") stripped; it must be one line
 * of at most SECRET_FILE_MAX bytes, not empty, without NUL bytes. Returns
 * 0 with *out a heap copy (free with secret_free), or a negative errno with
 * the reason in why (worded to follow "PATH: "; never the key itself).
 */
int secret_read_file(const char *path, char **out, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/* Wipe s (up to its NUL) and free it. NULL is fine. */
void secret_free(char *s);

/*
 * Overwrite a command-line argument in place with 'x' (same length), so
 * that /proc/PID/cmdline and ps no longer show it. Copy it first. NULL is
 * fine.
 */
void secret_scrub_arg(char *arg);

#endif
