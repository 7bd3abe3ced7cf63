/*
 * gw_parse: the gateway's checks of what a client sends before anything
 * is verified or forwarded: the request-target, the framing headers, the
 * Range header. Pure functions over bounded strings (no I/O, no state),
 * safe from any thread; the fuzz target tests/fuzz/fuzz_gw_parse.c drives
 * them.
 */
#ifndef S3R_GW_PARSE_H
#define S3R_GW_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_sigv4.h"

/* Limits on what one request may carry (refused with 400 beyond them). */
#define GW_TARGET_MAX 8192      /* request-target bytes */
#define GW_HEADER_VALUE_MAX 8192

/*
 * Is target an origin-form request-target we forward? It must start with
 * '/', hold only what RFC 3986 lets stand unescaped in a path and query
 * (letters, digits, "-._~!$&'()*+,;=:@/?" and '%'), so no control
 * character, space, '#', '\\', '"', '<', '>', '^', '`', '{', '|', '}' or
 * byte over 0x7f, and be at most GW_TARGET_MAX bytes; a '%' must start a
 * two-hex-digit escape (what an escape encodes is the key's business: S3
 * keys may hold any byte). What is forwarded is then exactly what was
 * signed, with nothing for libcurl or upstream to re-encode.
 * Returns 0, or -EINVAL with a one-line reason (naming the rule, never the
 * target) in why.
 */
int gw_target_check(const char *target, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/*
 * Framing: content_length and transfer_encoding are the headers' values (NULL
 * when absent; count_cl/count_te how often each appeared). Refused: both
 * present, either repeated, a Content-Length that is not 1..19 plain
 * decimal digits, a Transfer-Encoding other than "chunked"/"identity".
 * On 0, *body_len is the Content-Length (-1 when absent) and *chunked says
 * whether the body is chunked. Returns 0 or -EINVAL (why set).
 */
int gw_framing_check(const char *content_length, unsigned count_cl,
                     const char *transfer_encoding, unsigned count_te,
                     int64_t *body_len, bool *chunked, char *why,
                     size_t whylen) __attribute__((warn_unused_result));

/*
 * A Range header of the single form "bytes=A-B" (A <= B, plain decimals
 * without leading zeros, so that one range has one text):
 * 0 with *off = A and *len = B - A + 1; -EINVAL for anything else
 * (suffix and open ranges, lists, spaces, signs, overflow).
 */
int gw_range_parse(const char *v, uint64_t *off, uint64_t *len)
    __attribute__((warn_unused_result));

/*
 * Split a request-target into a path and a query (both malloc'd, the query
 * without its '?', "" when none). Returns 0 or -ENOMEM. Call after
 * gw_target_check.
 */
int gw_target_split(const char *target, char **path, char **query)
    __attribute__((warn_unused_result));

#endif
