import CCurl
import Dispatch
import FoundationEssentials
import PlatformThreads
import Synchronization

/// An outbound request.
public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Seconds the whole transfer may take (nil = the client's default).
    public var timeoutSeconds: Int?
    /// Which upstream this is (`oba`, `apns`, ...), for the client's
    /// observer; never a URL, so it cannot carry a key or a token.
    public var upstream: String
    /// The largest body accepted from this request (nil: the client's).
    public var maxBodyBytes: Int?
    /// Asked with the address the connection reached (`169.254.169.254`,
    /// `::1`) and its port before anything is sent: true refuses it. Checked
    /// on the connected socket, so a name that resolves somewhere else than
    /// it did a moment ago cannot slip past a check made beforehand.
    public var refuseAddress: (@Sendable (_ address: String, _ port: Int) -> Bool)?
    /// Whether the request goes through a proxy.
    public var proxy: ProxyUse = .environment
    /// Whether cancelling the calling task ends the transfer (it then
    /// throws `CancellationError`). Off by default: a push under way is
    /// better finished than left unknown.
    public var cancellable = false

    /// How a request uses a proxy.
    public enum ProxyUse: Sendable, Equatable {
        /// The one libcurl reads from `http_proxy`, `https_proxy` and
        /// `no_proxy`, if any (libcurl's default).
        case environment
        /// None, whatever the environment says.
        case none
        /// This one (`http://proxy.internal:3128`). `refuseAddress` then
        /// sees the proxy's address, not the target's.
        case through(String)
    }

    public init(
        method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        timeoutSeconds: Int? = nil, upstream: String = "other", maxBodyBytes: Int? = nil,
        refuseAddress: (@Sendable (_ address: String, _ port: Int) -> Bool)? = nil, proxy: ProxyUse = .environment, cancellable: Bool = false
    ) {
        self.proxy = proxy
        self.cancellable = cancellable
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutSeconds = timeoutSeconds
        self.upstream = upstream
        self.maxBodyBytes = maxBodyBytes
        self.refuseAddress = refuseAddress
    }
}

/// A response from an outbound request.
public struct HTTPClientResponse: Sendable {
    public let status: Int
    public let body: [UInt8]
    /// Response headers with lower-cased names (`apns-id`, `retry-after`, ...).
    public let headers: [(name: String, value: String)]

    public init(status: Int, body: [UInt8], headers: [(name: String, value: String)] = []) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }
}

/// Why an outbound request produced no response.
public enum HTTPClientError: Error, CustomStringConvertible, Equatable {
    case invalidURL(String)
    case transport(code: Int, message: String)
    case bodyTooLarge(limit: Int)
    /// The request's `refuseAddress` refused where the connection went.
    case refusedAddress(String)
    case shutDown

    public var description: String {
        switch self {
        case .invalidURL(let url): return "invalid URL \(url)"
        case .transport(let code, let message): return "transfer failed (curl \(code)): \(message)"
        case .bodyTooLarge(let limit): return "response body larger than \(limit) bytes"
        case .refusedAddress(let address): return "refused to send to \(address)"
        case .shutDown: return "HTTP client is shut down"
        }
    }

    /// True for a timeout.
    public var isTimeout: Bool {
        if case .transport(let code, _) = self { return code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }
        return false
    }
}

