import Core

/// Times staff and riders see are read and shown in the region's time zone
/// (the console's forms, share pages).
enum RegionTime {
    /// `2026-12-01 08:00`.
    static func display(_ instant: EpochSeconds?, _ zone: ZoneInfo) -> String {
        guard let epochSeconds = instant?.value else { return "—" }
        let local = CivilDate(epochSeconds: epochSeconds + Int64(zone.offset(at: epochSeconds)))
        return "\(local.year)-\(pad(local.month))-\(pad(local.day)) \(pad(local.secondsOfDay / 3600)):\(pad(local.secondsOfDay / 60 % 60))"
    }

    /// `2026-12-01 08:00` for a count of seconds since 1970 kept untyped
    /// (bookkeeping times: sends, keys, audit entries).
    static func display(seconds: Int64?, _ zone: ZoneInfo) -> String { display(seconds.map { EpochSeconds($0) }, zone) }

    /// `08:14`, the time of day alone (share pages).
    static func clock(_ instant: EpochMillis?, _ zone: ZoneInfo) -> String {
        guard let instant else { return "—" }
        let seconds = instant.seconds.value
        let local = CivilDate(epochSeconds: seconds + Int64(zone.offset(at: seconds)))
        return "\(pad(local.secondsOfDay / 3600)):\(pad(local.secondsOfDay / 60 % 60))"
    }

    /// The value of an `<input type="datetime-local">`: `2026-12-01T08:00`.
    static func inputValue(_ instant: EpochSeconds?, _ zone: ZoneInfo) -> String {
        guard let instant else { return "" }
        return String(display(instant, zone).map { $0 == " " ? "T" : $0 })
    }

    /// The instant a `datetime-local` value (`YYYY-MM-DDTHH:MM[:SS]`) names
    /// in the zone; nil when it is not one.
    static func parse(_ text: String, _ zone: ZoneInfo) -> EpochSeconds? {
        let parts = text.trimmingWhitespace().split(separator: "T")
        guard parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-").compactMap { Int($0) }
        let time = parts[1].split(separator: ":").compactMap { Int($0) }
        guard date.count == 3, (2...3).contains(time.count), (1970...9999).contains(date[0]), (1...12).contains(date[1]),
            (1...CivilDate.daysInMonth(year: date[0], month: date[1])).contains(date[2]), (0...23).contains(time[0]), (0...59).contains(time[1]),
            time.count == 2 || (0...59).contains(time[2])
        else { return nil }
        let local = CivilDate(
            year: date[0], month: date[1], day: date[2], secondsOfDay: time[0] * 3600 + time[1] * 60 + (time.count == 3 ? time[2] : 0))
        return EpochSeconds(zone.instant(fromLocal: local.epochSeconds))
    }

    /// `2026-12-01T08:00:00-08:00`: the instant in the zone, with its offset.
    static func iso8601(_ instant: EpochSeconds, _ zone: ZoneInfo) -> String {
        let epochSeconds = instant.value
        let offset = zone.offset(at: epochSeconds)
        let local = CivilDate(epochSeconds: epochSeconds + Int64(offset))
        let seconds = local.secondsOfDay
        let sign = offset < 0 ? "-" : "+"
        let year = String(local.year)
        return "\(String(repeating: "0", count: max(0, 4 - year.count)))\(year)-\(pad(local.month))-\(pad(local.day))T"
            + "\(pad(seconds / 3600)):\(pad(seconds / 60 % 60)):\(pad(seconds % 60))\(sign)\(pad(abs(offset) / 3600)):\(pad(abs(offset) / 60 % 60))"
    }

    /// `UTC−08:00` for the zone's offset at an instant.
    static func offsetLabel(_ zone: ZoneInfo, at instant: EpochSeconds) -> String {
        let offset = zone.offset(at: instant.value)
        let sign = offset < 0 ? "−" : "+"
        return "UTC\(sign)\(pad(abs(offset) / 3600)):\(pad(abs(offset) / 60 % 60))"
    }

    static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
}
