import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A response read off the wire.
public struct RawResponse: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body decoded as a JSON object.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

public enum RawHTTPError: Error { case connectFailed(Int32), noResponse(String) }

/// Sends exact bytes to a local server on a plain thread (never blocking the
/// shared concurrency pool the server's handlers need) and reads the reply.
public enum RawHTTPClient {
    /// Builds a request with `Connection: close` and a Content-Length for the body.
    public static func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = []) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    public static func form(_ fields: [(String, String)]) -> [UInt8] {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return Array(
            fields.map {
                "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)"
            }
            .joined(separator: "&").utf8)
    }

    /// Sends a POST with a form body.
    public static func postForm(port: Int, _ target: String, _ fields: [(String, String)], source: String? = nil) async throws -> RawResponse {
        try await send(
            port: port, request("POST", target, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form(fields)), source: source)
    }

    /// Sends a POST with a JSON body.
    public static func postJSON(port: Int, _ target: String, _ json: String) async throws -> RawResponse {
        try await send(port: port, request("POST", target, headers: ["Content-Type": "application/json"], body: Array(json.utf8)))
    }

    /// Sends `bytes`, optionally from a given local address (any 127.x.y.z),
    /// and reads until the server closes. With `closeAfterSend`, hangs up
    /// right after writing (a client vanishing mid-body) and returns nil.
    /// The default wait only catches a hang: on two busy cores the
    /// PostgreSQL pass's hundreds of servers and databases have held an
    /// answer past 30 s, and a test about what the server answers must not
    /// fail on how long it took.
    @discardableResult
    public static func send(
        port: Int, _ bytes: [UInt8], source: String? = nil, closeAfterSend: Bool = false,
        timeoutSeconds: Int = 180
    ) async throws -> RawResponse {
        try await offPool {
            try blockingExchange(port: port, bytes: bytes, source: source, closeAfterSend: closeAfterSend, timeoutSeconds: timeoutSeconds)
        }
    }

    private static func blockingExchange(port: Int, bytes: [UInt8], source: String?, closeAfterSend: Bool, timeoutSeconds: Int) throws -> RawResponse
    {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connectFailed(errno) }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            _ = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RawHTTPError.connectFailed(errno) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { break }
            offset += written
        }
        if closeAfterSend { return RawResponse(status: 0, headers: [], body: []) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return try parse(received)
    }

    public static func parse(_ bytes: [UInt8]) throws -> RawResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let split = (0..<max(bytes.count - 3, 0)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            throw RawHTTPError.noResponse(String(decoding: bytes, as: UTF8.self))
        }
        let head = String(decoding: bytes[..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw RawHTTPError.noResponse(head[0]) }
        var headers: [(name: String, value: String)] = []
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(bytes[(split + 4)...])
        if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }), body.count > length {
            body = Array(body.prefix(length))
        }
        if headers.contains(where: { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().contains("chunked") }) {
            body = try dechunked(body)
        }
        return RawResponse(status: status, headers: headers, body: body)
    }

    /// The body of a chunked response; throws when it was cut short (no
    /// last chunk), as a streamed body that failed mid-way is.
    public static func dechunked(_ bytes: [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while true {
            guard let end = (index..<max(bytes.count - 1, index)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[index..<end], as: UTF8.self).split(separator: ";").first ?? "", radix: 16)
            else { throw RawHTTPError.noResponse("a chunked body cut short after \(output.count) bytes") }
            if size == 0 { return output }
            let start = end + 2
            guard start + size + 2 <= bytes.count else { throw RawHTTPError.noResponse("a chunked body cut short after \(output.count) bytes") }
            output += bytes[start..<start + size]
            index = start + size + 2
        }
    }
}

/// A blocking TCP connection kept open across steps of a test (a slow or
/// idle client). Used from plain threads or short calls only.
public final class RawSocket: @unchecked Sendable {
    // Used by one test at a time; the descriptor is only read after init.
    public let fd: Int32

    /// Connects to 127.0.0.1:`port`, optionally from another loopback address.
    public init(port: Int, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connectFailed(errno) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            _ = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw RawHTTPError.connectFailed(code)
        }
    }

    deinit { Glibc.close(fd) }

    /// Ends the connection both ways now, as a client that goes away does.
    public func hangUp() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Writes bytes; false when the server has closed the connection.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads what arrives within `timeoutSeconds` (stopping early at end of
    /// stream); `closed` tells whether the server closed the connection.
    public func read(timeoutSeconds: Double) -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(deadline.timeIntervalSinceNow * 1000, 0))
            guard poll(&poller, 1, remaining) > 0 else { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (received, true) }
            received.append(contentsOf: buffer[0..<count])
        }
        return (received, false)
    }

    /// True when the server has closed the connection (end of stream or reset).
    public var isClosedByServer: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0
    }

    /// `read` on a plain thread, so waiting never holds one of the few
    /// threads of the shared concurrency pool (the server's handlers run there).
    public func readOffPool(timeoutSeconds: Double) async -> (bytes: [UInt8], closed: Bool) {
        await offPool { self.read(timeoutSeconds: timeoutSeconds) }
    }

    /// The response read (status and headers), or nil.
    public func response(timeoutSeconds: Double = 3) async -> (response: RawResponse?, closed: Bool) {
        let (bytes, closed) = await readOffPool(timeoutSeconds: timeoutSeconds)
        return (try? RawHTTPClient.parse(bytes), closed)
    }
}
