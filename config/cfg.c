/*
 * cfg: see cfg.h. The JSON walk, -o overrides, cross-key validation, dump
 * and help. The keys are in cfg_table.c, their values in cfg_value.c.
 *
 * A file is walked object by object; each member's dotted name is either a
 * key (applied), a section (walked) or an error with the nearest known name
 * as a hint (optimal-string-alignment distance over whole names and over the
 * last component, so "cache.szie" and "cache.part_size" both find theirs).
 * Keys seen are tracked per load, so {"s3.max_inflight": 1, "s3":
 * {"max_inflight": 2}} is a duplicate like the ones jansson rejects.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/secret.h"
#include "config/cfg.h"
#include "config/cfg_i.h"

#define NAME_MAX_LEN 256   /* longest dotted name we echo */
#define DIST_MAX_LEN 64    /* longer names get no suggestion */

static const struct {
  const char *alias;
  const char *key;
  bool invert;
  const char *value;          /* a flag that sets key to this */
} aliases[] = {
    {"ro", "mount.ro", false, NULL},
    {"rw", "mount.ro", true, NULL},
    {"allow_other", "mount.allow_other", false, NULL},
    {"uid", "mount.uid", false, NULL},
    {"gid", "mount.gid", false, NULL},
    {"umask", "mount.umask", false, NULL},
    {"profile", "credentials.profile", false, NULL},
    {"noatime", "mount.atime", false, "noatime"},
    {"relatime", "mount.atime", false, "relatime"},
    {"strictatime", "mount.atime", false, "strictatime"},
};

#define N_ALIASES (sizeof(aliases) / sizeof(aliases[0]))

/* Where messages go: "file: key: text" or "key: text". */
struct ectx {
  char *buf;
  size_t len;
  const char *file;
};

__attribute__((format(printf, 4, 5))) static int
fail(const struct ectx *e, int rc, const char *key, const char *fmt, ...)
{
  char msg[512];
  va_list ap;

  if (!e->len)
    return rc;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(e->buf, e->len, "%s%s%s%s%s", e->file ? e->file : "",
           e->file ? ": " : "", key ? key : "", key ? ": " : "", msg);
  return rc;
}

/* ---- names ---------------------------------------------------------------- */

/* Copy a user-given name for a message, control characters as '?'. */
static void clean_name(const char *s, char *buf, size_t len)
{
  size_t n = 0;

  for (; *s && n + 1 < len; s++, n++)
    buf[n] = ((unsigned char)*s >= 0x20 && *s != 0x7f) ? *s : '?';
  buf[n] = 0;
}

static bool is_section(const char *name)
{
  size_t n = strlen(name);

  for (size_t i = 0; i < cfg_nkeys; i++)
    if (strncmp(cfg_keys[i].name, name, n) == 0 && cfg_keys[i].name[n] == '.')
      return true;
  return false;
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
  unsigned m = a < b ? a : b;
  return m < c ? m : c;
}

/* Edits (insert, delete, substitute, swap neighbours) from a to b. */
static unsigned edit_distance(const char *a, const char *b)
{
  unsigned d[DIST_MAX_LEN + 1][DIST_MAX_LEN + 1];
  size_t n = strlen(a), m = strlen(b), i, j;

  if (n > DIST_MAX_LEN || m > DIST_MAX_LEN)
    return UINT_MAX / 2;
  for (i = 0; i <= n; i++)
    d[i][0] = (unsigned)i;
  for (j = 0; j <= m; j++)
    d[0][j] = (unsigned)j;
  for (i = 1; i <= n; i++) {
    for (j = 1; j <= m; j++) {
      d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1,
                     d[i - 1][j - 1] + (a[i - 1] != b[j - 1]));
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < d[i][j])
        d[i][j] = d[i - 2][j - 2] + 1;
    }
  }
  return d[n][m];
}

static const char *last_part(const char *name)
{
  const char *dot = strrchr(name, '.');
  return dot ? dot + 1 : name;
}

/* Distance by whole name, or by last part plus one for the section. */
static unsigned name_distance(const char *typed, const char *cand)
{
  unsigned whole = edit_distance(typed, cand);
  unsigned part = edit_distance(last_part(typed), last_part(cand)) + 1;

  return part < whole ? part : whole;
}

static void consider(const char *typed, const char *cand, unsigned *best,
                     char *out, size_t outlen)
{
  unsigned d = name_distance(typed, cand);

  if (d < *best) {
    *best = d;
    snprintf(out, outlen, "%s", cand);
  }
}

