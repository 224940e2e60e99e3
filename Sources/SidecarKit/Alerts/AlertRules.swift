import Core
import GTFSRealtime
import Push

/// Spec §3: what the alerts feed contains, as pure functions.
enum AlertFeedRules {
    /// The feed shows at most this many alerts.
    static let maxAlerts = 20
    /// An alert with no end is advertised as lasting this long.
    static let defaultDurationSeconds: Int64 = 8 * 3600

    /// `?test=` with any non-blank value includes test alerts.
    static func includesTestAlerts(_ raw: String?) -> Bool { raw?.presence != nil }

    /// Published alerts (test ones only when asked), newest start first
    /// (ties: newest id), at most 20.
    static func visible(_ alerts: [ServiceAlert], includeTest: Bool) -> [ServiceAlert] {
        let shown = alerts.filter { $0.published && $0.inFeed && (includeTest || !$0.test) }
            .sorted { ($0.startsAt, $0.id) > ($1.startsAt, $1.id) }
        return Array(shown.prefix(maxAlerts))
    }

    /// Translations made from the current English text, by language.
    static func fresh(_ translations: [AlertTranslation], for alert: ServiceAlert) -> [AlertTranslation] {
        translations.filter { $0.sourceVersion == alert.sourceVersion && $0.language.lowercased() != "en" }
            .sorted { $0.language < $1.language }
    }

    /// The feed entity for one alert: id `Alert_<id>`, one informed entity
    /// with the agency id, an active period ending 8 h after the start when
    /// no end is set, header and description with English first and stale
    /// translations withheld, the url in English only.
    static func entity(_ alert: ServiceAlert, translations: [AlertTranslation]) -> FeedEntity {
        let current = fresh(translations, for: alert)
        let tags = feedLanguageTags(current.map(\.language))
        func translated(_ english: String, _ pick: (AlertTranslation) -> String) -> TranslatedString {
            TranslatedString(
                [.init(text: english, language: "en")]
                    + tags.compactMap { entry in pick(current[entry.index]).presence.map { .init(text: $0, language: entry.tag) } })
        }
        let shown = TimeRange(start: UInt64(max(alert.startsAt.value, 0)), end: UInt64(max(effectiveEnd(alert).value, 0)))
        let impact = alert.impactStartsAt.flatMap { start in
            alert.impactEndsAt.map { TimeRange(start: UInt64(max(start.value, 0)), end: UInt64(max($0.value, 0))) }
        }
        return FeedEntity(
            id: "Alert_\(alert.id)",
            alert: Alert(
                // The migration guide lets a producer keep active_period beside
                // the new fields; the iOS app reads nothing else.
                activePeriods: [shown], communicationPeriods: [shown], impactPeriods: impact.map { [$0] } ?? [],
                informedEntities: [EntitySelector(agencyID: alert.agencyID)],
                cause: alert.cause, effect: alert.effect,
                url: alert.url.map { TranslatedString([.init(text: $0, language: "en")]) },
                headerText: translated(alert.header, \.header),
                descriptionText: alert.description.isEmpty && current.allSatisfy({ $0.description.isEmpty })
                    ? nil : translated(alert.description, \.description),
                severityLevel: alert.severity))
    }

    /// Language codes the apps may ask for in place of another spelling of
    /// the same language (Android's legacy codes, Filipino's two codes).
    static let languageTwins: [String: String] = ["tl": "fil", "fil": "tl", "he": "iw", "iw": "he", "id": "in", "in": "id", "yi": "ji", "ji": "yi"]

    /// The language tags each stored translation goes out under. Both apps
    /// pick a translation by the device's bare language code, matched
    /// exactly (iOS `Locale.language.languageCode`, Android
    /// `Locale.getLanguage()`: `es`, `zh`, `fil`), so a translation is
    /// emitted under its own tag and also under its bare language and that
    /// language's twin when no other translation claims them. The first
    /// claimant wins, in the sorted order of tags, so a bare `zh` carries
    /// Simplified Chinese when there is one (`zh-Hans` sorts first) and
    /// Traditional only when it stands alone.
    static func feedLanguageTags(_ languages: [String]) -> [(index: Int, tag: String)] {
        var emitted = Set(languages.map { $0.lowercased() } + ["en"])
        var tags = languages.indices.map { (index: $0, tag: languages[$0]) }
        for (index, language) in languages.enumerated() {
            guard let primary = language.lowercased().split(separator: "-").first.map(String.init) else { continue }
            for bare in [primary, languageTwins[primary]].compactMap({ $0 }) where !emitted.contains(bare) {
                tags.append((index, bare))
                emitted.insert(bare)
            }
        }
        return tags
    }

