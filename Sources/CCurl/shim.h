#ifndef SIDECAR_CCURL_SHIM_H
#define SIDECAR_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic; Swift needs fixed types.
static inline CURLcode sidecar_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sidecar_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sidecar_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*sidecar_curl_write_cb)(char *data, size_t size, size_t count, void *userdata);
static inline CURLcode sidecar_curl_setopt_write(CURL *h, CURLoption o, sidecar_curl_write_cb v) { return curl_easy_setopt(h, o, v); }
typedef int (*sidecar_curl_prereq_cb)(void *context, char *primary_ip, char *local_ip, int primary_port, int local_port);
/// Called once the connection is made (or reused), before the request is sent.
static inline CURLcode sidecar_curl_setopt_prereq(CURL *h, sidecar_curl_prereq_cb v) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, v); }
static inline CURLcode sidecar_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode sidecar_curl_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode sidecar_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLMcode sidecar_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
/// The finished transfer and its result from a CURLMsg (a union in C).
static inline CURL *sidecar_curl_msg_handle(CURLMsg *msg) { return msg->easy_handle; }
static inline CURLcode sidecar_curl_msg_result(CURLMsg *msg) { return msg->data.result; }
static inline int sidecar_curl_msg_done(CURLMsg *msg) { return msg->msg == CURLMSG_DONE; }
#endif