/// Outbound HTTP/1.1 and HTTP/2 on libcurl's multi interface (not URLSession:
/// see docs/design.md). One thread drives every transfer; callers await.
/// Connections are kept and reused per host; HTTP/2 requests to one host are
/// multiplexed over a connection. At most `maxConcurrentTransfers` run at
/// once; the rest wait in order.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// Default seconds a whole transfer may take.
        public var timeoutSeconds = 10
        public var connectTimeoutSeconds = 5
        /// Transfers in flight at once (others queue).
        public var maxConcurrentTransfers = 64
        /// Connections kept open per host.
        public var maxConnectionsPerHost = 8
        /// Largest response body accepted.
        public var maxBodyBytes = 16 << 20
        /// Prefer HTTP/2 over TLS (APNs requires it).
        public var http2 = false
        /// A CA bundle to trust instead of the system one (tests' private CA).
        public var caFile: String?
        public var userAgent = "onebusaway-sidecar"
        /// The longest the driver waits when libcurl asks for no timeout (a
        /// new transfer wakes it at once anyway). Tests make it an hour, so
        /// a wake-up lost would hang rather than only slow a request.
        var idleWaitMilliseconds: Int32 = 1000

        public init() {}
    }

    public let configuration: Configuration
    private let driver: MultiDriver
    /// Told of every request's outcome: its upstream and its status
    /// (`200`, ...) or `timeout` / `error` when no response came.
    public typealias Observer = @Sendable (_ upstream: String, _ outcome: String) -> Void
    private let observer = Mutex<Observer?>(nil)

    /// Sets the observer (metrics); nil removes it.
    public func observe(_ observer: Observer?) { self.observer.withLock { $0 = observer } }

    public init(configuration: Configuration = Configuration()) {
        _ = HTTPClient.globalInit
        self.configuration = configuration
        driver = MultiDriver(configuration: configuration)
        let driver = self.driver
        PlatformThread.detach(name: "curl-multi") { driver.run() }
    }

    /// A client with a different default timeout (convenience for callers
    /// that only care about that).
    public convenience init(timeoutSeconds: Int) {
        var configuration = Configuration()
        configuration.timeoutSeconds = timeoutSeconds
        self.init(configuration: configuration)
    }

    deinit { driver.stop() }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Initialises libcurl (and through it OpenSSL) for the process. libcurl
    /// asks for this before any other thread runs, since it initialises
    /// libraries that are not safe to set up beside threads using them; a
    /// program calls it first thing (later calls do nothing).
    public static func initializeLibrary() { _ = globalInit }

    /// Performs a request and returns its response (any status).
    public func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        guard request.url.hasPrefix("http://") || request.url.hasPrefix("https://") else {
            throw HTTPClientError.invalidURL(request.url)
        }
        let observer = self.observer.withLock { $0 }
        do {
            let response: HTTPClientResponse
            if request.cancellable {
                let pending = PendingTransfer()
                response = try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let transfer = Transfer(request: request, configuration: configuration, continuation: continuation)
                        if pending.start(transfer) { driver.enqueue(transfer) } else { transfer.fail(CancellationError()) }
                    }
                } onCancel: { [driver] in
                    pending.cancel().map { driver.cancel($0) }
                }
            } else {
                response = try await withCheckedThrowingContinuation { continuation in
                    driver.enqueue(Transfer(request: request, configuration: configuration, continuation: continuation))
                }
            }
            observer?(request.upstream, String(response.status))
            return response
        } catch {
            observer?(request.upstream, (error as? HTTPClientError)?.isTimeout == true ? "timeout" : "error")
            throw error
        }
    }

    /// GETs `url`.
    public func get(_ url: String, headers: [(name: String, value: String)] = [], upstream: String = "other") async throws -> HTTPClientResponse {
        try await send(HTTPClientRequest(url: url, headers: headers, upstream: upstream))
    }

    /// Stops the driver; queued and running transfers fail with `shutDown`.
    public func shutdown() { driver.stop() }
}

/// A cancellable transfer between its caller and the driver: a cancel that
/// comes before the transfer exists stops it from starting.
final class PendingTransfer: Sendable {
    private let state = Mutex<(transfer: Transfer?, cancelled: Bool)>((nil, false))

    /// False when the caller was cancelled already.
    func start(_ transfer: Transfer) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.transfer = transfer
            return true
        }
    }

    /// The transfer to end, if it started.
    func cancel() -> Transfer? {
        state.withLock { state in
            state.cancelled = true
            return state.transfer
        }
    }
}
