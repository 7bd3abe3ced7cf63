/*
 * s3_creds: credentials and region resolution (see s3_creds.h for the order).
 *
 * DESIGN: called once at startup from the main thread, before any worker
 * exists: it reads the environment (getenv) and at most two small files, and
 * keeps no state. The result is a plain struct the caller owns.
 *
 * Shared files are INI as the AWS CLI writes them:
 *   [default]                 section names are trimmed
 *   [profile dev]             (config file; "[dev]" in the credentials file)
 *   aws_access_key_id = AKID  keys are case-insensitive, values trimmed
 *   # comment / ; comment     whole-line, or after whitespace at line end
 *   s3 =                      a line indented deeper than the key before it
 *     max_concurrent_requests = 10   is a sub-property and is skipped
 * Secrets read from the files are wiped (explicit_bzero) before being freed
 * and are never logged. A file whose secret key or session token is used
 * must be private (common/secret.h: a regular file, ours or root's, no
 * group or other permission bits), as s3fs wants of its passwd file;
 * otherwise resolution fails (-EACCES) naming the file and its mode. The
 * AWS CLI does not check this; we refuse rather than warn, since a key
 * others can read is no longer a secret. Files whose secrets are not used
 * (another profile's, or a region alone) are not checked.
 */
#include "s3/s3_creds.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/secret.h"
#include "common/slog.h"

#define DEFAULT_REGION "us-east-1"

/* Why a file may not hold secrets: "" when it may (secret_check_fd). */
struct why_open {
  char text[192];
};

/* What one profile holds across the credentials and config files. */
struct profile {
  char *key_id, *secret, *token, *region;
  const char *key_id_file, *secret_file, *token_file; /* where each came from */
  struct why_open secret_why, token_why; /* the verdict on that file */
  const char *unsupported;               /* e.g. "credential_process" */
  bool found;
};

static const char *const unsupported_keys[] = {
    "role_arn", "credential_process", "sso_session", "sso_start_url",
    "web_identity_token_file",
};

