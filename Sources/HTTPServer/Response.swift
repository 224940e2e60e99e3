import FoundationEssentials

/// An HTTP response. Build one with the static helpers.
public struct Response: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Extra `key=value` fields for this request's log line (never secrets).
    var logFields: [(String, String)] = []
    /// Writes the body while it is sent (chunked), instead of `body`.
    public var stream: (@Sendable (BodyWriter) async throws -> Void)?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A bodyless response (204 No Content, a DELETE's 404).
    public static func empty(_ status: Int) -> Response { Response(status: status) }

    /// A JSON response from any Encodable value.
    public static func json(_ status: Int, _ value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8)
        return Response(status: status, headers: [("Content-Type", "application/json; charset=utf-8")], body: body)
    }

    /// A body of raw bytes with the given content type.
    public static func bytes(_ status: Int, contentType: String, _ body: [UInt8]) -> Response {
        Response(status: status, headers: [("Content-Type", contentType)], body: body)
    }

    /// A body written while it is sent, in chunks, with bounded memory: the
    /// producer's `write` waits while the client is slower. A producer that
    /// throws cuts the body short, so the client sees an incomplete response.
    public static func streamed(
        _ status: Int, contentType: String, _ producer: @escaping @Sendable (BodyWriter) async throws -> Void
    ) -> Response {
        var response = Response(status: status, headers: [("Content-Type", contentType)])
        response.stream = producer
        return response
    }

    /// Returns a copy with one more header.
    public func adding(header name: String, _ value: String) -> Response {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }

    /// A `303 See Other` to a path of this site (after a form's POST).
    public static func seeOther(_ location: String) -> Response {
        Response(status: 303, headers: [("Location", location)])
    }

    /// Returns a copy with one more log field.
    public func logging(_ name: String, _ value: String) -> Response {
        var copy = self
        copy.logFields.append((name, value))
        return copy
    }
}

/// The three error shapes of spec §2.5; a route declares which one its
/// clients parse so that even a malformed request is answered in that shape.
public enum ErrorStyle: Sendable {
    /// `{"error": "..."}` (404s, unknown survey).
    case simple
    /// `{"error": "<summary>", "messages": [...]}` (alarms, push registrations,
    /// Live Activities, ghost-bus reports).
    case messages
    /// `{"errors": [...]}` (surveys and survey responses).
    case legacy
    /// Rendered by the application (an HTML page for browsers).
    case custom(@Sendable (_ status: Int, _ error: String, _ messages: [String]) -> Response)

    /// Renders an error in this shape.
    public func response(status: Int, error: String, messages: [String]) -> Response {
        switch self {
        case .simple:
            return .json(status, ["error": messages.first.map { "\(error): \($0)" } ?? error])
        case .messages:
            return .json(status, ErrorWithMessages(error: error, messages: messages))
        case .legacy:
            return .json(status, ["errors": messages.isEmpty ? [error] : messages])
        case .custom(let render):
            return render(status, error, messages)
        }
    }
}

/// `{"error": ..., "messages": [...]}`.
struct ErrorWithMessages: Codable, Sendable, Equatable {
    public var error: String
    public var messages: [String]
    public init(error: String, messages: [String]) {
        self.error = error
        self.messages = messages
    }
}

/// Standard reason phrases for log lines and status text.
enum StatusText {
    static func phrase(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Payload Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Error"
        }
    }
}
