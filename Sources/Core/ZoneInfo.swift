import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A time zone from the system's tz database (`/usr/share/zoneinfo`, the
/// `tzdata` package): the UTC offset in effect at any instant, and the
/// instant a wall-clock time in the zone names. Reads the TZif files zic
/// writes (RFC 8536, version 2 and later) and the POSIX TZ rule at their
/// end, which covers instants after the last listed transition.
///
/// Foundation's named time zones need ICU, which a binary linked with
/// `--static-swift-stdlib` cannot load, so the server reads the database
/// itself.
public struct ZoneInfo: Sendable, Equatable {
    public let identifier: String
    /// Instants (epoch seconds) at which the offset changes, ascending.
    let transitions: [Int64]
    /// The offset (seconds east of UTC) from each transition on.
    let offsets: [Int]
    /// The offset before the first transition.
    let initialOffset: Int
    /// The rule after the last transition.
    let rule: PosixRule?

    public static let utc = ZoneInfo(identifier: "UTC", transitions: [], offsets: [], initialOffset: 0, rule: nil)

    /// Where Debian keeps the database.
    public static let defaultDirectory = "/usr/share/zoneinfo"

    /// The zone named by an IANA identifier (`America/Los_Angeles`), or nil
    /// when the name is malformed or the database has no such zone.
    public static func named(_ identifier: String, directory: String = defaultDirectory) -> ZoneInfo? {
        if identifier == "UTC" || identifier == "Etc/UTC" { return .utc }
        // Read once per process: pages ask for their region's zone on every view.
        let key = directory + "/" + identifier
        if let cached = loaded.withLock({ $0[key] }) { return cached }
        let zone = load(identifier, directory: directory)
        if let zone { loaded.withLock { if $0.count < 256 { $0[key] = zone } } }
        return zone
    }

    /// Zones read so far (a few per deployment; bounded all the same).
    private static let loaded = Mutex<[String: ZoneInfo]>([:])

