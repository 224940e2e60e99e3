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

// The driver's event loop: libcurl's socket interface on epoll, so each
// wake-up touches only the sockets that are ready (curl_multi_poll asks
// every transfer for its socket each time: with a hundred HTTP/2 streams on
// one connection, a hundred entries for one socket in every poll).
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef int (*sidecar_curl_socket_cb)(CURL *easy, curl_socket_t socket, int what, void *userp, void *socketp);
typedef int (*sidecar_curl_timer_cb)(CURLM *multi, long timeout_ms, void *userp);
static inline CURLMcode sidecar_curl_multi_setopt_socket(CURLM *m, sidecar_curl_socket_cb f, void *userp) {
    CURLMcode code = curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
    return code != CURLM_OK ? code : curl_multi_setopt(m, CURLMOPT_SOCKETDATA, userp);
}
static inline CURLMcode sidecar_curl_multi_setopt_timer(CURLM *m, sidecar_curl_timer_cb f, void *userp) {
    CURLMcode code = curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
    return code != CURLM_OK ? code : curl_multi_setopt(m, CURLMOPT_TIMERDATA, userp);
}

/// Watches `fd` for libcurl's `what` (CURL_POLL_IN, _OUT, _INOUT; _REMOVE
/// stops watching). 0 on success.
static inline int sidecar_driver_watch(int epoll, int fd, int what) {
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event event = {0};
    event.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    event.data.fd = fd;
    if (epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Waits up to `timeout_ms` for ready descriptors; writes each one and its
/// CURL_CSELECT_* flags; returns how many (0 on timeout, -1 on error).
static inline int sidecar_driver_wait(int epoll, int *fds, int *flags, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, events, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        fds[i] = events[i].data.fd;
        flags[i] = ((events[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((events[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0)
            | ((events[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
    }
    return count;
}

/// An epoll set watching a new eventfd, which `sidecar_driver_wake` signals.
static inline int sidecar_driver_open(int *wake) {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) return -1;
    *wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (*wake < 0) { close(epoll); return -1; }
    struct epoll_event event = {0};
    event.events = EPOLLIN;
    event.data.fd = *wake;
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, *wake, &event) != 0) { close(*wake); close(epoll); return -1; }
    return epoll;
}
static inline void sidecar_driver_wake(int wake) { uint64_t one = 1; ssize_t written = write(wake, &one, sizeof one); (void)written; }
static inline void sidecar_driver_drain(int wake) { uint64_t count; ssize_t got = read(wake, &count, sizeof count); (void)got; }
#endif
