/*
 * gw_secret: where each of s3rdma-gateway's two secret keys comes from
 * (--secret-key for the clients', --upstream-secret-key for upstream's).
 * The first that is given wins:
 *   1. the command-line value (--secret-key SK; works, but every local user
 *      can read it until main scrubs it: main warns);
 *   2. the key file (--secret-key-file FILE; common/secret.h's rule: a
 *      regular file, ours or root's, mode & 077 == 0; one line);
 *   3. the environment variable (AWS_SECRET_ACCESS_KEY, ...; empty counts
 *      as unset).
 * Giving both 1 and 2 is an error.
 */
#ifndef S3R_GW_SECRET_H
#define S3R_GW_SECRET_H

#include <stddef.h>

enum gw_secret_from {
  GW_SECRET_NONE = 0, /* no source had it */
  GW_SECRET_ARG,
  GW_SECRET_FILE,
  GW_SECRET_ENV,
};

struct gw_secret_src {
  const char *flag;  /* "--secret-key", for messages; the file's flag is
                        this with "-file" */
  const char *arg;   /* the command-line value, or NULL (borrowed) */
  const char *file;  /* the key file's path, or NULL */
  const char *env;   /* the environment variable's name, or NULL */
};

/*
 * Resolve one secret. Returns 0 with *out a heap copy (NULL when no source
 * has it; the caller frees it with secret_free) and *from; or -EINVAL (both
 * value and file given, or a bad file), -EACCES (a file not private
 * enough), -errno or -ENOMEM, with one line in err that names the flag and
 * the file (never the key). *out is NULL on error.
 */
int gw_secret_load(const struct gw_secret_src *s, char **out,
                   enum gw_secret_from *from, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