    static func load(_ identifier: String, directory: String) -> ZoneInfo? {
        guard !identifier.isEmpty, identifier.count <= 64, !identifier.hasPrefix("/"), !identifier.contains(".."),
            identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "/_+-".contains($0)) }),
            let bytes = readFile(directory + "/" + identifier)
        else { return nil }
        return ZoneInfo(identifier: identifier, tzif: bytes)
    }

    init(identifier: String, transitions: [Int64], offsets: [Int], initialOffset: Int, rule: PosixRule?) {
        self.identifier = identifier
        self.transitions = transitions
        self.offsets = offsets
        self.initialOffset = initialOffset
        self.rule = rule
    }

    /// Parses a TZif file; nil when it is not one.
    public init?(identifier: String, tzif bytes: [UInt8]) {
        struct Reader {
            let bytes: [UInt8]
            var position = 0
            mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
                guard count >= 0, position + count <= bytes.count else { return nil }
                defer { position += count }
                return bytes[position..<position + count]
            }
            mutating func integer(_ width: Int) -> Int64? {
                guard let slice = take(width) else { return nil }
                var value: Int64 = 0
                for byte in slice { value = value << 8 | Int64(byte) }
                // Sign-extend.
                let shift = Int64(64 - width * 8)
                return (value << shift) >> shift
            }
        }
        var reader = Reader(bytes: bytes)
        func header() -> (isut: Int, isstd: Int, leap: Int, time: Int, type: Int, char: Int, version: UInt8)? {
            guard let magic = reader.take(4), Array(magic) == Array("TZif".utf8), let version = reader.take(1)?.first, reader.take(15) != nil else {
                return nil
            }
            var counts: [Int] = []
            for _ in 0..<6 {
                guard let count = reader.integer(4), (0...100_000).contains(count) else { return nil }
                counts.append(Int(count))
            }
            return (counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], version)
        }
        guard let first = header() else { return nil }
        // Version 1 data uses 32-bit times; version 2+ repeats everything with 64-bit times.
        let v1Length = first.time * 5 + first.type * 6 + first.char + first.leap * 8 + first.isstd + first.isut
        let wide = first.version >= UInt8(ascii: "2")
        if wide {
            guard reader.take(v1Length) != nil else { return nil }
        }
        guard let counts = wide ? header() : first, counts.type > 0 else { return nil }
        let width = wide ? 8 : 4
        var transitions: [Int64] = []
        for _ in 0..<counts.time {
            guard let time = reader.integer(width) else { return nil }
            transitions.append(time)
        }
        guard let indices = reader.take(counts.time) else { return nil }
        var typeOffsets: [Int] = []
        var typeIsDST: [Bool] = []
        for _ in 0..<counts.type {
            guard let offset = reader.integer(4), let isDST = reader.take(1)?.first, reader.take(1) != nil else { return nil }
            typeOffsets.append(Int(offset))
            typeIsDST.append(isDST == 1)
        }
        guard indices.allSatisfy({ Int($0) < counts.type }),
            reader.take(counts.char + counts.leap * (width + 4) + counts.isstd + counts.isut) != nil
        else { return nil }
        var rule: PosixRule?
        if wide, let rest = reader.take(bytes.count - reader.position), rest.first == UInt8(ascii: "\n") {
            let text = String(decoding: rest.dropFirst().prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            rule = PosixRule(text)
        }
        // Before the first transition: the first standard-time type (RFC 8536 §3.2).
        let initial = typeOffsets[typeIsDST.firstIndex(of: false) ?? 0]
        self.init(
            identifier: identifier, transitions: transitions, offsets: indices.map { typeOffsets[Int($0)] },
            initialOffset: transitions.isEmpty ? (rule?.standardOffset ?? initial) : initial, rule: rule)
    }

    /// Seconds east of UTC in effect at an instant.
    public func offset(at epochSeconds: Int64) -> Int {
        if let last = transitions.last, epochSeconds >= last, let rule { return rule.offset(at: epochSeconds) }
        if transitions.isEmpty { return rule?.offset(at: epochSeconds) ?? initialOffset }
        // The last transition at or before the instant.
        var low = 0, high = transitions.count
        while low < high {
            let middle = (low + high) / 2
            if transitions[middle] <= epochSeconds { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? initialOffset : offsets[low - 1]
    }

    /// The instant a wall-clock time names, given as seconds since the epoch
    /// as if the wall clock were UTC. A time skipped by a spring-forward
    /// change reads as the same distance past the change; a repeated one
    /// (fall back) as its first occurrence.
    public func instant(fromLocal local: Int64) -> Int64 {
        // The offsets a day either side: one of them is in effect at the
        // instant unless two changes fall within two days (no zone does that).
        let before = Int64(offset(at: local - 86_400)), after = Int64(offset(at: local + 86_400))
        let early = local - before, late = local - after
        let earlyValid = Int64(offset(at: early)) == before, lateValid = Int64(offset(at: late)) == after
        switch (earlyValid, lateValid) {
        case (true, true): return min(early, late)
        case (false, true): return late
        default: return early  // valid, or in a gap: read with the offset before it
        }
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
            if bytes.count > 1_000_000 { return nil }
        }
        return bytes
    }
}

/// A POSIX TZ rule such as `PST8PDT,M3.2.0,M11.1.0` or `<+0530>-5:30`: a
/// standard offset, and optionally a daylight offset with the month, week
/// and weekday rules of its start and end (the `M` form every zone uses).
struct PosixRule: Sendable, Equatable {
    /// Seconds east of UTC.
    let standardOffset: Int
    let daylightOffset: Int?
    struct Change: Sendable, Equatable {
        let month: Int, week: Int, weekday: Int
        /// Seconds after local midnight (may be negative or past 24 h).
        let time: Int
    }
    let start: Change?
    let end: Change?

