import FoundationEssentials

/// Why a request's parameters could not be read. Each case becomes a 400 (or
/// 415) in the route's error shape; none of them is ever a 500.
public enum ParameterError: Error, Equatable, Sendable {
    case invalidPercentEncoding
    case invalidUTF8
    /// A NUL character: no identifier or text field has a use for one, and
    /// PostgreSQL cannot store it in text.
    case nulCharacter
    case invalidJSON(String)
    case jsonNotAnObject
    case jsonTooDeep(limit: Int)
    case tooManyParameters(limit: Int)
    case unsupportedContentType(String)

    /// The HTTP status this error answers with: 422, the status the
    /// contract documents for unusable input on every route that takes
    /// parameters, in the route's error shape.
    public var status: Int { 422 }

    /// A human-readable sentence for the error body.
    public var message: String {
        switch self {
        case .invalidPercentEncoding: return "Request contains invalid percent-encoding"
        case .invalidUTF8: return "Request parameters are not valid UTF-8"
        case .nulCharacter: return "Request parameters contain a NUL character"
        case .invalidJSON(let detail): return "Request body is not valid JSON: \(detail)"
        case .jsonNotAnObject: return "JSON request body must be an object"
        case .jsonTooDeep(let limit): return "JSON request body nests deeper than \(limit) levels"
        case .tooManyParameters(let limit): return "Request has more than \(limit) parameters"
        case .unsupportedContentType(let type):
            return "Unsupported Content-Type \(type); send application/x-www-form-urlencoded or application/json"
        }
    }
}

/// The merged parameter bag of one request (spec §2.2): query string, then the
/// form or JSON body on top of it, so a body value wins over a query value of
/// the same name, as Rails merges them. A JSON `null` is absent.
public struct Parameters: Sendable, Equatable {
    public private(set) var values: [String: JSONValue]

    public init(_ values: [String: JSONValue] = [:]) {
        self.values = values.values.contains(.null) ? values.filter { $0.value != .null } : values
    }

    /// A bag its maker knows holds no null (it was parsed from a form, a
    /// query, or JSON with its nulls removed): no second pass over it.
    init(withoutNulls values: [String: JSONValue]) {
        self.values = values
    }

    /// True when the parameter is present (not absent, not JSON null).
    public func contains(_ name: String) -> Bool { values[name] != nil }

    /// The parameter as text (numbers and booleans stringified), or nil when
    /// absent or not a scalar.
    public subscript(_ name: String) -> String? { values[name]?.scalarText }

    /// The parameter as an identifier: only a string (from a form, a query
    /// or a JSON string); `"token": false` or `"user_push_id": 0` is no id.
    public func identifier(_ name: String) -> String? {
        if case .string(let text)? = values[name] { return text }
        return nil
    }

    /// The raw JSON value of a parameter, for parameters that may be nested.
    public func value(_ name: String) -> JSONValue? { values[name] }

    /// Sets (or with nil removes) one parameter.
    public mutating func set(_ name: String, _ value: JSONValue?) {
        if let value, value != .null { values[name] = value } else { values.removeValue(forKey: name) }
    }

