/*
 * fsx_etag: what an S3 ETag says about the bytes behind it. A single
 * PUT's ETag is the MD5 of the bytes; a multipart upload's, the MD5 of its
 * parts' MD5s followed by "-N". Used to tell, after a 412 or a lost
 * answer, whether the object already holds what we meant to store, and
 * before an abort, whether the upload is the object already.
 */
#ifndef S3R_FSX_ETAG_H
#define S3R_FSX_ETAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_client.h"

/* Does etag name exactly data[0, size), stored whole or in parts of psize
   bytes (the last one shorter)? */
bool fsx_etag_holds(const char *etag, const unsigned char *data, uint64_t size,
                    uint64_t psize);
/* Does etag name the multipart object made of the n parts whose ETags
   (hex MD5s, quotes allowed) are given? */
bool fsx_etag_is_multipart_of(const char *etag, const char *const *parts,
                              size_t n);

/*
 * Is upload upload_id the object key now? RGW killed in the middle of a
 * CompleteMultipartUpload can leave the object written and the upload
 * still listed, its completion "in progress" (500) until its lock expires
 * (rgw_mp_lock_max_time, 10 minutes). One HEAD, and when the object is
 * made of n parts ("-n") a ListParts: 1 when its ETag is that of the
 * upload's parts 1..n (a stream completes its first parts), 0 when not (or
 * no object), else the error that kept us from telling (-ENOENT: the
 * upload is gone).
 */
int fsx_etag_upload_landed(struct s3_client *c, const char *bucket,
                           const char *key, const char *upload_id);
/* AbortMultipartUpload; when a completion of it was sent, unless the
   upload landed (above): aborting it would delete the parts, which are
   then the object's data (RGW does). -ENOENT when it is gone, or the
   object (said, not aborted); an error looking is returned, nothing
   aborted. The look is made only after a completion was sent: it cannot
   tell this upload from another of the same parts that completed (which
   would leave this one, never aborted). */
int fsx_etag_abort_upload(struct s3_client *c, const char *bucket,
                          const char *key, const char *upload_id,
                          bool completion_sent);

#endif
