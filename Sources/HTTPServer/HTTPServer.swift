import CMicroHTTPD
import FoundationEssentials
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd (epoll, a thread pool) whose handlers
/// are `async`: each request's connection is suspended while its Swift task
/// runs and resumed with the response (or, for a route with a `deferred`
/// handler, resumed by whoever calls that handler back, with no task).
public final class HTTPServer: Sendable {
    public let configuration: ServerConfiguration
    let router: Router
    let logger: Logger
    let connectionGuard: ConnectionGuard
    private let daemon = Mutex<DaemonHandle?>(nil)
    private let boundPort = Atomic<Int>(0)
    /// Handlers running now (suspended connections), plus `gateClosed` once
    /// shutdown forbids new ones: libmicrohttpd aborts the process if it is
    /// stopped with a connection suspended, so no handler may start after
    /// the count was seen at zero.
    private let gate = Atomic<Int>(0)
    private static let gateClosed = 1 << 40
    /// Set when shutdown begins: every response closes its connection.
    private let draining = Atomic<Bool>(false)
    /// Exchange states alive right now (allocated per request, freed when
    /// libmicrohttpd reports the request finished); tests check it returns to 0.
    let liveExchanges = Atomic<Int>(0)
    /// Streamed responses being sent, so a stop can cut short those whose
    /// clients are too slow to take them before the deadline.
    private let openStreams = Mutex<[ObjectIdentifier: BodyWriter]>([:])
    /// Whether the NUL checks that depend on libmicrohttpd's buffer layout
    /// are on (only for the version they were written against).
    let checksHeadLayout: Bool

    /// The libmicrohttpd version whose head layout the NUL checks rely on.
    static let layoutCheckedVersion = "0.9.75"