    /// Parses a query string or form body strictly: `+` is a space, `%XX`
    /// must be two hex digits, and the decoded bytes must be UTF-8. Pairs with
    /// an empty name are skipped; a repeated name keeps its last value.
    public static func parseURLEncoded(_ bytes: some Collection<UInt8>, limit: Int) throws(ParameterError) -> [(String, String)] {
        // Read in place when the bytes are contiguous (a body, a native
        // string's UTF-8): a pair is two slices of the buffer, not bytes
        // copied one at a time.
        let inPlace = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(ParameterError) in try parseURLEncoded(buffer: buffer, limit: limit) }
        }
        if let inPlace { return try inPlace.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer in
            Result { () throws(ParameterError) in try parseURLEncoded(buffer: buffer, limit: limit) }
        }.get()
    }

    private static func parseURLEncoded(buffer: UnsafeBufferPointer<UInt8>, limit: Int) throws(ParameterError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        var start = 0
        while start < buffer.count {
            var end = start
            while end < buffer.count, buffer[end] != UInt8(ascii: "&") { end += 1 }
            var equals = start
            while equals < end, buffer[equals] != UInt8(ascii: "=") { equals += 1 }
            let decodedName = try PercentEncoding.decode(UnsafeBufferPointer(rebasing: buffer[start..<equals]), plusAsSpace: true)
            if !decodedName.isEmpty {
                if pairs.count >= limit { throw .tooManyParameters(limit: limit) }
                let value =
                    equals < end ? UnsafeBufferPointer(rebasing: buffer[(equals + 1)..<end]) : UnsafeBufferPointer(rebasing: buffer[end..<end])
                pairs.append((decodedName, try PercentEncoding.decode(value, plusAsSpace: true)))
            }
            start = end + 1
        }
        return pairs
    }

    /// Parses a JSON body for the parameter bag: an object's members; any
    /// other valid JSON (an array, a string) carries no parameters, as Rails
    /// files it under `_json`, so validation then says what is missing.
    static func parseJSONBody(_ body: [UInt8], maxDepth: Int = 64) throws(ParameterError) -> [String: JSONValue] {
        do { return try parseJSONObject(body, maxDepth: maxDepth) } catch .jsonNotAnObject { return [:] }
    }

    /// Parses a JSON body that must be an object, refusing nesting deeper
    /// than `maxDepth` before the decoder sees it (a deep array bomb must be a
    /// 400, never a stack overflow).
    public static func parseJSONObject(_ body: [UInt8], maxDepth: Int = 64) throws(ParameterError) -> [String: JSONValue] {
        try checkNestingDepth(body, limit: maxDepth)
        let decoded: JSONValue
        do {
            decoded = try JSONValue(parsing: body)
        } catch let error as DecodingError {
            throw .invalidJSON(Self.describe(error))
        } catch {
            throw .invalidJSON("unreadable")
        }
        guard case .object(let members) = decoded else { throw .jsonNotAnObject }
        if containsNul(decoded) { throw .nulCharacter }
        return members
    }

    /// Whether any string (or key) in a JSON value holds U+0000.
    static func containsNul(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): return text.utf8.contains(0)
        case .array(let items): return items.contains(where: containsNul)
        case .object(let members): return members.contains { $0.key.utf8.contains(0) || containsNul($0.value) }
        default: return false
        }
    }

    private static func checkNestingDepth(_ body: [UInt8], limit: Int) throws(ParameterError) {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in body {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { throw .jsonTooDeep(limit: limit) }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context), .keyNotFound(_, let context):
            return context.debugDescription
        @unknown default:
            return "unreadable"
        }
    }
}

/// Strict percent-decoding (RFC 3986 with the form encoding's `+`).
public enum PercentEncoding {
    /// Decodes `%XX` escapes (and `+` as space when asked); fails on a
    /// truncated or non-hex escape and on bytes that are not UTF-8.
    public static func decode(_ bytes: some Collection<UInt8>, plusAsSpace: Bool) throws(ParameterError) -> String {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || ($0 == UInt8(ascii: "+") && plusAsSpace) || $0 == 0 }) {
            return try text(bytes)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw .invalidPercentEncoding
                }
                output.append(high << 4 | low)
            } else if byte == 0 {
                throw .nulCharacter
            } else if byte == UInt8(ascii: "+") && plusAsSpace {
                output.append(UInt8(ascii: " "))
            } else {
                output.append(byte)
            }
        }
        if output.contains(0) { throw .nulCharacter }
        return try text(output)
    }

    /// The bytes as text, refused when they are not UTF-8. ASCII is UTF-8 as
    /// it stands and takes the cheaper path: the validating initialiser is
    /// generic and showed in profiles of every form post.
    private static func text(_ bytes: some Collection<UInt8>) throws(ParameterError) -> String {
        if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
