/*
 * test_s3_xml: s3_xml parsers, builders and s3_parse_iso8601.
 *
 * Every document in the table is parsed seven ways (one-shot, one feed, byte
 * by byte, five random chunkings) and each must give the same return code
 * and the same result, rendered by dump() into the expected text. Failing
 * parses must leave the result empty. Documents follow the shapes AWS S3
 * documents in its API reference and Ceph RGW and MinIO actually send
 * (namespace, XML declaration, &quot; in ETags, Owner and other elements we
 * do not use).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <expat.h>
#include <stdio.h>

#include "s3/s3_xml.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define LBR "<ListBucketResult" NS ">"
#define LBR_END "</ListBucketResult>"
#define BAD (-EBADMSG)

union result {
  struct s3_list_result list;
  struct s3_buckets_result buckets;
  struct s3_mpu_result mpu;
  struct s3_etag_result etag;
  struct s3_delete_result del;
  struct s3_uploads_result ups;
  struct s3_parts_result parts;
};

struct xml_case {
  const char *name;
  enum s3_xml_kind kind;
  const char *doc;
  int rc;
  const char *want;     /* dump() of the result when rc >= 0 */
};

/* ---- helpers ------------------------------------------------------------ */

static uint32_t prng(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (uint32_t)(*s >> 11);
}

/* The result as text, for comparing parses and stating expectations. */
static char *dump(enum s3_xml_kind kind, int rc, const union result *r,
                  const struct s3_error_info *e)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);

  assert_non_null(f);
  if (rc < 0) {
    fprintf(f, "rc %d", rc);
  } else if (rc == 1) {
    fprintf(f, "error %s|%s|%s|%s", e->code, e->message, e->request_id,
            e->resource);
  } else {
    switch (kind) {
    case S3_XML_LIST_OBJECTS:
      for (size_t i = 0; i < r->list.n_objects; i++) {
        const struct s3_object_info *o = &r->list.objects[i];

        fprintf(f, "obj %s|%lld|%s|%lld|%s\n", o->key, (long long)o->size,
                o->etag, (long long)o->mtime, o->storage_class);
      }
      for (size_t i = 0; i < r->list.n_prefixes; i++)
        fprintf(f, "pfx %s\n", r->list.prefixes[i]);
      fprintf(f, "trunc=%d next=%s count=%u", r->list.truncated,
              r->list.next_token ? r->list.next_token : "(null)",
              r->list.key_count);
      break;
    case S3_XML_LIST_BUCKETS:
      for (size_t i = 0; i < r->buckets.n_buckets; i++)
        fprintf(f, "bkt %s|%lld\n", r->buckets.buckets[i].name,
                (long long)r->buckets.buckets[i].created);
      fprintf(f, "n=%zu", r->buckets.n_buckets);
      break;
    case S3_XML_INITIATE_MPU:
      fprintf(f, "upload %s", r->mpu.upload_id);
      break;
    case S3_XML_COMPLETE_MPU:
    case S3_XML_COPY_RESULT:
      fprintf(f, "etag %s|%lld", r->etag.etag, (long long)r->etag.mtime);
      break;
    case S3_XML_DELETE_RESULT:
      for (size_t i = 0; i < r->del.n_deleted; i++)
        fprintf(f, "del %s\n", r->del.deleted[i]);
      for (size_t i = 0; i < r->del.n_errors; i++)
        fprintf(f, "err %s|%s|%s\n", r->del.errors[i].key,
                r->del.errors[i].code, r->del.errors[i].message);
      fprintf(f, "n=%zu/%zu", r->del.n_deleted, r->del.n_errors);
      break;
    case S3_XML_LIST_UPLOADS:
      for (size_t i = 0; i < r->ups.n_uploads; i++)
        fprintf(f, "up %s|%s|%lld\n", r->ups.uploads[i].key,
                r->ups.uploads[i].upload_id,
                (long long)r->ups.uploads[i].initiated);
      fprintf(f, "trunc=%d next=%s|%s", r->ups.truncated,
              r->ups.next_key_marker ? r->ups.next_key_marker : "(null)",
              r->ups.next_upload_id_marker ? r->ups.next_upload_id_marker
                                           : "(null)");
      break;
    case S3_XML_LIST_PARTS:
      for (size_t i = 0; i < r->parts.n_parts; i++)
        fprintf(f, "part %d|%lld|%s\n", r->parts.parts[i].part_number,
                (long long)r->parts.parts[i].size, r->parts.parts[i].etag);
      fprintf(f, "trunc=%d next=%d", r->parts.truncated,
              r->parts.next_marker);
      break;
    case S3_XML_ERROR:
      fprintf(f, "ok");
      break;
    }
  }
  fclose(f);
  return buf;
}

static void result_cleanup(enum s3_xml_kind kind, union result *r)
{
  switch (kind) {
  case S3_XML_LIST_OBJECTS:
    s3_list_result_cleanup(&r->list);
    break;
  case S3_XML_LIST_BUCKETS:
    s3_buckets_result_cleanup(&r->buckets);
    break;
  case S3_XML_INITIATE_MPU:
    s3_mpu_result_cleanup(&r->mpu);
    break;
  case S3_XML_DELETE_RESULT:
    s3_delete_result_cleanup(&r->del);
    break;
  case S3_XML_LIST_UPLOADS:
    s3_uploads_result_cleanup(&r->ups);
    break;
  case S3_XML_LIST_PARTS:
    s3_parts_result_cleanup(&r->parts);
    break;
  default:
    break;
  }
}