    init?(_ text: String) {
        var rest = Substring(text)
        func name() -> Bool {
            if rest.first == "<" {
                guard let close = rest.firstIndex(of: ">") else { return false }
                rest = rest[rest.index(after: close)...]
                return true
            }
            let letters = rest.prefix { $0.isLetter }
            guard letters.count >= 3 else { return false }
            rest = rest.dropFirst(letters.count)
            return true
        }
        /// `[+-]hh[:mm[:ss]]` in seconds.
        func duration() -> Int? {
            var sign = 1
            if rest.first == "+" || rest.first == "-" {
                sign = rest.first == "-" ? -1 : 1
                rest = rest.dropFirst()
            }
            var parts: [Int] = []
            while parts.count < 3 {
                let digits = rest.prefix { $0.isNumber }
                guard !digits.isEmpty, let value = Int(digits) else { return parts.isEmpty ? nil : nil }
                parts.append(value)
                rest = rest.dropFirst(digits.count)
                guard rest.first == ":" else { break }
                rest = rest.dropFirst()
            }
            guard !parts.isEmpty else { return nil }
            let seconds = parts[0] * 3600 + (parts.count > 1 ? parts[1] * 60 : 0) + (parts.count > 2 ? parts[2] : 0)
            return sign * seconds
        }
        func change() -> Change? {
            guard rest.first == "M" else { return nil }
            rest = rest.dropFirst()
            let fields = rest.prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
            rest = rest.dropFirst(rest.prefix { $0.isNumber || $0 == "." }.count)
            guard fields.count == 3, (1...12).contains(fields[0]), (1...5).contains(fields[1]), (0...6).contains(fields[2]) else { return nil }
            var time = 7200
            if rest.first == "/" {
                rest = rest.dropFirst()
                guard let parsed = duration() else { return nil }
                time = parsed
            }
            return Change(month: fields[0], week: fields[1], weekday: fields[2], time: time)
        }
        guard name(), let standard = duration() else { return nil }
        standardOffset = -standard
        guard !rest.isEmpty else {
            daylightOffset = nil
            start = nil
            end = nil
            return
        }
        guard name() else { return nil }
        if rest.first != ",", let daylight = duration() { daylightOffset = -daylight } else { daylightOffset = -standard + 3600 }
        guard rest.first == "," else { return nil }
        rest = rest.dropFirst()
        guard let start = change(), rest.first == "," else { return nil }
        rest = rest.dropFirst()
        guard let end = change(), rest.isEmpty else { return nil }
        self.start = start
        self.end = end
    }

    func offset(at epochSeconds: Int64) -> Int {
        guard let daylightOffset, let start, let end else { return standardOffset }
        let year = CivilDate(epochSeconds: epochSeconds + Int64(standardOffset)).year
        // Start is given in standard time, end in daylight time.
        let begins = Self.instant(of: start, year: year) - Int64(standardOffset)
        let ends = Self.instant(of: end, year: year) - Int64(daylightOffset)
        let inDaylight = begins < ends ? (epochSeconds >= begins && epochSeconds < ends) : !(epochSeconds >= ends && epochSeconds < begins)
        return inDaylight ? daylightOffset : standardOffset
    }

    /// Local seconds (as if UTC) of a change in a year.
    static func instant(of change: Change, year: Int) -> Int64 {
        let firstOfMonth = CivilDate.days(year: year, month: change.month, day: 1)
        let firstWeekday = Int((firstOfMonth + 4) % 7 + 7) % 7  // 1970-01-01 was a Thursday (4)
        var day = 1 + (change.weekday - firstWeekday + 7) % 7 + (change.week - 1) * 7
        let length = CivilDate.daysInMonth(year: year, month: change.month)
        while day > length { day -= 7 }
        return (CivilDate.days(year: year, month: change.month, day: day)) * 86_400 + Int64(change.time)
    }
}

