import CMicroHTTPD

// libmicrohttpd's C callbacks. They live outside main.swift on purpose: a
// closure there would be main-actor isolated and trap when a daemon thread
// calls it.

/// Called once per request with the raw request target (path and query,
/// still percent-encoded); the returned object becomes the request's context.
func mhdRequestStarted(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?,
    _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let length = uri.map { strlen($0) } ?? 0
    let whole = uri.map { sidecar_request_target_is_whole($0, length, server.checksHeadLayout ? 1 : 0) != 0 } ?? false
    let tracked = connection.flatMap { sidecar_mhd_socket_context($0) }
        .map { Unmanaged<ConnectionGuard.Tracked>.fromOpaque($0).takeUnretainedValue() }
    if let tracked { server.connectionGuard.requestLineSeen(tracked) }
    let exchange = Exchange(
        rawURI: uri.map { String(cString: $0) } ?? "/", bodyLimit: server.configuration.defaultBodyLimit,
        targetStart: uri, targetLength: length, targetIsWhole: whole, tracked: tracked)
    // Copied above; libmicrohttpd's own parse of it could exhaust the pool.
    if let uri { sidecar_empty_query(uri) }
    server.liveExchanges.add(1, ordering: .relaxed)
    return Unmanaged.passRetained(exchange).toOpaque()
}

/// Called for the headers, each chunk of body, the end of the body, and once
/// more after a suspended connection is resumed.
func mhdAccessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?,
    _ uploadData: UnsafePointer<CChar>?, _ uploadSize: UnsafeMutablePointer<Int>?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadSize, let raw = context?.pointee else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
    return server.access(connection, exchange, method: method, version: version, uploadData: uploadData, uploadSize: uploadSize)
}

/// Called when a request ends for any reason (answered, client gone mid-body,
/// timeout, shutdown): frees its context.
func mhdRequestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ reason: MHD_RequestTerminationCode
) {
    guard let cls, let raw = context?.pointee else { return }
    context?.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
    server.requestEnded(exchange)
}

/// Called when a connection opens and when it closes: the connection guard
/// tracks it in between (its state rides in the socket context).
func mhdConnectionNotice(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    switch code.rawValue {
    case 0:  // MHD_CONNECTION_NOTIFY_STARTED
        let (key, address) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer -> (String, String) in
            let key = sidecar_mhd_client_key(connection, buffer.baseAddress, 128) > 0 ? String(cString: buffer.baseAddress!) : "unknown"
            let address = sidecar_mhd_client_ip(connection, buffer.baseAddress, 128) > 0 ? String(cString: buffer.baseAddress!) : "unknown"
            return (key, address)
        }
        let tracked = server.connectionGuard.opened(fd: sidecar_mhd_connection_fd(connection), clientKey: key, address: address)
        socketContext.pointee = Unmanaged.passRetained(tracked).toOpaque()
    default:  // MHD_CONNECTION_NOTIFY_CLOSED
        guard let raw = socketContext.pointee else { return }
        socketContext.pointee = nil
        server.connectionGuard.closed(Unmanaged<ConnectionGuard.Tracked>.fromOpaque(raw).takeRetainedValue())
    }
}

/// Called before a new connection is accepted: refuses a client already
/// holding its share of connections.
func mhdAcceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls, let address else { return .YES }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    guard server.configuration.connectionsPerClient > 0 else { return .YES }
    let admitted = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer -> Bool in
        let key = sidecar_client_key(address, buffer.baseAddress, 128) > 0 ? String(cString: buffer.baseAddress!) : "unknown"
        let text = sidecar_address_text(address, buffer.baseAddress, 128) > 0 ? String(cString: buffer.baseAddress!) : "unknown"
        return server.connectionGuard.admits(clientKey: key, address: text)
    }
    return admitted ? .YES : .NO
}

/// Collects one request header (names lower-cased).
func mhdCollectHeader(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind,
    _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<HeaderCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.headers.append((String(cString: key).asciiLowercased(), value.map { String(cString: $0) } ?? ""))
    return .YES
}
