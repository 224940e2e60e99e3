import Core
import Crypto
import HTTPServer

/// What an admin API field takes. Query strings and forms carry text, so a
/// number or a flag may also come as its text there.
enum AdminField: Sendable, Equatable {
    case text, integer, boolean, object, list
    /// Text, a number or a flag, read as its text.
    case scalar

    var noun: String {
        switch self {
        case .text: "a string"
        case .integer: "an integer"
        case .boolean: "true or false"
        case .object: "an object"
        case .list: "a list"
        case .scalar: "a string, a number or true or false"
        }
    }

    func accepts(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.text, .string), (.integer, .integer), (.boolean, .bool), (.object, .object), (.list, .array): true
        case (.scalar, .string), (.scalar, .integer), (.scalar, .double), (.scalar, .bool): true
        case (.integer, .string(let text)): Int64(text) != nil
        case (.boolean, .string(let text)): text == "true" || text == "false"
        default: false
        }
    }
}

/// The conventions every admin API operation shares: strict fields,
/// cursor pagination, `ETag`/`If-Match`, and `Idempotency-Key`.
enum AdminConventions {
    /// The fields of a paginated list.
    static let paging: [String: AdminField] = ["limit": .integer, "after": .text]
    static let defaultLimit = 100
    static let maxLimit = 500

    /// Problems with the request's fields: names it does not take (each
    /// named, up to ten) and values of the wrong type. Empty when fine.
    static func fieldProblems(_ parameters: Parameters, accepts: [String: AdminField]) -> [String] {
        var problems: [String] = []
        let unknown = parameters.values.keys.filter { accepts[$0] == nil }.sorted()
        if !unknown.isEmpty {
            let named = unknown.prefix(10).map { "'" + String($0.prefix(64)) + "'" }.joined(separator: ", ")
            let more = unknown.count > 10 ? " and \(unknown.count - 10) more" : ""
            let known = accepts.keys.sorted().joined(separator: ", ")
            problems.append("unknown field\(unknown.count == 1 ? "" : "s") \(named)\(more); this operation takes \(known.isEmpty ? "none" : known)")
        }
        for (name, kind) in accepts.sorted(by: { $0.key < $1.key }) {
            if let value = parameters.value(name), !kind.accepts(value) { problems.append("\(name) must be \(kind.noun)") }
        }
        return problems
    }

    // MARK: Pagination

    /// One page's request: at most `limit` rows with an id above `after`
    /// (-1 for the first page).
    struct Page: Sendable, Equatable {
        var limit: Int
        var after: Int64
        /// Which list the cursor belongs to (a cursor of another list is refused).
        var list: String
        /// The key cursors are signed with (a `StoredSecret` of the database).
        var key: [UInt8]

        /// The rows of this page from rows in id order (one more than the
        /// limit tells there is a next page).
        func window<T>(_ rows: [T], id: (T) -> Int64) -> (rows: [T], next: Int64?) {
            let after = rows.filter { id($0) > self.after }
            guard after.count > limit else { return (after, nil) }
            let shown = Array(after.prefix(limit))
            return (shown, shown.last.map(id))
        }

        /// The answer for this page of `rows` (a list in id order, or a
        /// store's `limit + 1` rows after the cursor): a JSON array of
        /// `json` with the next page's `Link`.
        func response<T>(_ rows: [T], request: Request, id: (T) -> Int64, json: (T) -> JSONValue) -> Response {
            let (shown, next) = window(rows, id: id)
            return AdminConventions.pageResponse(shown.map(json), next: next, page: self, request: request)
        }
    }

    /// Reads `limit` (1 to 500, 100 by default) and `after` (a cursor this
    /// server gave for the same list, checked against `key`).
    static func page(_ request: Request, list: String, key: [UInt8]) throws(AdministrationError) -> Page {
        var limit = defaultLimit
        if let text = request.parameters["limit"] {
            guard let value = Int(text), (1...maxLimit).contains(value) else {
                throw .invalid(["limit must be an integer from 1 to \(maxLimit)"])
            }
            limit = value
        }
        // -1 before the first row: ids start at 0 (region 0 is a real region).
        var after: Int64 = -1
        if let cursor = request.parameters["after"] {
            after = try cursorID(cursor, list: list, key: key)
        }
        return Page(limit: limit, after: after, list: list, key: key)
    }

    /// The cursor of the row `id` in `list`: opaque to callers, and signed
    /// (HMAC-SHA-256 with the database's cursor key, 128 bits kept), so a
    /// cursor edited or made up by a caller is refused, not followed.
    static func cursor(list: String, id: Int64, key: [UInt8]) -> String {
        let payload = Array("v2|\(list)|\(id)".utf8)
        return Base64URL.encode(payload) + "." + signature(payload, key: key)
    }

    static func signature(_ payload: [UInt8], key: [UInt8]) -> String {
        Base64URL.encode(Array(HMACSHA256.tag(key: key, payload).prefix(16)))
    }

