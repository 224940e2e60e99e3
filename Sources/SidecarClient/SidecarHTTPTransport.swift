import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request as `SidecarAPI` builds it.
public struct SidecarHTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [(name: String, value: String)]
    public var body: Data?

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body
            && lhs.headers.map { "\($0.name): \($0.value)" } == rhs.headers.map { "\($0.name): \($0.value)" }
    }
}

/// How `SidecarAPI` moves bytes. The default is URLSession; inject another
/// to test without a server, or to use a tool's own HTTP client.
public protocol SidecarHTTPTransport: Sendable {
    /// The server's answer, whatever its status; `.transport` when none came.
    func send(_ request: SidecarHTTPRequest) async throws(SidecarAPI.Failure) -> SidecarAPI.Answer
}

/// URLSession as the transport (FoundationNetworking on Linux).
public struct URLSessionHTTPTransport: SidecarHTTPTransport {
    let session: URLSession

    public init(session: URLSession = .shared) { self.session = session }

    public func send(_ request: SidecarHTTPRequest) async throws(SidecarAPI.Failure) -> SidecarAPI.Answer {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.httpBody = request.body
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else { throw SidecarAPI.Failure.transport("not an HTTP answer") }
            return SidecarAPI.Answer(status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"), body: data)
        } catch let failure as SidecarAPI.Failure {
            throw failure
        } catch {
            throw .transport(Self.describe(error))
        }
    }

    /// A transport error in words an operator reads at a glance, not the whole error dump.
    static func describe(_ error: any Error) -> String {
        if let failure = error as? URLError {
            switch failure.code {
            case .timedOut: return "timed out"
            case .cannotConnectToHost: return "connection refused"
            case .cannotFindHost, .dnsLookupFailed: return "host not found"
            case .networkConnectionLost: return "the connection closed before an answer"
            case .badServerResponse: return "not an HTTP answer"
            case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
                .serverCertificateHasUnknownRoot, .clientCertificateRejected:
                return "TLS failed: \(failure.localizedDescription)"
            default: break
            }
        }
        return (error as NSError).localizedDescription
    }
}
