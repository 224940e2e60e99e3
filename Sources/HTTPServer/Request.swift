import FoundationEssentials

/// One HTTP request as the application sees it: method, decoded path
/// segments, the merged parameter bag, headers, raw body and the TCP peer.
public struct Request: Sendable {
    /// Upper-case method, e.g. `POST`.
    public let method: String
    /// The path exactly as received, without the query string.
    public let rawPath: String
    /// The raw query string (after `?`), still percent-encoded; may carry a
    /// rider's `app_uid`, so it is never logged.
    public let rawQuery: String
    /// Header fields with lower-cased names, in arrival order.
    public let headers: [(name: String, value: String)]
    /// The request body as received (bounded by the route's body limit).
    public let body: [UInt8]
    /// The TCP peer's address (never X-Forwarded-For).
    let peerAddress: String
    /// The client's address: the TCP peer, unless the application resolved
    /// another from a trusted proxy's headers. Throttles and logs use it.
    public var clientAddress: String
    /// What per-client limits count under: the client's IPv4 address, or its
    /// IPv6 /64 (one subscriber's allocation, so address hopping within it
    /// does not multiply a limit).
    public var clientKey: String { ClientAddress.limitKey(clientAddress) }
    /// Values captured by the route pattern, e.g. `region` for `:region`.
    public internal(set) var pathParameters: [String: String] = [:]
    /// Query string merged with the form or JSON body (spec §2.2).
    public internal(set) var parameters = Parameters()
    /// The route pattern that matched, for logs (never the raw URL).
    public internal(set) var routePattern: String = "unmatched"

    public init(
        method: String, rawPath: String, rawQuery: String = "",
        headers: [(name: String, value: String)] = [], body: [UInt8] = [], peerAddress: String = ""
    ) {
        self.method = method
        self.rawPath = rawPath
        self.rawQuery = rawQuery
        self.headers = headers
        self.body = body
        self.peerAddress = peerAddress
        self.clientAddress = peerAddress
    }

    /// The first header with this (case-insensitive) name.
    public func header(_ name: String) -> String? {
        let lowered = name.asciiLowercased()
        return headers.first { $0.name == lowered }?.value
    }

    /// The value of a cookie from the `Cookie` header(s), or nil. Only
    /// cookie-octets are accepted; anything else reads as no cookie.
    public func cookie(_ name: String) -> String? { cookies(name).first }

    /// Every value sent for a cookie name, in the order sent: a browser sends
    /// one per path it was set for (the most specific first). Values that
    /// are not cookie-octets are left out.
    public func cookies(_ name: String) -> [String] {
        var values: [String] = []
        for (headerName, value) in headers where headerName == "cookie" {
            for pair in value.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
                var found = trimmed[trimmed.index(after: equals)...]
                if found.hasPrefix("\""), found.hasSuffix("\""), found.count >= 2 { found = found.dropFirst().dropLast() }
                guard found.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && !"\",;\\".unicodeScalars.contains($0) }) else {
                    continue
                }
                values.append(String(found))
            }
        }
        return values
    }

    /// The media type of the body without parameters, lower-cased
    /// (`application/json; charset=utf-8` → `application/json`).
    public var mediaType: String? {
        guard let raw = header("content-type") else { return nil }
        var bytes = raw.utf8[...]
        if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { bytes = bytes[..<semicolon] }
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty else { return nil }
        return String(Substring(bytes)).asciiLowercased()
    }

    /// Parses query and body into `parameters` (body wins over query). A body
    /// with no Content-Type is read as a form, as Rack does, unless it is a
    /// JSON object.
    mutating func parseParameters(limit: Int) throws(ParameterError) {
        var merged: [String: JSONValue] = [:]
        for (name, value) in try Parameters.parseURLEncoded(rawQuery.utf8, limit: limit) {
            merged[name] = .string(value)
        }
        let queryCount = merged.count
        if !body.isEmpty {
            var bodyValues: [String: JSONValue]
            switch mediaType {
            case let type? where type == "application/json" || type.hasSuffix("+json"):
                bodyValues = try Self.jsonValues(body)
            case "application/x-www-form-urlencoded":
                bodyValues = try Self.formValues(body, limit: limit - queryCount)
            case nil:
                if Self.looksLikeJSONObject(body) {
                    bodyValues = try Self.jsonValues(body)
                } else {
                    bodyValues = try Self.formValues(body, limit: limit - queryCount)
                }
            case let type?:
                throw .unsupportedContentType(type)
            }
            if queryCount + bodyValues.count > limit { throw .tooManyParameters(limit: limit) }
            if merged.isEmpty {
                merged = bodyValues
            } else {
                merged.merge(bodyValues) { _, body in body }
            }
        }
        // Forms and queries carry strings only, and JSON's nulls are gone.
        parameters = Parameters(withoutNulls: merged)
    }

    /// A JSON body's members without its nulls: a JSON null is absent, so it
    /// neither sets nor erases a value.
    private static func jsonValues(_ body: [UInt8]) throws(ParameterError) -> [String: JSONValue] {
        let values = try Parameters.parseJSONBody(body)
        return values.values.contains(.null) ? values.filter { $0.value != .null } : values
    }

    private static func formValues(_ body: [UInt8], limit: Int) throws(ParameterError) -> [String: JSONValue] {
        let pairs = try Parameters.parseURLEncoded(body, limit: max(limit, 0))
        var values = [String: JSONValue](minimumCapacity: pairs.count)
        for (name, value) in pairs {
            values[name] = .string(value)
        }
        return values
    }

    private static func looksLikeJSONObject(_ body: [UInt8]) -> Bool {
        let first = body.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        return first == UInt8(ascii: "{")
    }
}

extension String {
    /// Lower-cases A-Z only: header names and media types are ASCII, and
    /// Unicode-aware lower-casing costs far more on a hot path.
    public func asciiLowercased() -> String {
        guard utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return self }
        return String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// `lowercased()`, the same result, with a cheaper path for ASCII text
    /// (almost every value a client sends): Unicode-aware lower-casing
    /// showed in profiles of every registration.
    public func lowercasedFastIfASCII() -> String {
        utf8.allSatisfy { $0 < 0x80 } ? asciiLowercased() : lowercased()
    }
}
