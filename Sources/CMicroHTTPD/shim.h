#ifndef SIDECAR_CMICROHTTPD_SHIM_H
#define SIDECAR_CMICROHTTPD_SHIM_H

// libmicrohttpd's MHD_start_daemon and MHD_get_connection_info are variadic,
// which Swift cannot call; these static inline wrappers give them fixed
// signatures. The listening socket is made here too (getaddrinfo + bind) so the
// server can bind a host name, an IPv6 address or port 0 and report the port.

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

typedef enum MHD_Result (*sidecar_mhd_access_cb)(void *cls, struct MHD_Connection *connection,
    const char *url, const char *method, const char *version,
    const char *upload_data, size_t *upload_data_size, void **con_cls);
typedef void (*sidecar_mhd_completed_cb)(void *cls, struct MHD_Connection *connection,
    void **con_cls, enum MHD_RequestTerminationCode toe);
typedef void *(*sidecar_mhd_uri_log_cb)(void *cls, const char *uri, struct MHD_Connection *con);

/// Starts an epoll daemon with an internal thread pool on an already-listening socket.
static inline struct MHD_Daemon *sidecar_mhd_start(int listen_fd, unsigned int threads,
    unsigned int connection_timeout_seconds, size_t memory_limit, unsigned int connection_limit,
    sidecar_mhd_access_cb access, void *access_cls,
    sidecar_mhd_completed_cb completed, void *completed_cls,
    sidecar_mhd_uri_log_cb uri_log, void *uri_log_cls)
{
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    return MHD_start_daemon(flags, 0, NULL, NULL, access, access_cls,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
        MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
        MHD_OPTION_END);
}

/// Creates, binds and listens a TCP socket. Returns the fd, or -errno (or
/// -1000 - gai error) on failure; the bound port is written to *bound_port.
static inline int sidecar_listen(const char *host, int port, int backlog, int *bound_port)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char service[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(service, sizeof service, "%d", port);
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) return -1000 - (gai < 0 ? -gai : gai);
    int fd = -1;
    int err = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { err = errno; continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) return -err;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *) &ss, &len) == 0) {
        if (ss.ss_family == AF_INET) *bound_port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
        else if (ss.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
    }
    return fd;
}

/// Writes the TCP peer's address as text (IPv4-mapped IPv6 shown as IPv4).
/// Returns the length written, or 0 when unknown.
static inline size_t sidecar_mhd_client_ip(struct MHD_Connection *connection, char *buffer, size_t capacity)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || capacity == 0) return 0;
    const struct sockaddr *sa = info->client_addr;
    const char *written = NULL;
    if (sa->sa_family == AF_INET) {
        written = inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, buffer, (socklen_t) capacity);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            written = inet_ntop(AF_INET, &a6->s6_addr[12], buffer, (socklen_t) capacity);
        } else {
            written = inet_ntop(AF_INET6, a6, buffer, (socklen_t) capacity);
        }
    }
    return written == NULL ? 0 : strlen(buffer);
}

#endif
