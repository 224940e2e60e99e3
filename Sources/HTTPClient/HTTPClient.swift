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

    public init(
        method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        timeoutSeconds: Int? = nil, upstream: String = "other", maxBodyBytes: Int? = nil,
        refuseAddress: (@Sendable (_ address: String, _ port: Int) -> Bool)? = nil
    ) {
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
            let response = try await withCheckedThrowingContinuation { continuation in
                driver.enqueue(Transfer(request: request, configuration: configuration, continuation: continuation))
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

/// One transfer: its easy handle, buffers and the caller's continuation.
final class Transfer: @unchecked Sendable {
    // Built by the caller, then owned by the driver thread alone.
    let request: HTTPClientRequest
    let configuration: HTTPClient.Configuration
    let continuation: CheckedContinuation<HTTPClientResponse, any Error>
    var handle: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var responseBody: [UInt8] = []
    var responseHeaders: [(name: String, value: String)] = []
    var overflowed = false
    /// The address `refuseAddress` refused, if it did.
    var refusedAddress: String?
    var requestBody: [UInt8]
    var maxBodyBytes: Int { request.maxBodyBytes ?? configuration.maxBodyBytes }

    init(
        request: HTTPClientRequest, configuration: HTTPClient.Configuration,
        continuation: CheckedContinuation<HTTPClientResponse, any Error>
    ) {
        self.request = request
        self.configuration = configuration
        self.continuation = continuation
        self.requestBody = request.body
    }

    /// Creates and configures the easy handle.
    func prepare() -> Bool {
        guard let handle = curl_easy_init() else { return false }
        self.handle = handle
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = sidecar_curl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_TIMEOUT, request.timeoutSeconds ?? configuration.timeoutSeconds)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, configuration.connectTimeoutSeconds)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = sidecar_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        _ = sidecar_curl_setopt_string(handle, CURLOPT_USERAGENT, configuration.userAgent)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_PRIVATE, context)
        _ = sidecar_curl_setopt_write(handle, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = sidecar_curl_setopt_write(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        if request.refuseAddress != nil {
            _ = sidecar_curl_setopt_prereq(handle, curlCheckAddress)
            _ = sidecar_curl_setopt_pointer(handle, CURLOPT_PREREQDATA, context)
        }
        if configuration.http2 {
            _ = sidecar_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            _ = sidecar_curl_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
        }
        if let caFile = configuration.caFile { _ = sidecar_curl_setopt_string(handle, CURLOPT_CAINFO, caFile) }
        switch request.method {
        case "GET": break
        case "POST":
            _ = sidecar_curl_setopt_long(handle, CURLOPT_POST, 1)
        default:
            _ = sidecar_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        }
        if request.method != "GET" {
            requestBody.withUnsafeBufferPointer { buffer in
                // COPYPOSTFIELDS copies, so the buffer need not outlive the call.
                _ = sidecar_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(buffer.count))
                _ = sidecar_curl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!))
            }
        }
        for (name, value) in request.headers { headerList = curl_slist_append(headerList, "\(name): \(value)") }
        if request.method != "GET" && !request.headers.contains(where: { $0.name.lowercased() == "expect" }) {
            headerList = curl_slist_append(headerList, "Expect:")
        }
        if let headerList { _ = sidecar_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, headerList) }
        return true
    }

    func finish(_ code: CURLcode) {
        defer { cleanup() }
        if overflowed {
            continuation.resume(throwing: HTTPClientError.bodyTooLarge(limit: maxBodyBytes))
            return
        }
        if let refusedAddress {
            continuation.resume(throwing: HTTPClientError.refusedAddress(refusedAddress))
            return
        }
        guard code == CURLE_OK, let handle else {
            continuation.resume(throwing: HTTPClientError.transport(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code))))
            return
        }
        var status = 0
        _ = sidecar_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        continuation.resume(returning: HTTPClientResponse(status: status, body: responseBody, headers: responseHeaders))
    }

    func fail(_ error: any Error) {
        cleanup()
        continuation.resume(throwing: error)
    }

    private func cleanup() {
        if let handle { curl_easy_cleanup(handle) }
        handle = nil
        curl_slist_free_all(headerList)
        headerList = nil
    }
}