/* The known key, section (or alias) nearest to typed, or "" if none is. */
static void suggest(const char *typed, bool with_aliases, char *out,
                    size_t outlen)
{
  char section[NAME_MAX_LEN];
  unsigned best = UINT_MAX, limit;
  const char *dot;

  out[0] = 0;
  for (size_t i = 0; i < cfg_nkeys; i++) {
    const char *name = cfg_keys[i].name;

    consider(typed, name, &best, out, outlen);
    for (dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
      snprintf(section, sizeof(section), "%.*s", (int)(dot - name), name);
      consider(typed, section, &best, out, outlen);
    }
  }
  for (size_t i = 0; with_aliases && i < N_ALIASES; i++)
    consider(typed, aliases[i].alias, &best, out, outlen);
  limit = (unsigned)(strlen(typed) + 2) / 3;
  if (best > (limit < 3 ? limit : 3))
    out[0] = 0;
}

static int unknown_key(const struct ectx *e, const char *typed,
                       bool with_aliases, int rc)
{
  char name[NAME_MAX_LEN], hint[NAME_MAX_LEN];

  clean_name(typed, name, sizeof(name));
  suggest(typed, with_aliases, hint, sizeof(hint));
  if (hint[0])
    return fail(e, rc, name, "unknown key (did you mean %s?)", hint);
  return fail(e, rc, name, "unknown key (s3rdmafs --help lists them)");
}

/* ---- defaults, cleanup ---------------------------------------------------- */

void cfg_init_defaults(struct cfg *c)
{
  union cfg_val v;

  memset(c, 0, sizeof(*c));
  for (size_t i = 0; i < cfg_nkeys; i++) {
    cfg_value_default(&cfg_keys[i], &v);
    /* cannot fail: a default string is stored, not copied */
    (void)cfg_value_put(c, &cfg_keys[i], &v);
  }
}

void cfg_cleanup(struct cfg *c)
{
  for (size_t i = 0; i < cfg_nkeys; i++)
    cfg_value_release(c, &cfg_keys[i]);
}

/* ---- the file ------------------------------------------------------------- */

/* A list key's JSON array of strings as its text, "a;b;c" (a new JSON
   string), or NULL with why. */
static json_t *joined(json_t *a, char *why, size_t whylen)
{
  size_t i, len = 1;
  json_t *x, *out;
  char *s;

  json_array_foreach(a, i, x) {
    const char *v = json_string_value(x);
    if (!v || !*v || strchr(v, ';')) {
      snprintf(why, whylen, "element %zu is not a non-empty string without "
               "';'", i);
      return NULL;
    }
    len += strlen(v) + 1;
  }
  if (!(s = calloc(1, len))) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  json_array_foreach(a, i, x) {
    if (i)
      strcat(s, ";");
    strcat(s, json_string_value(x));
  }
  out = json_string(s);
  free(s);
  if (!out)
    snprintf(why, whylen, "out of memory");
  return out;
}

static int apply_json(struct cfg *c, const struct cfg_key *k, json_t *j,
                      const struct ectx *e)
{
  union cfg_val v;
  char why[256];
  json_t *list = NULL;
  int rc;

  if ((k->flags & CFG_F_LIST) && json_is_array(j)) {
    if (!(j = list = joined(j, why, sizeof(why))))
      return fail(e, -EINVAL, k->name, "%s", why);
  }
  rc = cfg_value_from_json(k, j, &v, why, sizeof(why));
  if (!rc && !json_is_null(j))  /* a default needs no check */
    rc = cfg_value_check(k, &v, why, sizeof(why));
  if (!rc)
    rc = cfg_value_put(c, k, &v); /* (a copy: the list may go) */
  json_decref(list);
  if (rc == -ENOMEM)
    return fail(e, rc, k->name, "out of memory");
  if (rc)
    return fail(e, rc, k->name, "%s", why);
  return 0;
}

static int walk(struct cfg *c, json_t *obj, const char *prefix, bool *seen,
                const struct ectx *e)
{
  char full[NAME_MAX_LEN];
  const struct cfg_key *k;
  const char *name;
  json_t *val;
  int n, rc;

  json_object_foreach(obj, name, val) {
    n = snprintf(full, sizeof(full), "%s%s%s", prefix ? prefix : "",
                 prefix ? "." : "", name);
    if (n < 0 || (size_t)n >= sizeof(full))
      return unknown_key(e, full, false, -EINVAL);
    k = cfg_key_find(full);
    if (k) {
      if (seen[k - cfg_keys])
        return fail(e, -EINVAL, k->name, "given twice");
      seen[k - cfg_keys] = true;
      rc = apply_json(c, k, val, e);
      if (rc)
        return rc;
    } else if (is_section(full)) {
      if (!json_is_object(val))
        return fail(e, -EINVAL, full, "is a section: expected an object, "
                                      "got %s", cfg_json_type_word(val));
      rc = walk(c, val, full, seen, e);
      if (rc)
        return rc;
    } else {
      return unknown_key(e, full, false, -EINVAL);
    }
  }
  return 0;
}