/// Proleptic Gregorian calendar arithmetic on days since 1970-01-01.
public struct CivilDate: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    public var secondsOfDay: Int

    public init(year: Int, month: Int, day: Int, secondsOfDay: Int = 0) {
        self.year = year
        self.month = month
        self.day = day
        self.secondsOfDay = secondsOfDay
    }

    /// The civil date and time of seconds since the epoch (UTC, or local
    /// seconds when an offset has been added).
    public init(epochSeconds: Int64) {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        secondsOfDay = Int(epochSeconds - days * 86_400)
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthPrime + 2) / 5 + 1)
        month = Int(monthPrime < 10 ? monthPrime + 3 : monthPrime - 9)
        year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
    }

    /// Seconds since the epoch of this date and time read as UTC.
    public var epochSeconds: Int64 { Self.days(year: year, month: month, day: day) * 86_400 + Int64(secondsOfDay) }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    public static func days(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// The names the tz database knows (its zones and their links, from
/// `tzdata.zi`, else `zone1970.tab`), to refuse a misspelt zone with the
/// name that was probably meant.
public enum ZoneCatalog {
    /// Every zone name, sorted (read once per directory).
    public static func identifiers(directory: String = ZoneInfo.defaultDirectory) -> [String] {
        if let known = cache.withLock({ $0[directory] }) { return known }
        var names = Set<String>(["UTC"])
        if let text = ZoneInfo.readFile(directory + "/tzdata.zi").map({ String(decoding: $0, as: UTF8.self) }) {
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "Z", fields.count > 1 { names.insert(String(fields[1])) }
                if fields.first == "L", fields.count > 2 { names.insert(String(fields[2])) }
            }
        } else if let text = ZoneInfo.readFile(directory + "/zone1970.tab").map({ String(decoding: $0, as: UTF8.self) }) {
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let fields = line.split(separator: "\t")
                if fields.count > 2 { names.insert(String(fields[2])) }
            }
        }
        let sorted = names.sorted()
        cache.withLock { $0[directory] = sorted }
        return sorted
    }

    private static let cache = Mutex<[String: [String]]>([:])

    /// The tz database zone an abbreviation or everyday name usually means
    /// (`PST` → `America/Los_Angeles`): what an editor who typed it wants
    /// suggested. Abbreviations name an offset, not a place, so `CST` could
    /// be China's; this table follows the regions OneBusAway serves.
    public static let abbreviations: [String: String] = [
        "PST": "America/Los_Angeles", "PDT": "America/Los_Angeles", "PT": "America/Los_Angeles", "PACIFIC": "America/Los_Angeles",
        "MST": "America/Denver", "MDT": "America/Denver", "MT": "America/Denver", "MOUNTAIN": "America/Denver",
        "CST": "America/Chicago", "CDT": "America/Chicago", "CT": "America/Chicago", "CENTRAL": "America/Chicago",
        "EST": "America/New_York", "EDT": "America/New_York", "ET": "America/New_York", "EASTERN": "America/New_York",
        "AKST": "America/Anchorage", "AKDT": "America/Anchorage", "HST": "Pacific/Honolulu", "AST": "America/Puerto_Rico",
        "NST": "America/St_Johns", "GMT": "Europe/London", "BST": "Europe/London", "CET": "Europe/Paris", "CEST": "Europe/Paris",
        "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "AEST": "Australia/Sydney", "AEDT": "Australia/Sydney", "NZST": "Pacific/Auckland",
    ]

    /// tzdata's fixed-offset zones named like abbreviations (`EST` is UTC−5
    /// all year): right only for a region that does not observe daylight time.
    public static let fixedOffsetZones: Set<String> = ["EST", "MST", "HST"]

    /// Whether a name is a place riders live in (`Area/Location`, or
    /// `UTC`): not `Factory` (tzdata's "zone not set" marker), nor the
    /// `Etc/GMT+5`-style offsets and legacy aliases (`US/Pacific`, `EST5EDT`)
    /// that no agency should be steered to.
    public static func isGeographic(_ name: String) -> Bool {
        if name == "UTC" { return true }
        let legacy = ["Etc/", "US/", "SystemV/", "posix/", "right/", "Brazil/", "Canada/", "Chile/", "Mexico/"]
        return name.contains("/") && !legacy.contains { name.hasPrefix($0) }
    }

    /// The geographic name closest to `name` (case-insensitive edit
    /// distance; ties go to the shorter, then the alphabetically first), or
    /// nil when none is close enough to have been meant.
    public static func nearest(to name: String, directory: String = ZoneInfo.defaultDirectory) -> String? {
        let wanted = Array(name.lowercased().prefix(64).unicodeScalars)
        let scored = identifiers(directory: directory).filter(isGeographic).map { candidate in
            (candidate, distance(wanted, Array(candidate.lowercased().unicodeScalars)))
        }
        guard
            let best = scored.min(by: { left, right in
                left.1 != right.1 ? left.1 < right.1 : (left.0.count != right.0.count ? left.0.count < right.0.count : left.0 < right.0)
            })
        else { return nil }
        return best.1 <= max(2, wanted.count / 3) ? best.0 : nil
    }

    /// Levenshtein distance.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
