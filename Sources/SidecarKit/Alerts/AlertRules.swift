import Core
import GTFSRealtime
import Push

/// Spec §3: what the alerts feed contains, as pure functions.
enum AlertFeedRules {
    /// The feed carries at most this many alerts. Neither app caps what it
    /// reads (OneBusAway/onebusaway-ios `AgencyAlertsStore.swift` keeps
    /// every alert; Android shows the first that passes its rules); the
    /// bound is what a phone on a slow network fetches well within the iOS
    /// app's 10-second timeout (`APIService+GetData.swift:68`) with
    /// `maxBytes`. The spec's reference caps at 20 by start, which let
    /// upcoming alerts push a live one out.
    static let maxAlerts = 100
    /// The feed's encoded size at most (gzip makes what travels a fraction).
    static let maxBytes = 1 << 20
    /// Places one alert source may fill.
    static let maxPerSource = 25
    /// An authored alert with no end is advertised as lasting this long.
    static let defaultDurationSeconds: Int64 = 8 * 3600

    /// `?test=` with any non-blank value includes test alerts.
    static func includesTestAlerts(_ raw: String?) -> Bool { raw?.presence != nil }

    /// Translations made from the current English text, by language.
    static func fresh(_ translations: [AlertTranslation], for alert: ServiceAlert) -> [AlertTranslation] {
        translations.filter { $0.sourceVersion == alert.sourceVersion && $0.language.lowercased() != "en" }
            .sorted { $0.language < $1.language }
    }

