import Core
import GTFSRealtime
import Push

/// Spec §3: what the alerts feed contains, as pure functions.
public enum AlertFeedRules {
    /// The feed shows at most this many alerts.
    public static let maxAlerts = 20
    /// An alert with no end is advertised as lasting this long.
    public static let defaultDurationSeconds: Int64 = 8 * 3600

    /// `?test=` with any non-blank value includes test alerts.
    public static func includesTestAlerts(_ raw: String?) -> Bool { raw?.presence != nil }

    /// Published alerts (test ones only when asked), newest start first
    /// (ties: newest id), at most 20.
    public static func visible(_ alerts: [ServiceAlert], includeTest: Bool) -> [ServiceAlert] {
        let shown = alerts.filter { $0.published && (includeTest || !$0.test) }
            .sorted { ($0.startsAt, $0.id) > ($1.startsAt, $1.id) }
        return Array(shown.prefix(maxAlerts))
    }

    /// Translations made from the current English text, by language.
    public static func fresh(_ translations: [AlertTranslation], for alert: ServiceAlert) -> [AlertTranslation] {
        translations.filter { $0.sourceVersion == alert.sourceVersion && $0.language.lowercased() != "en" }
            .sorted { $0.language < $1.language }
    }

    /// The feed entity for one alert: id `Alert_<id>`, one informed entity
    /// with the agency id, an active period ending 8 h after the start when
    /// no end is set, header and description with English first and stale
    /// translations withheld, the url in English only.
    public static func entity(_ alert: ServiceAlert, translations: [AlertTranslation]) -> FeedEntity {
        let current = fresh(translations, for: alert)
        func translated(_ english: String, _ pick: (AlertTranslation) -> String) -> TranslatedString {
            TranslatedString([.init(text: english, language: "en")]
                + current.compactMap { translation in pick(translation).presence.map { .init(text: $0, language: translation.language) } })
        }
        let end = alert.endsAt ?? alert.startsAt + defaultDurationSeconds
        return FeedEntity(id: "Alert_\(alert.id)", alert: Alert(
            activePeriods: [TimeRange(start: UInt64(max(alert.startsAt, 0)), end: UInt64(max(end, 0)))],
            informedEntities: [EntitySelector(agencyID: alert.agencyID)],
            cause: alert.cause, effect: alert.effect,
            url: alert.url.map { TranslatedString([.init(text: $0, language: "en")]) },
            headerText: translated(alert.header, \.header),
            descriptionText: alert.description.isEmpty && current.allSatisfy({ $0.description.isEmpty }) ? nil : translated(alert.description, \.description),
            severityLevel: alert.severity))
    }

    /// The feed header's timestamp: when the region's feed content last
    /// changed, or the server's start when it never did. Never 0, which
    /// GTFS-realtime consumers read as 1970 and flag as stale; and stable
    /// between requests, so the cached bytes are too.
    public static func headerTimestamp(lastChange: Int64?, serverStart: Int64) -> Int64 {
        guard let lastChange, lastChange > 0 else { return serverStart }
        return lastChange
    }

    /// The whole feed; the header is always present so the body is never
    /// empty (the iOS app reads an empty 200 as an error).
    public static func feed(_ alerts: [ServiceAlert], translations: [Int64: [AlertTranslation]], includeTest: Bool,
                            timestamp: Int64) -> FeedMessage {
        FeedMessage(header: FeedHeader(gtfsRealtimeVersion: "1.0", incrementality: 0, timestamp: UInt64(max(timestamp, 0))),
                    entities: visible(alerts, includeTest: includeTest).map { entity($0, translations: translations[$0.id] ?? []) })
    }
}

/// Spec §4 "What gets pushed": alert copy per audience group.
public enum AlertPushRules {
    /// What a lock screen shows of a title and a body.
    public static let titleLimit = 48
    public static let bodyLimit = 120

    /// Cuts text to `limit` characters, ending with an ellipsis when cut.
    public static func truncate(_ text: String, limit: Int) -> String {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.count > limit else { return trimmed }
        var cut = String(trimmed.prefix(limit - 1))
        while let last = cut.last, last.isWhitespace { cut.removeLast() }
        return cut + "…"
    }

    /// The registrations sharing one copy and one APNs host.
    public struct Group: Hashable, Sendable {
        public var platform: PushPlatform
        /// Normalized locale, nil = English.
        public var locale: String?
        public var apnsSandbox: Bool
    }

    public static func group(of registration: PushRegistration) -> Group {
        let platform: PushPlatform = registration.operatingSystem == "android" ? .android : .ios
        return Group(platform: platform, locale: registration.locale, apnsSandbox: platform == .ios && registration.apnsSandbox)
    }

