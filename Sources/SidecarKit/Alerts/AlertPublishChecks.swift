import Core
import GTFSRealtime

/// One thing found about an alert before it is published: an error blocks
/// publishing; a warning is said on the form, the API's answer and
/// `alert publish` until an editor acknowledges it.
struct AlertCheckFinding: Equatable, Sendable {
    enum Level: String, Sendable { case error, warning }
    /// Stable, for acknowledging (`cause_unknown`, `translation_missing:es`).
    let code: String
    let level: Level
    let message: String
}

/// What is checked when an alert is published, from the apps' own display
/// rules and the region's riders. Pure: everything read is given.
enum AlertPublishChecks {
    /// A lock screen shows this much of a pushed title; iOS's alert list
    /// two lines of it.
    static let headerShown = 48
    /// iOS's alert list shows this much of the description
    /// (`TransitAlertViewModel.swift`: the first 256 characters).
    static let descriptionShown = 256
    /// A language is "many devices" when it is at least this share of the
    /// region's devices and at least `translationMinimumDevices` of them.
    static let translationShare = 0.05
    static let translationMinimumDevices = 5
    /// Started longer ago than this, neither app interrupts riders with it
    /// (iOS's banner: 8 hours; Android's dialog: 24).
    static let interruptWindowSeconds: Int64 = 24 * 3600
    /// Headlines this alike (shared words over all words) are a near-duplicate.
    static let duplicateSimilarity = 0.8

    struct Inputs: Sendable {
        var alert: ServiceAlert
        var translations: [AlertTranslation]
        /// Devices of the region by catalog language (nil: English or unknown).
        var languages: [(locale: String?, count: Int)]
        /// The alerts riders are shown now or soon in the alert's feed.
        var liveAlerts: [ServiceAlert]
        var now: EpochSeconds
        /// What OneBusAway said of the scope's ids (nil: not asked).
        var scope: [(AlertScope.Lookup, AlertScopeVerdict)]? = nil
    }

    static func findings(_ inputs: Inputs) -> [AlertCheckFinding] {
        let alert = inputs.alert
        var found: [AlertCheckFinding] = []
        func error(_ code: String, _ message: String) { found.append(AlertCheckFinding(code: code, level: .error, message: message)) }
        func warning(_ code: String, _ message: String) { found.append(AlertCheckFinding(code: code, level: .warning, message: message)) }

        // When.
        if let end = alert.endsAt, end <= alert.startsAt {
            error("end_before_start", "It ends (\(Timestamp.format(end))) before it starts (\(Timestamp.format(alert.startsAt))).")
        } else if let end = AlertFeedRules.effectiveEnd(alert), end <= inputs.now {
            error(
                "ended",
                "Its shown period ended at \(Timestamp.format(end))"
                    + (alert.endsAt == nil ? " (8 hours after its start)" : "") + ": riders would never see it. Give it a later end.")
        } else if inputs.now.seconds(since: alert.startsAt) > interruptWindowSeconds {
            warning(
                "started_long_ago",
                "It started more than 24 hours ago: neither app interrupts riders with it (iOS's banner takes alerts that started in the last 8 hours, Android's dialog in the last 24); iOS only lists it."
            )
        }
        // What the apps show of it.
        if alert.header.count > headerShown {
            warning(
                "header_long",
                "The headline has \(alert.header.count) characters: a lock screen shows the first \(headerShown) of a push (\"\(String(alert.header.prefix(headerShown)))…\") and iOS's alert list two lines."
            )
        }
        if alert.description.count > descriptionShown {
            warning(
                "description_long",
                "The description has \(alert.description.count) characters: iOS's alert list shows the first \(descriptionShown), a lock screen the first 120 of a push; the full text is one tap away."
            )
        }
        if alert.cause == .unknownCause { warning("cause_unknown", "No cause is given (Unknown cause).") }
        if alert.effect == .unknownEffect { warning("effect_unknown", "No effect is given (Unknown effect).") }
        // Who reads it.
        let total = inputs.languages.reduce(0) { $0 + $1.count }
        let current = Set(AlertFeedRules.fresh(inputs.translations, for: alert).map { $0.language.lowercased() })
        for (locale, count) in inputs.languages.sorted(by: { $0.count > $1.count }) {
            guard let locale, locale.lowercased() != "en", !current.contains(locale.lowercased()),
                count >= translationMinimumDevices, Double(count) >= Double(total) * translationShare
            else { continue }
            warning(
                "translation_missing:\(locale)",
                "No current \(locale) translation, though \(count) of the region's \(total) devices read \(locale): they would get the English.")
        }
        // Where.
        if let scope = inputs.scope {
            var unchecked = false
            for (lookup, verdict) in scope {
                switch verdict {
                case .known: continue
                case .unknown:
                    warning(
                        "scope_unknown:\(lookup.kind.rawValue)/\(lookup.id)",
                        "The region's OneBusAway server does not know \(lookup.kind.rawValue) \(lookup.id): a OneBusAway server or trip planner reading the feed cannot place it there."
                    )
                case .unchecked(let reason):
                    if !unchecked { warning("scope_unchecked", "Its places were not checked against OneBusAway: \(reason).") }
                    unchecked = true
                }
            }
        }
        // Said already.
        let words = headlineWords(alert.header)
        for other in inputs.liveAlerts where other.id != alert.id {
            let theirs = headlineWords(other.header)
            guard !words.isEmpty, !theirs.isEmpty else { continue }
            let similarity = Double(words.intersection(theirs).count) / Double(words.union(theirs).count)
            if similarity >= duplicateSimilarity {
                warning(
                    "near_duplicate:\(other.id)",
                    "Alert \(other.id) says nearly the same (\"\(other.header)\") and riders already see it: edit or end that one instead?")
            }
        }
        return found
    }

    /// A headline's words, in lower case, for comparing.
    static func headlineWords(_ text: String) -> Set<String> {
        Set(text.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init))
    }

    /// Acknowledged codes as stored: sorted, one space between.
    static func storedCodes(_ codes: Set<String>) -> String { codes.sorted().joined(separator: " ") }
    static func codes(_ stored: String) -> Set<String> { Set(stored.split(separator: " ").map(String.init)) }
}
