import HTTPServer
import Metrics

/// The metrics listener: `GET /metrics` in Prometheus's text format, on an
/// address of its own (`--metrics-listen`) so a firewall or the bind
/// address keeps it private while the rider API faces the internet. Also
/// `GET /healthz` with each failing check's details (paths, engine errors),
/// which the public `/healthz` withholds.
enum MetricsRoutes {
    static func server(metrics: SidecarMetrics, listen: SidecarConfiguration.ListenAddress, logger: Logger, extra: [Route] = []) -> HTTPServer {
        var router = Router()
        extra.forEach { router.add($0) }
        router.add(
            Route("GET", "/metrics") { _ in
                Response.bytes(200, contentType: MetricsRegistry.contentType, Array(await metrics.registry.render().utf8))
            })
        var configuration = ServerConfiguration()
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.threads = 1
        configuration.connectionLimit = 64
        configuration.connectionsPerClient = 16
        // Its own requests are neither logged at info nor counted.
        return HTTPServer(configuration: configuration, router: router, logger: Logger(level: .warning, format: logger.format, sink: logger.sink))
    }
}