    /// The feed entity for one alert: id `Alert_<id>`, its informed entities
    /// (the agency, or each place its scope names, with its agency), an active period ending 8 h after the start when
    /// no end is set, header and description with English first and stale
    /// translations withheld, the url in English only.
    static func entity(_ alert: ServiceAlert, translations: [AlertTranslation]) -> FeedEntity {
        let end = effectiveEnd(alert) ?? alert.startsAt.adding(seconds: defaultDurationSeconds)
        let current = fresh(translations, for: alert)
        let tags = feedLanguageTags(current.map(\.language))
        func translated(_ english: String, _ pick: (AlertTranslation) -> String) -> TranslatedString {
            TranslatedString(
                [.init(text: english, language: "en")]
                    + tags.compactMap { entry in pick(current[entry.index]).presence.map { .init(text: $0, language: entry.tag) } })
        }
        let shown = TimeRange(start: UInt64(max(alert.startsAt.value, 0)), end: UInt64(max(end.value, 0)))
        let impact = alert.impactStartsAt.flatMap { start in
            alert.impactEndsAt.map { TimeRange(start: UInt64(max(start.value, 0)), end: UInt64(max($0.value, 0))) }
        }
        return FeedEntity(
            id: "Alert_\(alert.id)",
            alert: Alert(
                // The migration guide lets a producer keep active_period beside
                // the new fields; the iOS app reads nothing else.
                activePeriods: [shown], communicationPeriods: [shown], impactPeriods: impact.map { [$0] } ?? [],
                informedEntities: AlertScope.feedSelectors(alert),
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

    /// When riders stop seeing the alert: an authored alert's end, or 8
    /// hours after its start (spec §3); a mirrored alert's end as its
    /// source gave it, nil when the source gave none (it stays while the
    /// source lists it).
    /// Whether the alert's shown period is over at `now` (a mirrored alert
    /// without an end never is): riders no longer see it.
    static func hasEnded(_ alert: ServiceAlert, now: EpochSeconds) -> Bool { effectiveEnd(alert).map { $0 <= now } ?? false }

    static func effectiveEnd(_ alert: ServiceAlert) -> EpochSeconds? {
        if alert.sourceID != nil { return alert.endsAt }
        return alert.endsAt ?? alert.startsAt.adding(seconds: defaultDurationSeconds)
    }

    /// A mirrored alert as the feed carries it: its stored message, with
    /// the period shown now (else the next one) first in `active_period` and
    /// `communication_period`, since the iOS app reads only the first
    /// (`AgencyAlert.swift:141-163`).
    static func mirroredEntity(_ alert: ServiceAlert, message: GTFSRealtime.Alert, now: EpochSeconds) -> FeedEntity {
        func currentFirst(_ ranges: [TimeRange]) -> [TimeRange] {
            guard ranges.count > 1 else { return ranges }
            func rank(_ range: TimeRange) -> (Int, Int64) {
                let start = EpochSeconds(Int64(clamping: range.start ?? 0))
                if start <= now && (range.end.map { now < EpochSeconds(Int64(clamping: $0)) } ?? true) { return (0, -start.value) }
                if start > now { return (1, start.value) }
                return (2, -start.value)
            }
            return ranges.enumerated().sorted { a, b in
                let (left, right) = (rank(a.element), rank(b.element))
                return left != right ? left < right : a.offset < b.offset
            }.map(\.element)
        }
        var ordered = message
        ordered.activePeriods = currentFirst(message.activePeriods)
        ordered.communicationPeriods = currentFirst(message.communicationPeriods)
        return FeedEntity(id: "Source_\(alert.sourceID ?? 0)_\(alert.sourceEntity ?? String(alert.id))", alert: ordered)
    }

    /// The entity for an alert: a mirrored one's message when it has one,
    /// else the authored rendering.
    static func entity(_ alert: ServiceAlert, translations: [AlertTranslation], message: GTFSRealtime.Alert?, now: EpochSeconds) -> FeedEntity {
        if alert.sourceID != nil, let message { return mirroredEntity(alert, message: message, now: now) }
        return entity(alert, translations: translations)
    }

    /// The whole feed of a selection; the header is always present so the
    /// body is never empty (the iOS app reads an empty 200 as an error).
    static func feed(_ selection: AlertFeedSelection) -> FeedMessage {
        FeedMessage(
            header: FeedHeader(gtfsRealtimeVersion: "1.0", incrementality: 0, timestamp: UInt64(max(selection.stamp.value, 0))),
            entities: selection.entries.map(\.entity))
    }
}

/// Spec §4 "What gets pushed": alert copy per audience group.
enum AlertPushRules {
    /// What a lock screen shows of a title and a body.
    static let titleLimit = 48
    static let bodyLimit = 120
    /// The longest a provider keeps an undelivered push: FCM's maximum time
    /// to live (28 days); APNs keeps one for "a period of time", never longer
    /// than asked.
    static let longestLifetimeSeconds: Int64 = 28 * 24 * 3600

    /// When an alert's push stops being worth delivering (epoch seconds, the
    /// `expiration` every transport turns into its own field: APNs
    /// `apns-expiration`, FCM and gorush `android.ttl`, gorush `expiration`,
    /// the relay's `expiration`): the end of the alert's shown period, so a
    /// phone that comes back online after the alert ended never shows it;
    /// at most the providers' longest lifetime from now. An alert that has
    /// already ended expires now (delivered now or never); an open-ended one
    /// lives the longest lifetime.
    static func expiration(for alert: ServiceAlert, now: EpochSeconds) -> EpochSeconds {
        let longest = now.adding(seconds: longestLifetimeSeconds)
        guard let end = AlertFeedRules.effectiveEnd(alert) else { return longest }
        return min(max(end, now), longest)
    }

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
        guard TimeBounds.contains(value) else { return .failure(ValidationFailure([TimeBounds.message(field, value)])) }
        return .success(value)
    }

    /// Whether a link is one every app can open: an http or https URL with a
    /// host and no spaces or control characters (the iOS app opens links in
    /// Safari's view, which takes nothing else; Android hands any scheme to
    /// whatever claims it). Authored and mirrored alerts alike.
    static func isWebLink(_ text: String) -> Bool {
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else { return false }
        let lowered = text.lowercased()
        for scheme in ["https://", "http://"] where lowered.hasPrefix(scheme) {
            let host = lowered.dropFirst(scheme.count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            return !host.isEmpty && !host.hasPrefix(":") && !host.hasPrefix("@")
        }
        return false
    }

    /// A link's scheme, to say why it was refused without repeating it
    /// (`javascript:`, or "no scheme").
    static func scheme(_ text: String) -> String {
        guard let colon = text.firstIndex(of: ":"), text.distance(from: text.startIndex, to: colon) <= 20,
            text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return "no scheme" }
        return text[..<colon].lowercased() + ":"
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
            ("Scope", fields["scope"], AlertScope.maxTextLength),
        ])
        if let header = fields["header"] {
            if let text = header.presence { alert.header = text } else { messages.append("Header can't be blank") }
        }
        if let description = fields["description"] { alert.description = description.trimmingWhitespace() }
        if let url = fields["url"] {
            if let text = url.presence {
                if isWebLink(text) { alert.url = text } else { messages.append("Url must be an http(s) URL") }
            } else {
                alert.url = nil
            }
        }
        // A region-wide alert has the empty agency id OBACloud marks one
        // with (OneBusAway/onebusaway-ios `AgencyAlert.swift`: an empty
        // `agency_id` applies to every agency of the region).
        var regionWide: Bool?
        if let raw = fields["region_wide"] {
            if let value = BooleanParameter.read(raw) { regionWide = value } else { messages.append("region_wide must be true or false") }
        }
        if let agency = fields["agency_id"] {
            if let text = agency.presence {
                if regionWide == true {
                    messages.append("an alert is region-wide or for one agency: give region_wide true or an agency id, not both")
                } else {
                    alert.agencyID = text
                }
            } else if regionWide != true {
                messages.append("Agency id can't be blank (for every agency of the region, make it region-wide)")
            }
        }
        if regionWide == true { alert.agencyID = "" }
        if regionWide == false && alert.agencyID.isEmpty {
            messages.append("an alert that is no longer region-wide needs an agency id")
        }
        // After the agency: a bare id in the scope is completed with it.
        if let raw = fields["scope"], raw.count <= AlertScope.maxTextLength {
            switch AlertScope.parse(raw, agencyID: alert.agencyID) {
            case .success(let selectors): alert.scope = selectors
            case .failure(let failure): messages += failure.messages
            }
        }
        if let raw = fields["scope_check"], BooleanParameter.read(raw) == nil { messages.append("scope_check must be true or false") }
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
            let shownEnd = AlertFeedRules.effectiveEnd(alert) ?? alert.startsAt.adding(seconds: AlertFeedRules.defaultDurationSeconds)
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
