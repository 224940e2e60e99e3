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
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <microhttpd.h>

typedef enum MHD_Result (*sidecar_mhd_access_cb)(void *cls, struct MHD_Connection *connection,
    const char *url, const char *method, const char *version,
    const char *upload_data, size_t *upload_data_size, void **con_cls);
typedef void (*sidecar_mhd_completed_cb)(void *cls, struct MHD_Connection *connection,
    void **con_cls, enum MHD_RequestTerminationCode toe);
typedef void *(*sidecar_mhd_uri_log_cb)(void *cls, const char *uri, struct MHD_Connection *con);
typedef void (*sidecar_mhd_connection_cb)(void *cls, struct MHD_Connection *connection,
    void **socket_context, enum MHD_ConnectionNotificationCode toe);
typedef enum MHD_Result (*sidecar_mhd_accept_cb)(void *cls, const struct sockaddr *addr, socklen_t addrlen);

/// Starts an epoll daemon with an internal thread pool on an already-listening
/// socket. `accept` may refuse a new connection by its address; `connection`
/// hears of every connection opened and closed.
static inline struct MHD_Daemon *sidecar_mhd_start(int listen_fd, unsigned int threads,
    unsigned int connection_timeout_seconds, size_t memory_limit, unsigned int connection_limit,
    sidecar_mhd_access_cb access, void *access_cls,
    sidecar_mhd_completed_cb completed, void *completed_cls,
    sidecar_mhd_uri_log_cb uri_log, void *uri_log_cls,
    sidecar_mhd_connection_cb connection, void *connection_cls,
    sidecar_mhd_accept_cb accept, void *accept_cls)
{
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    return MHD_start_daemon(flags, 0, accept, accept_cls, access, access_cls,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
        MHD_OPTION_NOTIFY_CONNECTION, connection, connection_cls,
        MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
        MHD_OPTION_END);
}

/// The connection's socket, or -1.
static inline int sidecar_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// Bytes the kernel has received on a TCP socket since it opened (the
/// connection guard compares two readings to see that a request has begun),
/// or UINT64_MAX when unknown. `tcpi_bytes_received` (Linux 4.1+) sits at
/// byte 128 of the kernel's struct tcp_info, a layout the kernel only ever
/// extends; glibc's older copy of the struct stops before it, and the
/// kernel's own header cannot be included beside glibc's.
static inline uint64_t sidecar_tcp_bytes_received(int fd)
{
    unsigned char info[256];
    socklen_t length = sizeof info;
    memset(info, 0, sizeof info);
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 136) return UINT64_MAX;
    uint64_t received;
    memcpy(&received, info + 128, sizeof received);
    return received;
}

/// Whether the peer has closed its side of a TCP socket (it sent FIN: the
/// state is CLOSE_WAIT) and no byte it sent is left unread. A request that
/// is still incomplete then can never complete.
static inline int sidecar_tcp_peer_gone(int fd)
{
    unsigned char state = 0;
    unsigned char info[256];
    socklen_t length = sizeof info;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 1) return 0;
    state = info[0];
    if (state != TCP_CLOSE_WAIT && state != TCP_CLOSE) return 0;
    int unread = 0;
    if (ioctl(fd, FIONREAD, &unread) != 0) return 0;
    return unread == 0;
}

/// The connection's socket context (what the connection notification stored).
static inline void *sidecar_mhd_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// Writes an address as text (IPv4-mapped IPv6 shown as IPv4); returns the
/// length written, or 0.
static inline size_t sidecar_address_text(const struct sockaddr *sa, char *buffer, size_t capacity)
{
    if (sa == NULL || capacity == 0) return 0;
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

/// Writes the key that per-client limits count under: an IPv4 address as
/// text (IPv4-mapped IPv6 shown as IPv4), or an IPv6 address's /64 prefix
/// (one subscriber's allocation). Returns the length written, or 0.
static inline size_t sidecar_client_key(const struct sockaddr *sa, char *buffer, size_t capacity)
{
    if (sa == NULL || capacity < INET6_ADDRSTRLEN + 4) return 0;
    const char *written = NULL;
    if (sa->sa_family == AF_INET) {
        written = inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, buffer, (socklen_t) capacity);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            written = inet_ntop(AF_INET, &a6->s6_addr[12], buffer, (socklen_t) capacity);
        } else {
            struct in6_addr prefix = *a6;
            memset(&prefix.s6_addr[8], 0, 8);
            written = inet_ntop(AF_INET6, &prefix, buffer, (socklen_t) capacity);
            if (written != NULL) strcat(buffer, "/64");
        }
    }
    return written == NULL ? 0 : strlen(buffer);
}