    static func cursorID(_ cursor: String, list: String, key: [UInt8]) throws(AdministrationError) -> Int64 {
        let refused = AdministrationError.invalid(["after is not a cursor this server gave; start again without it"])
        let halves = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard cursor.utf8.count <= 512, halves.count == 2, let payload = Base64URL.decodeCanonical(String(halves[0])),
            SecureCompare.equal(String(halves[1]), signature(payload, key: key)), let text = String(validating: payload, as: UTF8.self)
        else { throw refused }
        let parts = text.split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v2", let id = Int64(parts[2]), id >= 0 else { throw refused }
        guard parts[1] == list else { throw .invalid(["after is a cursor of another list; use the one this list's Link header gave"]) }
        return id
    }

    /// A page as a JSON array, with `Link: <…>; rel="next"` when there is more.
    static func pageResponse(_ items: [JSONValue], next: Int64?, page: Page, request: Request) -> Response {
        let response = Response.json(200, JSONValue.array(items))
        guard let next else { return response }
        var query = request.parameters.values.compactMap { name, value -> (String, String)? in
            guard name != "after", name != "limit", let text = value.scalarText else { return nil }
            return (name, text)
        }.sorted { $0.0 < $1.0 }
        query.append(("limit", String(page.limit)))
        query.append(("after", cursor(list: page.list, id: next, key: page.key)))
        let link = request.rawPath + "?" + query.map { "\(percentEncoded($0.0))=\(percentEncoded($0.1))" }.joined(separator: "&")
        return response.adding(header: "Link", "<\(link)>; rel=\"next\"")
    }

    static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                output += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return output
    }

    // MARK: Time ranges

    /// `from` and `to` (ISO 8601 with a UTC offset, inclusive) as epoch
    /// seconds; `to` before `from` is refused.
    static func timeRange(_ request: Request) throws(AdministrationError) -> (from: EpochSeconds?, to: EpochSeconds?) {
        var bounds: [EpochSeconds?] = []
        var problems: [String] = []
        for name in ["from", "to"] {
            guard let text = request.parameters[name] else {
                bounds.append(nil)
                continue
            }
            switch AlertInputRules.time(text, field: name, example: "2026-12-01T00:00:00-08:00") {
            case .success(let instant): bounds.append(instant)
            case .failure(let failure):
                problems += failure.messages
                bounds.append(nil)
            }
        }
        guard problems.isEmpty else { throw .invalid(problems) }
        if let from = bounds[0], let to = bounds[1], to < from { throw .invalid(["to must not be before from"]) }
        return (bounds[0], bounds[1])
    }

    /// The fields of a list filtered by time.
    static let timeFilter: [String: AdminField] = ["from": .text, "to": .text]

    // MARK: ETag and If-Match

    /// The entity tag of a representation: a digest of its JSON.
    static func etag(_ representation: JSONValue) -> String {
        "\"" + String(Hex.encode(SHA256.digest(representation.encoded())).prefix(24)) + "\""
    }

    /// Refuses an edit whose `If-Match` names another version (412); none
    /// or `*` always passes, so clients that send none keep working.
    /// `current` is each representation of the object as it is now (an
    /// alert alone, as an edit answers it, and with its translations and
    /// sends, as a read answers it): a tag read from either passes while it
    /// still describes the object. The 412 carries the first one's tag.
    static func checkIfMatch(_ request: Request, current: [JSONValue]) throws(AdministrationError) {
        guard let header = request.header("if-match")?.trimmingWhitespace(), !header.isEmpty, header != "*", let first = current.first
        else { return }
        let offered = header.split(separator: ",").map { String($0).trimmingWhitespace() }.map { $0.hasPrefix("W/") ? String($0.dropFirst(2)) : $0 }
        guard current.contains(where: { offered.contains(etag($0)) }) else { throw .stale(etag(first)) }
    }

    /// `checkIfMatch` for an object with one representation.
    static func checkIfMatch(_ request: Request, current: JSONValue) throws(AdministrationError) {
        try checkIfMatch(request, current: [current])
    }

    /// A JSON representation answered with its `ETag`.
    static func tagged(_ status: Int, _ representation: JSONValue) -> Response {
        Response.json(status, representation).adding(header: "ETag", etag(representation))
    }

    // MARK: Idempotency-Key

    /// A valid `Idempotency-Key` header (1 to 255 visible ASCII characters),
    /// nil when absent.
    static func idempotencyKey(_ request: Request) throws(AdministrationError) -> String? {
        guard let key = request.header("idempotency-key") else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalid(["Idempotency-Key must be 1 to 255 visible ASCII characters"])
        }
        return key
    }

    /// What makes two requests "the same" for an idempotency key.
    static func fingerprint(_ request: Request) -> String {
        let parameters = JSONValue.object(request.parameters.values).encoded()
        return Hex.encode(SHA256.digest(Array((request.method + " " + request.rawPath + " ").utf8) + parameters))
    }
}