/*
 * A file that set a secret key (to a value, not null or "") must be
 * private, as s3fs wants of its passwd file: the key is no secret if
 * others can read the file. Checked on the descriptor the file was read
 * from.
 */
static int check_private(const struct cfg *c, int fd, const bool *seen,
                         const struct ectx *e)
{
  union cfg_val v;
  char why[256];
  int rc;

  for (size_t i = 0; i < cfg_nkeys; i++) {
    if (!seen[i] || !(cfg_keys[i].flags & CFG_F_KEY))
      continue;
    cfg_value_get(c, &cfg_keys[i], &v);
    if (!v.s)
      continue;
    rc = secret_check_fd(fd, why, sizeof(why));
    if (rc)
      return fail(e, rc, NULL, "%s (it holds %s)", why, cfg_keys[i].name);
    return 0;
  }
  return 0;
}

int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen)
{
  struct ectx e = {err, errlen, path};
  json_error_t jerr;
  json_t *root = NULL;
  bool *seen = NULL;
  FILE *f = NULL;
  struct stat st;
  int rc;

  if (errlen)
    err[0] = 0;
  f = fopen(path, "r");
  if (!f) {
    rc = -errno;
    fail(&e, rc, NULL, "cannot open: %s", strerror(-rc));
    goto out;
  }
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    rc = fail(&e, -EISDIR, NULL, "is a directory");
    goto out;
  }
  root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    rc = json_error_code(&jerr) == json_error_out_of_memory ? -ENOMEM
                                                             : -EINVAL;
    snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column,
             jerr.text);
    goto out;
  }
  if (!json_is_object(root)) {
    rc = fail(&e, -EINVAL, NULL, "expected a JSON object at the top, got %s",
              cfg_json_type_word(root));
    goto out;
  }
  seen = calloc(cfg_nkeys, sizeof(*seen));
  if (!seen) {
    rc = fail(&e, -ENOMEM, NULL, "out of memory");
    goto out;
  }
  rc = walk(c, root, NULL, seen, &e);
  if (!rc)
    rc = check_private(c, fileno(f), seen, &e);
out:
  free(seen);
  json_decref(root);
  if (f)
    fclose(f);
  return rc;
}

/* ---- -o key=value --------------------------------------------------------- */

int cfg_set(struct cfg *c, const char *key, const char *value, char *err,
            size_t errlen)
{
  struct ectx e = {err, errlen, NULL};
  const struct cfg_key *k;
  const char *name = key;
  bool invert = false;
  union cfg_val v;
  char why[256];
  int rc;

  if (errlen)
    err[0] = 0;
  if (!key || !*key)
    return fail(&e, -EINVAL, NULL, "empty option name");
  if (strcmp(key, "config") == 0)
    return fail(&e, -EINVAL, key, "is for the caller: load the file with "
                                  "cfg_load_file before the other options");
  for (size_t i = 0; i < N_ALIASES; i++) {
    if (strcmp(key, aliases[i].alias) == 0) {
      name = aliases[i].key;
      invert = aliases[i].invert;
      if (aliases[i].value && value)
        return fail(&e, -EINVAL, key, "takes no value");
      if (aliases[i].value)
        value = aliases[i].value;
      break;
    }
  }
  k = cfg_key_find(name);
  if (!k) {
    if (is_section(name))
      return fail(&e, -ENOENT, name, "is a section, not a key");
    return unknown_key(&e, name, true, -ENOENT);
  }
  if (!value) {
    if (k->type != CFG_T_BOOL)
      return fail(&e, -EINVAL, k->name, "needs a value (%s=VALUE)", key);
    value = "true";
  }
  rc = cfg_value_from_text(k, value, &v, why, sizeof(why));
  if (!rc)
    rc = cfg_value_check(k, &v, why, sizeof(why));
  if (rc)
    return fail(&e, rc, k->name, "%s", why);
  if (invert)
    v.b = !v.b;
  rc = cfg_value_put(c, k, &v);
  if (rc)
    return fail(&e, rc, k->name, "out of memory");
  return 0;
}

bool cfg_key_is_secret(const char *key)
{
  const struct cfg_key *k;

  if (!key)
    return false;
  for (size_t i = 0; i < N_ALIASES; i++) {
    if (strcmp(key, aliases[i].alias) == 0) {
      key = aliases[i].key;
      break;
    }
  }
  k = cfg_key_find(key);
  return k && (k->flags & CFG_F_KEY);
}

