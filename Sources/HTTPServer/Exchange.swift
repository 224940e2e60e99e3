import CMicroHTTPD
import FoundationEssentials
import Synchronization

/// The daemon pointer and what must be released with it.
struct DaemonHandle: @unchecked Sendable {
    // Only touched under the server's mutex, then by shutdown alone.
    let pointer: OpaquePointer
    let listenSocket: Int32
    let context: UnsafeMutableRawPointer
}

/// A suspended connection handed to the handler task.
struct ConnectionHandle: @unchecked Sendable {
    // The task uses it for exactly one call, MHD_resume_connection, which
    // libmicrohttpd allows from any thread when inter-thread communication is
    // on (MHD_ALLOW_SUSPEND_RESUME turns it on).
    let pointer: OpaquePointer
}

final class HeaderCollector {
    var headers: [(name: String, value: String)] = []
}

/// The state of one request on one connection, from the request line to the
/// completion notice.
final class Exchange: @unchecked Sendable {
    // Every field but `response` is touched only by the daemon thread that owns
    // the connection (libmicrohttpd calls one connection's callbacks from one
    // thread at a time); `response` crosses from the handler task under a lock.
    enum Phase { case headers, body, dispatched, responded }

    let rawPath: String
    let rawQuery: String
    /// The request target as libmicrohttpd's URI callback saw it (valid
    /// until the request completes), its length in bytes, and whether it was
    /// followed by the HTTP version (a NUL inside ends it early).
    let targetStart: UnsafePointer<CChar>?
    let targetLength: Int
    let targetIsWhole: Bool
    /// The connection's state in the guard (nil when the notice was missed).
    let tracked: ConnectionGuard.Tracked?
    let started = ContinuousClock.now
    var phase = Phase.headers
    var method = "GET"
    var match: Router.Match?
    var bodyLimit: Int
    var body: [UInt8] = []
    var overflowed = false
    /// The response is streamed: its handler stays counted in the gate until
    /// the request ends, so shutdown waits for (or stops) the stream.
    var streaming = false
    /// The streamed body's writer, while the response is being sent.
    var writer: BodyWriter?
    /// The client's address once resolved (for the access log).
    var client: String?
    private let response = Mutex<Response?>(nil)

    init(
        rawURI: String, bodyLimit: Int, targetStart: UnsafePointer<CChar>? = nil, targetLength: Int = 0, targetIsWhole: Bool = true,
        tracked: ConnectionGuard.Tracked? = nil
    ) {
        self.targetStart = targetStart
        self.targetLength = targetLength
        self.targetIsWhole = targetIsWhole
        self.tracked = tracked
        let bytes = rawURI.utf8
        if let question = bytes.firstIndex(of: UInt8(ascii: "?")) {
            rawPath = String(Substring(bytes[..<question]))
            rawQuery = String(Substring(bytes[bytes.index(after: question)...]))
        } else {
            rawPath = rawURI
            rawQuery = ""
        }
        self.bodyLimit = bodyLimit
    }

    func storeResponse(_ value: Response) { response.withLock { $0 = value } }
    func takeResponse() -> Response? {
        response.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

/// RFC 9110 tokens (header names, methods), as the strict framing checks them.
public enum HeaderToken {
    /// Whether `byte` may appear in a token.
    public static func isTokenByte(_ byte: UInt8) -> Bool { sidecar_is_tchar(byte) != 0 }
}