static bool all_zero(const void *p, size_t n)
{
  const unsigned char *b = p;

  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

#define N_MODES 8

/*
 * Parse doc[0..len) in the given mode: 0 one-shot, 1 one feed, 2 byte by
 * byte, 3.. random chunks (seeded by the mode). Returns finish's code.
 */
static int parse_mode(enum s3_xml_kind kind, const char *doc, size_t len,
                      int mode, union result *r, struct s3_error_info *e)
{
  void *res = kind == S3_XML_ERROR ? NULL : r;
  struct s3_xml *x;
  uint64_t seed = 0x1234567ull * (uint64_t)(mode + 1);
  size_t off = 0;
  int rc = 0, rc2;

  memset(r, 0, sizeof(*r));
  memset(e, 0, sizeof(*e));
  if (mode == 0)
    return s3_xml_parse(kind, doc, len, res, e);
  x = s3_xml_create(kind, res, e);
  assert_non_null(x);
  while (off < len && !rc) {
    size_t n = len - off;

    if (mode == 2)
      n = 1;
    else if (mode > 2)
      n = 1 + prng(&seed) % (mode == 3 ? 4 : mode * 13);
    if (n > len - off)
      n = len - off;
    rc = s3_xml_feed(x, doc + off, n);
    assert_true(rc == 0 || rc == BAD);
    off += n;
  }
  rc = s3_xml_finish(x);
  rc2 = s3_xml_finish(x);      /* finishing again changes nothing */
  assert_int_equal(rc, rc2);
  assert_int_not_equal(s3_xml_feed(x, "x", 1), 0);
  s3_xml_destroy(x);
  return rc;
}

/* Parse in every mode; all must agree. Returns the dump (caller frees). */
static char *parse_all(enum s3_xml_kind kind, const char *doc, size_t len,
                       int *rc_out)
{
  char *first = NULL;
  int first_rc = 0;

  for (int mode = 0; mode < N_MODES; mode++) {
    union result r;
    struct s3_error_info e;
    int rc = parse_mode(kind, doc, len, mode, &r, &e);
    char *d = dump(kind, rc, &r, &e);

    assert_true(rc == 0 || rc == 1 || rc == BAD);
    if (rc != 0)
      assert_true(all_zero(&r, sizeof(r)));   /* nothing left behind */
    result_cleanup(kind, &r);
    if (!first) {
      first = d;
      first_rc = rc;
      continue;
    }
    if (rc != first_rc || strcmp(d, first))
      fail_msg("mode %d disagrees with one-shot:\n%s\n---\n%s", mode, d,
               first);
    free(d);
  }
  *rc_out = first_rc;
  return first;
}

/* ---- documents ---------------------------------------------------------- */

#define ETAG1 "&quot;fba9dede5f27731c9771645a39863328&quot;"
#define ETAG1_ "fba9dede5f27731c9771645a39863328"
#define OBJ(k, sz)                                                             \
  "<Contents><Key>" k "</Key><LastModified>2009-10-12T17:50:30.000Z"         \
  "</LastModified><ETag>" ETAG1 "</ETag><Size>" sz "</Size>"                   \
  "<StorageClass>STANDARD</StorageClass></Contents>"
#define OBJ_(k, sz) "obj " k "|" sz "|" ETAG1_ "|1255369830|STANDARD\n"
#define LIST1(body) DECL LBR "<Name>bucket</Name>" body LBR_END
#define END0 "trunc=0 next=(null) count=0"

#define LMU "<ListMultipartUploadsResult" NS
#define LMU_END "</ListMultipartUploadsResult>"
#define UPL(k, u) "<Upload><Key>" k "</Key><UploadId>" u "</UploadId></Upload>"
#define UPEND0 "trunc=0 next=(null)|(null)"
#define K256                                                                   \
  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"         \
  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"         \
  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"         \
  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define K1024 K256 K256 K256 K256

#define AWS_ERR                                                                \
  DECL "<Error><Code>NoSuchKey</Code><Message>The resource you requested "     \
       "does not exist</Message><Resource>/mybucket/myfoto.jpg</Resource>"     \
       "<RequestId>4442587FB7D0A2F9</RequestId></Error>"
#define AWS_ERR_                                                               \
  "error NoSuchKey|The resource you requested does not exist|"                 \
  "4442587FB7D0A2F9|/mybucket/myfoto.jpg"

static const struct xml_case cases[] = {
    /* ---- ListObjectsV2 ---- */
    {"list aws (docs example, pretty-printed)", S3_XML_LIST_OBJECTS,
     DECL "<ListBucketResult" NS ">\n"
          "    <Name>bucket</Name>\n    <Prefix/>\n"
          "    <KeyCount>205</KeyCount>\n    <MaxKeys>1000</MaxKeys>\n"
          "    <IsTruncated>false</IsTruncated>\n"
          "    <Contents>\n        <Key>my-image.jpg</Key>\n"
          "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
          "        <ETag>\"fba9dede5f27731c9771645a39863328\"</ETag>\n"
          "        <Size>434234</Size>\n"
          "        <StorageClass>STANDARD</StorageClass>\n"
          "    </Contents>\n"
          "    <Contents>\n        <Key>my-third-image.jpg</Key>\n"
          "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
          "        <ETag>&quot;1b2cf535f27731c974343645a3985328&quot;</ETag>\n"
          "        <Size>64994</Size>\n"
          "        <StorageClass>STANDARD_IA</StorageClass>\n"
          "    </Contents>\n</ListBucketResult>\n",
     0,
     "obj my-image.jpg|434234|" ETAG1_ "|1255369830|STANDARD\n"
     "obj my-third-image.jpg|64994|1b2cf535f27731c974343645a3985328|"
     "1255369830|STANDARD_IA\n"
     "trunc=0 next=(null) count=205"},
    {"list rgw (owner, type, prefixes, truncated)", S3_XML_LIST_OBJECTS,
     DECL "<ListBucketResult" NS "><Name>data</Name><Prefix></Prefix>"
          "<MaxKeys>2</MaxKeys><Delimiter>/</Delimiter>"
          "<IsTruncated>true</IsTruncated><Contents><Key>a.txt</Key>"
          "<LastModified>2023-05-01T10:00:00.123Z</LastModified>"
          "<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag>"
          "<Size>0</Size><StorageClass>STANDARD</StorageClass><Owner>"
          "<ID>tester</ID><DisplayName>Tester</DisplayName></Owner>"
          "<Type>Normal</Type></Contents><CommonPrefixes><Prefix>dir/"
          "</Prefix></CommonPrefixes><KeyCount>2</KeyCount>"
          "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4"
          "vbOwM=</NextContinuationToken></ListBucketResult>",
     0,
     "obj a.txt|0|d41d8cd98f00b204e9800998ecf8427e|1682935200|STANDARD\n"
     "pfx dir/\n"
     "trunc=1 next=1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM= count=2"},
    {"list minio (checksum, restore status, multipart etag)",
     S3_XML_LIST_OBJECTS,
     DECL "<ListBucketResult" NS "><Name>b</Name><Prefix>p/</Prefix>"
          "<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>"
          "<Delimiter>/</Delimiter><IsTruncated>false</IsTruncated>"
          "<Contents><Key>p/big.bin</Key>"
          "<LastModified>2024-02-29T00:00:00Z</LastModified>"
          "<ETag>&#34;3858f62230ac3c915f300c664312c11f-9&#34;</ETag>"
          "<Size>9223372036854775807</Size><Owner><ID>02d6176db174dc93cb1b8"
          "99f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4</ID><DisplayName>"
          "minio</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
          "<ChecksumAlgorithm>CRC32C</ChecksumAlgorithm><RestoreStatus>"
          "<IsRestoreInProgress>false</IsRestoreInProgress></RestoreStatus>"
          "</Contents></ListBucketResult>",
     0,
     "obj p/big.bin|9223372036854775807|3858f62230ac3c915f300c664312c11f-9|"
     "1709164800|STANDARD\n"
     "trunc=0 next=(null) count=1"},
    {"list prefixed namespace", S3_XML_LIST_OBJECTS,
     DECL "<s3:ListBucketResult "
          "xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
          "<s3:Contents><s3:Key>k</s3:Key><s3:Size>1</s3:Size></s3:Contents>"
          "<s3:IsTruncated>false</s3:IsTruncated></s3:ListBucketResult>",
     0, "obj k|1||0|\n" END0},
    {"list without namespace or declaration", S3_XML_LIST_OBJECTS,
     "<ListBucketResult><Contents><Key>k</Key><Size>7</Size><ETag>noquote"
     "</ETag></Contents></ListBucketResult>",
     0, "obj k|7|noquote|0|\n" END0},
    {"list other namespace", S3_XML_LIST_OBJECTS,
     "<ListBucketResult xmlns=\"urn:x\"><Contents><Key>k</Key><Size>7</Size>"
     "</Contents></ListBucketResult>",
     0, "obj k|7||0|\n" END0},
    {"list with BOM and attributes", S3_XML_LIST_OBJECTS,
     "\xEF\xBB\xBF" DECL "<ListBucketResult" NS " extra=\"1\">"
     "<Contents id=\"x\"><Key a=\"b\">k</Key><Size>7</Size></Contents>"
     LBR_END,
     0, "obj k|7||0|\n" END0},
    {"list empty", S3_XML_LIST_OBJECTS,
     LIST1("<Prefix>none/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000"
           "</MaxKeys><IsTruncated>false</IsTruncated>"),
     0, END0},
    {"list empty root", S3_XML_LIST_OBJECTS, "<ListBucketResult/>", 0, END0},
    {"list entities and char refs in keys", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a&amp;b &lt;c&gt; &apos;d&apos; &quot;e&quot;", "1")
               OBJ("&#x4E2D;&#25991;/&#x1F600;", "2")
                   OBJ("<![CDATA[x<y>&z]]>", "3")),
     0,
     OBJ_("a&b <c> 'd' \"e\"", "1") OBJ_("中文/😀", "2")
         OBJ_("x<y>&z", "3") END0},
    {"list utf-8 keys", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("photos/été/naïve café.jpg", "10")
               OBJ("日本語/ファイル", "11") OBJ("emoji/🎉.txt", "12")),
     0,
     OBJ_("photos/été/naïve café.jpg", "10") OBJ_("日本語/ファイル", "11")
         OBJ_("emoji/🎉.txt", "12") END0},
    {"list keys with spaces, tab, newline, CR ref", S3_XML_LIST_OBJECTS,
     LIST1(OBJ(" lead and trail ", "1") OBJ("a\tb\nc&#13;d", "2")),
     0, OBJ_(" lead and trail ", "1") OBJ_("a\tb\nc\rd", "2") END0},
    {"list without encoding keeps %XX and +", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a%20b+c", "1")), 0, OBJ_("a%20b+c", "1") END0},
    {"list encoding-type=url (AWS/MinIO style)", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType>" OBJ("my+file%281%29.txt", "1")
               OBJ("a%2Bb", "2") OBJ("%E4%B8%AD%E6%96%87/x%0Ay", "3")
                   OBJ("100%25", "4")
           "<CommonPrefixes><Prefix>dir+one/</Prefix></CommonPrefixes>"
           "<CommonPrefixes><Prefix>ctl%01/</Prefix></CommonPrefixes>"),
     0,
     OBJ_("my file(1).txt", "1") OBJ_("a+b", "2") OBJ_("中文/x\ny", "3")
         OBJ_("100%", "4") "pfx dir one/\npfx ctl\x01/\n" END0},
    {"list encoding-type=url (RGW style %20), declared last",
     S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a%20b", "1") OBJ("%c3%a9t%C3%A9", "2")
           "<EncodingType>url</EncodingType>"),
     0, OBJ_("a b", "1") OBJ_("été", "2") END0},
    {"list encoding-type=URL case-insensitive", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>URL</EncodingType>" OBJ("a%20b", "1")), 0,
     OBJ_("a b", "1") END0},
    {"list encoding-type token not decoded", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
           "<NextContinuationToken>a%20b+c</NextContinuationToken>"),
     0, "trunc=1 next=a%20b+c count=0"},
    {"list url bad hex", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType>" OBJ("a%G0", "1")), BAD, NULL},
    {"list url short escape", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType>" OBJ("a%2", "1")), BAD, NULL},
    {"list url short escape in prefix", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType><CommonPrefixes><Prefix>a%"
           "</Prefix></CommonPrefixes>"),
     BAD, NULL},
    {"list url %00", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>url</EncodingType>" OBJ("a%00b", "1")), BAD, NULL},
    {"list unknown encoding", S3_XML_LIST_OBJECTS,
     LIST1("<EncodingType>base64</EncodingType>" OBJ("a", "1")), BAD, NULL},
    {"list truncated without token", S3_XML_LIST_OBJECTS,
     LIST1("<IsTruncated>true</IsTruncated>" OBJ("a", "1")), BAD, NULL},
    {"list truncated with empty token", S3_XML_LIST_OBJECTS,
     LIST1("<IsTruncated>true</IsTruncated><NextContinuationToken/>"), BAD,
     NULL},
    {"list IsTruncated not a boolean", S3_XML_LIST_OBJECTS,
     LIST1("<IsTruncated>yes</IsTruncated>"), BAD, NULL},
    {"list IsTruncated with spaces", S3_XML_LIST_OBJECTS,
     LIST1("<IsTruncated> false</IsTruncated>"), BAD, NULL},
    {"list KeyCount too big", S3_XML_LIST_OBJECTS,
     LIST1("<KeyCount>4294967296</KeyCount>"), BAD, NULL},
    {"list KeyCount max", S3_XML_LIST_OBJECTS,
     LIST1("<KeyCount>4294967295</KeyCount>"), 0,
     "trunc=0 next=(null) count=4294967295"},
    {"list KeyCount negative", S3_XML_LIST_OBJECTS,
     LIST1("<KeyCount>-1</KeyCount>"), BAD, NULL},
    {"list Size negative", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "-1")), BAD,
     NULL},
    {"list Size plus sign", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "+1")), BAD,
     NULL},
    {"list Size not numeric", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "abc")),
     BAD, NULL},
    {"list Size trailing junk", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "12a")),
     BAD, NULL},
    {"list Size with space", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", " 12")),
     BAD, NULL},
    {"list Size empty", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "")), BAD, NULL},
    {"list Size fractional", S3_XML_LIST_OBJECTS, LIST1(OBJ("a", "1.5")),
     BAD, NULL},
    {"list Size overflows int64", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a", "9223372036854775808")), BAD, NULL},
    {"list Size way too long", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a", "000000000000000000000000000001")), BAD, NULL},
    {"list Size leading zeros", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a", "007")), 0, OBJ_("a", "7") END0},
    {"list missing Size", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key></Contents>"), BAD, NULL},
    {"list missing Key", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Size>1</Size></Contents>"), BAD, NULL},
    {"list empty Key", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key></Key><Size>1</Size></Contents>"), BAD, NULL},
    {"list Key twice", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents>"),
     BAD, NULL},
    {"list IsTruncated twice", S3_XML_LIST_OBJECTS,
     LIST1("<IsTruncated>false</IsTruncated><IsTruncated>true"
           "</IsTruncated>"),
     BAD, NULL},
    {"list empty CommonPrefix", S3_XML_LIST_OBJECTS,
     LIST1("<CommonPrefixes><Prefix/></CommonPrefixes>"), BAD, NULL},
    {"list CommonPrefixes without Prefix", S3_XML_LIST_OBJECTS,
     LIST1("<CommonPrefixes></CommonPrefixes>"), BAD, NULL},
    {"list bad LastModified", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key><Size>1</Size><LastModified>yesterday"
           "</LastModified></Contents>"),
     BAD, NULL},
    {"list ETag too long", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key><Size>1</Size><ETag>"
           "0123456789012345678901234567890123456789"
           "0123456789012345678901234567890123456789</ETag></Contents>"),
     BAD, NULL},
    {"list ETag only quotes", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key><Size>1</Size><ETag>&quot;&quot;</ETag>"
           "</Contents>"),
     BAD, NULL},
    {"list long StorageClass is cut", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a</Key><Size>1</Size><StorageClass>"
           "A_VERY_LONG_STORAGE_CLASS_NAME_FROM_THE_FUTURE</StorageClass>"
           "</Contents>"),
     0, "obj a|1||0|A_VERY_LONG_STORAGE_CLASS_NAME_\n" END0},
    {"list element inside Key", S3_XML_LIST_OBJECTS,
     LIST1("<Contents><Key>a<b/>c</Key><Size>1</Size></Contents>"), BAD,
     NULL},
    {"list unknown elements nested deep are skipped", S3_XML_LIST_OBJECTS,
     LIST1("<Future><A><B><C><D><Key>x</Key><Size>-1</Size></D></C></B></A>"
           "</Future>" OBJ("a", "1")),
     0, OBJ_("a", "1") END0},
    {"list Contents fields outside Contents are ignored",
     S3_XML_LIST_OBJECTS, LIST1("<Key>x</Key><Size>nan</Size>"), 0, END0},
    {"list comments and PIs", S3_XML_LIST_OBJECTS,
     DECL "<!-- hi --><?pi x?>" LBR "<!-- c -->" OBJ("a<!-- in -->b", "1")
         LBR_END "<!-- after -->",
     0, OBJ_("ab", "1") END0},
    {"list wrong root", S3_XML_LIST_OBJECTS,
     DECL "<ListAllMyBucketsResult" NS "></ListAllMyBucketsResult>", BAD,
     NULL},
    {"list root name prefix only", S3_XML_LIST_OBJECTS,
     "<ListBucketResultX/>", BAD, NULL},
    {"list truncated document", S3_XML_LIST_OBJECTS,
     DECL LBR OBJ("a", "1") "<Contents><Key>b</Ke", BAD, NULL},
    {"list unclosed root", S3_XML_LIST_OBJECTS, DECL LBR OBJ("a", "1"), BAD,
     NULL},
    {"list mismatched tags", S3_XML_LIST_OBJECTS,
     LBR "<Contents><Key>a</Size></Contents>" LBR_END, BAD, NULL},
    {"list junk after root", S3_XML_LIST_OBJECTS,
     LBR LBR_END "<ListBucketResult/>", BAD, NULL},
    {"list text after root", S3_XML_LIST_OBJECTS, LBR LBR_END "junk", BAD,
     NULL},
    {"list undefined entity", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a&nbsp;b", "1")), BAD, NULL},
    {"list NUL char ref", S3_XML_LIST_OBJECTS, LIST1(OBJ("a&#0;b", "1")),
     BAD, NULL},
    {"list invalid utf-8", S3_XML_LIST_OBJECTS,
     LIST1(OBJ("a\xff\xfe", "1")), BAD, NULL},
    {"list unbound prefix", S3_XML_LIST_OBJECTS,
     "<s3:ListBucketResult></s3:ListBucketResult>", BAD, NULL},
    {"list late XML declaration", S3_XML_LIST_OBJECTS,
     "<!-- x -->" DECL LBR LBR_END, BAD, NULL},
    {"list DOCTYPE billion laughs", S3_XML_LIST_OBJECTS,
     DECL "<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
          "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
          "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">"
          "<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">"
          "<!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">"
          "<!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">"
          "<!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">"
          "<!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">"
          "<!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">]>"
          LBR OBJ("&lol9;", "1") LBR_END,
     BAD, NULL},
    {"list DOCTYPE external entity", S3_XML_LIST_OBJECTS,
     DECL "<!DOCTYPE r [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>" LBR
         OBJ("&xxe;", "1") LBR_END,
     BAD, NULL},
    {"list DOCTYPE alone", S3_XML_LIST_OBJECTS,
     DECL "<!DOCTYPE ListBucketResult>" LBR LBR_END, BAD, NULL},
    {"list DOCTYPE external DTD", S3_XML_LIST_OBJECTS,
     "<!DOCTYPE x SYSTEM \"http://example.com/x.dtd\">" LBR LBR_END, BAD,
     NULL},
    {"empty body", S3_XML_LIST_OBJECTS, "", BAD, NULL},
    {"whitespace body", S3_XML_LIST_OBJECTS, " \r\n\t ", BAD, NULL},
    {"garbage body", S3_XML_LIST_OBJECTS, "Service Unavailable", BAD, NULL},
    {"html body", S3_XML_LIST_OBJECTS,
     "<html><body><h1>502 Bad Gateway</h1></body></html>", BAD, NULL},
    {"json body", S3_XML_LIST_OBJECTS, "{\"Code\":\"NoSuchKey\"}", BAD,
     NULL},

    /* ---- ListAllMyBucketsResult ---- */
    {"buckets aws", S3_XML_LIST_BUCKETS,
     DECL "<ListAllMyBucketsResult" NS "><Owner><ID>bcaf1ffd86f461ca5fb16fd0"
          "81034f</ID><DisplayName>webfile</DisplayName></Owner><Buckets>"
          "<Bucket><Name>quotes</Name><CreationDate>2006-02-03T16:45:09.000Z"
          "</CreationDate></Bucket><Bucket><Name>samples</Name>"
          "<CreationDate>2006-02-03T16:41:58.000Z</CreationDate></Bucket>"
          "</Buckets></ListAllMyBucketsResult>",
     0, "bkt quotes|1138985109\nbkt samples|1138984918\nn=2"},
    {"buckets rgw pretty", S3_XML_LIST_BUCKETS,
     DECL "<ListAllMyBucketsResult" NS ">\n  <Owner>\n    <ID>tester</ID>\n"
          "  </Owner>\n  <Buckets>\n    <Bucket>\n      <Name>b1</Name>\n"
          "      <CreationDate>2023-05-01T10:00:00.000Z</CreationDate>\n"
          "    </Bucket>\n  </Buckets>\n</ListAllMyBucketsResult>\n",
     0, "bkt b1|1682935200\nn=1"},
    {"buckets none", S3_XML_LIST_BUCKETS,
     DECL "<ListAllMyBucketsResult" NS "><Owner><ID>x</ID></Owner><Buckets/>"
          "</ListAllMyBucketsResult>",
     0, "n=0"},
    {"buckets without date", S3_XML_LIST_BUCKETS,
     "<ListAllMyBucketsResult><Buckets><Bucket><Name>b</Name></Bucket>"
     "</Buckets></ListAllMyBucketsResult>",
     0, "bkt b|0\nn=1"},
    {"buckets missing name", S3_XML_LIST_BUCKETS,
     "<ListAllMyBucketsResult><Buckets><Bucket><CreationDate>"
     "2006-02-03T16:45:09.000Z</CreationDate></Bucket></Buckets>"
     "</ListAllMyBucketsResult>",
     BAD, NULL},
    {"buckets bad date", S3_XML_LIST_BUCKETS,
     "<ListAllMyBucketsResult><Buckets><Bucket><Name>b</Name><CreationDate>"
     "2006-02-30T16:45:09.000Z</CreationDate></Bucket></Buckets>"
     "</ListAllMyBucketsResult>",
     BAD, NULL},
    {"buckets Bucket outside Buckets ignored", S3_XML_LIST_BUCKETS,
     "<ListAllMyBucketsResult><Bucket><Name>b</Name></Bucket>"
     "</ListAllMyBucketsResult>",
     0, "n=0"},
    {"buckets wrong root", S3_XML_LIST_BUCKETS, LBR LBR_END, BAD, NULL},

    /* ---- InitiateMultipartUploadResult ---- */
    {"initiate aws", S3_XML_INITIATE_MPU,
     DECL "<InitiateMultipartUploadResult" NS "><Bucket>example-bucket"
          "</Bucket><Key>example-object</Key><UploadId>VXBsb2FkIElEIGZvciA2a"
          "WWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
          "</InitiateMultipartUploadResult>",
     0, "upload VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"},
    {"initiate rgw", S3_XML_INITIATE_MPU,
     DECL "<InitiateMultipartUploadResult" NS "><Tenant></Tenant><Bucket>b"
          "</Bucket><Key>k</Key><UploadId>2~iCw_lDY8VoNRfGcwYMDAbJaUvbpNyNF"
          "</UploadId></InitiateMultipartUploadResult>",
     0, "upload 2~iCw_lDY8VoNRfGcwYMDAbJaUvbpNyNF"},
    {"initiate missing UploadId", S3_XML_INITIATE_MPU,
     "<InitiateMultipartUploadResult><Bucket>b</Bucket>"
     "</InitiateMultipartUploadResult>",
     BAD, NULL},
    {"initiate empty UploadId", S3_XML_INITIATE_MPU,
     "<InitiateMultipartUploadResult><UploadId></UploadId>"
     "</InitiateMultipartUploadResult>",
     BAD, NULL},
    {"initiate UploadId twice", S3_XML_INITIATE_MPU,
     "<InitiateMultipartUploadResult><UploadId>a</UploadId><UploadId>b"
     "</UploadId></InitiateMultipartUploadResult>",
     BAD, NULL},

    /* ---- CompleteMultipartUploadResult ---- */
    {"complete aws", S3_XML_COMPLETE_MPU,
     DECL "<CompleteMultipartUploadResult" NS "><Location>http://Example-Buc"
          "ket.s3.Region.amazonaws.com/Example-Object</Location><Bucket>"
          "Example-Bucket</Bucket><Key>Example-Object</Key><ETag>"
          "\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
          "</CompleteMultipartUploadResult>",
     0, "etag 3858f62230ac3c915f300c664312c11f-9|0"},
    {"complete after keep-alive whitespace", S3_XML_COMPLETE_MPU,
     "          \n\n  \r\n" DECL "\n\n   <CompleteMultipartUploadResult" NS
     "><ETag>&quot;abc-2&quot;</ETag></CompleteMultipartUploadResult>",
     0, "etag abc-2|0"},
    {"complete 200 with Error after whitespace", S3_XML_COMPLETE_MPU,
     "     \n     \n" DECL "\n<Error><Code>InternalError</Code><Message>We "
     "encountered an internal error. Please try again.</Message><RequestId>"
     "656c76696e6727732072657175657374</RequestId><HostId>Uuag1LuByRx9e6j5"
     "Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>",
     1,
     "error InternalError|We encountered an internal error. Please try "
     "again.|656c76696e6727732072657175657374|"},
    {"complete with RGW 16's empty ETag", S3_XML_COMPLETE_MPU,
     DECL "<CompleteMultipartUploadResult" NS "><Location>http://127.0.0.1:"
          "7480/dbg/x</Location><Bucket>dbg</Bucket><Key>x</Key><ETag></ETag>"
          "</CompleteMultipartUploadResult>",
     0, "etag |0"},
    {"complete missing ETag", S3_XML_COMPLETE_MPU,
     "<CompleteMultipartUploadResult><Key>k</Key>"
     "</CompleteMultipartUploadResult>",
     BAD, NULL},
    {"complete given a copy result", S3_XML_COMPLETE_MPU,
     "<CopyObjectResult><ETag>\"a\"</ETag></CopyObjectResult>", BAD, NULL},

    /* ---- CopyObjectResult / CopyPartResult ---- */
    {"copy object aws", S3_XML_COPY_RESULT,
     DECL "<CopyObjectResult" NS "><LastModified>2009-10-12T17:50:30.000Z"
          "</LastModified><ETag>\"9b2cf535f27731c974343645a3985328\"</ETag>"
          "</CopyObjectResult>",
     0, "etag 9b2cf535f27731c974343645a3985328|1255369830"},
    {"copy object docs example without zone", S3_XML_COPY_RESULT,
     "<CopyObjectResult><LastModified>2009-10-28T22:32:00</LastModified>"
     "<ETag>\"9b2cf535f27731c974343645a3985328\"</ETag></CopyObjectResult>",
     0, "etag 9b2cf535f27731c974343645a3985328|1256769120"},
    {"copy part", S3_XML_COPY_RESULT,
     DECL "<CopyPartResult" NS "><LastModified>2011-04-11T20:34:56.000Z"
          "</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;"
          "</ETag><ChecksumCRC32>abc=</ChecksumCRC32></CopyPartResult>",
     0, "etag 9b2cf535f27731c974343645a3985328|1302554096"},
    {"copy without LastModified", S3_XML_COPY_RESULT,
     "<CopyObjectResult><ETag>e</ETag></CopyObjectResult>", 0, "etag e|0"},
    {"copy 200 with Error", S3_XML_COPY_RESULT,
     DECL "<Error><Code>SlowDown</Code><Message>Please reduce your request "
          "rate.</Message><RequestId>r1</RequestId></Error>",
     1, "error SlowDown|Please reduce your request rate.|r1|"},
    {"copy missing ETag", S3_XML_COPY_RESULT,
     "<CopyObjectResult><LastModified>2009-10-12T17:50:30.000Z"
     "</LastModified></CopyObjectResult>",
     BAD, NULL},
    {"copy bad LastModified", S3_XML_COPY_RESULT,
     "<CopyObjectResult><LastModified>2009-10-12</LastModified><ETag>e"
     "</ETag></CopyObjectResult>",
     BAD, NULL},

    /* ---- DeleteResult ---- */
    {"delete aws mixed", S3_XML_DELETE_RESULT,
     DECL "<DeleteResult" NS "><Deleted><Key>sample1.txt</Key></Deleted>"
          "<Error><Key>sample2.txt</Key><Code>AccessDenied</Code><Message>"
          "Access Denied</Message></Error></DeleteResult>",
     0, "del sample1.txt\nerr sample2.txt|AccessDenied|Access Denied\nn=1/1"},
    {"delete versioned", S3_XML_DELETE_RESULT,
     DECL "<DeleteResult" NS "><Deleted><Key>a&amp;b</Key><DeleteMarker>true"
          "</DeleteMarker><DeleteMarkerVersionId>NeQt5xeFTfgPJD8B4CGWnkSLtl"
          "uMr11s</DeleteMarkerVersionId></Deleted><Deleted><Key>c</Key>"
          "<VersionId>v1</VersionId></Deleted></DeleteResult>",
     0, "del a&b\ndel c\nn=2/0"},
    {"delete quiet, nothing to report", S3_XML_DELETE_RESULT,
     DECL "<DeleteResult" NS "></DeleteResult>", 0, "n=0/0"},
    {"delete quiet, self-closing", S3_XML_DELETE_RESULT, "<DeleteResult/>",
     0, "n=0/0"},
    {"delete error without code", S3_XML_DELETE_RESULT,
     "<DeleteResult><Error><Key>k</Key></Error></DeleteResult>", 0,
     "err k||\nn=0/1"},
    {"delete error without key", S3_XML_DELETE_RESULT,
     "<DeleteResult><Error><Code>InternalError</Code></Error></DeleteResult>",
     BAD, NULL},
    {"delete deleted without key", S3_XML_DELETE_RESULT,
     "<DeleteResult><Deleted><VersionId>v</VersionId></Deleted>"
     "</DeleteResult>",
     BAD, NULL},
    {"delete error code too long", S3_XML_DELETE_RESULT,
     "<DeleteResult><Error><Key>k</Key><Code>"
     "0123456789012345678901234567890123456789012345678901234567890123"
     "</Code></Error></DeleteResult>",
     BAD, NULL},

    /* ---- ListPartsResult ---- */
    {"parts aws (pretty, truncated, owner)", S3_XML_LIST_PARTS,
     DECL "<ListPartsResult" NS ">\n  <Bucket>b</Bucket>\n  <Key>k</Key>\n"
          "  <UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9h"
          "</UploadId>\n  <Initiator><ID>i</ID></Initiator>\n"
          "  <PartNumberMarker>1</PartNumberMarker>\n"
          "  <NextPartNumberMarker>3</NextPartNumberMarker>\n"
          "  <MaxParts>2</MaxParts>\n  <IsTruncated>true</IsTruncated>\n"
          "  <Part>\n    <PartNumber>2</PartNumber>\n"
          "    <LastModified>2010-11-10T20:48:34.000Z</LastModified>\n"
          "    <ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag>\n"
          "    <Size>10485760</Size>\n  </Part>\n"
          "  <Part><PartNumber>3</PartNumber><ETag>\"aaaa\"</ETag>"
          "<Size>1</Size></Part>\n</ListPartsResult>\n",
     0,
     "part 2|10485760|7778aef83f66abc1fa1e8477f296d394\npart 3|1|aaaa\n"
     "trunc=1 next=3"},
    {"parts none", S3_XML_LIST_PARTS,
     "<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>", 0,
     "trunc=0 next=0"},
    {"parts truncated without a marker", S3_XML_LIST_PARTS,
     "<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>",
     BAD, NULL},
    {"parts part without a size", S3_XML_LIST_PARTS,
     "<ListPartsResult><Part><PartNumber>1</PartNumber><ETag>a</ETag></Part>"
     "</ListPartsResult>",
     BAD, NULL},
    {"parts part without an ETag", S3_XML_LIST_PARTS,
     "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>1</Size></Part>"
     "</ListPartsResult>",
     BAD, NULL},
    {"parts part number 0", S3_XML_LIST_PARTS,
     "<ListPartsResult><Part><PartNumber>0</PartNumber><ETag>a</ETag>"
     "<Size>1</Size></Part></ListPartsResult>",
     BAD, NULL},
    {"parts part number over 10000", S3_XML_LIST_PARTS,
     "<ListPartsResult><Part><PartNumber>10001</PartNumber><ETag>a</ETag>"
     "<Size>1</Size></Part></ListPartsResult>",
     BAD, NULL},

    /* ---- ListMultipartUploadsResult ---- */
    {"uploads aws (pretty, truncated, owner, initiator)", S3_XML_LIST_UPLOADS,
     DECL LMU ">\n  <Bucket>bucket</Bucket>\n  <KeyMarker></KeyMarker>\n"
          "  <UploadIdMarker></UploadIdMarker>\n"
          "  <NextKeyMarker>my-movie.m2ts</NextKeyMarker>\n"
          "  <NextUploadIdMarker>YW55IGlkZWEgd2h5</NextUploadIdMarker>\n"
          "  <MaxUploads>2</MaxUploads>\n  <IsTruncated>true</IsTruncated>\n"
          "  <Upload>\n    <Key>my-divisor</Key>\n"
          "    <UploadId>XMgbGlrZSBlbHZpbmcncyBub3Q</UploadId>\n"
          "    <Initiator>\n      <ID>arn:aws:iam::111122223333:user/u1</ID>\n"
          "      <DisplayName>u1</DisplayName>\n    </Initiator>\n"
          "    <Owner>\n      <ID>75aa57f09aa0c8caeab4f8c24e99d10f</ID>\n"
          "      <DisplayName>Owner</DisplayName>\n    </Owner>\n"
          "    <StorageClass>STANDARD</StorageClass>\n"
          "    <Initiated>2010-11-10T20:48:33.000Z</Initiated>\n"
          "  </Upload>\n"
          "  <Upload>\n    <Key>my-movie.m2ts</Key>\n"
          "    <UploadId>YW55IGlkZWEgd2h5</UploadId>\n"
          "    <StorageClass>STANDARD</StorageClass>\n"
          "    <Initiated>2010-11-10T20:49:33.000Z</Initiated>\n"
          "  </Upload>\n" LMU_END "\n",
     0,
     "up my-divisor|XMgbGlrZSBlbHZpbmcncyBub3Q|1289422113\n"
     "up my-movie.m2ts|YW55IGlkZWEgd2h5|1289422173\n"
     "trunc=1 next=my-movie.m2ts|YW55IGlkZWEgd2h5"},
    {"uploads rgw (as Ceph 16 sends it)", S3_XML_LIST_UPLOADS,
     DECL LMU "><Bucket>b</Bucket><NextKeyMarker>a b/c+d</NextKeyMarker>"
          "<NextUploadIdMarker>2~rBL0r-CXa1xxr5</NextUploadIdMarker>"
          "<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>"
          "<Upload><Key>a b/c+d</Key><UploadId>2~ZdOKhwLWiUDaYxgw</UploadId>"
          "<Initiator><ID>s3rdmafs</ID><DisplayName>t</DisplayName>"
          "</Initiator><Owner><ID>s3rdmafs</ID><DisplayName>t</DisplayName>"
          "</Owner><StorageClass>STANDARD</StorageClass><Initiated>"
          "2023-05-01T10:00:00.251Z</Initiated></Upload><Upload><Key>a b/c+d"
          "</Key><UploadId>2~rBL0r-CXa1xxr5</UploadId><Initiated>"
          "2023-05-01T10:00:01.519Z</Initiated></Upload>" LMU_END,
     0,
     "up a b/c+d|2~ZdOKhwLWiUDaYxgw|1682935200\n"
     "up a b/c+d|2~rBL0r-CXa1xxr5|1682935201\n"
     "trunc=0 next=a b/c+d|2~rBL0r-CXa1xxr5"},
    {"uploads none", S3_XML_LIST_UPLOADS,
     DECL LMU "><Bucket>b</Bucket><MaxUploads>1000</MaxUploads>"
          "<IsTruncated>false</IsTruncated>" LMU_END,
     0, "trunc=0 next=(null)|(null)"},
    {"uploads empty root, empty markers", S3_XML_LIST_UPLOADS,
     "<ListMultipartUploadsResult><NextKeyMarker/><NextUploadIdMarker>"
     "</NextUploadIdMarker></ListMultipartUploadsResult>",
     0, "trunc=0 next=(null)|(null)"},
    {"uploads without Initiated", S3_XML_LIST_UPLOADS,
     LMU ">" UPL("k", "u") LMU_END, 0, "up k|u|0\n" UPEND0},
    {"uploads entities, utf-8, prefixes ignored", S3_XML_LIST_UPLOADS,
     LMU "><Prefix>d/</Prefix><Delimiter>/</Delimiter>"
         "<CommonPrefixes><Prefix>d/e/</Prefix></CommonPrefixes>"
         UPL("d/a&amp;b &lt;c&gt;", "u1") UPL("d/été 😀", "u&amp;2") LMU_END,
     0, "up d/a&b <c>|u1|0\nup d/été 😀|u&2|0\n" UPEND0},
    {"uploads encoding-type=url (AWS style)", S3_XML_LIST_UPLOADS,
     LMU "><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
         "<NextKeyMarker>my+file%2B1</NextKeyMarker>"
         "<NextUploadIdMarker>id%20x</NextUploadIdMarker>"
         UPL("my+file%2B1", "id%20x") LMU_END,
     0, "up my file+1|id%20x|0\ntrunc=1 next=my file+1|id%20x"},
    {"uploads url bad escape", S3_XML_LIST_UPLOADS,
     LMU "><EncodingType>url</EncodingType>" UPL("a%zz", "u") LMU_END, BAD,
     NULL},
    {"uploads url bad escape in marker", S3_XML_LIST_UPLOADS,
     LMU "><EncodingType>url</EncodingType><NextKeyMarker>a%2</NextKeyMarker>"
         LMU_END,
     BAD, NULL},
    {"uploads missing Key", S3_XML_LIST_UPLOADS,
     LMU "><Upload><UploadId>u</UploadId></Upload>" LMU_END, BAD, NULL},
    {"uploads missing UploadId", S3_XML_LIST_UPLOADS,
     LMU "><Upload><Key>k</Key><Initiated>2010-11-10T20:48:33.000Z"
         "</Initiated></Upload>" LMU_END,
     BAD, NULL},
    {"uploads empty Key", S3_XML_LIST_UPLOADS, LMU ">" UPL("", "u") LMU_END,
     BAD, NULL},
    {"uploads empty UploadId", S3_XML_LIST_UPLOADS,
     LMU ">" UPL("k", "") LMU_END, BAD, NULL},
    {"uploads UploadId twice", S3_XML_LIST_UPLOADS,
     LMU "><Upload><Key>k</Key><UploadId>a</UploadId><UploadId>b</UploadId>"
         "</Upload>" LMU_END,
     BAD, NULL},
    {"uploads bad Initiated", S3_XML_LIST_UPLOADS,
     LMU "><Upload><Key>k</Key><UploadId>u</UploadId><Initiated>2010-11-31T"
         "00:00:00Z</Initiated></Upload>" LMU_END,
     BAD, NULL},
    {"uploads Initiated in HTTP date format", S3_XML_LIST_UPLOADS,
     LMU "><Upload><Key>k</Key><UploadId>u</UploadId><Initiated>Wed, 10 Nov "
         "2010 20:48:33 GMT</Initiated></Upload>" LMU_END,
     BAD, NULL},
    {"uploads truncated without markers", S3_XML_LIST_UPLOADS,
     LMU "><IsTruncated>true</IsTruncated>" UPL("k", "u") LMU_END, BAD, NULL},
    {"uploads truncated without NextUploadIdMarker", S3_XML_LIST_UPLOADS,
     LMU "><IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker>"
         UPL("k", "u") LMU_END,
     BAD, NULL},
    {"uploads truncated with empty NextKeyMarker", S3_XML_LIST_UPLOADS,
     LMU "><IsTruncated>true</IsTruncated><NextKeyMarker></NextKeyMarker>"
         "<NextUploadIdMarker>u</NextUploadIdMarker>" UPL("k", "u") LMU_END,
     BAD, NULL},
    {"uploads IsTruncated not a boolean", S3_XML_LIST_UPLOADS,
     LMU "><IsTruncated>1</IsTruncated>" LMU_END, BAD, NULL},
    {"uploads UploadId too long", S3_XML_LIST_UPLOADS,
     LMU ">" UPL("k", K1024 K1024 K1024 K1024 "x") LMU_END, BAD, NULL},
    {"uploads element inside Key", S3_XML_LIST_UPLOADS,
     LMU "><Upload><Key>a<b/></Key><UploadId>u</UploadId></Upload>" LMU_END,
     BAD, NULL},
    {"uploads Upload fields outside Upload ignored", S3_XML_LIST_UPLOADS,
     LMU "><Key>k</Key><UploadId></UploadId><Initiated>x</Initiated>" LMU_END,
     0, UPEND0},
    {"uploads wrong root", S3_XML_LIST_UPLOADS, LBR LBR_END, BAD, NULL},
    {"uploads given an initiate result", S3_XML_LIST_UPLOADS,
     "<InitiateMultipartUploadResult><UploadId>u</UploadId>"
     "</InitiateMultipartUploadResult>",
     BAD, NULL},
    {"uploads truncated document", S3_XML_LIST_UPLOADS,
     DECL LMU ">" UPL("k", "u") "<Upload><Key>k2</Key>", BAD, NULL},
    {"uploads 200 with Error", S3_XML_LIST_UPLOADS,
     DECL "<Error><Code>NoSuchBucket</Code><Message>no</Message></Error>", 1,
     "error NoSuchBucket|no||"},

    /* ---- <Error> ---- */
    {"error aws", S3_XML_ERROR, AWS_ERR, 1, AWS_ERR_},
    {"error rgw", S3_XML_ERROR,
     DECL "<Error><Code>NoSuchBucket</Code><BucketName>nope</BucketName>"
          "<RequestId>tx00000d1a0b2c3d4e5f6a7-0064500000-1234-default"
          "</RequestId><HostId>1234-default-default</HostId></Error>",
     1,
     "error NoSuchBucket||tx00000d1a0b2c3d4e5f6a7-0064500000-1234-default|"},
    {"error minio", S3_XML_ERROR,
     DECL "<Error><Code>AccessDenied</Code><Message>Access Denied.</Message>"
          "<Key>a/b</Key><BucketName>b</BucketName><Resource>/b/a/b"
          "</Resource><RequestId>17B2D1C4A5E6F708</RequestId><HostId>dd9025"
          "bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8"
          "</HostId></Error>",
     1, "error AccessDenied|Access Denied.|17B2D1C4A5E6F708|/b/a/b"},
    {"error with namespace", S3_XML_ERROR,
     "<Error" NS "><Code>SlowDown</Code></Error>", 1, "error SlowDown|||"},
    {"error without code", S3_XML_ERROR,
     "<Error><Message>m</Message></Error>", 1, "error |m||"},
    {"error code too long", S3_XML_ERROR,
     "<Error><Code>"
     "0123456789012345678901234567890123456789012345678901234567890123"
     "</Code></Error>",
     BAD, NULL},
    {"error long message is cut at a character", S3_XML_ERROR,
     "<Error><Code>X</Code><Message>"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "é and more</Message></Error>",
     1,
     "error X|"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "||"},
    {"error only is accepted", S3_XML_ERROR, LBR LBR_END, BAD, NULL},
    {"error empty", S3_XML_ERROR, "", BAD, NULL},
    {"error nested Error is not a root", S3_XML_LIST_OBJECTS,
     LBR "<Error><Code>X</Code></Error>" LBR_END, 0, END0},
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static void run_case(void **state)
{
  const struct xml_case *c = *state;
  int rc;
  char *got = parse_all(c->kind, c->doc, strlen(c->doc), &rc);

  if (rc != c->rc)
    fail_msg("rc %d, want %d (%s)", rc, c->rc, got);
  if (c->want && strcmp(got, c->want))
    fail_msg("got:\n%s\nwant:\n%s", got, c->want);
  free(got);
}

/* ---- <Error> for every kind --------------------------------------------- */

static void test_error_every_kind(void **state)
{
  static const enum s3_xml_kind kinds[] = {
      S3_XML_ERROR,         S3_XML_LIST_OBJECTS, S3_XML_LIST_BUCKETS,
      S3_XML_INITIATE_MPU,  S3_XML_COMPLETE_MPU, S3_XML_COPY_RESULT,
      S3_XML_DELETE_RESULT, S3_XML_LIST_UPLOADS, S3_XML_LIST_PARTS,
  };
  static const char *const docs[] = {
      AWS_ERR,
      "<Error" NS "><Code>NoSuchKey</Code><Message>The resource you "
      "requested does not exist</Message><Resource>/mybucket/myfoto.jpg"
      "</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>",
      "  \n" AWS_ERR "\n",
  };

  (void)state;
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
      int rc;
      char *got = parse_all(kinds[k], docs[d], strlen(docs[d]), &rc);

      assert_int_equal(rc, 1);
      assert_string_equal(got, AWS_ERR_);
      free(got);
    }
  }
}

