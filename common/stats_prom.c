/* stats_prom: see stats_prom.h. */
#include "common/stats_prom.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_ 256
#define LABELS_MAX 512

struct out {
  char *buf;
  size_t len, off;
  bool full;
  char **fam;                 /* families whose # TYPE is out */
  size_t nfam;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o,
                                                      const char *fmt, ...)
{
  va_list ap;
  int w;

  if (o->full)
    return;
  va_start(ap, fmt);
  w = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= o->len - o->off) {
    o->buf[o->off] = '\0'; /* the line that did not fit goes whole */
    o->full = true;
    return;
  }
  o->off += (size_t)w;
}

/* A character a metric name (colon: yes) or a label name may hold. */
static bool name_char(char c, bool colon)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || (colon && c == ':');
}

/* prefix_name with what a metric name cannot hold as '_'. */
static void metric_name(const char *prefix, const char *name, size_t n,
                        char out[NAME_MAX_])
{
  int w = snprintf(out, NAME_MAX_, "%s_", prefix);
  size_t k = w < 0 ? 0 : (size_t)w < NAME_MAX_ ? (size_t)w : NAME_MAX_ - 1;

  for (size_t i = 0; i < n && k + 1 < NAME_MAX_; i++)
    out[k++] = name_char(name[i], true) ? name[i] : '_';
  out[k] = '\0';
}

/* "a=b,c=d" as a="b",c="d" (names sanitized, values escaped). */
static void prom_labels(const char *in, size_t n, char out[LABELS_MAX])
{
  size_t k = 0, i = 0;

  out[0] = '\0';
  while (i < n && k + 8 < LABELS_MAX) {
    if (k)
      out[k++] = ',';
    for (; i < n && in[i] != '=' && k + 8 < LABELS_MAX; i++)
      out[k++] = name_char(in[i], false) ? in[i] : '_';
    out[k++] = '=';
    out[k++] = '"';
    for (i++; i < n && in[i] != ',' && k + 5 < LABELS_MAX; i++) {
      if (in[i] == '"' || in[i] == '\\')
        out[k++] = '\\';
      out[k++] = in[i];
    }
    out[k++] = '"';
    i++; /* the ',' */
  }
  out[k] = '\0';
}

/* A label value escaped as the format wants ("\\", "\"", "\n"). */
static void escape(const char *in, char *out, size_t len)
{
  size_t k = 0;

  for (; *in && k + 3 < len; in++) {
    if (*in == '"' || *in == '\\' || *in == '\n') {
      out[k++] = '\\';
      out[k++] = *in == '\n' ? 'n' : *in;
    } else {
      out[k++] = *in;
    }
  }
  out[k] = '\0';
}

static bool has(const struct out *o, const char *fam)
{
  for (size_t i = 0; i < o->nfam; i++)
    if (!strcmp(o->fam[i], fam))
      return true;
  return false;
}

/* Is fam's # TYPE out? If not, it is now (false: print it). */
static bool seen(struct out *o, const char *fam)
{
  char **v;

  if (has(o, fam))
    return true;
  v = realloc(o->fam, (o->nfam + 1) * sizeof(*v));
  if (v) {
    o->fam = v;
    if ((o->fam[o->nfam] = strdup(fam)))
      o->nfam++;
  }
  return false;
}

static bool is_gauge(const char *const *gauges, const char *name, size_t n)
{
  for (; gauges && *gauges; gauges++) {
    size_t gl = strlen(*gauges);
    if (gl && (*gauges)[gl - 1] == '*' ? n >= gl - 1 &&
                                              !strncmp(name, *gauges, gl - 1)
                                       : gl == n && !strncmp(name, *gauges, n))
      return true;
  }
  return false;
}

/* A decimal number as the format takes it: [-+]digits[.digits][e[-+]digits]
   (strtod would take hex and "inf", which parsers refuse or misread). */
static bool is_number(const char *v)
{
  size_t digits = 0;

  if (*v == '-' || *v == '+')
    v++;
  for (; *v >= '0' && *v <= '9'; v++)
    digits++;
  if (*v == '.')
    for (v++; *v >= '0' && *v <= '9'; v++)
      digits++;
  if (digits && (*v == 'e' || *v == 'E')) {
    v++;
    if (*v == '-' || *v == '+')
      v++;
    if (*v < '0' || *v > '9')
      return false;
    while (*v >= '0' && *v <= '9')
      v++;
  }
  return digits && !*v;
}

