/*
 * fsx_etag: what an S3 ETag says about the bytes behind it. A single
 * PUT's ETag is the MD5 of the bytes; a multipart upload's, the MD5 of its
 * parts' MD5s followed by "-N". Used to tell, after a 412 or a lost
 * answer, whether the object already holds what we meant to store.
 */
#ifndef S3R_FSX_ETAG_H
#define S3R_FSX_ETAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Does etag name exactly data[0, size), stored whole or in parts of psize
   bytes (the last one shorter)? */
bool fsx_etag_holds(const char *etag, const unsigned char *data, uint64_t size,
                    uint64_t psize);
/* Does etag name the multipart object made of the n parts whose ETags
   (hex MD5s, quotes allowed) are given? */
bool fsx_etag_is_multipart_of(const char *etag, const char *const *parts,
                              size_t n);

#endif
