/*
 * rdx_reason: the one way an rdma/ function reports why it failed: a
 * one-line reason into the caller's why/err buffer, and the errno back.
 * Every rdma/ file uses it, so it lives apart from the transports (no
 * transport file includes another's header for it). Pure.
 */
#ifndef S3R_RDX_REASON_H
#define S3R_RDX_REASON_H

#include <stddef.h>

/* Set why to a formatted one-line reason (when why && whylen; always
   NUL-terminated, truncated to whylen); return rc. */
int rdx_reason(char *why, size_t whylen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