/// The peer's key (see sidecar_client_key) for an open connection.
static inline size_t sidecar_mhd_client_key(struct MHD_Connection *connection, char *buffer, size_t capacity)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL) return 0;
    return sidecar_client_key(info->client_addr, buffer, capacity);
}

// MARK: Strict request framing
//
// libmicrohttpd 0.9.75 tolerates a NUL byte inside the request line or a
// header value (it reads both as C strings, so the rest is silently cut
// off), conflicting Content-Length headers, Content-Length beside
// Transfer-Encoding, and transfer codings other than chunked. Behind a proxy
// that reads such a request differently, each is a request-smuggling hole.
// These checks run on the parsed head before any body is read.
//
// The NUL checks ("layout" checks) rely on how this version lays the head
// out in its read buffer: the received bytes stay in place, with the
// separators it parsed (the spaces of the request line, each header's
// colon, every CR LF) overwritten by NUL. Walking the head from the method
// to its end with the lengths libmicrohttpd reports must therefore land on
// each next field exactly; a NUL that came from the wire makes a field end
// early and the walk miss. The server enables them only for the library
// version they were written against.

enum sidecar_head_problem {
    SIDECAR_HEAD_CLEAN = 0,
    SIDECAR_HEAD_BAD_REQUEST_LINE = 1,   /* NUL, CR or a control byte in the request line */
    SIDECAR_HEAD_BAD_HEADER = 2,         /* a bad header name, or CR/NUL/control byte in a value */
    SIDECAR_HEAD_FOLDED_OR_NUL = 3,      /* a header line continued (obs-fold) or cut by a NUL */
    SIDECAR_HEAD_CONFLICTING_LENGTH = 4, /* Content-Length headers that differ or are not digits */
    SIDECAR_HEAD_LENGTH_AND_CODING = 5,  /* Content-Length together with Transfer-Encoding */
    SIDECAR_HEAD_UNSUPPORTED_CODING = 6, /* a transfer coding other than a single chunked */
};

/// Whether the raw request target seen by the URI callback is clean: no
/// space, control byte or DEL in it, and (`layout`) followed by exactly
/// " HTTP/d.d" and the end of the line, which a NUL inside the target (ending
/// the C string early) fails.
static inline int sidecar_request_target_is_whole(const char *uri, size_t length, int layout)
{
    for (size_t i = 0; i < length; i++) {
        unsigned char byte = (unsigned char) uri[i];
        if (byte < 0x21 || byte == 0x7f) return 0;
    }
    if (!layout) return 1;
    const char *version = uri + length + 1;
    return uri[length] == 0 && version[0] == 'H' && version[1] == 'T' && version[2] == 'T' && version[3] == 'P'
        && version[4] == '/' && version[5] >= '0' && version[5] <= '9' && version[6] == '.'
        && version[7] >= '0' && version[7] <= '9' && version[8] == 0;
}

/// Empties the query string libmicrohttpd is about to parse into its own
/// GET arguments (the server reads the raw target itself). Called from the
/// URI callback, after the target was copied: libmicrohttpd has already
/// found the '?' and parses from the byte after it, in its writable read
/// buffer. Its argument records live in the connection's small memory
/// pool, and a query with a few hundred parameters exhausted it, leaving the
/// request unanswered; with the query emptied nothing is recorded.
static inline void sidecar_empty_query(const char *uri)
{
    char *question = strchr((char *) uri, '?');
    if (question != NULL && question[1] != 0) question[1] = 0;
}

struct sidecar_head_walk {
    int layout;
    const char *line_end;      /* NUL that ended the previous line's content */
    int problem;
    int header_count;
    int length_count;
    const char *length_value;
    size_t length_size;
    int coding_count;
    const char *coding_value;
    size_t coding_size;
};

static inline int sidecar_is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    return strchr("!#$%&'*+-.^_`|~", c) != NULL && c != 0;
}

/// A line ending replaced by NUL: one for a bare LF, two for CR LF; the next
/// line must start right after it.
static inline int sidecar_next_line_starts_at(const char *line_end, const char *next)
{
    return next == line_end + 1 || (next == line_end + 2 && line_end[1] == 0);
}

static inline int sidecar_equal_caseless(const char *a, size_t size, const char *literal)
{
    size_t n = strlen(literal);
    if (size != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char x = a[i];
        if (x >= 'A' && x <= 'Z') x = (char) (x + 32);
        if (x != literal[i]) return 0;
    }
    return 1;
}

