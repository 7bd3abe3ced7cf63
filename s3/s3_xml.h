/*
 * s3_xml: streaming parsers (expat) for every XML body S3 returns, and the
 * builders for the bodies we send (CompleteMultipartUpload, Delete).
 *
 * A parser is fed the body in pieces as curl delivers it (any split, down to
 * one byte at a time) and finished once. Any document whose root is <Error>
 * fills ->err whatever kind was asked for, because S3 may answer 200 with an
 * <Error> body (CompleteMultipartUpload, CopyObject, UploadPartCopy).
 * Malformed XML, an unexpected root element, a missing required element, an
 * over-long field or a number that does not parse is -EBADMSG, never a crash.
 */
#ifndef S3R_S3_XML_H
#define S3R_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct s3_error_info {
  char code[64];        /* "NoSuchKey" */
  char message[256];
  char request_id[128];
  char resource[256];
};

struct s3_object_info {
  char *key;            /* URL-decoded when the listing was encoding-type=url */
  int64_t size;
  char etag[80];        /* with quotes removed */
  time_t mtime;         /* LastModified, UTC */
  char storage_class[32];
};

struct s3_list_result {            /* ListObjectsV2 */
  struct s3_object_info *objects;
  size_t n_objects;
  char **prefixes;                 /* CommonPrefixes/Prefix */
  size_t n_prefixes;
  bool truncated;                  /* IsTruncated */
  char *next_token;                /* NextContinuationToken or NULL */
  unsigned key_count;
};

struct s3_bucket_info {
  char *name;
  time_t created;
};

struct s3_buckets_result {         /* ListAllMyBucketsResult */
  struct s3_bucket_info *buckets;
  size_t n_buckets;
};

struct s3_mpu_result {             /* InitiateMultipartUploadResult */
  char *upload_id;
};

struct s3_etag_result {            /* CompleteMultipartUploadResult,
                                      CopyObjectResult, CopyPartResult */
  char etag[80];
  time_t mtime;                    /* LastModified when present, else 0 */
};

struct s3_upload_info {
  char *key;            /* URL-decoded when the listing was encoding-type=url */
  char *upload_id;
  time_t initiated;     /* Initiated, UTC; 0 when the server sent none */
};

/*
 * An <Upload> needs Key and UploadId (Initiated is optional, but must parse
 * when given); a truncated page needs NextKeyMarker and NextUploadIdMarker,
 * which may otherwise be absent or empty (NULL here).
 */
struct s3_uploads_result {         /* ListMultipartUploadsResult */
  struct s3_upload_info *uploads;
  size_t n_uploads;
  bool truncated;                  /* IsTruncated */
  char *next_key_marker;           /* NextKeyMarker or NULL */
  char *next_upload_id_marker;     /* NextUploadIdMarker or NULL */
};

struct s3_part_info {              /* ListPartsResult/Part */
  int part_number;
  int64_t size;
  char etag[80];        /* with quotes removed */
};

struct s3_parts_result {           /* ListPartsResult */
  struct s3_part_info *parts;
  size_t n_parts;
  bool truncated;                  /* IsTruncated */
  int next_marker;                 /* NextPartNumberMarker (truncated) */
};

struct s3_delete_error {
  char *key;
  char code[64];
  char message[256];
};

struct s3_delete_result {          /* DeleteResult */
  char **deleted;
  size_t n_deleted;
  struct s3_delete_error *errors;
  size_t n_errors;
};

enum s3_xml_kind {
  S3_XML_ERROR,          /* only <Error> is accepted */
  S3_XML_LIST_OBJECTS,   /* result: struct s3_list_result */
  S3_XML_LIST_BUCKETS,   /* result: struct s3_buckets_result */
  S3_XML_INITIATE_MPU,   /* result: struct s3_mpu_result */
  S3_XML_COMPLETE_MPU,   /* result: struct s3_etag_result */
  S3_XML_COPY_RESULT,    /* result: struct s3_etag_result (object or part) */
  S3_XML_DELETE_RESULT,  /* result: struct s3_delete_result */
  S3_XML_LIST_UPLOADS,   /* result: struct s3_uploads_result */
  S3_XML_LIST_PARTS,     /* result: struct s3_parts_result */
};