static void errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (!err || !errlen)
    return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static void free_secret(char *s)
{
  if (s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

static void profile_cleanup(struct profile *p)
{
  free(p->key_id);
  free_secret(p->secret);
  free_secret(p->token);
  free(p->region);
  memset(p, 0, sizeof(*p));
}

static const char *env(const char *name)
{
  const char *v = getenv(name);
  return v && v[0] ? v : NULL;
}

/* ---- INI reading --------------------------------------------------------- */

static bool is_ws(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trim in place; returns the start. */
static char *trim(char *s)
{
  char *e;

  while (is_ws(*s))
    s++;
  e = s + strlen(s);
  while (e > s && is_ws(e[-1]))
    *--e = '\0';
  return s;
}

/* Cut a trailing " # comment" or " ; comment" (only after whitespace). */
static void cut_comment(char *s)
{
  for (char *p = s; *p; p++) {
    if ((*p == '#' || *p == ';') && p > s && is_ws(p[-1])) {
      *p = '\0';
      return;
    }
  }
}

/* Does section header text (between the brackets) name our profile? */
static bool section_matches(char *sect, const char *name, bool config_file)
{
  sect = trim(sect);
  if (!config_file)
    return strcmp(sect, name) == 0;
  if (strcmp(name, "default") == 0 && strcmp(sect, "default") == 0)
    return true;
  if (strncmp(sect, "profile", 7) != 0 || !is_ws(sect[7]))
    return false;
  return strcmp(trim(sect + 7), name) == 0;
}

static int set_value(char **dst, const char *val, bool secret)
{
  char *v = strdup(val);

  if (!v)
    return -ENOMEM;
  if (secret)
    free_secret(*dst);
  else
    free(*dst);
  *dst = v;
  return 0;
}

static int take_key(struct profile *p, const char *key, const char *val,
                    const char *path, const struct why_open *why)
{
  int rc = 0;

  if (strcasecmp(key, "aws_access_key_id") == 0) {
    rc = set_value(&p->key_id, val, false);
    p->key_id_file = path;
  } else if (strcasecmp(key, "aws_secret_access_key") == 0) {
    rc = set_value(&p->secret, val, true);
    p->secret_file = path;
    p->secret_why = *why;
  } else if (strcasecmp(key, "aws_session_token") == 0) {
    rc = set_value(&p->token, val, true);
    p->token_file = path;
    p->token_why = *why;
  } else if (strcasecmp(key, "region") == 0) {
    rc = set_value(&p->region, val, false);
  } else {
    for (size_t i = 0; i < sizeof(unsupported_keys) / sizeof(*unsupported_keys);
         i++)
      if (strcasecmp(key, unsupported_keys[i]) == 0 && !p->unsupported)
        p->unsupported = unsupported_keys[i];
  }
  return rc;
}

/*
 * Read the section of `path` that names profile `name` into p. Values set
 * earlier in p (from another file) are overridden only where the file has
 * them: the caller reads the config file first, the credentials file last.
 * A missing file is not an error (0, nothing found).
 */
static int read_profile(const char *path, const char *name, bool config_file,
                        bool want_keys, struct profile *p, char *err,
                        size_t errlen)
{
  FILE *f;
  char *line = NULL;
  size_t cap = 0;
  unsigned lineno = 0;
  bool in_sect = false, have_sect = false, have_key = false;
  size_t key_indent = 0;
  struct why_open why = {""};
  int rc = 0;

  f = fopen(path, "re");
  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR)
      return 0;
    rc = -errno;
    errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return rc;
  }
  /* judged now, on what we read; it matters only if a secret is used */
  if (want_keys && secret_check_fd(fileno(f), why.text, sizeof(why.text)) &&
      !why.text[0])
    snprintf(why.text, sizeof(why.text), "not private");
  while (getline(&line, &cap, f) >= 0) {
    char *start = line;
    if (lineno++ == 0 && strncmp(start, "\xEF\xBB\xBF", 3) == 0)
      start += 3; /* UTF-8 byte order mark from a Windows editor */
    size_t indent = strspn(start, " \t");
    char *s = start + indent, *eq;

    if (*s == '#' || *s == ';' || *trim(s) == '\0')
      continue;
    if (*s == '[') {
      char *close = strchr(s, ']'), *rest = close ? trim(close + 1) : NULL;
      if (!close || (*rest && *rest != '#' && *rest != ';')) {
        errf(err, errlen, "%s:%u: malformed section header", path, lineno);
        rc = -EINVAL;
        goto out;
      }
      *close = '\0';
      in_sect = section_matches(s + 1, name, config_file);
      p->found |= in_sect;
      have_sect = true;
      have_key = false;
      continue;
    }
    if (have_key && indent > key_indent)
      continue; /* sub-property of the key above (e.g. "s3 =") */
    cut_comment(s);
    eq = strchr(s, '=');
    if (!eq || !have_sect) {
      errf(err, errlen, "%s:%u: %s", path, lineno,
           !have_sect ? "key outside any [section]"
                      : "expected \"key = value\"");
      rc = -EINVAL;
      goto out;
    }
    *eq = '\0';
    have_key = true;
    key_indent = indent;
    if (!in_sect)
      continue;
    s = trim(s);
    /* region comes from the config file only; keys only when wanted */
    if (strcasecmp(s, "region") == 0 ? config_file : want_keys) {
      rc = take_key(p, s, trim(eq + 1), path, &why);
      if (rc)
        goto out;
    }
  }
  if (ferror(f)) {
    rc = -EIO;
    errf(err, errlen, "error reading %s", path);
  }
out:
  if (line) {
    explicit_bzero(line, cap);
    free(line);
  }
  fclose(f);
  return rc;
}

/* ---- file locations and the profile -------------------------------------- */

struct files {
  char *creds, *config;
  const char *creds_src, *config_src; /* for messages */
};

static int find_files(const struct s3_creds_opts *o, struct files *fl)
{
  const char *home = o->home ? o->home : env("HOME");
  const char *v;

  memset(fl, 0, sizeof(*fl));
  v = env("AWS_SHARED_CREDENTIALS_FILE");
  if (v)
    fl->creds = strdup(v);
  else if (home && asprintf(&fl->creds, "%s/.aws/credentials", home) < 0)
    fl->creds = NULL;
  if ((v || home) && !fl->creds)
    goto oom;
  fl->creds_src = v ? "$AWS_SHARED_CREDENTIALS_FILE" : "~/.aws/credentials";
  v = env("AWS_CONFIG_FILE");
  if (v)
    fl->config = strdup(v);
  else if (home && asprintf(&fl->config, "%s/.aws/config", home) < 0)
    fl->config = NULL;
  if ((v || home) && !fl->config)
    goto oom;
  fl->config_src = v ? "$AWS_CONFIG_FILE" : "~/.aws/config";
  return 0;
oom:
  free(fl->creds);
  memset(fl, 0, sizeof(*fl));
  return -ENOMEM;
}

static void files_cleanup(struct files *fl)
{
  free(fl->creds);
  free(fl->config);
}

/*
 * Load profile `name` from both files (keys only when want_keys; the
 * credentials file wins over the config file). An explicitly named profile
 * found in neither file is -ENOENT.
 */
static int load_profile(const struct files *fl, const char *name,
                        bool explicit_name, bool want_keys, struct profile *p,
                        char *err, size_t errlen)
{
  int rc = 0;

  if (fl->config)
    rc = read_profile(fl->config, name, true, want_keys, p, err, errlen);
  if (!rc && fl->creds)
    rc = read_profile(fl->creds, name, false, want_keys, p, err, errlen);
  if (rc)
    return rc;
  if (!p->found && explicit_name) {
    errf(err, errlen,
         "profile '%s' not found: no [%s] in %s (%s) and no [profile %s] in "
         "%s (%s)",
         name, name, fl->creds ? fl->creds : "-", fl->creds_src, name,
         fl->config ? fl->config : "-", fl->config_src);
    return -ENOENT;
  }
  return 0;
}

/* ---- resolution ---------------------------------------------------------- */

static int set_keys(struct s3_creds *out, const char *ak, const char *sk,
                    const char *token, const char *source)
{
  out->access_key = strdup(ak);
  out->secret_key = strdup(sk);
  out->session_token = token ? strdup(token) : NULL;
  out->source = source;
  if (!out->access_key || !out->secret_key || (token && !out->session_token))
    return -ENOMEM;
  return 0;
}

static int keys_from_profile(const struct files *fl, const char *name,
                             bool explicit_name, struct profile *p,
                             struct s3_creds *out, char *err, size_t errlen)
{
  int rc;

  rc = load_profile(fl, name, explicit_name, true, p, err, errlen);
  if (rc)
    return rc;
  if (p->key_id && !p->secret) {
    errf(err, errlen,
         "profile '%s': aws_access_key_id is set in %s but "
         "aws_secret_access_key is missing",
         name, p->key_id_file);
    return -EINVAL;
  }
  if (!p->key_id && p->secret) {
    errf(err, errlen,
         "profile '%s': aws_secret_access_key is set in %s but "
         "aws_access_key_id is missing",
         name, p->secret_file);
    return -EINVAL;
  }
  if (!p->key_id) {
    if (p->found && p->unsupported)
      errf(err, errlen,
           "profile '%s' has no aws_access_key_id: it uses %s, which is not "
           "supported; give static keys",
           name, p->unsupported);
    else if (p->found)
      errf(err, errlen,
           "profile '%s' has no aws_access_key_id / aws_secret_access_key in "
           "%s (%s) or %s (%s)",
           name, fl->creds ? fl->creds : "-", fl->creds_src,
           fl->config ? fl->config : "-", fl->config_src);
    else
      errf(err, errlen,
           "no credentials found: none in the configuration "
           "(access_key/secret_key), AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "
           "unset, no profile '%s' in %s (%s) or %s (%s); use anonymous "
           "access for public buckets",
           name, fl->creds ? fl->creds : "-", fl->creds_src,
           fl->config ? fl->config : "-", fl->config_src);
    return -ENOKEY;
  }
  if (p->secret_why.text[0] || (p->token && p->token_why.text[0])) {
    bool sec = p->secret_why.text[0];
    errf(err, errlen, "%s: %s (it holds the %s of profile '%s')",
         sec ? p->secret_file : p->token_file,
         sec ? p->secret_why.text : p->token_why.text,
         sec ? "aws_secret_access_key" : "aws_session_token", name);
    return -EACCES;
  }
  return set_keys(out, p->key_id, p->secret, p->token, "profile");
}

int s3_creds_resolve(const struct s3_creds_opts *opts, struct s3_creds *out,
                     char *err, size_t errlen)
{
  static const struct s3_creds_opts none;
  const struct s3_creds_opts *o = opts ? opts : &none;
  struct profile p = {0};
  struct files fl = {0};
  const char *name, *region;
  bool explicit_name, loaded = false;
  int rc;

  memset(out, 0, sizeof(*out));
  if (err && errlen)
    err[0] = '\0';
  name = o->profile && o->profile[0] ? o->profile : env("AWS_PROFILE");
  explicit_name = name != NULL;
  if (!name)
    name = "default";
  rc = find_files(o, &fl);
  if (rc)
    goto out;

  if (o->anonymous) {
    out->anonymous = true;
    out->source = "anonymous";
  } else if (o->access_key || o->secret_key || o->session_token) {
    if (!o->access_key || !o->secret_key) {
      errf(err, errlen, "configuration: %s is set but %s is missing",
           o->access_key ? "access_key" : o->secret_key ? "secret_key"
                                                        : "session_token",
           o->access_key ? "secret_key" : "access_key");
      rc = -EINVAL;
      goto out;
    }
    rc = set_keys(out, o->access_key, o->secret_key, o->session_token,
                  "config");
  } else if (env("AWS_ACCESS_KEY_ID") || env("AWS_SECRET_ACCESS_KEY")) {
    if (!env("AWS_ACCESS_KEY_ID") || !env("AWS_SECRET_ACCESS_KEY")) {
      errf(err, errlen, "environment: %s is set but %s is not",
           env("AWS_ACCESS_KEY_ID") ? "AWS_ACCESS_KEY_ID"
                                    : "AWS_SECRET_ACCESS_KEY",
           env("AWS_ACCESS_KEY_ID") ? "AWS_SECRET_ACCESS_KEY"
                                    : "AWS_ACCESS_KEY_ID");
      rc = -EINVAL;
      goto out;
    }
    rc = set_keys(out, env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
                  env("AWS_SESSION_TOKEN"), "environment");
  } else {
    rc = keys_from_profile(&fl, name, explicit_name, &p, out, err, errlen);
    loaded = true;
  }
  if (rc)
    goto out;

  region = o->region && o->region[0] ? o->region : env("AWS_REGION");
  if (!region)
    region = env("AWS_DEFAULT_REGION");
  if (!region) {
    if (!loaded) {
      rc = load_profile(&fl, name, explicit_name, false, &p, err, errlen);
      if (rc)
        goto out;
    }
    region = p.region && p.region[0] ? p.region : DEFAULT_REGION;
  }
  out->region = strdup(region);
  if (!out->region) {
    rc = -ENOMEM;
    goto out;
  }
  log_debug("credentials: %s%s%s%s, region %s", out->source,
            loaded ? " '" : "", loaded ? name : "", loaded ? "'" : "",
            out->region);
out:
  if (rc) {
    if (rc == -ENOMEM && err && errlen && !err[0])
      errf(err, errlen, "out of memory resolving credentials");
    s3_creds_cleanup(out);
  }
  profile_cleanup(&p);
  files_cleanup(&fl);
  return rc;
}

void s3_creds_cleanup(struct s3_creds *c)
{
  if (!c)
    return;
  free(c->access_key);
  free_secret(c->secret_key);
  free_secret(c->session_token);
  free(c->region);
  memset(c, 0, sizeof(*c));
}
