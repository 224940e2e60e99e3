import HTTPServer

/// Starts an HTTP server on an ephemeral loopback port for a fake upstream
/// (OneBusAway, gorush, Stripe, a push provider), logging nothing.
public func startLocalServer(_ router: Router) throws -> HTTPServer {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error, sink: MemorySink()))
    try server.start()
    return server
}