/* One "name value" line. */
static int line(struct out *o, const char *prefix, const char *const *gauges,
                const char *name, size_t nl, const char *val)
{
  char fam[NAME_MAX_], lab[LABELS_MAX] = "", vesc[512];
  const char *lb = memchr(name, '{', nl), *rb = NULL, *base_end = name + nl;
  const char *suffix = "";

  if (lb) {
    rb = memchr(lb, '}', (size_t)(name + nl - lb));
    if (!rb)
      return -EINVAL;
    prom_labels(lb + 1, (size_t)(rb - lb - 1), lab);
    base_end = lb;
    suffix = rb + 1; /* up to name + nl */
  } else {
    /* a histogram's rows without labels: NAME.bucket.le_X, .sum, .count
       (the last two once its buckets are out) */
    const char *b = strstr(name, ".bucket.le_");
    if (b && b < name + nl) {
      base_end = b, suffix = b;
    } else {
      for (size_t t = 0; t < 2; t++) {
        size_t sl = t ? 6 : 4; /* ".count", ".sum" */
        if (nl > sl && !strncmp(name + nl - sl, t ? ".count" : ".sum", sl)) {
          metric_name(prefix, name, nl - sl, fam);
          if (has(o, fam))
            base_end = name + nl - sl, suffix = base_end;
        }
      }
    }
  }
  metric_name(prefix, name, (size_t)(base_end - name), fam);
  if (!strncmp(suffix, ".bucket.le_", 11)) {
    const char *le = suffix + 11;
    if (!seen(o, fam))
      put(o, "# TYPE %s histogram\n", fam);
    put(o, "%s_bucket{%s%sle=\"%.*s\"} %s\n", fam, lab, *lab ? "," : "",
        (int)(name + nl - le), le, val);
    return 0;
  }
  if (!strncmp(suffix, ".sum ", 5) || !strncmp(suffix, ".count ", 7)) {
    bool sum = suffix[1] == 's';
    put(o, "%s_%s%s%s%s %s\n", fam, sum ? "sum" : "count", *lab ? "{" : "",
        lab, *lab ? "}" : "", val);
    return 0;
  }
  if (!is_number(val)) { /* text: an info gauge */
    escape(val, vesc, sizeof(vesc));
    metric_name(prefix, name, nl, fam);
    strncat(fam, "_info", sizeof(fam) - strlen(fam) - 1);
    if (!seen(o, fam))
      put(o, "# TYPE %s gauge\n", fam);
    put(o, "%s{value=\"%s\"} 1\n", fam, vesc);
    return 0;
  }
  if (lb) { /* a plain metric with labels: NAME{l=v} N */
    metric_name(prefix, name, (size_t)(lb - name), fam);
  } else {
    metric_name(prefix, name, nl, fam);
  }
  if (!is_gauge(gauges, name, lb ? (size_t)(lb - name) : nl)) {
    size_t fl = strlen(fam);
    if (fl < 6 || strcmp(fam + fl - 6, "_total"))
      strncat(fam, "_total", sizeof(fam) - fl - 1);
    if (!seen(o, fam))
      put(o, "# TYPE %s counter\n", fam);
  } else if (!seen(o, fam)) {
    put(o, "# TYPE %s gauge\n", fam);
  }
  put(o, "%s%s%s%s %s\n", fam, *lab ? "{" : "", lab, *lab ? "}" : "", val);
  return 0;
}

long stats_prom(const char *text, const char *prefix,
                const char *const *gauges, char *out, size_t len)
{
  struct out o = {.buf = out, .len = len};
  char val[1024];
  int rc = 0;

  if (!len)
    return -ENOSPC;
  out[0] = '\0';
  while (*text && !rc) {
    const char *eol = strchr(text, '\n'), *sp;
    size_t ll = eol ? (size_t)(eol - text) : strlen(text);
    sp = memchr(text, ' ', ll);
    if (ll && (!sp || sp == text)) {
      rc = -EINVAL;
    } else if (ll) {
      size_t vl = ll - (size_t)(sp + 1 - text);
      snprintf(val, sizeof(val), "%.*s", (int)vl, sp + 1);
      rc = line(&o, prefix, gauges, text, (size_t)(sp - text), val);
    }
    text += ll + (eol ? 1 : 0);
  }
  for (size_t i = 0; i < o.nfam; i++)
    free(o.fam[i]);
  free(o.fam);
  if (rc)
    return rc;
  return o.full ? -ENOSPC : (long)o.off;
}