    /// When riders stop seeing the alert: its end, or 8 hours after its start.
    static func effectiveEnd(_ alert: ServiceAlert) -> EpochSeconds { alert.endsAt ?? alert.startsAt.adding(seconds: defaultDurationSeconds) }

    /// The feed header's timestamp: the time of the response rounded down to
    /// the minute. The Android app measures "now" by it (an alert shows in
    /// its launch dialog when a period started within the 24 hours before
    /// the stamp), so a stamp of the last edit would hide an alert published
    /// ahead of its start. Rounded down so it is never in the future, and to
    /// the minute so a cached copy (max-age 60) is never older than that.
    static func headerTimestamp(nowSeconds: Int64) -> Int64 {
        let floored = nowSeconds >= 0 ? nowSeconds / 60 * 60 : (nowSeconds - 59) / 60 * 60
        return max(floored, 60)
    }

    /// The whole feed; the header is always present so the body is never
    /// empty (the iOS app reads an empty 200 as an error).
    /// Alerts mirrored from a source go out as the source wrote them
    /// (`mirrored`: their stored messages by alert id), under
    /// `Source_<source id>_<entity id>`, which no authored alert can have.
    static func feed(
        _ alerts: [ServiceAlert], translations: [Int64: [AlertTranslation]], mirrored: [Int64: [UInt8]] = [:], includeTest: Bool,
        timestamp: Int64
    ) -> FeedMessage {
        FeedMessage(
            header: FeedHeader(gtfsRealtimeVersion: "1.0", incrementality: 0, timestamp: UInt64(max(timestamp, 0))),
            entities: visible(alerts, includeTest: includeTest).map { alert in
                if let sourceID = alert.sourceID, let entityID = alert.sourceEntity,
                    let message = mirrored[alert.id].flatMap(AlertSourceMapping.decoded)
                {
                    return FeedEntity(id: "Source_\(sourceID)_\(entityID)", alert: message)
                }
                return entity(alert, translations: translations[alert.id] ?? [])
            })
    }
}

/// Spec §4 "What gets pushed": alert copy per audience group.
/// What riders see of an alert at a moment: the console's and the CLI's
/// lists say this rather than a bare published flag. `ended` is by the
/// effective end (the alert's, or 8 hours after its start).
enum AlertVisibility: String, CaseIterable, Sendable {
    case live, upcoming, draft, withdrawn, ended

    static func of(_ alert: ServiceAlert, now: EpochSeconds) -> AlertVisibility {
        if !alert.published { return alert.withdrawnAt == nil ? .draft : .withdrawn }
        if AlertFeedRules.effectiveEnd(alert) <= now { return .ended }
        return alert.startsAt > now ? .upcoming : .live
    }

    /// The console's heading for a list of alerts in this state.
    var heading: String {
        switch self {
        case .live: return "Live: riders see these now"
        case .upcoming: return "Upcoming: published, shown from their start"
        case .draft: return "Drafts: never published"
        case .withdrawn: return "Withdrawn: unpublished after being published"
        case .ended: return "Ended: riders no longer see these"
        }
    }
}

enum AlertPushRules {
    /// What a lock screen shows of a title and a body.
    static let titleLimit = 48
    static let bodyLimit = 120

    /// Cuts text to `limit` characters, ending with an ellipsis when cut.
    static func truncate(_ text: String, limit: Int) -> String {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.count > limit else { return trimmed }
        var cut = String(trimmed.prefix(limit - 1))
        while let last = cut.last, last.isWhitespace { cut.removeLast() }
        return cut + "…"
    }

    /// The registrations sharing one copy and one APNs host.
    struct Group: Hashable, Sendable {
        var platform: PushPlatform
        /// Normalized locale, nil = English.
        var locale: String?
        var apnsSandbox: Bool
    }

    static func group(of registration: PushRegistration) -> Group {
        let platform = registration.operatingSystem
        return Group(platform: platform, locale: registration.locale, apnsSandbox: platform == .ios && registration.apnsSandbox)
    }

    /// Title and body in the group's language when a fresh translation
    /// exists, else English; cut to what a lock screen shows. An alert with
    /// no description pushes its header as the body.
    static func copy(for alert: ServiceAlert, translations: [AlertTranslation], locale: String?, messages: AlertSend.Messages? = nil)
        -> (title: String, body: String)
    {
        if let messages {
            // The caller's text: the group's language when given, else English.
            let chosen =
                locale.flatMap { wanted in messages.first { $0.key.lowercased() == wanted.lowercased() }?.value } ?? messages["en"]
                ?? AlertSend.PushText(title: alert.header, body: alert.description)
            return (truncate(chosen.title, limit: titleLimit), truncate(chosen.body.presence ?? chosen.title, limit: bodyLimit))
        }
        let translation = locale.flatMap { wanted in
            AlertFeedRules.fresh(translations, for: alert).first { $0.language.lowercased() == wanted.lowercased() }
        }
        let header = translation?.header.presence ?? alert.header
        let description = translation.map { $0.description.presence ?? alert.description } ?? alert.description
        return (truncate(header, limit: titleLimit), truncate(description.presence ?? header, limit: bodyLimit))
    }
}