/* ---- validation ----------------------------------------------------------- */

static int fill_endpoint(struct cfg *c, const struct ectx *e)
{
  static const char *const vars[] = {"S3R_ENDPOINT", "AWS_ENDPOINT_URL"};
  const struct cfg_key *k = cfg_key_find("endpoint");
  union cfg_val v;
  char why[256];
  int rc;

  if (c->endpoint)
    return 0;
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    v.s = getenv(vars[i]);
    if (!v.s || !*v.s)
      continue;
    rc = cfg_value_check(k, &v, why, sizeof(why));
    if (rc)
      return fail(e, rc, NULL, "$%s: %s", vars[i], why);
    rc = cfg_value_put(c, k, &v);
    if (rc)
      return fail(e, rc, k->name, "out of memory");
    return 0;
  }
  return fail(e, -EINVAL, k->name, "not set (give it in the config file, "
              "as -o endpoint=URL, or in $S3R_ENDPOINT or $AWS_ENDPOINT_URL)");
}

static int check_credentials(const struct cfg *c, const struct ectx *e)
{
  const struct cfg_credentials *cr = &c->credentials;
  bool keys = cr->access_key || cr->secret_key || cr->session_token;
  union cfg_val v = {.e = (int)cr->source};
  char src[32];

  cfg_value_format(cfg_key_find("credentials.source"), &v, src, sizeof(src));
  if (!cr->access_key != !cr->secret_key)
    return fail(e, -EINVAL, cr->access_key ? "credentials.secret_key"
                                           : "credentials.access_key",
                "not set, but credentials.%s is: give both",
                cr->access_key ? "access_key" : "secret_key");
  if (cr->session_token && !cr->access_key)
    return fail(e, -EINVAL, "credentials.session_token",
                "set without credentials.access_key and secret_key");
  if (cr->source == CFG_CREDS_CONFIG && !cr->access_key)
    return fail(e, -EINVAL, "credentials.source", "is config, but "
                "credentials.access_key and secret_key are not set");
  if (keys && cr->source != CFG_CREDS_AUTO && cr->source != CFG_CREDS_CONFIG)
    return fail(e, -EINVAL, "credentials.access_key",
                "is set, but credentials.source is %s (use config or auto)",
                src);
  if (cr->profile && cr->source != CFG_CREDS_AUTO &&
      cr->source != CFG_CREDS_PROFILE)
    return fail(e, -EINVAL, "credentials.profile",
                "is set, but credentials.source is %s (use profile or auto)",
                src);
  if (cr->profile && keys)
    return fail(e, -EINVAL, "credentials.profile",
                "is set together with credentials.access_key: choose one");
  return 0;
}

static int check_sizes(const struct cfg *c, const struct ectx *e)
{
  char a[32], b[32];

  if (c->read.readahead_min > c->read.readahead_max) {
    cfg_format_size(c->read.readahead_min, a, sizeof(a));
    cfg_format_size(c->read.readahead_max, b, sizeof(b));
    return fail(e, -EINVAL, "read.readahead_min",
                "%s is above read.readahead_max (%s)", a, b);
  }
  if (c->cache.chunk_size > c->cache.size / 16) {
    cfg_format_size(c->cache.chunk_size, a, sizeof(a));
    cfg_format_size(c->cache.size / 16, b, sizeof(b));
    return fail(e, -EINVAL, "cache.chunk_size",
                "%s is above cache.size/16 (%s): the cache needs at least "
                "16 chunks", a, b);
  }
  if (c->read.dense_block > c->cache.size / 4) {
    cfg_format_size(c->read.dense_block, a, sizeof(a));
    cfg_format_size(c->cache.size / 4, b, sizeof(b));
    return fail(e, -EINVAL, "read.dense_block",
                "%s is above cache.size/4 (%s)", a, b);
  }
  if (c->read.lookup_bytes > c->cache.chunk_size) {
    cfg_format_size(c->read.lookup_bytes, a, sizeof(a));
    cfg_format_size(c->cache.chunk_size, b, sizeof(b));
    return fail(e, -EINVAL, "read.lookup_bytes",
                "%s is above cache.chunk_size (%s)", a, b);
  }
  if (c->read.readahead_max > c->cache.size / 2) {
    cfg_format_size(c->read.readahead_max, a, sizeof(a));
    cfg_format_size(c->cache.size / 2, b, sizeof(b));
    return fail(e, -EINVAL, "read.readahead_max",
                "%s is above cache.size/2 (%s)", a, b);
  }
  /* part_size <= 5G and max_parts_inflight <= 1024: no overflow */
  if (c->write.part_size * c->write.max_parts_inflight > c->write.max_memory) {
    cfg_format_size(c->write.max_memory, a, sizeof(a));
    cfg_format_size(c->write.part_size * c->write.max_parts_inflight, b,
                    sizeof(b));
    return fail(e, -EINVAL, "write.max_memory",
                "%s is below write.part_size * write.max_parts_inflight (%s)",
                a, b);
  }
  return 0;
}