/// Owns the multi handle; every curl call happens on its thread. The loop
/// uses libcurl's socket interface on an epoll set: libcurl says which
/// sockets to watch and when its next timeout is due, and each wake-up runs
/// only the transfers on the sockets that are ready.
final class MultiDriver: Sendable {
    private struct Queue {
        var waiting: [Transfer] = []
        var stopped = false
    }
    private let queue = Mutex(Queue())
    private let multi: MultiHandle
    private let maxConcurrent: Int
    /// The epoll set and the eventfd that wakes the loop (-1 if either could
    /// not be made: every transfer then fails at once).
    private let epoll: Int32
    private let wake: Int32
    /// libcurl's next timeout, kept by its timer callback (driver thread only).
    private let timer = DriverTimer()

    init(configuration: HTTPClient.Configuration) {
        multi = MultiHandle(curl_multi_init())
        maxConcurrent = max(configuration.maxConcurrentTransfers, 1)
        var wake: Int32 = -1
        epoll = sidecar_driver_open(&wake)
        self.wake = wake
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = sidecar_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAXCONNECTS, max(configuration.maxConnectionsPerHost * 8, 32))
        _ = sidecar_curl_multi_setopt_socket(multi.pointer, curlWatchSocket, UnsafeMutableRawPointer(bitPattern: Int(epoll) + 1))
        _ = sidecar_curl_multi_setopt_timer(multi.pointer, curlSetTimer, Unmanaged.passUnretained(timer).toOpaque())
    }

    // The eventfd is written only under the queue's lock and only before
    // `stopped` is set; the driver closes it after seeing `stopped`, so a
    // late caller can never write into a descriptor number reused since.
    func enqueue(_ transfer: Transfer) {
        let accepted = queue.withLock { state -> Bool in
            guard !state.stopped, epoll >= 0 else { return false }
            state.waiting.append(transfer)
            sidecar_driver_wake(wake)
            return true
        }
        if !accepted { transfer.fail(HTTPClientError.shutDown) }
    }

    func stop() {
        queue.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if wake >= 0 { sidecar_driver_wake(wake) }
        }
    }

    /// The driver loop: admit waiting transfers up to the limit, wait for a
    /// ready socket, libcurl's timeout or a wake-up, run what is ready, collect.
    func run() {
        var running: [ObjectIdentifier: Transfer] = [:]
        var fds = [Int32](repeating: 0, count: 64)
        var flags = [Int32](repeating: 0, count: 64)
        var active: Int32 = 0
        while true {
            let (admitted, stopped) = queue.withLock { state -> ([Transfer], Bool) in
                let room = max(maxConcurrent - running.count, 0)
                let batch = Array(state.waiting.prefix(room))
                state.waiting.removeFirst(batch.count)
                return (batch, state.stopped)
            }
            if stopped || epoll < 0 {
                queue.withLock { $0.stopped = true }
                for transfer in running.values {
                    if let handle = transfer.handle { curl_multi_remove_handle(multi.pointer, handle) }
                    transfer.fail(HTTPClientError.shutDown)
                }
                let leftovers = queue.withLock { state -> [Transfer] in
                    defer { state.waiting.removeAll() }
                    return state.waiting
                }
                (admitted + leftovers).forEach { $0.fail(HTTPClientError.shutDown) }
                curl_multi_cleanup(multi.pointer)
                if epoll >= 0 { close(epoll) }
                if wake >= 0 { close(wake) }
                return
            }
            for transfer in admitted {
                guard transfer.prepare(), let handle = transfer.handle else {
                    transfer.fail(HTTPClientError.transport(code: -1, message: "could not create a transfer"))
                    continue
                }
                curl_multi_add_handle(multi.pointer, handle)
                running[ObjectIdentifier(transfer)] = transfer
            }
            // Up to libcurl's next timeout; a second at most when it has none
            // (a wake-up comes through the eventfd anyway).
            let ready = sidecar_driver_wait(epoll, &fds, &flags, Int32(fds.count), timer.millisecondsLeft(cap: 1000))
            for index in 0..<Int(max(ready, 0)) {
                if fds[index] == wake {
                    sidecar_driver_drain(wake)
                } else {
                    curl_multi_socket_action(multi.pointer, fds[index], flags[index], &active)
                }
            }
            if timer.isDue {
                timer.deadline = nil  // libcurl sets the next one during the call
                curl_multi_socket_action(multi.pointer, CURL_SOCKET_TIMEOUT, 0, &active)
            }
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &remaining) {
                guard sidecar_curl_msg_done(message) != 0, let handle = sidecar_curl_msg_handle(message) else { continue }
                let code = sidecar_curl_msg_result(message)
                var context: UnsafeMutableRawPointer?
                _ = sidecar_curl_getinfo_pointer(handle, CURLINFO_PRIVATE, &context)
                curl_multi_remove_handle(multi.pointer, handle)
                guard let context else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                running.removeValue(forKey: ObjectIdentifier(transfer))
                transfer.finish(code)
            }
        }
    }
}

