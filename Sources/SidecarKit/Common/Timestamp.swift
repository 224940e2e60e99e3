/// ISO 8601 / RFC 3339 instants that state their UTC offset, parsed and
/// written without Foundation's formatters (which accept less, or more,
/// than the rule: an instant must say which offset it is in).
public enum Timestamp {
    /// `2026-12-01T08:00-08:00`, `2026-12-01T16:00:00.250Z`, ... as epoch
    /// milliseconds (digits past milliseconds are dropped); nil without an
    /// offset or for anything that is not such an instant.
    public static func parseMillis(_ text: String) -> Int64? {
        let bytes = Array(text.trimmingWhitespace().utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, range.allSatisfy({ bytes[$0] >= 0x30 && bytes[$0] <= 0x39 }) else { return nil }
            return range.reduce(0) { $0 * 10 + Int(bytes[$1] - 0x30) }
        }
        guard bytes.count >= 17, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "), bytes[13] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16) else { return nil }
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
            guard bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"), let hours = number(index + 1..<index + 3) else { return nil }
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
              day <= daysInMonth(year: year, month: month) else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return seconds * 1000 + Int64(millis)
    }

    /// Epoch milliseconds in UTC: `2026-12-01T16:00:00Z`, with `.250` when
    /// there are milliseconds.
    public static func format(millis: Int64) -> String {
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
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

    /// Epoch seconds, as `format(millis:)`.
    public static func format(seconds: Int64) -> String { format(millis: seconds * 1000) }

    static func daysInMonth(year: Int, month: Int) -> Int {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthIndex + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day since 1970-01-01 (the inverse of `daysFromCivil`).
    static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        let month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        return (Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0), month, day)
    }
}
