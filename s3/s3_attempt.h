/*
 * s3_attempt: one attempt of a request on a curl easy handle, on the engine
 * thread only (s3_engine.c drives the attempts; this is what each one is):
 * made ready (a token attempt's deadline, then the URL and signed headers,
 * s3_req_sign.c), the handle's options and the callbacks that store the
 * reply into the request, and, once curl is done with it, what the reply
 * was. Time: an attempt has curl's low-speed abort (low_speed_time_s) and
 * the request's timeout; one carrying an RDMA token has only its deadline,
 * the one the server is given (x-amz-rdma-expires).
 */
#ifndef S3R_S3_ATTEMPT_H
#define S3R_S3_ATTEMPT_H

#include <stdbool.h>

#include <curl/curl.h>

#include "s3/s3_err.h"

struct s3_client;
struct s3_req;

/* Make r's next attempt ready to send: its deadline when it carries a
   token, its URL and signed headers. 0 or a negative errno. */
int s3_attempt_prepare(struct s3_client *c, struct s3_req *r)
    __attribute__((warn_unused_result));
/* Put r's attempt on h: r->easy = h, every option and callback set. */
void s3_attempt_setup(struct s3_client *c, struct s3_req *r, CURL *h);
/* Classify the attempt on r->easy that ended with curl code cc: *rc is 0
   or a negative errno, *m how to treat it (s3_err.h). */
void s3_attempt_classify(struct s3_req *r, CURLcode cc, struct s3_err_map *m,
                         int *rc);
/*
 * May the attempt on easy have reached a server? Not when no byte of its
 * request was counted and it never got past connecting (pretransfer: the
 * request is sent after it; a first write that would block is sent later
 * uncounted). Unknown: assume it did.
 */
bool s3_attempt_sent(CURL *easy);

#endif
