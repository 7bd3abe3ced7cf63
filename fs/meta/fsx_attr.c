/* fsx_attr: see fsx_attr.h. */
#include "fs/meta/fsx_attr.h"

uint64_t fsx_etag_gen(const char *etag)
{
  uint64_t h = 1469598103934665603ull;

  for (; etag && *etag; etag++) {
    h ^= (unsigned char)*etag;
    h *= 1099511628211ull;
  }
  return h;
}