struct s3_xml;

/*
 * Create a parser of the given kind writing into *result (the struct named
 * above, zeroed by the caller, may be NULL for S3_XML_ERROR) and *err.
 * Returns NULL on ENOMEM.
 */
struct s3_xml *s3_xml_create(enum s3_xml_kind kind, void *result,
                             struct s3_error_info *err);
/*
 * Feed the next piece. 0, or -EBADMSG once the document is known bad
 * (-ENOMEM if memory ran out). A failure sticks: finish returns it too.
 * Leading whitespace before the document is skipped (S3 sends some to keep
 * a slow CompleteMultipartUpload or CopyObject alive).
 */
int s3_xml_feed(struct s3_xml *x, const char *buf, size_t len);
/*
 * End of document. Returns 0 when a document of the asked kind was parsed,
 * 1 when the document was an <Error> (err filled), -EBADMSG otherwise
 * (including an empty body). Does URL-decoding when the listing said
 * <EncodingType>url</EncodingType> (keys, prefixes and an uploads listing's
 * NextKeyMarker; %XX, and '+' as a space as AWS and MinIO encode it; a
 * literal '+' always arrives as %2B). For S3_XML_ERROR
 * the success value is 1. On any failure the result has been emptied; after
 * 0 the caller frees it with the matching cleanup. Calling finish again
 * returns the same value.
 */
int s3_xml_finish(struct s3_xml *x);
void s3_xml_destroy(struct s3_xml *x);

/* One-shot convenience: create, feed all, finish, destroy. */
int s3_xml_parse(enum s3_xml_kind kind, const char *buf, size_t len,
                 void *result, struct s3_error_info *err);

/*
 * Free what a result of the kind holds and zero it, as a failed finish
 * does: for the owner of a parser that is starting the document over (a
 * retried request). NULL-tolerant.
 */
void s3_xml_result_reset(enum s3_xml_kind kind, void *result);

/* Free what a result holds (not the struct itself). NULL-tolerant. */
void s3_list_result_cleanup(struct s3_list_result *r);
void s3_buckets_result_cleanup(struct s3_buckets_result *r);
void s3_mpu_result_cleanup(struct s3_mpu_result *r);
void s3_delete_result_cleanup(struct s3_delete_result *r);
void s3_uploads_result_cleanup(struct s3_uploads_result *r);
void s3_parts_result_cleanup(struct s3_parts_result *r);

/*
 * Parse an ISO 8601 "2009-10-12T17:50:30.000Z" into UTC seconds; -EINVAL.
 * Also accepts "+HH:MM"/"-HH:MM" offsets and no zone at all (taken as UTC).
 */
int s3_parse_iso8601(const char *s, time_t *out);

struct s3_part_etag {
  int part_number;
  const char *etag;     /* with or without quotes */
};

/*
 * Build bodies (malloc'd, NUL-terminated, *len set). XML-escapes every value.
 * Complete: parts must be in ascending part number order (-EINVAL if not).
 * Delete: at most 1000 keys (-EINVAL beyond), quiet mode when quiet.
 * -EINVAL also for no parts/keys, part numbers outside 1..10000, an empty
 * key or ETag, and text XML 1.0 cannot carry (control characters other than
 * TAB/LF/CR, invalid UTF-8); -ENOMEM. *out is untouched on failure.
 * The caller sends Content-MD5 (S3 requires it on Delete).
 */
int s3_xml_build_complete(const struct s3_part_etag *parts, size_t n,
                          char **out, size_t *len);
int s3_xml_build_delete(const char *const *keys, size_t n, bool quiet,
                        char **out, size_t *len);

#endif
