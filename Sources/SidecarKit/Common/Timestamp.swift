import Core

/// ISO 8601 / RFC 3339 instants that state their UTC offset, parsed and
/// written without Foundation's formatters (which accept less, or more,
/// than the rule: an instant must say which offset it is in).
enum Timestamp {
    /// `2026-12-01T08:00-08:00`, `2026-12-01T16:00:00.250Z`, ... as epoch
    /// milliseconds (digits past milliseconds are dropped); nil without an
    /// offset or for anything that is not such an instant.
    static func parseMillis(_ text: String) -> Int64? {
        let bytes = Array(text.trimmingWhitespace().utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, range.allSatisfy({ bytes[$0] >= 0x30 && bytes[$0] <= 0x39 }) else { return nil }
            return range.reduce(0) { $0 * 10 + Int(bytes[$1] - 0x30) }
        }
        guard bytes.count >= 17, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "), bytes[13] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16)
        else { return nil }
        var index = 16
        var second = 0
        var millis = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            guard let value = number(index + 1..<index + 3) else { return nil }
            second = value
            index += 3
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                var digits = 0
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                    if digits < 3 { millis = millis * 10 + Int(bytes[index] - 0x30) }
                    digits += 1
                    index += 1
                }
                guard digits > 0 else { return nil }
                if digits < 3 { for _ in digits..<3 { millis *= 10 } }
            }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            guard index + 1 == bytes.count else { return nil }
        } else {
            guard bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"), let hours = number(index + 1..<index + 3) else {
                return nil
            }
            var minutes = 0
            if index + 3 < bytes.count {
                let colon = bytes[index + 3] == UInt8(ascii: ":") ? 1 : 0
                guard let value = number(index + 3 + colon..<index + 5 + colon), index + 5 + colon == bytes.count else { return nil }
                minutes = value
            } else {
                guard index + 3 == bytes.count else { return nil }
            }
            guard hours < 24, minutes < 60 else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61,
            day <= daysInMonth(year: year, month: month)
        else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return seconds * 1000 + Int64(millis)
    }

    /// Epoch milliseconds in UTC: `2026-12-01T16:00:00Z`, with `.250` when
    /// there are milliseconds.
    static func format(millis: Int64) -> String {
        let seconds = EpochMillis(millis).seconds.value
        let fraction = Int(millis - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civilFromDays(days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var text = "\(String(repeating: "0", count: max(0, 4 - String(year).count)))\(year)-\(two(month))-\(two(day))"
        text += "T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))"
        if fraction > 0 { text += "." + String(String(1000 + fraction).dropFirst()) }
        return text + "Z"
    }

    /// An instant in seconds, as `format(millis:)`.
    static func format(_ instant: EpochSeconds) -> String { format(millis: instant.millis.value) }

    // Calendar arithmetic: Core's `CivilDate` (Hinnant's algorithms).
    static func daysInMonth(year: Int, month: Int) -> Int { CivilDate.daysInMonth(year: year, month: month) }

    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 { CivilDate.days(year: year, month: month, day: day) }

    static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let date = CivilDate(epochSeconds: days * 86_400)
        return (date.year, date.month, date.day)
    }
}

/// The instants staff may enter for alerts and surveys: 2000 to 2100
/// (UTC). A date outside is a typo (`0202`, `20266`) or a test of the
/// server, never a service change, and would sort alerts oddly or never end.
enum TimeBounds {
    static let earliest: EpochSeconds = 946_684_800  // 2000-01-01T00:00:00Z
    static let latest: EpochSeconds = 4_133_980_799  // 2100-12-31T23:59:59Z
    static func contains(_ instant: EpochSeconds) -> Bool { (earliest...latest).contains(instant) }
    /// `Starts must be between the years 2000 and 2100 (got 1999-12-31T08:00:00Z)`.
    static func message(_ label: String, _ instant: EpochSeconds) -> String {
        "\(label) must be between the years 2000 and 2100 (got \(Timestamp.format(instant)))"
    }
}
