import Core

/// RFC 9110 §13 conditional GETs: validators on a response, and whether a
/// request's `If-None-Match` / `If-Modified-Since` let it be answered `304`.
public struct Validators: Sendable, Equatable {
    /// A strong entity tag, quotes included (`"1-p-3fa2…"`).
    public var etag: String
    /// Epoch seconds of the last change.
    public var lastModified: Int64

    public init(etag: String, lastModified: Int64) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// True when the client's copy is current. `If-None-Match` wins over
    /// `If-Modified-Since` (§13.2.2): `*` matches, a list matches if any
    /// member does, and a weak tag matches its strong twin (GET uses weak
    /// comparison). Anything unreadable is no match, never an error.
    public func notModified(_ request: Request) -> Bool {
        if let ifNoneMatch = request.header("if-none-match") {
            return Self.matches(ifNoneMatch: ifNoneMatch, etag: etag)
        }
        if let since = request.header("if-modified-since"), let date = HTTPDate.parse(since) {
            return lastModified <= date
        }
        return false
    }

    static func matches(ifNoneMatch: String, etag: String) -> Bool {
        let wanted = opaque(etag)
        for member in ifNoneMatch.split(separator: ",", omittingEmptySubsequences: true) {
            let trimmed = member.trimmingSpaces()
            if trimmed == "*" { return true }
            var tag = trimmed
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\""), opaque(String(tag)) == wanted { return true }
        }
        return false
    }

    private static func opaque(_ tag: String) -> Substring { Substring(tag).dropFirst().dropLast() }

    /// The validator headers, for a 200 and for its 304.
    public var headers: [(name: String, value: String)] {
        [("ETag", etag), ("Last-Modified", HTTPDate.format(lastModified))]
    }
}

extension Response {
    /// `304 Not Modified`: no body, the validators and the caching rule again.
    /// `representationLength`, the length the 200 would have had, is sent as
    /// its Content-Length (RFC 9110 §8.6 allows only that; without it
    /// libmicrohttpd would say `Content-Length: 0`, which a cache may store
    /// over the length of the copy it holds).
    public static func notModified(_ validators: Validators, cacheControl: String, representationLength: Int) -> Response {
        Response(
            status: 304, headers: validators.headers + [("Cache-Control", cacheControl), ("Content-Length", String(representationLength))])
    }

    /// A copy carrying the validators and a `Cache-Control`.
    public func cached(_ validators: Validators, cacheControl: String) -> Response {
        var copy = self
        copy.headers += validators.headers + [("Cache-Control", cacheControl)]
        return copy
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format.
public enum HTTPDate {
    static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    public static func format(_ epochSeconds: Int64) -> String {
        let date = CivilDate(epochSeconds: epochSeconds)
        let dayNumber = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let weekday = days[Int(((dayNumber % 7) + 7) % 7)]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        let seconds = date.secondsOfDay
        return "\(weekday), \(two(date.day)) \(months[date.month - 1]) \(date.year) "
            + "\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) GMT"
    }

    /// Epoch seconds of an IMF-fixdate; nil for anything else (the obsolete
    /// forms are not sent by today's clients, and an unreadable date is
    /// ignored, as RFC 9110 asks).
    public static func parse(_ text: String) -> Int64? {
        let parts = Substring(text).trimmingSpaces().split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())),
            parts[5] == "GMT", parts[1].count == 2, let day = Int(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
            parts[3].count == 4, let year = Int(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = Int(clock[0]), let minute = Int(clock[1]),
            let second = Int(clock[2]), hour < 24, minute < 60, second < 61, (1...31).contains(day),
            day <= CivilDate.daysInMonth(year: year, month: monthIndex + 1)
        else { return nil }
        return CivilDate(year: year, month: monthIndex + 1, day: day, secondsOfDay: hour * 3600 + minute * 60 + second).epochSeconds
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
