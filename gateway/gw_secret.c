/* gw_secret: see gw_secret.h. Runs once, on main's thread, at start-up. */
#include "gateway/gw_secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"

int gw_secret_load(const struct gw_secret_src *s, char **out,
                   enum gw_secret_from *from, char *err, size_t errlen)
{
  const char *v = s->env ? getenv(s->env) : NULL;
  char why[256];
  int rc;

  *out = NULL;
  *from = GW_SECRET_NONE;
  if (s->arg && s->file) {
    snprintf(err, errlen, "%s and %s-file: give one, not both", s->flag,
             s->flag);
    return -EINVAL;
  }
  if (s->file) {
    rc = secret_read_file(s->file, out, why, sizeof(why));
    if (rc) {
      snprintf(err, errlen, "%s-file %s: %s", s->flag, s->file, why);
      return rc;
    }
    *from = GW_SECRET_FILE;
    return 0;
  }
  if (s->arg)
    *from = GW_SECRET_ARG;
  else if (v && v[0])
    *from = GW_SECRET_ENV;
  else
    return 0;
  *out = strdup(s->arg ? s->arg : v);
  if (!*out) {
    *from = GW_SECRET_NONE;
    snprintf(err, errlen, "%s: out of memory", s->flag);
    return -ENOMEM;
  }
  return 0;
}
