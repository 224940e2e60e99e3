import Core
import Crypto
import GTFSRealtime

/// How a source's GTFS-realtime alerts become stored alerts: every field the
/// feed carries kept for re-emission, the text in each language made a
/// translation, and anything that cannot be trusted refused with a reason.
enum AlertSourceMapping {
    /// Alerts taken from one feed; the rest are reported.
    static let maxAlerts = 5000
    static let maxInformedEntities = 1000
    static let maxLanguages = 100
    static let maxPeriods = 100
    static let maxEntityIDLength = 255
    /// 9999-12-31T23:59:59Z: later instants are a producer's bug.
    static let latestInstant: UInt64 = 253_402_300_799

    /// The alerts of a decoded feed, and a message per entity left out.
    static func alerts(_ feed: FeedMessage, agencyID: String, rejected: [RejectedEntity]) -> (alerts: [MirroredAlert], problems: [String]) {
        var problems = rejected.map { "entity \($0.id.map { "“\($0)”" } ?? "#\($0.index + 1)"): \($0.reason)" }
        var alerts: [MirroredAlert] = []
        var seen: Set<String> = []
        for entity in feed.entities {
            guard let alert = entity.alert else { continue }
            guard alerts.count < maxAlerts else {
                problems.append("the feed lists more than \(maxAlerts) alerts; the rest were left out")
                break
            }
            guard seen.insert(entity.id).inserted else {
                problems.append("entity “\(entity.id.prefix(64))”: duplicate id (the first one was kept)")
                continue
            }
            switch map(id: entity.id, alert, agencyID: agencyID) {
            case .success(let mirrored): alerts.append(mirrored)
            case .failure(let failure): problems.append("entity “\(entity.id.prefix(64))”: \(failure.messages.joined(separator: "; "))")
            }
        }
        return (alerts, problems)
    }

    /// One alert, or why it was refused.
    static func map(id: String, _ alert: GTFSRealtime.Alert, agencyID: String) -> Result<MirroredAlert, ValidationFailure> {
        var problems: [String] = []
        if id.isEmpty || id.count > maxEntityIDLength { problems.append("its id is empty or longer than \(maxEntityIDLength) characters") }
        if alert.informedEntities.count > maxInformedEntities {
            problems.append("\(alert.informedEntities.count) informed entities (at most \(maxInformedEntities))")
        }
        let periods = alert.activePeriods + alert.communicationPeriods + alert.impactPeriods
        if periods.count > maxPeriods { problems.append("\(periods.count) periods (at most \(maxPeriods))") }
        if periods.contains(where: { ($0.start ?? 0) > latestInstant || ($0.end ?? 0) > latestInstant }) {
            problems.append("a period beyond the year 9999")
        }
        if periods.contains(where: { period in period.start.flatMap { start in period.end.map { $0 < start } } ?? false }) {
            problems.append("a period ends before it starts")
        }
        let texts = [alert.headerText, alert.descriptionText, alert.url].compactMap { $0 }
        if Set(texts.flatMap { $0.translations.map { $0.language ?? "" } }).count > maxLanguages {
            problems.append("more than \(maxLanguages) languages")
        }
        let primary = primaryLanguage(alert.headerText)
        guard let header = text(alert.headerText, language: primary)?.presence else {
            problems.append("no header text")
            return .failure(ValidationFailure(problems))
        }
        let description = text(alert.descriptionText, language: primary) ?? ""
        let url = text(alert.url, language: primary)?.presence
        problems += FieldLimits.check([
            ("Header", header, FieldLimits.alertHeader), ("Description", description, FieldLimits.alertDescription), ("URL", url, FieldLimits.url),
        ])
        var translations: [AlertTranslation] = []
        for language in languages(alert).filter({ $0 != primary }) {
            let translatedHeader = text(alert.headerText, language: language) ?? ""
            let translatedDescription = text(alert.descriptionText, language: language) ?? ""
            guard !translatedHeader.isEmpty || !translatedDescription.isEmpty else { continue }
            if language.count > FieldLimits.locale { problems.append("a language tag longer than \(FieldLimits.locale) characters") }
            problems += FieldLimits.check([
                ("Header (\(language.prefix(16)))", translatedHeader, FieldLimits.alertHeader),
                ("Description (\(language.prefix(16)))", translatedDescription, FieldLimits.alertDescription),
            ])
            translations.append(AlertTranslation(language: language, header: translatedHeader, description: translatedDescription, sourceVersion: 0))
        }
        guard problems.isEmpty else { return .failure(ValidationFailure(Array(Set(problems)).sorted())) }

        var feedAlert = alert
        if !feedAlert.informedEntities.contains(where: { $0.agencyID == agencyID }) {
            // The apps match a sidecar's alerts on the region's agency (spec §3).
            feedAlert.informedEntities.append(EntitySelector(agencyID: agencyID))
        }
        let shown = alert.communicationPeriods.isEmpty ? alert.activePeriods : alert.communicationPeriods
        let starts = shown.compactMap(\.start)
        let startsAt = starts.min().map { EpochSeconds(Int64($0)) }
        let endsAt = shown.isEmpty || shown.contains(where: { $0.end == nil }) ? nil : shown.compactMap(\.end).max().map { EpochSeconds(Int64($0)) }
        let impact = alert.impactPeriods.first
        return .success(
            MirroredAlert(
                entityID: id, header: header, description: description, url: url, cause: alert.cause ?? .unknownCause,
                effect: alert.effect ?? .unknownEffect, severity: alert.severityLevel ?? .unknownSeverity,
                startsAt: startsAt ?? EpochSeconds(0), endsAt: endsAt,
                impactStartsAt: impact?.start.map { EpochSeconds(Int64($0)) }, impactEndsAt: impact?.end.map { EpochSeconds(Int64($0)) },
                translations: translations, feedAlert: feedAlert, scope: scope(alert.informedEntities),
                contentHash: Hex.encode(SHA256.digest(encoded(id: id, feedAlert))),
                materialHash: materialHash(alert)))
    }

    /// The alert as stored and re-emitted: one feed entity's encoding.
    static func encoded(id: String, _ alert: GTFSRealtime.Alert) -> [UInt8] {
        FeedMessage(header: FeedHeader(timestamp: nil), entities: [FeedEntity(id: id, alert: alert)]).encoded()
    }

    /// The alert stored by `encoded`, or nil when the bytes are not one.
    static func decoded(_ bytes: [UInt8]) -> GTFSRealtime.Alert? {
        (try? FeedMessage(decoding: bytes))?.entities.first?.alert
    }

    /// The language riders without a translation of their own see: the
    /// untagged text, else English, else the first given.
    static func primaryLanguage(_ header: TranslatedString?) -> String {
        let translations = header?.translations.filter { !$0.text.isEmpty } ?? []
        if translations.contains(where: { ($0.language ?? "").isEmpty }) { return "" }
        if let english = translations.first(where: { ($0.language ?? "").lowercased() == "en" }) { return english.language ?? "en" }
        if let english = translations.first(where: { ($0.language ?? "").lowercased().hasPrefix("en-") }) { return english.language ?? "en" }
        return translations.first?.language ?? ""
    }

    static func text(_ translated: TranslatedString?, language: String) -> String? {
        translated?.translations.first { ($0.language ?? "") == language }?.text
    }

    /// Every language any of the alert's texts is given in, in order of appearance.
    static func languages(_ alert: GTFSRealtime.Alert) -> [String] {
        var seen: [String] = []
        for translated in [alert.headerText, alert.descriptionText].compactMap({ $0 }) {
            for translation in translated.translations where !seen.contains(translation.language ?? "") {
                seen.append(translation.language ?? "")
            }
        }
        return seen
    }

    /// The broadest thing the alert is about: the whole agency (or a route
    /// type), whole routes, or single stops and trips. An alert naming
    /// nothing is about the agency.
    static func scope(_ selectors: [EntitySelector]) -> AlertSource.Scope {
        guard !selectors.isEmpty else { return .agency }
        return selectors.map { selector -> AlertSource.Scope in
            if selector.trip != nil || selector.stopID != nil { return .any }
            if selector.routeID != nil { return .route }
            return .agency
        }.min() ?? .agency
    }

    /// What makes a change worth a push: the header in any language, or a period.
    static func materialHash(_ alert: GTFSRealtime.Alert) -> String {
        var text = ""
        for translation in alert.headerText?.translations ?? [] { text += "h\u{0}\(translation.language ?? "")\u{0}\(translation.text)\u{0}" }
        for (kind, periods) in [("a", alert.activePeriods), ("c", alert.communicationPeriods), ("i", alert.impactPeriods)] {
            for period in periods { text += "\(kind)\u{0}\(period.start.map(String.init) ?? "")\u{0}\(period.end.map(String.init) ?? "")\u{0}" }
        }
        return Hex.encode(SHA256.digest(Array(text.utf8)))
    }
}
