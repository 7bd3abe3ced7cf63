/* Internals of s3_xml shared with s3_xml_result.c: the parser's state,
   its contexts and fields, and the limits on what a document may hold. */
#ifndef S3R_S3_XML_I_H
#define S3R_S3_XML_I_H

#include <expat.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_xml.h"

#define XML_NS_SEP ' '            /* cannot occur in a URI or a local name */
#define XML_BODY_MAX (64u << 20)  /* a 1000-key page is ~1-4 MiB */
#define XML_DEPTH_MAX 32          /* S3 documents nest 4 deep */
#define XML_ENTRIES_MAX 100000u   /* per array per page (S3 sends <= 1000) */
#define XML_TEXT_MAX 4096         /* 1024-byte key, url-encoded, with room */
#define XML_CHUNK_MAX (1 << 30)   /* XML_Parse takes an int length */

enum ctx {
  X_NONE,
  X_IGNORE,       /* unknown element: skip it and everything inside */
  X_LEAF,         /* a text field: no child element allowed */
  X_ERROR,        /* <Error> root */
  X_LIST,         /* <ListBucketResult> */
  X_CONTENTS,     /* record */
  X_CPREFIX,      /* record */
  X_ALLBUCKETS,   /* <ListAllMyBucketsResult> */
  X_BUCKETS,
  X_BUCKET,       /* record */
  X_MPU,          /* <InitiateMultipartUploadResult> */
  X_ETAGRES,      /* Complete/CopyObject/CopyPart result */
  X_DELETE,       /* <DeleteResult> */
  X_DELETED,      /* record */
  X_DELERR,       /* record */
  X_UPLOADS,      /* <ListMultipartUploadsResult> */
  X_UPLOAD,       /* record */
  X_PARTS,        /* <ListPartsResult> */
  X_PART,         /* record */
};

enum field {
  F_NONE,
  F_ERR_CODE, F_ERR_MSG, F_ERR_RID, F_ERR_RES,
  F_TRUNC, F_NEXT, F_KEYCOUNT, F_ENCTYPE,
  F_OBJ_KEY, F_OBJ_SIZE, F_OBJ_ETAG, F_OBJ_MTIME, F_OBJ_CLASS,
  F_PREFIX,
  F_BKT_NAME, F_BKT_DATE,
  F_UPLOAD_ID,
  F_ETAG, F_MTIME,
  F_DEL_KEY,
  F_DERR_KEY, F_DERR_CODE, F_DERR_MSG,
  F_UP_KEY, F_UP_ID, F_UP_INIT, F_NEXT_KEY, F_NEXT_UPID,
  F_PT_NUM, F_NEXT_PTM,       /* a part's Size and ETag: F_OBJ_* */
  F_COUNT
};
_Static_assert(F_COUNT <= 32, "->seen holds one bit per field");

#define BIT(f) (1u << (f))
/* Fields belonging to a record: cleared from ->seen when a record opens. */
#define REC_FIELDS                                                             \
  (BIT(F_OBJ_KEY) | BIT(F_OBJ_SIZE) | BIT(F_OBJ_ETAG) | BIT(F_OBJ_MTIME) |     \
   BIT(F_OBJ_CLASS) | BIT(F_PREFIX) | BIT(F_BKT_NAME) | BIT(F_BKT_DATE) |      \
   BIT(F_DEL_KEY) | BIT(F_DERR_KEY) | BIT(F_DERR_CODE) | BIT(F_DERR_MSG) |   \
   BIT(F_UP_KEY) | BIT(F_UP_ID) | BIT(F_UP_INIT) | BIT(F_PT_NUM))

struct s3_xml {
  XML_Parser p;
  enum s3_xml_kind kind;
  void *result;
  struct s3_error_info *err;
  struct s3_error_info err_local;  /* used when the caller passed no err */
  int rc;                          /* first failure, sticky */
  enum XML_Error xerr;             /* expat's reason, if expat refused */
  bool finished;
  bool started;                    /* a non-whitespace byte was fed */
  bool root_seen;
  bool is_error;                   /* the root was <Error> */
  bool url_encoded;                /* <EncodingType>url</EncodingType> */
  size_t fed;
  unsigned depth;
  enum ctx stack[XML_DEPTH_MAX];
  enum field leaf;                 /* field being collected, or F_NONE */
  uint32_t seen;                   /* BIT(field) of fields already seen */
  size_t text_len;
  size_t cap;                      /* capacity of the array being filled */
  size_t cap2;                     /* second array (prefixes, errors) */
  /* record being built, owned here until appended */
  struct s3_object_info obj;
  struct s3_bucket_info bkt;
  struct s3_delete_error derr;
  struct s3_upload_info up;
  int part_number;                 /* of the <Part> being built */
  char *str;                       /* CommonPrefixes/Prefix, Deleted/Key */
  char text[XML_TEXT_MAX + 1];
};

/* A record (context c) closed: its required fields checked, appended to
   x->result; 0 or a negative errno (-EBADMSG, -ENOMEM). */
int s3_xml_close_record(struct s3_xml *x, enum ctx c);
/* The required top-level elements of a complete document (keys decoded
   when url-encoded): 0 or -EBADMSG. */
int s3_xml_check_result(struct s3_xml *x);

#endif
