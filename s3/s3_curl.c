/* s3_curl: the options common to our curl easy handles (see s3_curl.h). */
#include "s3/s3_curl.h"

void s3_curl_setup(CURL *h, const struct s3_curl_opts *o)
{
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, o->buffer_size);
  curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, o->buffer_size);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
  if (o->low_speed_time_s) {
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
  }
}
