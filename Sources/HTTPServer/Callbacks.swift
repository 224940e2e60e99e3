import CMicroHTTPD

// libmicrohttpd's C callbacks. They live outside main.swift on purpose: a
// closure there would be main-actor isolated and trap when a daemon thread
// calls it.

/// Called once per request with the raw request target (path and query,
/// still percent-encoded); the returned object becomes the request's context.
func mhdRequestStarted(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?,
                       _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Exchange(rawURI: uri.map { String(cString: $0) } ?? "/", bodyLimit: server.configuration.defaultBodyLimit)
    server.liveExchanges.add(1, ordering: .relaxed)
    return Unmanaged.passRetained(exchange).toOpaque()
}

/// Called for the headers, each chunk of body, the end of the body, and once
/// more after a suspended connection is resumed.
func mhdAccessHandler(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                      _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?,
                      _ uploadData: UnsafePointer<CChar>?, _ uploadSize: UnsafeMutablePointer<Int>?,
                      _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let cls, let connection, let uploadSize, let raw = context?.pointee else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
    return server.access(connection, exchange, method: method, uploadData: uploadData, uploadSize: uploadSize)
}

/// Called when a request ends for any reason (answered, client gone mid-body,
/// timeout, shutdown): frees its context.
func mhdRequestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                         _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                         _ reason: MHD_RequestTerminationCode) {
    guard let cls, let raw = context?.pointee else { return }
    context?.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    Unmanaged<Exchange>.fromOpaque(raw).release()
    server.liveExchanges.subtract(1, ordering: .relaxed)
}

/// Collects one request header (names lower-cased).
func mhdCollectHeader(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind,
                      _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<HeaderCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.headers.append((String(cString: key).asciiLowercased(), value.map { String(cString: $0) } ?? ""))
    return .YES
}
