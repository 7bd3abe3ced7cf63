/*
 * endpoint: the one parser of an S3 endpoint URL,
 * "http[s]://host[:port][/path]". The scheme is matched in any case; an IPv6
 * host is written in brackets (a zone, "%25eth0", kept in host); the port
 * defaults from the scheme, also after an empty ":". No user
 * name, query or fragment. On error a short reason ("has no host name") is
 * given, so each caller words its message around the key it parsed. A
 * list of them ("URL;URL") is walked with endpoint_list_next.
 */
#ifndef S3R_ENDPOINT_H
#define S3R_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#define ENDPOINT_HOST_MAX 256
#define ENDPOINT_LIST_MAX 16 /* URLs in a list */

struct endpoint {
  bool https;                   /* the scheme, in any case, was https */
  bool ipv6;                    /* the host was a bracketed IPv6 address */
  bool port_given;              /* a ":port" was written */
  unsigned port;                /* the port written, else 80 or 443 */
  char host[ENDPOINT_HOST_MAX]; /* name or address; IPv6 without [] */
  /* Spans of the parsed string, not NUL-terminated: */
  const char *authority;        /* "host[:port]" as written, [] kept */
  size_t authority_len;
  const char *path;             /* "" or "/base": trailing '/'s left out */
  size_t path_len;
};

/* Parse url into *ep, which points into url. 0, or -EINVAL with *why set to
   a reason that reads after the URL ("is not an http:// or https:// URL"). */
int endpoint_parse(const char *url, struct endpoint *ep, const char **why);

/* The host of a parsed endpoint is localhost or a loopback address? */
bool endpoint_is_loopback(const struct endpoint *ep);

/* The next URL of a list, "URL;URL;..." (empty items skipped): its start
   in *url and its length in *len (not NUL-terminated), *list moved past
   it. False at the end of the list. */
bool endpoint_list_next(const char **list, const char **url, size_t *len);
/* Are a and b the same server: scheme, host (any case), port (written or
   the scheme's) and path? */
bool endpoint_same(const struct endpoint *a, const struct endpoint *b);
/* Do two lists name a server in common (endpoint_same)? Lists of one
   service's servers: then the service. */
bool endpoint_lists_meet(const char *a, const char *b);

#endif