/* ---- cut documents and mutations ---------------------------------------- */

/* Every proper prefix of a valid document, up to its last '>', is bad. */
static void test_every_prefix_is_bad(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_CASES; i++) {
    const char *doc = cases[i].doc;
    const char *last = strrchr(doc, '>');
    const char *etag = NULL;

    /* the root's end: the '>' of the last end tag, else the last '>' */
    for (const char *s = strstr(doc, "</"); s; s = strstr(s + 2, "</"))
      etag = s;
    if (etag)
      last = strchr(etag, '>');
    if (cases[i].rc < 0 || !last)
      continue;
    for (size_t n = 0; n < (size_t)(last - doc); n++) {
      union result r;
      struct s3_error_info e;
      int rc = parse_mode(cases[i].kind, doc, n, (int)(n % 4), &r, &e);

      if (rc != BAD)
        fail_msg("%s: prefix of %zu bytes gave %d", cases[i].name, n, rc);
      assert_true(all_zero(&r, sizeof(r)));
    }
  }
}

/* Random damage: never a crash or a leak, chunking never changes the answer. */
static void test_mutations(void **state)
{
  static const char junk[] = "<>&;/\"'= a0%#x\x80\xff\xc3";
  uint64_t seed = 42;

  (void)state;
  for (size_t i = 0; i < N_CASES; i++) {
    size_t len = strlen(cases[i].doc);

    if (cases[i].rc < 0 || len < 2)
      continue;
    for (int m = 0; m < 60; m++) {
      char *doc = malloc(len + 16);
      size_t n = len, at;
      int rc;
      char *got;

      assert_non_null(doc);
      memcpy(doc, cases[i].doc, len);
      for (int k = 1 + (int)(prng(&seed) % 3); k > 0; k--) {
        at = prng(&seed) % n;
        switch (prng(&seed) % 3) {
        case 0:
          doc[at] = junk[prng(&seed) % (sizeof(junk) - 1)];
          break;
        case 1:
          memmove(doc + at, doc + at + 1, n - at - 1);
          n--;
          break;
        default:
          if (n < len + 15) {
            memmove(doc + at + 1, doc + at, n - at);
            doc[at] = junk[prng(&seed) % (sizeof(junk) - 1)];
            n++;
          }
        }
      }
      got = parse_all(cases[i].kind, doc, n, &rc);
      free(got);
      free(doc);
    }
  }
}

