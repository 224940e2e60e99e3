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
        return Array(fields.map { "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&").utf8)
    }

    /// Sends a POST with a form body.
    public static func postForm(port: Int, _ target: String, _ fields: [(String, String)], source: String? = nil) async throws -> RawResponse {
        try await send(port: port, request("POST", target, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form(fields)), source: source)
    }

    /// Sends a POST with a JSON body.
    public static func postJSON(port: Int, _ target: String, _ json: String) async throws -> RawResponse {
        try await send(port: port, request("POST", target, headers: ["Content-Type": "application/json"], body: Array(json.utf8)))
    }

    /// Sends `bytes`, optionally from a given local address (any 127.x.y.z),
    /// and reads until the server closes. With `closeAfterSend`, hangs up
    /// right after writing (a client vanishing mid-body) and returns nil.
    @discardableResult
    public static func send(port: Int, _ bytes: [UInt8], source: String? = nil, closeAfterSend: Bool = false,
                            timeoutSeconds: Int = 10) async throws -> RawResponse {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try blockingExchange(port: port, bytes: bytes, source: source, closeAfterSend: closeAfterSend, timeoutSeconds: timeoutSeconds)
                })
            }.start()
        }
    }

    private static func blockingExchange(port: Int, bytes: [UInt8], source: String?, closeAfterSend: Bool, timeoutSeconds: Int) throws -> RawResponse {
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

    static func parse(_ bytes: [UInt8]) throws -> RawResponse {
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
        return RawResponse(status: status, headers: headers, body: body)
    }
}