    public init(configuration: ServerConfiguration, router: Router, logger: Logger) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        checksHeadLayout = String(cString: MHD_get_version()) == Self.layoutCheckedVersion
        connectionGuard = ConnectionGuard(
            settings: ConnectionGuard.Settings(
                perClientLimit: configuration.connectionsPerClient, headerTimeoutSeconds: configuration.headerTimeoutSeconds,
                minimumBodyBytesPerSecond: configuration.minimumBodyBytesPerSecond, connectionLimit: configuration.connectionLimit,
                isExempt: { [trusted = configuration.trustedProxies] address in trusted?.contains(address) ?? false }), logger: logger)
    }

    /// The bound port (useful with port 0).
    public var port: Int { boundPort.load(ordering: .acquiring) }

    /// Requests whose handlers are running now.
    public var requestsInFlight: Int { gate.load(ordering: .acquiring) & (Self.gateClosed - 1) }

    /// Open client connections.
    public var openConnections: Int { connectionGuard.openConnections }
    /// Open connections not being closed: what `connectionLimit` bounds (a
    /// closed one counts in `openConnections` until libmicrohttpd lets go).
    public var liveConnections: Int { connectionGuard.liveConnections }

    /// Connections closed for being slow, idle near the limit, or over the
    /// per-client limit.
    public var connectionsClosedByGuard: Int { connectionGuard.closedTotal.load(ordering: .relaxed) }

    /// Binds and starts serving; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        var port: Int32 = 0
        let fd = sidecar_listen(configuration.host, Int32(configuration.port), Int32(configuration.listenBacklog), &port)
        if fd < 0 {
            let reason = fd <= -1000 ? String(cString: gai_strerror(-(fd + 1000))) : String(cString: strerror(-fd))
            throw ServerError.listenFailed(host: configuration.host, port: configuration.port, reason: reason)
        }
        // The daemon holds `self` as its callback context until shutdown.
        let context = Unmanaged.passRetained(self).toOpaque()
        // libmicrohttpd closes a connection past its limit on accept, before
        // the guard can make room, and splits the limit between its threads;
        // it gets slack above the limit the guard keeps by evicting the
        // slowest and idlest connections, so a newcomer is not the one lost.
        let daemonLimit = configuration.connectionLimit + max(configuration.connectionLimit / 2, 16)
        guard
            let handle = sidecar_mhd_start(
                fd, UInt32(configuration.threads), UInt32(configuration.connectionTimeoutSeconds),
                configuration.headerLimitBytes, UInt32(daemonLimit),
                mhdAccessHandler, context, mhdRequestCompleted, context, mhdRequestStarted, context,
                mhdConnectionNotice, context, mhdAcceptPolicy, context)
        else {
            Unmanaged<HTTPServer>.fromOpaque(context).release()
            close(fd)
            throw ServerError.daemonFailed
        }
        daemon.withLock { $0 = DaemonHandle(pointer: handle, listenSocket: fd, context: context) }
        boundPort.store(Int(port), ordering: .releasing)
        connectionGuard.start()
        if !checksHeadLayout {
            logger.warning(
                "NUL bytes in request heads are not detected with this libmicrohttpd; keep a proxy in front",
                [("libmicrohttpd", String(cString: MHD_get_version())), ("checked", Self.layoutCheckedVersion)])
        }
        return Int(port)
    }

    /// Graceful stop: stops accepting connections, lets every request that
    /// has begun finish (each response then closes its connection, so
    /// keep-alive clients go elsewhere), and closes what remains. Returns
    /// false when `grace` ran out first: requests still being received were
    /// cut off, or handlers are still running, in which case the daemon is
    /// left to the process exit rather than stopped under them (that would
    /// abort the process).
    @discardableResult
    public func shutdown(grace: Duration = .seconds(10)) async -> Bool {
        guard
            let handle = daemon.withLock({ value -> DaemonHandle? in
                defer { value = nil }
                return value
            })
        else { return true }
        let listenSocket = MHD_quiesce_daemon(handle.pointer)
        if listenSocket >= 0 { close(listenSocket) }
        draining.store(true, ordering: .releasing)
        let deadline = ContinuousClock.now + grace
        // A streamed body has until shortly before the deadline (2 s, or a
        // quarter of a short grace) to reach its client; then it is cut short
        // (the client sees it end in error), so a slow or stalled reader
        // cannot hold the stop past the deadline.
        let cutStreamsAt = deadline - min(grace / 4, .seconds(2))
        var cut = false
        func cutStreamsWhenDue() {
            guard !cut, ContinuousClock.now >= cutStreamsAt else { return }
            cut = true
            openStreams.withLock { Array($0.values) }.forEach { $0.cutShortForShutdown() }
        }
        while liveExchanges.load(ordering: .acquiring) - abandonedStreams > 0 && ContinuousClock.now < deadline {
            cutStreamsWhenDue()
            try? await Task.sleep(for: .milliseconds(5))
        }
        let unfinished = liveExchanges.load(ordering: .acquiring) - abandonedStreams
        // From here no handler starts: a request arriving now is refused
        // without suspending its connection.
        gate.bitwiseOr(Self.gateClosed, ordering: .acquiringAndReleasing)
        while requestsInFlight - abandonedStreams > 0 && ContinuousClock.now < deadline {
            cutStreamsWhenDue()
            try? await Task.sleep(for: .milliseconds(5))
        }
        let running = requestsInFlight - abandonedStreams
        guard running == 0 else {
            logger.warning("shutdown deadline passed with requests still running", [("requests", String(running))])
            return false
        }
        // Give the daemon threads a moment to flush the responses just queued.
        try? await Task.sleep(for: .milliseconds(20))
        MHD_stop_daemon(handle.pointer)
        connectionGuard.stop()
        Unmanaged<HTTPServer>.fromOpaque(handle.context).release()
        if unfinished > 0 {
            logger.warning("shutdown deadline cut off requests still being received", [("requests", String(unfinished))])
            return false
        }
        return true
    }

    // MARK: - Request life cycle (called from libmicrohttpd's threads)

    func access(
        _ connection: OpaquePointer, _ exchange: Exchange, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        switch exchange.phase {
        case .headers:
            exchange.method = method.map { String(cString: $0) } ?? "GET"
            if let problem = headProblem(connection, exchange, method: method, version: version) {
                exchange.phase = .responded
                let response = ErrorStyle.simple.response(status: 400, error: "Bad Request", messages: [problem])
                    .adding(header: "Connection", "close")
                return queue(response, on: connection, exchange: exchange)
            }
            if let tracked = exchange.tracked { connectionGuard.headersComplete(tracked) }
            exchange.match = router.match(method: exchange.method, rawPath: exchange.rawPath)
            if case .route(let route, _, _) = exchange.match, let limit = route.bodyLimit { exchange.bodyLimit = limit }
            if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
                let length = Int(String(cString: declared)), length > exchange.bodyLimit
            {
                // Refuse before reading: libmicrohttpd closes the connection
                // after this response instead of draining the body.
                exchange.phase = .responded
                return queue(tooLarge(exchange), on: connection, exchange: exchange)
            }
            exchange.phase = .body
            return .YES
        case .body:
            let size = uploadSize.pointee
            if size > 0 {
                if let tracked = exchange.tracked { connectionGuard.bodyReceived(tracked, bytes: size) }
                if !exchange.overflowed, let uploadData {
                    if exchange.body.count + size > exchange.bodyLimit {
                        exchange.overflowed = true
                        exchange.body = []
                    } else {
                        uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                            exchange.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                        }
                    }
                }
                uploadSize.pointee = 0
                return .YES
            }
            if exchange.overflowed {
                exchange.phase = .responded
                return queue(tooLarge(exchange), on: connection, exchange: exchange)
            }
            if let tracked = exchange.tracked { connectionGuard.busy(tracked) }
            var request = Request(
                method: exchange.method, rawPath: exchange.rawPath, rawQuery: exchange.rawQuery,
                headers: Self.headers(of: connection), body: exchange.body,
                peerAddress: exchange.tracked?.address ?? Self.peerAddress(of: connection))
            if let trusted = configuration.trustedProxies {
                request.clientAddress = trusted.clientAddress(peer: request.peerAddress, headers: request.headers)
            }
            exchange.client = request.clientAddress
            exchange.body = []
            switch router.prepare(request, match: exchange.match ?? .notFound) {
            case .answered(let response):
                exchange.phase = .responded
                return queue(response, on: connection, exchange: exchange)
            case .dispatch(let prepared, let route):
                guard enterGate() else {
                    exchange.phase = .responded
                    let refusal = Response.json(503, ["error": "Service Unavailable: the server is shutting down"])
                        .adding(header: "Retry-After", "1")
                    return queue(refusal, on: connection, exchange: exchange)
                }
                exchange.phase = .dispatched
                dispatch(connection, exchange, prepared, route)
                return .YES
            }
        case .dispatched:
            guard let response = exchange.takeResponse() else { return .YES }
            exchange.phase = .responded
            let result = queue(response, on: connection, exchange: exchange)
            if !exchange.streaming { gate.subtract(1, ordering: .releasing) }
            return result
        case .responded:
            return .YES
        }
    }

    /// The request is over (answered, or the connection failed). A request
    /// whose handler ran but whose connection broke before the answer was
    /// queued (the client hung up while it was suspended: libmicrohttpd then
    /// closes it on resume without calling back) still leaves the gate here.
    func requestEnded(_ exchange: Exchange) {
        if exchange.phase == .dispatched {
            exchange.phase = .responded
            gate.subtract(1, ordering: .releasing)
        }
        // Forgotten as a stream before it leaves the counts, so a stop never
        // counts it twice (in the gate and as abandoned).
        if let writer = exchange.writer {
            exchange.writer = nil
            _ = openStreams.withLock { $0.removeValue(forKey: ObjectIdentifier(writer)) }
        }
        if exchange.streaming {
            exchange.streaming = false
            gate.subtract(1, ordering: .releasing)
        }
        if let tracked = exchange.tracked { connectionGuard.requestFinished(tracked) }
        liveExchanges.subtract(1, ordering: .relaxed)
    }

    /// Counts a handler in, unless shutdown has closed the gate.
    private func enterGate() -> Bool {
        var current = gate.load(ordering: .acquiring)
        while current & Self.gateClosed == 0 {
            let (exchanged, original) = gate.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Strict framing (see the shim): what is wrong with the request head,
    /// or nil. Checked before any body byte is read.
    private func headProblem(
        _ connection: OpaquePointer, _ exchange: Exchange, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> String? {
        guard let method else { return "missing method" }
        if !exchange.targetIsWhole { return "the request line contains a NUL, CR or control byte" }
        let http10 = version.map { strcmp($0, "HTTP/1.0") == 0 } ?? false
        let problem =
            exchange.targetStart.map {
                sidecar_mhd_check_head(connection, method, $0, exchange.targetLength, http10 ? 1 : 0, checksHeadLayout ? 1 : 0)
            } ?? Int32(SIDECAR_HEAD_BAD_REQUEST_LINE.rawValue)
        switch UInt32(problem) {
        case SIDECAR_HEAD_CLEAN.rawValue: return nil
        case SIDECAR_HEAD_BAD_REQUEST_LINE.rawValue: return "the request line contains a NUL, CR or control byte"
        case SIDECAR_HEAD_BAD_HEADER.rawValue: return "a header name is not a token, or a header value contains NUL, CR or a control byte"
        case SIDECAR_HEAD_FOLDED_OR_NUL.rawValue: return "a header line is folded or contains a NUL byte"
        case SIDECAR_HEAD_CONFLICTING_LENGTH.rawValue: return "Content-Length headers differ or are not a number"
        case SIDECAR_HEAD_LENGTH_AND_CODING.rawValue: return "Content-Length and Transfer-Encoding must not both be sent"
        default: return "the only transfer coding accepted is a single chunked"
        }
    }

    /// Hands a prepared request to a task; the connection is suspended
    /// until the task has its response.
    private func dispatch(_ connection: OpaquePointer, _ exchange: Exchange, _ request: Request, _ route: Route) {
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(pointer: connection)
        if route.middleware.isEmpty, let deferred = route.deferred {
            deferred(request) { response in
                exchange.storeResponse(response)
                MHD_resume_connection(handle.pointer)
            }
            return
        }
        let router = self.router
        Task {
            let response = await router.run(request, route: route)
            exchange.storeResponse(response)
            MHD_resume_connection(handle.pointer)
        }
    }

    /// The representation length a 304 states (its Content-Length header).
    static func notModifiedLength(_ response: Response) -> Int? {
        response.headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    private func queue(_ mhdResponse: OpaquePointer, _ response: Response, on connection: OpaquePointer) -> MHD_Result {
        for (name, value) in response.headers {
            _ = MHD_add_response_header(mhdResponse, name, value)
        }
        if draining.load(ordering: .relaxed) && !response.headers.contains(where: { $0.name == "Connection" }) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    /// Streams cut short whose producer has ended: nothing of ours runs for
    /// them any more, so stopping the daemon (which closes their connections)
    /// is safe even while their clients have not read the end.
    private var abandonedStreams: Int {
        openStreams.withLock { streams in
            streams.values.filter { $0.cutShort.load(ordering: .acquiring) && $0.producerEnded.load(ordering: .acquiring) }.count
        }
    }

    /// Queues a response whose body a task writes while libmicrohttpd sends
    /// it (chunked); the handler stays counted until the request ends.
    private func queueStream(
        _ response: Response, _ producer: @escaping @Sendable (BodyWriter) async throws -> Void, on connection: OpaquePointer,
        exchange: Exchange
    ) -> MHD_Result {
        let writer = BodyWriter(connection: ConnectionHandle(pointer: connection)) { self.draining.load(ordering: .relaxed) }
        let context = Unmanaged.passRetained(writer).toOpaque()
        guard let mhdResponse = MHD_create_response_from_callback(UInt64.max, 32 * 1024, mhdStreamRead, context, mhdStreamFree) else {
            Unmanaged<BodyWriter>.fromOpaque(context).release()
            return .NO
        }
        defer { MHD_destroy_response(mhdResponse) }
        let result = queue(mhdResponse, response, on: connection)
        guard result == .YES else { return result }
        exchange.streaming = true
        exchange.writer = writer
        openStreams.withLock { $0[ObjectIdentifier(writer)] = writer }
        Task {
            do {
                try await producer(writer)
                writer.finish(failed: false)
            } catch {
                writer.finish(failed: true)
            }
            writer.producerEnded.store(true, ordering: .releasing)
        }
        return result
    }

    private func tooLarge(_ exchange: Exchange) -> Response {
        let style: ErrorStyle
        if case .route(let route, _, _) = exchange.match { style = route.errorStyle } else { style = .simple }
        return style.response(
            status: 413, error: "Payload Too Large",
            messages: ["Request body exceeds \(exchange.bodyLimit) bytes"])
    }

    private func queue(_ response: Response, on connection: OpaquePointer, exchange: Exchange) -> MHD_Result {
        let result: MHD_Result
        if let producer = response.stream {
            result = queueStream(response, producer, on: connection, exchange: exchange)
        } else if response.status == 304, let length = Self.notModifiedLength(response) {
            // A 304 states the length of the representation it stands for
            // (RFC 9110 §8.6) and sends no body: a response of that size
            // whose body libmicrohttpd never reads (a 304 carries headers
            // only), so its own Content-Length is the right one and no
            // `Content-Length: 0` goes out.
            var headersOnly = response
            headersOnly.headers.removeAll { $0.name.lowercased() == "content-length" }
            guard let mhdResponse = MHD_create_response_from_callback(UInt64(length), 4096, mhdNoBody, nil, nil) else { return .NO }
            defer { MHD_destroy_response(mhdResponse) }
            result = queue(mhdResponse, headersOnly, on: connection)
        } else {
            result = response.body.withUnsafeBytes { bytes in
                guard
                    let mhdResponse = MHD_create_response_from_buffer(
                        bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
                else { return .NO }
                defer { MHD_destroy_response(mhdResponse) }
                return queue(mhdResponse, response, on: connection)
            }
        }
        let onAnswer = configuration.onAnswer
        guard onAnswer != nil || logger.isEnabled(.info) else { return result }
        var pattern = "unmatched"
        if case .route(let route, _, _) = exchange.match { pattern = route.pattern }
        let elapsed = ContinuousClock.now - exchange.started
        onAnswer?(
            exchange.method, pattern, response.status,
            elapsed.seconds)
        if logger.isEnabled(.info) {
            let hundredths = elapsed.components.seconds * 100_000 + elapsed.components.attoseconds / 10_000_000_000_000
            let fraction = hundredths % 100
            var fields = [
                ("method", exchange.method), ("route", pattern), ("status", String(response.status)),
                ("duration_ms", "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"),
            ]
            if let client = exchange.client { fields.append(("client", client)) }
            fields.append(contentsOf: response.logFields)
            logger.info("request", fields)
        }
        return result
    }

    private static func headers(of connection: OpaquePointer) -> [(name: String, value: String)] {
        let collector = HeaderCollector()
        let context = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, mhdCollectHeader, context)
        return collector.headers
    }

    private static func peerAddress(of connection: OpaquePointer) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let length = sidecar_mhd_client_ip(connection, buffer.baseAddress, 64)
            return length == 0 ? "unknown" : String(cString: buffer.baseAddress!)
        }
    }
}