/* ---- limits ------------------------------------------------------------- */

static char *build_list(size_t n_prefixes, size_t *len)
{
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);

  assert_non_null(f);
  fputs(DECL LBR, f);
  for (size_t i = 0; i < n_prefixes; i++)
    fprintf(f, "<CommonPrefixes><Prefix>p%zu/</Prefix></CommonPrefixes>", i);
  fputs(LBR_END, f);
  fclose(f);
  *len = size;
  return buf;
}

static void test_entry_limit(void **state)
{
  struct s3_list_result r = {0};
  struct s3_error_info e;
  size_t len;
  char *doc = build_list(100000, &len);

  (void)state;
  assert_int_equal(s3_xml_parse(S3_XML_LIST_OBJECTS, doc, len, &r, &e), 0);
  assert_int_equal(r.n_prefixes, 100000);
  assert_string_equal(r.prefixes[99999], "p99999/");
  s3_list_result_cleanup(&r);
  free(doc);

  doc = build_list(100001, &len);
  assert_int_equal(s3_xml_parse(S3_XML_LIST_OBJECTS, doc, len, &r, &e), BAD);
  assert_true(all_zero(&r, sizeof(r)));
  free(doc);
}

static void test_text_limit(void **state)
{
  static const char *const pieces[] = {"a", "&amp;", "&#x4E2D;"};
  const size_t piece_bytes[] = {1, 1, 3};

  (void)state;
  for (size_t p = 0; p < 3; p++) {
    size_t fit = 4096 / piece_bytes[p];

    for (size_t n = fit - 1; n <= fit + 1; n++) {
      char *buf = NULL;
      size_t size = 0, key_bytes = n * piece_bytes[p];
      FILE *f = open_memstream(&buf, &size);
      struct s3_list_result r = {0};
      struct s3_error_info e;
      int rc, want = key_bytes <= 4096 ? 0 : BAD;

      fputs(LBR "<Contents><Key>", f);
      for (size_t i = 0; i < n; i++)
        fputs(pieces[p], f);
      fputs("</Key><Size>1</Size></Contents>" LBR_END, f);
      fclose(f);
      rc = s3_xml_parse(S3_XML_LIST_OBJECTS, buf, size, &r, &e);
      if (rc != want)
        fail_msg("piece %zu x %zu (%zu bytes): rc %d", p, n, key_bytes, rc);
      if (!rc)
        assert_int_equal(strlen(r.objects[0].key), key_bytes);
      s3_list_result_cleanup(&r);
      free(buf);
    }
  }
}

