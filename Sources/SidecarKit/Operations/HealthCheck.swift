import Core
import FoundationEssentials
import HTTPClient

/// `sidecar healthcheck`: a container's health probe without curl in the image.
enum HealthCheck {
    /// 0 when `url` answers 200 within five seconds; otherwise prints why and returns 1.
    /// - Parameter timeoutSeconds: how long an answer may take (5: a
    /// container's health check must not outlast its interval).
    static func run(url: String, timeoutSeconds: Int = 5, output: @Sendable (String) -> Void = { StandardErrorSink().write($0) }) async -> Int32 {
        var configuration = HTTPClient.Configuration()
        configuration.timeoutSeconds = timeoutSeconds
        configuration.connectTimeoutSeconds = min(timeoutSeconds, 2)
        let http = HTTPClient(configuration: configuration)
        defer { http.shutdown() }
        do {
            let response = try await http.get(url, upstream: "self")
            guard response.status == 200 else {
                output("unhealthy: \(url) answered HTTP \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
                return 1
            }
            return 0
        } catch {
            output("unhealthy: \(url): \(error)")
            return 1
        }
    }
}