    /// Title and body in the group's language when a fresh translation
    /// exists, else English; cut to what a lock screen shows. An alert with
    /// no description pushes its header as the body.
    public static func copy(for alert: ServiceAlert, translations: [AlertTranslation], locale: String?) -> (title: String, body: String) {
        let translation = locale.flatMap { wanted in
            AlertFeedRules.fresh(translations, for: alert).first { $0.language.lowercased() == wanted.lowercased() }
        }
        let header = translation?.header.presence ?? alert.header
        let description = translation.map { $0.description.presence ?? alert.description } ?? alert.description
        return (truncate(header, limit: titleLimit), truncate(description.presence ?? header, limit: bodyLimit))
    }
}

/// Strict parsing of authoring input shared by the CLI and the admin API.
public enum AlertInputRules {
    /// An ISO 8601 time that states its UTC offset (`2026-12-01T08:00-08:00`,
    /// `2026-12-01T16:00:00Z`); epoch seconds, or nil when not of that form.
    /// A time without an offset is refused: it would mean different instants
    /// to an operator and to the server.
    public static func parseTime(_ text: String) -> Int64? {
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
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            guard let value = number(index + 1..<index + 3) else { return nil }
            second = value
            index += 3
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
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
            }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61,
              day <= daysInMonth(year: year, month: month) else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
    }

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

    /// An enum value by its GTFS-realtime name, or a message naming the valid ones.
    static func enumValue<Value>(_ raw: String, field: String, names: [String], make: (String) -> Value?) -> Result<Value, ValidationFailure> {
        if let value = make(raw.trimmingWhitespace()) { return .success(value) }
        return .failure(ValidationFailure(["\(field) must be one of \(names.joined(separator: ", ")) (got '\(raw)')"]))
    }

    /// Changes to an alert from `name → value` fields (CLI flags or admin
    /// API parameters). Absent fields stay as they are; `end` may be blank
    /// or "none" to clear it.
    public static func apply(_ fields: [String: String], to alert: inout ServiceAlert) -> [String] {
        var messages = FieldLimits.check([
            ("Header", fields["header"], FieldLimits.alertHeader), ("Description", fields["description"], FieldLimits.alertDescription),
            ("Url", fields["url"], FieldLimits.url), ("Agency id", fields["agency_id"], FieldLimits.identifier),
        ])
        if let header = fields["header"] {
            if let text = header.presence { alert.header = text } else { messages.append("Header can't be blank") }
        }
        if let description = fields["description"] { alert.description = description.trimmingWhitespace() }
        if let url = fields["url"] {
            if let text = url.presence {
                if text.hasPrefix("https://") || text.hasPrefix("http://") { alert.url = text } else { messages.append("Url must be an http(s) URL") }
            } else {
                alert.url = nil
            }
        }
        if let agency = fields["agency_id"] {
            if let text = agency.presence { alert.agencyID = text } else { messages.append("Agency id can't be blank") }
        }
        if let raw = fields["cause"] {
            switch enumValue(raw, field: "cause", names: Cause.allCases.map(\.name), make: Cause.init(name:)) {
            case .success(let value): alert.cause = value
            case .failure(let failure): messages += failure.messages
            }
        }
        if let raw = fields["effect"] {
            switch enumValue(raw, field: "effect", names: Effect.allCases.map(\.name), make: Effect.init(name:)) {
            case .success(let value): alert.effect = value
            case .failure(let failure): messages += failure.messages
            }
        }
        if let raw = fields["severity"] {
            switch enumValue(raw, field: "severity", names: SeverityLevel.allCases.map(\.name), make: SeverityLevel.init(name:)) {
            case .success(let value): alert.severity = value
            case .failure(let failure): messages += failure.messages
            }
        }
        if let raw = fields["start"] {
            if let value = parseTime(raw) { alert.startsAt = value } else {
                messages.append("start must be an ISO 8601 time with a UTC offset, e.g. 2026-12-01T08:00:00-08:00 (got '\(raw)')")
            }
        }
        if let raw = fields["end"] {
            if raw.presence == nil || raw.lowercased() == "none" {
                alert.endsAt = nil
            } else if let value = parseTime(raw) {
                alert.endsAt = value
            } else {
                messages.append("end must be an ISO 8601 time with a UTC offset, e.g. 2026-12-01T20:00:00-08:00 (got '\(raw)')")
            }
        }
        if let raw = fields["test"] {
            if let value = BooleanParameter.read(raw) { alert.test = value } else { messages.append("test must be true or false") }
        }
        if let end = alert.endsAt, end <= alert.startsAt { messages.append("end must be after start") }
        return messages
    }
}