static void test_depth_limit(void **state)
{
  (void)state;
  for (int depth = 30; depth <= 34; depth++) {
    char buf[1024] = LBR;
    struct s3_list_result r = {0};
    struct s3_error_info e;
    int rc;

    /* the root is level 1, then depth-1 nested unknown elements */
    for (int i = 1; i < depth; i++)
      strcat(buf, "<a>");
    for (int i = 1; i < depth; i++)
      strcat(buf, "</a>");
    strcat(buf, LBR_END);
    rc = s3_xml_parse(S3_XML_LIST_OBJECTS, buf, strlen(buf), &r, &e);
    assert_int_equal(rc, depth <= 32 ? 0 : BAD);
    s3_list_result_cleanup(&r);
  }
}

static void test_body_limit(void **state)
{
  struct s3_list_result r = {0};
  struct s3_error_info e;
  struct s3_xml *x = s3_xml_create(S3_XML_LIST_OBJECTS, &r, &e);
  size_t chunk = 1 << 20;
  char *spaces = malloc(chunk);
  int rc = 0, i;

  (void)state;
  assert_non_null(x);
  assert_non_null(spaces);
  memset(spaces, ' ', chunk);
  assert_int_equal(s3_xml_feed(x, LBR, strlen(LBR)), 0);
  for (i = 0; i < 70 && !rc; i++)
    rc = s3_xml_feed(x, spaces, chunk);
  assert_int_equal(rc, BAD);
  assert_int_equal(i, 64);    /* 64 MiB in all, the tag included */
  assert_int_equal(s3_xml_finish(x), BAD);
  s3_xml_destroy(x);
  free(spaces);
}

