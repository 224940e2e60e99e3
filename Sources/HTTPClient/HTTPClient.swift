import CCurl
import FoundationEssentials
import PlatformThreads

/// A response from an outbound request.
public struct HTTPClientResponse: Sendable {
    public let status: Int
    public let body: [UInt8]
}

/// Why an outbound request produced no response.
public enum HTTPClientError: Error, CustomStringConvertible, Equatable {
    case invalidURL(String)
    case transport(code: Int, message: String)
    case bodyTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .invalidURL(let url): return "invalid URL \(url)"
        case .transport(let code, let message): return "transfer failed (curl \(code)): \(message)"
        case .bodyTooLarge(let limit): return "response body larger than \(limit) bytes"
        }
    }
}

/// Outbound HTTP on libcurl (not URLSession: see docs/design.md). This first
/// version runs one blocking transfer per call on its own thread, which suits
/// infrequent calls such as re-reading the regions directory.
public struct HTTPClient: Sendable {
    /// Seconds a whole transfer may take.
    public var timeoutSeconds: Int
    /// Largest response body accepted.
    public var maxBodyBytes: Int

    public init(timeoutSeconds: Int = 10, maxBodyBytes: Int = 16 << 20) {
        self.timeoutSeconds = timeoutSeconds
        self.maxBodyBytes = maxBodyBytes
        _ = HTTPClient.globalInit
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// GETs `url`, following no redirects beyond 5, and returns status and body.
    public func get(_ url: String, headers: [String] = []) async throws -> HTTPClientResponse {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { throw HTTPClientError.invalidURL(url) }
        let timeout = timeoutSeconds
        let limit = maxBodyBytes
        return try await withCheckedThrowingContinuation { continuation in
            // A blocking transfer must not occupy a thread of the shared pool.
            PlatformThread.detach(name: "http-client") {
                continuation.resume(with: Result { try Self.perform(url: url, headers: headers, timeout: timeout, limit: limit) })
            }
        }
    }

    private static func perform(url: String, headers: [String], timeout: Int, limit: Int) throws -> HTTPClientResponse {
        guard let handle = curl_easy_init() else { throw HTTPClientError.transport(code: -1, message: "curl_easy_init failed") }
        defer { curl_easy_cleanup(handle) }
        let sink = BodySink(limit: limit)
        let sinkPointer = Unmanaged.passUnretained(sink).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        _ = sidecar_curl_setopt_string(handle, CURLOPT_URL, url)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_TIMEOUT, timeout)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, min(timeout, 10))
        _ = sidecar_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = sidecar_curl_setopt_long(handle, CURLOPT_MAXREDIRS, 5)
        _ = sidecar_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        _ = sidecar_curl_setopt_string(handle, CURLOPT_USERAGENT, "onebusaway-sidecar")
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, list)
        _ = sidecar_curl_setopt_write(handle, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = sidecar_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, sinkPointer)
        let code = curl_easy_perform(handle)
        if sink.overflowed { throw HTTPClientError.bodyTooLarge(limit: limit) }
        guard code == CURLE_OK else {
            throw HTTPClientError.transport(code: Int(code.rawValue), message: String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        _ = sidecar_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPClientResponse(status: status, body: sink.bytes)
    }
}

final class BodySink {
    let limit: Int
    var bytes: [UInt8] = []
    var overflowed = false
    init(limit: Int) { self.limit = limit }
}

func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let sink = Unmanaged<BodySink>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if sink.bytes.count + length > sink.limit {
        sink.overflowed = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
        sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}
