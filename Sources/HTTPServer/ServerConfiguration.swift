import FoundationEssentials

/// Settings for the HTTP server. Defaults suit a small host behind a proxy.
public struct ServerConfiguration: Sendable {
    /// Address to bind (`0.0.0.0`, `::`, `127.0.0.1`, a host name).
    public var host = "0.0.0.0"
    /// Port to bind; 0 picks a free one (tests), reported by `start()`.
    public var port = 8080
    /// Worker threads in libmicrohttpd's pool (defaults to the core count).
    public var threads = max(ProcessInfo.processInfo.activeProcessorCount, 1)
    /// Seconds a connection may sit idle (including a slow header or body)
    /// before it is closed.
    public var connectionTimeoutSeconds = 30
    /// Per-connection memory for the request line and headers; a request
    /// whose headers do not fit is refused by libmicrohttpd with a 4xx.
    /// libmicrohttpd clears this pool between requests on a kept-alive
    /// connection, so a large value costs time on every request.
    public var headerLimitBytes = 16 * 1024
    /// Simultaneous connections accepted.
    public var connectionLimit = 1024
    /// Body size accepted when a route does not set its own (413 above).
    public var defaultBodyLimit = 1 << 20
    var listenBacklog = 1024
    /// Seconds from a request's first byte to the end of its head (request
    /// line and headers); slower clients are disconnected (slowloris).
    public var headerTimeoutSeconds = 10
    /// After a grace of `headerTimeoutSeconds`, a body must arrive at this
    /// average rate (bytes per second) or the client is disconnected.
    public var minimumBodyBytesPerSecond = 1024
    /// Open connections one client may hold (an IPv4 address, or an IPv6
    /// /64); 0 = no limit. Exempt addresses (trusted proxies) have none.
    public var connectionsPerClient = 64
    /// Proxies whose forwarding headers name the client (nil: trust none,
    /// the client is always the TCP peer). Their own connections are exempt
    /// from the per-client connection limit: they carry many clients.
    public var trustedProxies: TrustedProxies?
    /// Told of every answer (metrics): the method as sent, the route
    /// pattern (`unmatched` when none), the status and the seconds from the
    /// first byte to the queued response.
    public var onAnswer: (@Sendable (_ method: String, _ route: String, _ status: Int, _ seconds: Double) -> Void)?

    public init() {}
}

/// Errors starting the server.
enum ServerError: Error, CustomStringConvertible {
    case listenFailed(host: String, port: Int, reason: String)
    case daemonFailed

    public var description: String {
        switch self {
        case .listenFailed(let host, let port, let reason): return "cannot listen on \(host):\(port): \(reason)"
        case .daemonFailed: return "libmicrohttpd failed to start"
        }
    }
}
