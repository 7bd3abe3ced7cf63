/* Helpers shared by the integration tests (header-only, test code). */
#ifndef S3R_ITEST_H
#define S3R_ITEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "s3/s3_client.h"
#include "s3/s3_err.h"

/* S3R_TEST_LOG=debug|info|...: the client's log level in tests. */
static inline void itest_log_level(void)
{
  const char *l = getenv("S3R_TEST_LOG");

  if (l && slog_parse_level(l) >= 0)
    slog_set_level(slog_parse_level(l));
}

/* A client on the RGW named by the environment (tests/servers/rgw.sh env). */
static inline struct s3_client *itest_client(const char *secret_override)
{
  struct s3_client_config cfg;
  char err[512];
  struct s3_client *c;

  itest_log_level();
  s3_client_config_default(&cfg);
  cfg.endpoint = getenv("S3R_ENDPOINT");
  if (!cfg.endpoint) {
    fprintf(stderr, "S3R_ENDPOINT not set: run under with_rgw.sh\n");
    abort();
  }
  cfg.retry.base_ms = 20;
  cfg.retry.max_backoff_ms = 200;
  if (secret_override) {
    cfg.creds.access_key = getenv("AWS_ACCESS_KEY_ID");
    cfg.creds.secret_key = secret_override;
  }
  c = s3_client_create(&cfg, err, sizeof(err));
  if (!c) {
    fprintf(stderr, "client: %s\n", err);
    abort();
  }
  return c;
}

/* A bucket name unique to this run. */
static inline void itest_bucket_name(char *buf, size_t len, const char *tag)
{
  snprintf(buf, len, "s3r-%s-%ld-%ld", tag, (long)getpid(),
           (long)time(NULL) % 100000);
}

/* Deterministic pseudo-random bytes. */
static inline void itest_fill(unsigned char *p, size_t n, unsigned seed)
{
  unsigned long long x = seed * 2654435761ull + 1;

  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (unsigned char)(x >> 56);
  }
}

/* Delete every object in a bucket, then the bucket. */
static inline void itest_drop_bucket(struct s3_client *c, const char *bucket)
{
  struct s3_list_params p = {0};
  struct s3_list_result res;

  for (int round = 0; round < 100; round++) {
    if (s3_list_objects(c, bucket, &p, &res))
      break;
    for (size_t i = 0; i < res.n_objects; i++)
      s3_delete_object(c, bucket, res.objects[i].key);
    bool more = res.n_objects > 0;
    s3_list_result_cleanup(&res);
    if (!more)
      break;
  }
  s3_delete_bucket(c, bucket);
}

#endif