/// Strict parsing of authoring input shared by the CLI and the admin API.
enum AlertInputRules {
    /// An ISO 8601 time that states its UTC offset (`2026-12-01T08:00-08:00`,
    /// `2026-12-01T16:00:00Z`); epoch seconds, or nil when not of that form.
    /// A time without an offset is refused: it would mean different instants
    /// to an operator and to the server.
    static func parseTime(_ text: String) -> EpochSeconds? {
        Timestamp.parseMillis(text).map { EpochMillis($0).seconds }
    }

    /// A time field: an ISO 8601 instant with an offset, between 2000 and
    /// 2100; else the message for `field`.
    static func time(_ raw: String, field: String, example: String) -> Result<EpochSeconds, ValidationFailure> {
        guard let value = parseTime(raw) else {
            return .failure(ValidationFailure(["\(field) must be an ISO 8601 time with a UTC offset, e.g. \(example) (got '\(raw)')"]))
        }
        guard TimeBounds.contains(value.value) else { return .failure(ValidationFailure([TimeBounds.message(field, value.value)])) }
        return .success(value)
    }

    /// An enum value by its GTFS-realtime name, or a message naming the valid ones.
    static func enumValue<Value>(_ raw: String, field: String, names: [String], make: (String) -> Value?) -> Result<Value, ValidationFailure> {
        if let value = make(raw.trimmingWhitespace()) { return .success(value) }
        return .failure(ValidationFailure(["\(field) must be one of \(names.joined(separator: ", ")) (got '\(raw)')"]))
    }

    /// Changes to an alert from `name → value` fields (CLI flags or admin
    /// API parameters). Absent fields stay as they are; `end` may be blank
    /// or "none" to clear it.
    static func apply(_ fields: [String: String], to alert: inout ServiceAlert) -> [String] {
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
            switch time(raw, field: "start", example: "2026-12-01T08:00:00-08:00") {
            case .success(let value): alert.startsAt = value
            case .failure(let failure): messages += failure.messages
            }
        }
        for (name, example, keyPath) in [
            ("end", "2026-12-01T20:00:00-08:00", \ServiceAlert.endsAt),
            ("impact_start", "2026-12-01T09:00:00-08:00", \ServiceAlert.impactStartsAt),
            ("impact_end", "2026-12-01T17:00:00-08:00", \ServiceAlert.impactEndsAt),
        ] {
            guard let raw = fields[name] else { continue }
            if raw.presence == nil || raw.lowercased() == "none" {
                alert[keyPath: keyPath] = nil
            } else {
                switch time(raw, field: name, example: example) {
                case .success(let value): alert[keyPath: keyPath] = value
                case .failure(let failure): messages += failure.messages
                }
            }
        }
        if let raw = fields["test"] {
            if let value = BooleanParameter.read(raw) { alert.test = value } else { messages.append("test must be true or false") }
        }
        if let end = alert.endsAt, end <= alert.startsAt { messages.append("end must be after start") }
        if messages.isEmpty { messages += periodProblems(alert) }
        return messages
    }

    /// google/transit#546: every impact interval lies inside a communication
    /// interval. The shown period is the alert's start to its end, or to the
    /// feed's 8-hour default when it has none.
    static func periodProblems(_ alert: ServiceAlert) -> [String] {
        switch (alert.impactStartsAt, alert.impactEndsAt) {
        case (nil, nil): return []
        case (nil, _?), (_?, nil):
            return ["impact_start and impact_end go together: give both, or clear both with none"]
        case (let start?, let end?):
            let shownEnd = AlertFeedRules.effectiveEnd(alert)
            let impact = "the impact period (\(Timestamp.format(start)) to \(Timestamp.format(end)))"
            let shown =
                "the shown period (\(Timestamp.format(alert.startsAt)) to \(Timestamp.format(shownEnd))"
                + (alert.endsAt == nil ? ", 8 hours since it has no end)" : ")")
            if end <= start { return ["impact_end must be after impact_start: \(impact) ends before it starts"] }
            if start < alert.startsAt || end > shownEnd { return ["\(impact) must lie within \(shown)"] }
            return []
        }
    }
}
