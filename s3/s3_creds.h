/*
 * s3_creds: where the keys and the region come from.
 *
 * Order (first that yields keys wins):
 *  1. anonymous requested explicitly: no keys, requests go unsigned;
 *  2. explicit keys from the config (access_key + secret_key [+ session_token]);
 *  3. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *     AWS_SESSION_TOKEN;
 *  4. a profile: opts->profile, else $AWS_PROFILE, else "default", read from
 *     $AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, then
 *     $AWS_CONFIG_FILE or ~/.aws/config ("[profile NAME]" there, "[default]").
 * Region: opts->region, else $AWS_REGION, else $AWS_DEFAULT_REGION, else the
 * profile's "region" in the config file, else "us-east-1".
 * An explicitly named profile that does not exist is an error; the implicit
 * "default" that does not exist just falls through. $AWS_PROFILE counts as
 * explicit. The profile is read only when it is needed (keys from step 4, or
 * a region not given otherwise); its keys may sit in either file, the
 * credentials file winning. Empty environment variables count as unset.
 * Profiles using role_arn, credential_process or SSO are not supported
 * (-ENOKEY, saying so).
 */
#ifndef S3R_S3_CREDS_H
#define S3R_S3_CREDS_H

#include <stdbool.h>
#include <stddef.h>

struct s3_creds_opts {
  const char *access_key;    /* explicit, may be NULL */
  const char *secret_key;
  const char *session_token;
  const char *profile;       /* explicit profile name, may be NULL */
  const char *region;        /* explicit region, may be NULL */
  bool anonymous;
  const char *home;          /* overrides $HOME (tests), may be NULL */
};

struct s3_creds {
  char *access_key;    /* NULL when anonymous */
  char *secret_key;
  char *session_token; /* NULL when none */
  char *region;        /* never NULL after a successful resolve */
  bool anonymous;
  const char *source;  /* static: "anonymous", "config", "environment",
                          "profile" */
};

/*
 * Resolve credentials and region. Returns 0, or a negative errno with a
 * human-readable reason in err (which names the variable, file or key):
 * -ENOKEY when no keys are found anywhere, -ENOENT for a named profile that
 * does not exist, -EINVAL for a half-given pair (key without secret) or a
 * malformed file, -EACCES when the profile's secret key or session token
 * comes from a file that is not private (readable by group or others, not
 * ours or root's, not a regular file: common/secret.h; err names the file,
 * its mode and "chmod 600 it"), -ENOMEM.
 * On success the caller owns *out and releases it with s3_creds_cleanup.
 */
int s3_creds_resolve(const struct s3_creds_opts *opts, struct s3_creds *out,
                     char *err, size_t errlen);

void s3_creds_cleanup(struct s3_creds *c);

#endif