static enum MHD_Result sidecar_visit_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                           const char *value, size_t value_size)
{
    struct sidecar_head_walk *walk = (struct sidecar_head_walk *) cls;
    (void) kind;
    if (key == NULL || key_size == 0) { walk->problem = SIDECAR_HEAD_BAD_HEADER; return MHD_NO; }
    for (size_t i = 0; i < key_size; i++) {
        if (!sidecar_is_tchar((unsigned char) key[i])) { walk->problem = SIDECAR_HEAD_BAD_HEADER; return MHD_NO; }
    }
    for (size_t i = 0; i < value_size; i++) {
        unsigned char byte = (unsigned char) value[i];
        if ((byte < 0x20 && byte != '\t') || byte == 0x7f) { walk->problem = SIDECAR_HEAD_BAD_HEADER; return MHD_NO; }
    }
    if (walk->layout) {
        if (!sidecar_next_line_starts_at(walk->line_end, key)) { walk->problem = SIDECAR_HEAD_FOLDED_OR_NUL; return MHD_NO; }
        const char *cursor = key + key_size + 1;   /* past the colon */
        while (*cursor == ' ' || *cursor == '\t') cursor++;
        if (cursor != value) { walk->problem = SIDECAR_HEAD_FOLDED_OR_NUL; return MHD_NO; }
        walk->line_end = value + value_size;
    }
    walk->header_count++;
    if (sidecar_equal_caseless(key, key_size, "content-length")) {
        if (value_size == 0) { walk->problem = SIDECAR_HEAD_CONFLICTING_LENGTH; return MHD_NO; }
        for (size_t i = 0; i < value_size; i++) {
            if (value[i] < '0' || value[i] > '9') { walk->problem = SIDECAR_HEAD_CONFLICTING_LENGTH; return MHD_NO; }
        }
        if (walk->length_count > 0 && (walk->length_size != value_size || memcmp(walk->length_value, value, value_size) != 0)) {
            walk->problem = SIDECAR_HEAD_CONFLICTING_LENGTH;
            return MHD_NO;
        }
        walk->length_count++;
        walk->length_value = value;
        walk->length_size = value_size;
    } else if (sidecar_equal_caseless(key, key_size, "transfer-encoding")) {
        walk->coding_count++;
        walk->coding_value = value;
        walk->coding_size = value_size;
    }
    return MHD_YES;
}

/// Checks a parsed request head (see the comment above). `method`,
/// `target` and `version` are the pointers libmicrohttpd passed to the
/// callbacks, `target_length` the target's length when the URI callback saw
/// it. Returns a sidecar_head_problem.
static inline int sidecar_mhd_check_head(struct MHD_Connection *connection, const char *method, const char *target,
                                         size_t target_length, int http_1_0, int layout)
{
    struct sidecar_head_walk walk;
    memset(&walk, 0, sizeof walk);
    walk.layout = layout;
    if (layout) {
        /* "METHOD SP target SP HTTP/d.d", separators now NUL */
        size_t method_length = strlen(method);
        for (size_t i = 0; i < method_length; i++) {
            if (!sidecar_is_tchar((unsigned char) method[i])) return SIDECAR_HEAD_BAD_REQUEST_LINE;
        }
        if (method + method_length + 1 != target) return SIDECAR_HEAD_BAD_REQUEST_LINE;
        walk.line_end = target + target_length + 1 + 8;
        if (*walk.line_end != 0) return SIDECAR_HEAD_BAD_REQUEST_LINE;
    }
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, sidecar_visit_header, &walk);
    if (walk.problem != SIDECAR_HEAD_CLEAN) return walk.problem;
    if (layout) {
        /* After the last line: its ending and the empty line, nothing else. */
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (info == NULL) return SIDECAR_HEAD_FOLDED_OR_NUL;
        const char *end = method + info->header_size;
        if (end < walk.line_end + 2 || end > walk.line_end + 4) return SIDECAR_HEAD_FOLDED_OR_NUL;
        for (const char *cursor = walk.line_end; cursor < end; cursor++) {
            if (*cursor != 0) return SIDECAR_HEAD_FOLDED_OR_NUL;
        }
    }
    if (walk.coding_count > 0) {
        if (walk.length_count > 0) return SIDECAR_HEAD_LENGTH_AND_CODING;
        if (walk.coding_count > 1 || http_1_0) return SIDECAR_HEAD_UNSUPPORTED_CODING;
        /* Exactly what libmicrohttpd reads as chunked (it compares the whole
           value, so "chunked " would leave it reading until the peer closes). */
        if (!sidecar_equal_caseless(walk.coding_value, walk.coding_size, "chunked")) return SIDECAR_HEAD_UNSUPPORTED_CODING;
    }
    return SIDECAR_HEAD_CLEAN;
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
    if (info == NULL) return 0;
    return sidecar_address_text(info->client_addr, buffer, capacity);
}

#endif