static void test_api_edges(void **state)
{
  union result r;
  struct s3_error_info e;
  struct s3_xml *x;

  (void)state;
  assert_null(s3_xml_create(S3_XML_LIST_OBJECTS, NULL, &e));
  assert_int_equal(s3_xml_parse(S3_XML_LIST_OBJECTS, "<x/>", 4, NULL, &e),
                   -EINVAL);
  /* err may be NULL: an Error document is still recognised */
  memset(&r, 0, sizeof(r));
  assert_int_equal(s3_xml_parse(S3_XML_COPY_RESULT, AWS_ERR,
                                strlen(AWS_ERR), &r, NULL),
                   1);
  /* destroy without finish, mid-record, frees what is staged */
  memset(&r, 0, sizeof(r));
  x = s3_xml_create(S3_XML_LIST_OBJECTS, &r, &e);
  assert_non_null(x);
  assert_int_equal(s3_xml_feed(x, LIST1(OBJ("a", "1")),
                               strlen(LIST1(OBJ("a", "1"))) - 40),
                   0);
  s3_xml_destroy(x);
  s3_list_result_cleanup(&r.list);
  s3_xml_destroy(NULL);
  s3_list_result_cleanup(NULL);
  s3_buckets_result_cleanup(NULL);
  s3_mpu_result_cleanup(NULL);
  s3_delete_result_cleanup(NULL);
  s3_uploads_result_cleanup(NULL);
  /* feeding nothing is fine */
  x = s3_xml_create(S3_XML_ERROR, NULL, &e);
  assert_int_equal(s3_xml_feed(x, "", 0), 0);
  assert_int_equal(s3_xml_feed(x, "<Error/>", 8), 0);
  assert_int_equal(s3_xml_feed(x, "", 0), 0);
  assert_int_equal(s3_xml_finish(x), 1);
  s3_xml_destroy(x);
}

