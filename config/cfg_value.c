/*
 * cfg_value: typed values of the key table: the public scalar parsers, then
 * parsing from text or JSON, bounds and validators, storing into struct cfg
 * and printing back in a form that parses again.
 *
 * User input is echoed in messages quoted, cut at 64 characters, control
 * characters shown as '?'; a secret key's input is never echoed.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "config/cfg_i.h"

/* ---- scalar parsers ------------------------------------------------------- */

/* Digits in base at *p, advancing *p past them. -EINVAL: none; -ERANGE. */
static int scan_u64(const char **p, unsigned base, uint64_t *out)
{
  const char *s = *p;
  uint64_t v = 0;
  unsigned d;

  for (; (d = (unsigned)hex_digit(*s)) < base; s++) {
    if (v > (UINT64_MAX - d) / base)
      return -ERANGE;
    v = v * base + d;
  }
  if (s == *p)
    return -EINVAL;
  *p = s;
  *out = v;
  return 0;
}

int cfg_parse_size(const char *s, uint64_t *out)
{
  static const char units[] = "KMGT";
  const char *p = s, *u;
  uint64_t v, mul = 1;
  int rc;

  if (!s)
    return -EINVAL;
  rc = scan_u64(&p, 10, &v);
  if (rc)
    return rc;
  if (*p && (u = memchr(units, toupper((unsigned char)*p), 4))) {
    mul = 1ull << (10 * (u - units + 1));
    p++;
    if ((*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B'))
      p++;
  }
  if (*p == 'b' || *p == 'B')
    p++;
  if (*p)
    return -EINVAL;
  if (v > UINT64_MAX / mul)
    return -ERANGE;
  *out = v * mul;
  return 0;
}

int cfg_parse_duration(const char *s, unsigned unit_ms, uint64_t *out_ms)
{
  static const struct {
    const char *suffix;
    uint64_t ms;
  } units[] = {{"ms", 1},       {"s", 1000},          {"m", 60000},
               {"h", 3600000},  {"d", 86400000},};
  const char *p = s;
  uint64_t v, mul = unit_ms;
  size_t i;
  int rc;

  if (!s || !unit_ms)
    return -EINVAL;
  rc = scan_u64(&p, 10, &v);
  if (rc)
    return rc;
  if (*p) {
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
      if (strcmp(p, units[i].suffix) == 0)
        break;
    if (i == sizeof(units) / sizeof(units[0]))
      return -EINVAL;
    mul = units[i].ms;
  }
  if (v > UINT64_MAX / mul)
    return -ERANGE;
  *out_ms = v * mul;
  return 0;
}

int cfg_parse_bool(const char *s, bool *out)
{
  static const char *const yes[] = {"true", "1", "yes", "on"};
  static const char *const no[] = {"false", "0", "no", "off"};

  if (!s)
    return -EINVAL;
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    if (strcasecmp(s, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp(s, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return -EINVAL;
}

/* ---- printing ------------------------------------------------------------- */

void cfg_format_size(uint64_t v, char *buf, size_t len)
{
  static const char units[] = "TGMK";

  for (int i = 0; i < 4; i++) {
    uint64_t unit = 1ull << (10 * (4 - i));
    if (v && v % unit == 0) {
      snprintf(buf, len, "%" PRIu64 "%c", v / unit, units[i]);
      return;
    }
  }
  snprintf(buf, len, "%" PRIu64, v);
}

/* A duration in the key's own unit when exact, else in ms. */
static int format_duration(const struct cfg_key *k, uint64_t ms, char *buf,
                           size_t len)
{
  if (k->unit_ms == 1000 && ms % 1000 == 0)
    return snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
  return snprintf(buf, len, "%" PRIu64 "ms", ms);
}

static const char *enum_name(const struct cfg_key *k, int e)
{
  for (const struct cfg_enum_val *ev = k->vals; ev->name; ev++)
    if (ev->value == e)
      return ev->name;
  return "?";
}

int cfg_value_format(const struct cfg_key *k, const union cfg_val *v,
                     char *buf, size_t len)
{
  char tmp[32];

  switch (k->type) {
  case CFG_T_STR:
    if (!v->s)
      return snprintf(buf, len, "(unset)");
    return snprintf(buf, len, "%s", k->flags & CFG_F_SECRET ? "***" : v->s);
  case CFG_T_BOOL:
    return snprintf(buf, len, "%s", v->b ? "true" : "false");
  case CFG_T_UINT:
    if (k->flags & CFG_F_HEX)
      return snprintf(buf, len, "0x%08" PRIx64, v->u);
    return snprintf(buf, len, "%" PRIu64, v->u);
  case CFG_T_SIZE:
    cfg_format_size(v->u, tmp, sizeof(tmp));
    return snprintf(buf, len, "%s", tmp);
  case CFG_T_DUR:
    return format_duration(k, v->u, buf, len);
  case CFG_T_ENUM:
    return snprintf(buf, len, "%s", enum_name(k, v->e));
  case CFG_T_MODE:
    if (v->u == CFG_MODE_UNSET)
      return snprintf(buf, len, "(unset)");
    return snprintf(buf, len, "%#" PRIo64, v->u);
  }
  return snprintf(buf, len, "?");
}

const char *cfg_type_word(const struct cfg_key *k)
{
  switch (k->type) {
  case CFG_T_STR:
    return "string";
  case CFG_T_BOOL:
    return "bool";
  case CFG_T_UINT:
    return "integer";
  case CFG_T_SIZE:
    return "size";
  case CFG_T_DUR:
    return k->unit_ms == 1000 ? "seconds" : "ms";
  case CFG_T_ENUM:
    return "enum";
  case CFG_T_MODE:
    return "mode";
  }
  return "?";
}

/* Input echoed into a message. */
static void quote(const struct cfg_key *k, const char *s, char *buf,
                  size_t len)
{
  char q[72];
  size_t n = 0;

  if (k->flags & CFG_F_SECRET) {
    snprintf(buf, len, "(hidden value)");
    return;
  }
  for (; *s && n < 64; s++, n++)
    q[n] = ((unsigned char)*s >= 0x20 && *s != 0x7f) ? *s : '?';
  q[n] = 0;
  snprintf(buf, len, "\"%s%s\"", q, *s ? "..." : "");
}

void cfg_enum_list(const struct cfg_key *k, char *buf, size_t len)
{
  size_t pos = 0;

  buf[0] = 0;
  for (const struct cfg_enum_val *ev = k->vals; ev->name && pos < len; ev++)
    pos += (size_t)snprintf(buf + pos, len - pos, "%s%s",
                            ev == k->vals ? "" : "|", ev->name);
}

static const char *type_expected(const struct cfg_key *k, char *buf,
                                 size_t len)
{
  char vals[128];

  switch (k->type) {
  case CFG_T_STR:
    return "a string";
  case CFG_T_BOOL:
    return "true or false";
  case CFG_T_UINT:
    return k->flags & CFG_F_HEX ? "an integer (or a string like \"0x1f\")"
                                : "an integer";
  case CFG_T_SIZE:
    return "a size (integer bytes or a string like \"64M\")";
  case CFG_T_DUR:
    return k->unit_ms == 1000
               ? "a duration (integer seconds or a string like \"90s\")"
               : "a duration (integer milliseconds or a string like \"2s\")";
  case CFG_T_ENUM:
    cfg_enum_list(k, vals, sizeof(vals));
    snprintf(buf, len, "one of %s (a string)", vals);
    return buf;
  case CFG_T_MODE:
    return "an octal mode (a string like \"022\")";
  }
  return "?";
}

const char *cfg_json_type_word(const json_t *j)
{
  switch (json_typeof(j)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a real number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* ---- parsing -------------------------------------------------------------- */

static int bad_text(const struct cfg_key *k, const char *s, int rc,
                    const char *what, char *why, size_t whylen)
{
  char q[96];

  quote(k, s, q, sizeof(q));
  if (rc == -ERANGE)
    snprintf(why, whylen, "%s is too large", q);
  else
    snprintf(why, whylen, "%s %s", q, what);
  return -EINVAL;
}

int cfg_value_from_text(const struct cfg_key *k, const char *s,
                        union cfg_val *v, char *why, size_t whylen)
{
  const char *p = s;
  char vals[128], what[160];
  int rc;

  switch (k->type) {
  case CFG_T_STR:
    v->s = (!*s && !k->def.s) ? NULL : s;
    return 0;
  case CFG_T_BOOL:
    rc = cfg_parse_bool(s, &v->b);
    return rc ? bad_text(k, s, rc,
                         "is not a boolean (true/false, yes/no, on/off, 1/0)",
                         why, whylen)
              : 0;
  case CFG_T_UINT:
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
      p += 2;
      rc = scan_u64(&p, 16, &v->u);
    } else {
      rc = scan_u64(&p, 10, &v->u);
    }
    if (!rc && *p)
      rc = -EINVAL;
    return rc ? bad_text(k, s, rc, "is not a whole number", why, whylen) : 0;
  case CFG_T_SIZE:
    rc = cfg_parse_size(s, &v->u);
    return rc ? bad_text(k, s, rc,
                         "is not a size (use bytes or a K/M/G/T suffix)", why,
                         whylen)
              : 0;
  case CFG_T_DUR:
    rc = cfg_parse_duration(s, k->unit_ms, &v->u);
    return rc ? bad_text(k, s, rc,
                         k->unit_ms == 1000
                             ? "is not a duration (use whole seconds or a "
                               "ms/s/m/h/d suffix)"
                             : "is not a duration (use whole milliseconds "
                               "or a ms/s/m/h/d suffix)",
                         why, whylen)
              : 0;
  case CFG_T_ENUM:
    for (const struct cfg_enum_val *ev = k->vals; ev->name; ev++) {
      if (strcasecmp(ev->name, s) == 0) {
        v->e = ev->value;
        return 0;
      }
    }
    cfg_enum_list(k, vals, sizeof(vals));
    snprintf(what, sizeof(what), "is not one of %s", vals);
    return bad_text(k, s, -EINVAL, what, why, whylen);
  case CFG_T_MODE:
    rc = scan_u64(&p, 8, &v->u);
    if (!rc && *p)
      rc = -EINVAL;
    return rc ? bad_text(k, s, rc, "is not an octal mode", why, whylen) : 0;
  }
  return -EINVAL;
}

int cfg_value_from_json(const struct cfg_key *k, json_t *j, union cfg_val *v,
                        char *why, size_t whylen)
{
  char tbuf[160], num[32], q[48];
  const char *p = num;
  json_int_t n;
  union cfg_val lo;

  if (json_is_null(j)) {
    cfg_value_default(k, v);
    return 0;
  }
  if (json_is_string(j) && k->type != CFG_T_BOOL)
    return cfg_value_from_text(k, json_string_value(j), v, why, whylen);
  if (json_is_boolean(j) && k->type == CFG_T_BOOL) {
    v->b = json_is_true(j);
    return 0;
  }
  if (!json_is_integer(j) || k->type == CFG_T_STR || k->type == CFG_T_BOOL ||
      k->type == CFG_T_ENUM) {
    snprintf(why, whylen, "expected %s, got %s",
             type_expected(k, tbuf, sizeof(tbuf)), cfg_json_type_word(j));
    return -EINVAL;
  }
  n = json_integer_value(j);
  snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, n);
  if (k->type == CFG_T_MODE) {
    /* 22 means 022: nobody writes a umask in decimal */
    if (n < 0 || scan_u64(&p, 8, &v->u) || *p) {
      snprintf(why, whylen, "%s is not an octal mode", num);
      return -EINVAL;
    }
    return 0;
  }
  if (n < 0) {
    lo.u = k->min;
    cfg_value_format(k, &lo, q, sizeof(q));
    snprintf(why, whylen, "%s is below the minimum %s", num, q);
    return -EINVAL;
  }
  v->u = (uint64_t)n;
  if (k->type == CFG_T_DUR) {
    if (v->u > UINT64_MAX / k->unit_ms) {
      snprintf(why, whylen, "%s is too large", num);
      return -EINVAL;
    }
    v->u *= k->unit_ms;
  }
  return 0;
}

/* ---- checking ------------------------------------------------------------- */

int cfg_value_check(const struct cfg_key *k, const union cfg_val *v,
                    char *why, size_t whylen)
{
  char shown[96], bound[48];
  union cfg_val b;
  const char *reason;

  if (k->type == CFG_T_UINT || k->type == CFG_T_SIZE ||
      k->type == CFG_T_DUR || k->type == CFG_T_MODE) {
    if (v->u < k->min || v->u > k->max) {
      b.u = v->u < k->min ? k->min : k->max;
      cfg_value_format(k, v, shown, sizeof(shown));
      cfg_value_format(k, &b, bound, sizeof(bound));
      snprintf(why, whylen, "%s is %s the %s %s", shown,
               v->u < k->min ? "below" : "above",
               v->u < k->min ? "minimum" : "maximum", bound);
      return -EINVAL;
    }
  }
  if (!k->check || (k->type == CFG_T_STR && !v->s))
    return 0;
  reason = k->check(v);
  if (!reason)
    return 0;
  if (k->type == CFG_T_STR)
    quote(k, v->s, shown, sizeof(shown));
  else
    cfg_value_format(k, v, shown, sizeof(shown));
  snprintf(why, whylen, "%s %s", shown, reason);
  return -EINVAL;
}

/* ---- storing -------------------------------------------------------------- */

void cfg_value_default(const struct cfg_key *k, union cfg_val *v)
{
  *v = k->def;
  if (k->def_fn)
    v->u = k->def_fn();
}

void cfg_value_get(const struct cfg *c, const struct cfg_key *k,
                   union cfg_val *v)
{
  const char *p = (const char *)c + k->off;

  switch (k->type) {
  case CFG_T_STR:
    v->s = *(const char *const *)p;
    break;
  case CFG_T_BOOL:
    v->b = *(const bool *)p;
    break;
  case CFG_T_UINT:
  case CFG_T_DUR:
  case CFG_T_MODE:
    v->u = *(const unsigned *)p;
    break;
  case CFG_T_SIZE:
    v->u = *(const uint64_t *)p;
    break;
  case CFG_T_ENUM:
    v->e = *(const int *)p;
    break;
  }
}

void cfg_value_release(struct cfg *c, const struct cfg_key *k)
{
  const char **slot;
  char *s;

  if (k->type != CFG_T_STR)
    return;
  slot = (const char **)((char *)c + k->off);
  s = (char *)*slot;
  if (s && s != k->def.s) {
    if (k->flags & CFG_F_SECRET)
      explicit_bzero(s, strlen(s));
    free(s);
  }
  *slot = NULL;
}

int cfg_value_put(struct cfg *c, const struct cfg_key *k,
                  const union cfg_val *v)
{
  char *p = (char *)c + k->off;
  char *dup = NULL;

  switch (k->type) {
  case CFG_T_STR:
    /* copy first: v->s may point into the string being replaced */
    if (v->s && v->s != k->def.s && !(dup = strdup(v->s)))
      return -ENOMEM;
    cfg_value_release(c, k);
    *(const char **)p = dup ? dup : v->s;
    break;
  case CFG_T_BOOL:
    *(bool *)p = v->b;
    break;
  case CFG_T_UINT:
  case CFG_T_DUR:
  case CFG_T_MODE:
    *(unsigned *)p = (unsigned)v->u;
    break;
  case CFG_T_SIZE:
    *(uint64_t *)p = v->u;
    break;
  case CFG_T_ENUM:
    *(int *)p = v->e;
    break;
  }
  return 0;
}