static int check_limits(const struct cfg *c, const struct ectx *e)
{
  if (c->read.max_inflight_per_file > c->s3.max_inflight)
    return fail(e, -EINVAL, "read.max_inflight_per_file",
                "%u is above s3.max_inflight (%u)",
                c->read.max_inflight_per_file, c->s3.max_inflight);
  if (c->write.max_parts_inflight > c->s3.max_inflight)
    return fail(e, -EINVAL, "write.max_parts_inflight",
                "%u is above s3.max_inflight (%u)",
                c->write.max_parts_inflight, c->s3.max_inflight);
  if (c->s3.retry.base_ms > c->s3.retry.max_backoff_ms)
    return fail(e, -EINVAL, "s3.retry.base_ms",
                "%ums is above s3.retry.max_backoff_ms (%ums)",
                c->s3.retry.base_ms, c->s3.retry.max_backoff_ms);
  return 0;
}

int cfg_validate(struct cfg *c, char *err, size_t errlen)
{
  struct ectx e = {err, errlen, NULL};
  int rc;

  if (errlen)
    err[0] = 0;
  rc = fill_endpoint(c, &e);
  if (!rc)
    rc = check_credentials(c, &e);
  if (!rc)
    rc = check_sizes(c, &e);
  if (!rc)
    rc = check_limits(c, &e);
  return rc;
}

/* ---- dump, help ----------------------------------------------------------- */

/* Append at *pos as snprintf would, counting what does not fit. */
__attribute__((format(printf, 4, 5))) static void
append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0,
                fmt, ap);
  va_end(ap);
  if (n > 0)
    *pos += (size_t)n;
}

size_t cfg_dump(const struct cfg *c, char *buf, size_t len)
{
  size_t pos = 0;
  union cfg_val v;
  int n;

  if (len)
    buf[0] = 0;
  for (size_t i = 0; i < cfg_nkeys; i++) {
    const struct cfg_key *k = &cfg_keys[i];

    append(buf, len, &pos, "%s = ", k->name);
    cfg_value_get(c, k, &v);
    n = cfg_value_format(k, &v, pos < len ? buf + pos : NULL,
                         pos < len ? len - pos : 0);
    if (n > 0)
      pos += (size_t)n;
    append(buf, len, &pos, "\n");
  }
  return pos;
}

void cfg_help(FILE *f)
{
  char def[160], lo[48], hi[48], vals[128];
  union cfg_val v;

  fprintf(f, "Configuration keys, for the JSON file (sections nest at the "
             "dots) or -o KEY=VALUE:\n");
  for (size_t i = 0; i < cfg_nkeys; i++) {
    const struct cfg_key *k = &cfg_keys[i];

    cfg_value_default(k, &v);
    if (k->def_doc)
      snprintf(def, sizeof(def), "%s", k->def_doc);
    else
      cfg_value_format(k, &v, def, sizeof(def));
    fprintf(f, "  %s (%s, default %s", k->name, cfg_type_word(k), def);
    if (k->type == CFG_T_ENUM) {
      cfg_enum_list(k, vals, sizeof(vals));
      fprintf(f, "; %s", vals);
    } else if (k->type != CFG_T_STR && k->type != CFG_T_BOOL) {
      v.u = k->min;
      cfg_value_format(k, &v, lo, sizeof(lo));
      v.u = k->max;
      cfg_value_format(k, &v, hi, sizeof(hi));
      fprintf(f, "; %s..%s", lo, hi);
    }
    fprintf(f, ")\n      %s\n", k->doc);
  }
  fprintf(f, "Short forms for -o:");
  for (size_t i = 0; i < N_ALIASES; i++)
    fprintf(f, "%s %s = %s%s%s%s", i ? "," : "", aliases[i].alias,
            aliases[i].key, aliases[i].invert ? "=false" : "",
            aliases[i].value ? "=" : "",
            aliases[i].value ? aliases[i].value : "");
  fprintf(f, ".\nA bare -o KEY sets a bool key to true; config=FILE loads "
             "FILE first.\n");
}