/* ---- ISO 8601 ----------------------------------------------------------- */

static const struct {
  const char *s;
  int rc;
  long long t;
} iso_cases[] = {
    {"2009-10-12T17:50:30.000Z", 0, 1255369830},
    {"2009-10-12T17:50:30Z", 0, 1255369830},
    {"2009-10-12T17:50:30.9Z", 0, 1255369830},
    {"2009-10-12T17:50:30.123456789Z", 0, 1255369830},
    {"2009-10-12T17:50:30", 0, 1255369830},
    {"2009-10-12T17:50:30.5", 0, 1255369830},
    {"2009-10-12T19:50:30+02:00", 0, 1255369830},
    {"2009-10-12T12:20:30.000-05:30", 0, 1255369830},
    {"2009-10-12T17:50:30+00:00", 0, 1255369830},
    {"1970-01-01T00:00:00Z", 0, 0},
    {"1969-12-31T23:59:59Z", 0, -1},
    {"0001-01-01T00:00:00Z", 0, -62135596800LL},
    {"2000-02-29T12:00:00Z", 0, 951825600},
    {"2024-02-29T00:00:00Z", 0, 1709164800},
    {"2038-01-19T03:14:08Z", 0, 2147483648LL},
    {"9999-12-31T23:59:59.999Z", 0, 253402300799LL},
    {"2016-12-31T23:59:60Z", 0, 1483228800},
    {"1900-02-29T00:00:00Z", -EINVAL, 0},
    {"2100-02-29T00:00:00Z", -EINVAL, 0},
    {"2009-02-30T00:00:00Z", -EINVAL, 0},
    {"2009-04-31T00:00:00Z", -EINVAL, 0},
    {"2009-00-12T17:50:30Z", -EINVAL, 0},
    {"2009-13-12T17:50:30Z", -EINVAL, 0},
    {"2009-10-00T17:50:30Z", -EINVAL, 0},
    {"2009-10-32T17:50:30Z", -EINVAL, 0},
    {"2009-10-12T24:00:00Z", -EINVAL, 0},
    {"2009-10-12T17:60:30Z", -EINVAL, 0},
    {"2009-10-12T17:50:61Z", -EINVAL, 0},
    {"2009-10-12 17:50:30Z", -EINVAL, 0},
    {"2009-10-12t17:50:30Z", -EINVAL, 0},
    {"2009-10-12T17:50:30z", -EINVAL, 0},
    {"2009-10-12T17:50:30.Z", -EINVAL, 0},
    {"2009-10-12T17:50:30.1234567890Z", -EINVAL, 0},
    {"2009-10-12T17:50:30.000", 0, 1255369830},
    {"2009-10-12T17:50:30.000Zjunk", -EINVAL, 0},
    {"2009-10-12T17:50:30Z ", -EINVAL, 0},
    {" 2009-10-12T17:50:30Z", -EINVAL, 0},
    {"2009-10-12T17:50:30+0200", -EINVAL, 0},
    {"2009-10-12T17:50:30+24:00", -EINVAL, 0},
    {"2009-10-12T17:50:30+02:60", -EINVAL, 0},
    {"2009-10-12T17:50:30+2:00", -EINVAL, 0},
    {"2009-1-12T17:50:30Z", -EINVAL, 0},
    {"-009-10-12T17:50:30Z", -EINVAL, 0},
    {"2009/10/12T17:50:30Z", -EINVAL, 0},
    {"2009-10-12T17:50", -EINVAL, 0},
    {"2009-10-12", -EINVAL, 0},
    {"Mon, 12 Oct 2009 17:50:30 GMT", -EINVAL, 0},
    {"", -EINVAL, 0},
};