/// libcurl's next timeout as a monotonic deadline. Touched only on the
/// driver thread (the timer callback runs inside libcurl calls made there).
final class DriverTimer: @unchecked Sendable {
    var deadline: UInt64?

    var isDue: Bool { deadline.map { DispatchTime.now().uptimeNanoseconds >= $0 } ?? false }

    /// Milliseconds until the deadline (0 when due), at most `cap`.
    func millisecondsLeft(cap: Int32) -> Int32 {
        guard let deadline else { return cap }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return 0 }
        return Int32(min(UInt64(cap), (deadline - now + 999_999) / 1_000_000))
    }
}

/// libcurl's socket callback: watch the socket for what it asks
/// (`userp` carries the epoll descriptor plus one, so it is never nil).
func curlWatchSocket(
    _ easy: UnsafeMutableRawPointer?, _ socket: curl_socket_t, _ what: Int32, _ userp: UnsafeMutableRawPointer?,
    _ socketp: UnsafeMutableRawPointer?
) -> Int32 {
    guard let userp else { return -1 }
    return sidecar_driver_watch(Int32(Int(bitPattern: userp) - 1), socket, what)
}

/// libcurl's timer callback: -1 removes the timer, 0 means at once.
func curlSetTimer(_ multi: UnsafeMutableRawPointer?, _ timeoutMilliseconds: Int, _ userp: UnsafeMutableRawPointer?) -> Int32 {
    guard let userp else { return -1 }
    let timer = Unmanaged<DriverTimer>.fromOpaque(userp).takeUnretainedValue()
    timer.deadline =
        timeoutMilliseconds < 0 ? nil : DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
    return 0
}

/// The multi handle pointer, used only on the driver thread.
struct MultiHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    init(_ pointer: UnsafeMutableRawPointer?) { self.pointer = pointer! }
}

func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if transfer.responseBody.count + length > transfer.maxBodyBytes {
        transfer.overflowed = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
        transfer.responseBody.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}

func curlCheckAddress(
    _ context: UnsafeMutableRawPointer?, _ primaryIP: UnsafeMutablePointer<CChar>?, _ localIP: UnsafeMutablePointer<CChar>?,
    _ primaryPort: Int32, _ localPort: Int32
) -> Int32 {
    guard let context, let primaryIP else { return 1 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let address = String(cString: primaryIP)
    guard let refuse = transfer.request.refuseAddress, refuse(address, Int(primaryPort)) else { return 0 }  // CURL_PREREQFUNC_OK
    transfer.refusedAddress = address
    return 1  // CURL_PREREQFUNC_ABORT
}

func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        transfer.responseHeaders.removeAll()  // a new response (redirect, 100-continue)
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        var value = Substring(line[line.index(after: colon)...])
        while let first = value.first, first == " " || first == "\t" { value = value.dropFirst() }
        while let last = value.last, last.isWhitespace { value = value.dropLast() }  // "\r\n" is one Character
        transfer.responseHeaders.append((name, String(value)))
    }
    return length
}
