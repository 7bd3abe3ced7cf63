/*
 * s3_curl: the options every HTTP exchange of ours with an S3 server sets on
 * a curl easy handle, the S3 engine's (s3_engine.c) and the gateway's
 * upstream (gateway/gw_upstream.c) alike: no signals, the path sent as
 * given (it is what was signed), TCP_NODELAY and keep-alive, buffer sizes,
 * the connect timeout and the low-speed abort. What only one of them needs
 * (timeouts, TLS, callbacks, the method) is set by the caller.
 */
#ifndef S3R_S3_CURL_H
#define S3R_S3_CURL_H

#include <curl/curl.h>

struct s3_curl_opts {
  long buffer_size;        /* receive and upload buffers, bytes */
  long connect_timeout_ms;
  long low_speed_time_s;   /* abort after this long below 1 byte/s; 0: no */
};

/* Set o's options on h (after curl_easy_reset or curl_easy_init). */
void s3_curl_setup(CURL *h, const struct s3_curl_opts *o);

#endif