static void test_iso8601(void **state)
{
  time_t t;

  (void)state;
  for (size_t i = 0; i < sizeof(iso_cases) / sizeof(iso_cases[0]); i++) {
    int rc;

    t = 777;
    rc = s3_parse_iso8601(iso_cases[i].s, &t);
    if (rc != iso_cases[i].rc || (!rc && (long long)t != iso_cases[i].t))
      fail_msg("\"%s\": rc %d t %lld", iso_cases[i].s, rc, (long long)t);
  }
  assert_int_equal(s3_parse_iso8601(NULL, &t), -EINVAL);
  assert_int_equal(s3_parse_iso8601("2009-10-12T17:50:30Z", NULL), -EINVAL);
}

/* ---- builders ----------------------------------------------------------- */

#define CMU_HEAD DECL "<CompleteMultipartUpload" NS ">"
#define DEL_HEAD DECL "<Delete" NS ">"

static void test_build_complete(void **state)
{
  const struct s3_part_etag parts[] = {
      {1, "\"a54357aff0632cce46d942af68356b38\""},
      {2, "0c78aef83f66abc1fa1e8477f296d394"},
      {5, "\"acbd18db4cc2f85cedef654fccc4a4d8-3\""},
      {10000, "we&ird<>"},
  };
  char *out = NULL;
  size_t len = 0;

  (void)state;
  assert_int_equal(s3_xml_build_complete(parts, 4, &out, &len), 0);
  assert_string_equal(
      out, CMU_HEAD
      "<Part><PartNumber>1</PartNumber>"
      "<ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>"
      "<Part><PartNumber>2</PartNumber>"
      "<ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag></Part>"
      "<Part><PartNumber>5</PartNumber>"
      "<ETag>\"acbd18db4cc2f85cedef654fccc4a4d8-3\"</ETag></Part>"
      "<Part><PartNumber>10000</PartNumber>"
      "<ETag>\"we&amp;ird&lt;&gt;\"</ETag></Part>"
      "</CompleteMultipartUpload>");
  assert_int_equal(len, strlen(out));
  free(out);
}

static void test_build_complete_invalid(void **state)
{
  static const struct {
    struct s3_part_etag p[2];
    size_t n;
  } bad[] = {
      {{{2, "a"}, {1, "b"}}, 2},          /* descending */
      {{{1, "a"}, {1, "b"}}, 2},          /* duplicate */
      {{{0, "a"}}, 1},                    /* part 0 */
      {{{-1, "a"}}, 1},
      {{{10001, "a"}}, 1},                /* S3 allows 1..10000 */
      {{{1, ""}}, 1},
      {{{1, "\"\""}}, 1},                 /* only quotes */
      {{{1, NULL}}, 1},
      {{{1, "a\"b"}}, 1},                 /* quote inside */
      {{{1, "a\x01"}}, 1},                /* not XML */
      {{{1, "a\xff"}}, 1},                /* not UTF-8 */
      {{{1, "a"}}, 0},                    /* no part */
  };
  char *out = (char *)"untouched";
  size_t len = 0;

  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (s3_xml_build_complete(bad[i].p, bad[i].n, &out, &len) != -EINVAL)
      fail_msg("case %zu accepted", i);
    assert_string_equal(out, "untouched");
  }
  assert_int_equal(s3_xml_build_complete(NULL, 1, &out, &len), -EINVAL);
}

static void test_build_delete(void **state)
{
  const char *keys[] = {"plain.txt", "a&b<c>d", "q\"uo'te", "cr\rlf\n tab\t",
                        "中文/ファイル 😀", "100% + x"};
  char *out = NULL;
  size_t len = 0;

  (void)state;
  assert_int_equal(s3_xml_build_delete(keys, 6, true, &out, &len), 0);
  assert_string_equal(out, DEL_HEAD "<Quiet>true</Quiet>"
                           "<Object><Key>plain.txt</Key></Object>"
                           "<Object><Key>a&amp;b&lt;c&gt;d</Key></Object>"
                           "<Object><Key>q\"uo'te</Key></Object>"
                           "<Object><Key>cr&#13;lf\n tab\t</Key></Object>"
                           "<Object><Key>中文/ファイル 😀</Key></Object>"
                           "<Object><Key>100% + x</Key></Object>"
                           "</Delete>");
  assert_int_equal(len, strlen(out));
  free(out);
  assert_int_equal(s3_xml_build_delete(keys, 1, false, &out, &len), 0);
  assert_string_equal(out, DEL_HEAD "<Object><Key>plain.txt</Key></Object>"
                                    "</Delete>");
  free(out);
}

/* What a server's parser reads back from our Delete body. */
struct keys_back {
  char keys[8][256];
  int n;
  bool in_key;
};

static void XMLCALL kb_start(void *ud, const XML_Char *name,
                             const XML_Char **atts)
{
  struct keys_back *kb = ud;

  (void)atts;
  if (!strcmp(name, "Key")) {
    kb->in_key = true;
    kb->keys[kb->n][0] = '\0';
  }
}

static void XMLCALL kb_end(void *ud, const XML_Char *name)
{
  struct keys_back *kb = ud;

  if (!strcmp(name, "Key")) {
    kb->in_key = false;
    kb->n++;
  }
}

static void XMLCALL kb_text(void *ud, const XML_Char *s, int len)
{
  struct keys_back *kb = ud;

  if (kb->in_key)
    strncat(kb->keys[kb->n], s, (size_t)len);
}

static void test_build_delete_roundtrip(void **state)
{
  const char *keys[] = {"a&b<c>d]]>", "cr\r\nlf\r", "  spaced  ",
                        "tab\there", "é😀&amp;"};
  struct keys_back kb = {0};
  XML_Parser p = XML_ParserCreate(NULL);
  char *out;
  size_t len;

  (void)state;
  assert_int_equal(s3_xml_build_delete(keys, 5, false, &out, &len), 0);
  XML_SetUserData(p, &kb);
  XML_SetElementHandler(p, kb_start, kb_end);
  XML_SetCharacterDataHandler(p, kb_text);
  assert_int_equal(XML_Parse(p, out, (int)len, XML_TRUE), XML_STATUS_OK);
  XML_ParserFree(p);
  assert_int_equal(kb.n, 5);
  for (int i = 0; i < 5; i++)
    assert_string_equal(kb.keys[i], keys[i]);
  free(out);
}

static void test_build_delete_invalid(void **state)
{
  static const char *const bad_keys[] = {
      "",          "ctl\x01",        "esc\x1b[0m",   "nul-free but \x7f ok",
      "\xff",      "\xc0\xaf",       "\xed\xa0\x80", "\xf4\x90\x80\x80",
      "\xe4\xb8",  "\xef\xbf\xbe",
  };
  const char **many = calloc(1001, sizeof(*many));
  char *out = (char *)"untouched";
  size_t len;

  (void)state;
  for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
    const char *k = bad_keys[i];
    int want = i == 3 ? 0 : -EINVAL;     /* DEL is a legal XML character */
    int rc = s3_xml_build_delete(&k, 1, false, &out, &len);

    if (rc != want)
      fail_msg("key %zu: rc %d", i, rc);
    if (!rc)
      free(out);
    out = (char *)"untouched";
  }
  {
    const char *null_key = NULL;

    assert_int_equal(s3_xml_build_delete(&null_key, 1, true, &out, &len),
                     -EINVAL);
  }
  assert_non_null(many);
  for (int i = 0; i < 1001; i++)
    many[i] = "k";
  assert_int_equal(s3_xml_build_delete(many, 0, true, &out, &len), -EINVAL);
  assert_int_equal(s3_xml_build_delete(many, 1001, true, &out, &len),
                   -EINVAL);
  assert_string_equal(out, "untouched");
  assert_int_equal(s3_xml_build_delete(many, 1000, true, &out, &len), 0);
  assert_int_equal(len, strlen(DEL_HEAD "<Quiet>true</Quiet></Delete>") +
                            1000 * strlen("<Object><Key>k</Key></Object>"));
  free(out);
  free(many);
}

int main(void)
{
  static const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_error_every_kind),
      cmocka_unit_test(test_every_prefix_is_bad),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_entry_limit),
      cmocka_unit_test(test_text_limit),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_body_limit),
      cmocka_unit_test(test_api_edges),
      cmocka_unit_test(test_iso8601),
      cmocka_unit_test(test_build_complete),
      cmocka_unit_test(test_build_complete_invalid),
      cmocka_unit_test(test_build_delete),
      cmocka_unit_test(test_build_delete_roundtrip),
      cmocka_unit_test(test_build_delete_invalid),
  };
  size_t n_fixed = sizeof(fixed) / sizeof(fixed[0]);
  struct CMUnitTest *tests = calloc(N_CASES + n_fixed, sizeof(*tests));
  int rc;

  if (!tests)
    return 1;
  for (size_t i = 0; i < N_CASES; i++) {
    tests[i].name = cases[i].name;
    tests[i].test_func = run_case;
    tests[i].initial_state = (void *)&cases[i];
  }
  memcpy(tests + N_CASES, fixed, sizeof(fixed));
  rc = _cmocka_run_group_tests("s3_xml", tests, N_CASES + n_fixed, NULL,
                               NULL);
  free(tests);
  return rc;
}
