import Core
import Crypto
import GTFSRealtime

/// How a source's GTFS-realtime alerts become stored alerts, held to what
/// an authored alert obeys: every text in a catalog language and under the
/// codes the apps match, the periods the apps read filled in, the agency
/// the apps need in the same selector as the route or stop, web links only,
/// and the same limits. Whatever else the source wrote (details, spoken
/// texts, images, trips) goes out as it came. Anything that cannot be
/// trusted is refused with a reason; a value that can be dropped alone is
/// dropped and noted.
enum AlertSourceMapping {
    /// Alerts taken from one feed; the rest are reported.
    static let maxAlerts = 5000
    static let maxInformedEntities = 1000
    static let maxLanguages = 100
    static let maxPeriods = 100
    static let maxImages = 20
    static let maxEntityIDLength = 255
    /// One alert as the feed carries it: a larger one is refused (the whole
    /// feed has its own bound, `AlertFeedRules.maxBytes`).
    static let maxEncodedBytes = 64 * 1024
    /// 9999-12-31T23:59:59Z: later instants are a producer's bug.
    static let latestInstant: UInt64 = 253_402_300_799
    /// The most problem lines one poll keeps (a feed of 100,000 broken
    /// entities must not make a 10 MB answer).
    static let maxProblems = 50

    /// What the mapping needs besides the alert.
    struct Context: Sendable {
        /// The region's agency id, put in every selector that names none.
        var agencyID: String
        var catalog: LocaleCatalog
        /// When each entity was first seen (now for a new one): the start of
        /// an alert the source gives no period.
        var firstSeen: @Sendable (String) -> EpochSeconds
    }

    /// The alerts of a decoded feed, the ids the source marked deleted, and
    /// a message per entity left out or value dropped (at most `maxProblems`).
    static func alerts(_ feed: FeedMessage, context: Context, rejected: [RejectedEntity]) -> (
        alerts: [MirroredAlert], deleted: [String], problems: [String]
    ) {
        var problems = rejected.map { "entity \($0.id.map { "“\($0.prefix(64))”" } ?? "#\($0.index + 1)"): \($0.reason)" }
        var alerts: [MirroredAlert] = []
        var deleted: [String] = []
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
            // Withdrawn at the source: it leaves the feed like one no longer listed.
            if entity.isDeleted {
                deleted.append(entity.id)
                continue
            }
            switch map(id: entity.id, alert, context: context) {
            case .success(let mirrored):
                alerts.append(mirrored)
                problems += mirrored.notes.map { "entity “\(entity.id.prefix(64))”: \($0)" }
            case .failure(let failure): problems.append("entity “\(entity.id.prefix(64))”: \(failure.messages.joined(separator: "; "))")
            }
        }
        if problems.count > maxProblems {
            let more = problems.count - maxProblems
            problems = Array(problems.prefix(maxProblems)) + ["and \(more) more problems"]
        }
        return (alerts, deleted, problems)
    }

    /// One alert, or why it was refused.
    static func map(id: String, _ alert: GTFSRealtime.Alert, context: Context) -> Result<MirroredAlert, ValidationFailure> {
        var problems: [String] = []
        var notes = alert.unrecognized.map { "\($0) is not a value this server knows: kept as unknown" }
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
        problems += selectorProblems(alert.informedEntities)

        // Texts, each in normalised languages.
        let catalog = context.catalog
        func read(_ translated: TranslatedString?) -> [AlertSourceLanguages.Text] {
            let (texts, malformed) = AlertSourceLanguages.texts(translated, catalog: catalog)
            notes += malformed.map { "a text tagged “\($0)” was left out: that is not a language tag" }
            return texts
        }
        let header = read(alert.headerText)
        let description = read(alert.descriptionText)
        var links: [AlertSourceLanguages.Text] = []
        for link in read(alert.url) {
            if AlertInputRules.isWebLink(link.text) {
                links.append(link)
            } else {
                notes.append("its \(link.language) URL was dropped (\(AlertInputRules.scheme(link.text))): only http and https links reach riders")
            }
        }
        let spokenHeader = read(alert.ttsHeaderText)
        let spokenDescription = read(alert.ttsDescriptionText)
        let causeDetail = read(alert.causeDetail)
        let effectDetail = read(alert.effectDetail)
        let imageText = read(alert.imageAlternativeText)
        let languages = Set(
            [header, description, links, spokenHeader, spokenDescription, causeDetail, effectDetail, imageText].flatMap { $0.map(\.language) })
        if languages.count > maxLanguages { problems.append("more than \(maxLanguages) languages") }
        let primary = AlertSourceLanguages.primary(header)
        guard let headline = AlertSourceLanguages.text(header, primary, primary: primary) else {
            problems.append("no header text")
            return .failure(ValidationFailure(Array(Set(problems)).sorted()))
        }
        let body = AlertSourceLanguages.text(description, primary, primary: primary) ?? ""
        for (label, texts, limit) in [
            ("Header", header, FieldLimits.alertHeader), ("Description", description, FieldLimits.alertDescription), ("URL", links, FieldLimits.url),
            ("Spoken header", spokenHeader, FieldLimits.alertHeader), ("Spoken description", spokenDescription, FieldLimits.alertDescription),
            ("Cause detail", causeDetail, FieldLimits.alertHeader), ("Effect detail", effectDetail, FieldLimits.alertHeader),
            ("Image description", imageText, FieldLimits.alertHeader),
        ] {
            problems += FieldLimits.check(texts.map { ("\(label) (\($0.language))", $0.text, limit) })
        }
        let image = mappedImage(alert.image, catalog: catalog, notes: &notes, problems: &problems)

        // Translations, for pushes and the console: the catalog's languages
        // other than the primary (the alert's own text).
        var translations: [AlertTranslation] = []
        for language in catalog.languages where language != primary {
            let translatedHeader = header.first { $0.language == language }?.text ?? ""
            let translatedDescription = description.first { $0.language == language }?.text ?? ""
            guard !translatedHeader.isEmpty || !translatedDescription.isEmpty else { continue }
            translations.append(
                AlertTranslation(
                    language: language, header: translatedHeader.presence ?? headline, description: translatedDescription, sourceVersion: 0))
        }
        guard problems.isEmpty else { return .failure(ValidationFailure(Array(Set(problems)).sorted())) }

        var feedAlert = alert
        feedAlert.unrecognized = []
        feedAlert.headerText = AlertSourceLanguages.feedString(header, primary: primary)
        feedAlert.descriptionText = AlertSourceLanguages.feedString(description, primary: primary)
        feedAlert.url = AlertSourceLanguages.feedString(links, primary: primary)
        feedAlert.ttsHeaderText = AlertSourceLanguages.feedString(spokenHeader, primary: primary)
        feedAlert.ttsDescriptionText = AlertSourceLanguages.feedString(spokenDescription, primary: primary)
        feedAlert.causeDetail = AlertSourceLanguages.feedString(causeDetail, primary: primary)
        feedAlert.effectDetail = AlertSourceLanguages.feedString(effectDetail, primary: primary)
        feedAlert.imageAlternativeText = AlertSourceLanguages.feedString(imageText, primary: primary)
        feedAlert.image = image
        feedAlert.informedEntities = scoped(alert.informedEntities, agencyID: context.agencyID)
        let firstSeen = context.firstSeen(id)
        feedAlert.activePeriods = activePeriods(alert, firstSeen: firstSeen)
        let encoded = encoded(id: id, feedAlert)
        if encoded.count > maxEncodedBytes {
            return .failure(ValidationFailure(["\(encoded.count) bytes encoded (at most \(maxEncodedBytes))"]))
        }
        let shown = shownPeriods(feedAlert)
        let startsAt = shown.map { EpochSeconds(Int64($0.start ?? UInt64(max(firstSeen.value, 0)))) }.min() ?? firstSeen
        let endsAt = shown.contains(where: { $0.end == nil }) ? nil : shown.compactMap(\.end).max().map { EpochSeconds(Int64($0)) }
        let impact = alert.impactPeriods.first
        return .success(
            MirroredAlert(
                entityID: id, header: headline, description: body, url: AlertSourceLanguages.text(links, primary, primary: primary),
                cause: alert.cause ?? .unknownCause, effect: alert.effect ?? .unknownEffect, severity: alert.severityLevel ?? .unknownSeverity,
                startsAt: startsAt, endsAt: endsAt,
                impactStartsAt: impact?.start.map { EpochSeconds(Int64($0)) }, impactEndsAt: impact?.end.map { EpochSeconds(Int64($0)) },
                translations: translations, feedAlert: feedAlert, scope: scope(alert.informedEntities),
                contentHash: Hex.encode(SHA256.digest(encoded)), materialHash: materialHash(alert), notes: notes,
                unknownValues: alert.unrecognized.count))
    }

    /// The periods the iOS app reads (`active_period`, the only one its
    /// proto has: OneBusAway/onebusaway-ios `AgencyAlert.swift:141-163`),
    /// filled from what the source sent when it sent none: its
    /// communication periods, else its impact periods, else open-ended
    /// from when the alert was first seen. The other fields stay as sent.
    static func activePeriods(_ alert: GTFSRealtime.Alert, firstSeen: EpochSeconds) -> [TimeRange] {
        if !alert.activePeriods.isEmpty { return alert.activePeriods }
        if !alert.communicationPeriods.isEmpty { return alert.communicationPeriods }
        if !alert.impactPeriods.isEmpty { return alert.impactPeriods }
        return [TimeRange(start: UInt64(max(firstSeen.value, 0)), end: nil)]
    }

    /// The periods riders are shown an alert in: its communication periods
    /// when it has them (Android reads those first,
    /// OneBusAway/onebusaway-android `widealerts/GtfsAlertsHelper.kt:80-81`),
    /// else its active ones.
    static func shownPeriods(_ alert: GTFSRealtime.Alert) -> [TimeRange] {
        alert.communicationPeriods.isEmpty ? alert.activePeriods : alert.communicationPeriods
    }

    /// The selectors as the agency wrote them, each naming the region's
    /// agency when it names none (GTFS-realtime lets `agency_id` go with a
    /// route, a stop or a trip: a conjunction, so a route-scoped alert stays
    /// route-scoped), and one agency selector when there is none at all.
    /// Both apps need an `agency_id` in some selector to show an alert
    /// (`GtfsAlertsHelper.kt:45`, `AgencyAlert.swift:220-226`).
    static func scoped(_ selectors: [EntitySelector], agencyID: String) -> [EntitySelector] {
        guard !selectors.isEmpty else { return [EntitySelector(agencyID: agencyID)] }
        return selectors.map { selector in
            var scoped = selector
            if scoped.agencyID == nil { scoped.agencyID = agencyID }
            return scoped
        }
    }

    /// Identifiers longer than the ones the server stores anywhere else.
    static func selectorProblems(_ selectors: [EntitySelector]) -> [String] {
        let limit = FieldLimits.identifier
        for selector in selectors {
            let ids = [
                selector.agencyID, selector.routeID, selector.stopID, selector.trip?.tripID, selector.trip?.routeID,
                selector.trip?.modifiedTrip?.modificationsID, selector.trip?.modifiedTrip?.affectedTripID,
            ]
            if ids.contains(where: { ($0?.count ?? 0) > limit }) { return ["a selector names an id longer than \(limit) characters"] }
            let times = [
                selector.trip?.startTime, selector.trip?.startDate, selector.trip?.modifiedTrip?.startTime, selector.trip?.modifiedTrip?.startDate,
            ]
            if times.contains(where: { ($0?.count ?? 0) > 16 }) { return ["a selector's trip has a start time or date longer than 16 characters"] }
        }
        return []
    }

    /// The source's images that are web links, in normalised languages.
    static func mappedImage(_ image: TranslatedImage?, catalog: LocaleCatalog, notes: inout [String], problems: inout [String]) -> TranslatedImage? {
        guard let image else { return nil }
        if image.localizedImages.count > maxImages { problems.append("\(image.localizedImages.count) images (at most \(maxImages))") }
        var kept: [TranslatedImage.LocalizedImage] = []
        for var localized in image.localizedImages.prefix(maxImages) {
            guard AlertInputRules.isWebLink(localized.url), localized.url.count <= FieldLimits.url else {
                notes.append(
                    "an image was dropped (\(AlertInputRules.scheme(localized.url))): only http and https links of up to \(FieldLimits.url) characters"
                )
                continue
            }
            guard localized.mediaType.count <= 100 else {
                problems.append("an image's media type is longer than 100 characters")
                continue
            }
            if localized.language != nil {
                guard let language = AlertSourceLanguages.language(localized.language, catalog: catalog) else {
                    notes.append("an image tagged “\((localized.language ?? "").prefix(40))” was left out: that is not a language tag")
                    continue
                }
                localized.language = language
            }
            kept.append(localized)
        }
        return kept.isEmpty ? nil : TranslatedImage(kept)
    }

    /// The alert as stored and re-emitted: one feed entity's encoding.
    static func encoded(id: String, _ alert: GTFSRealtime.Alert) -> [UInt8] {
        FeedMessage(header: FeedHeader(timestamp: nil), entities: [FeedEntity(id: id, alert: alert)]).encoded()
    }

    /// The alert stored by `encoded`, or nil when the bytes are not one.
    static func decoded(_ bytes: [UInt8]) -> GTFSRealtime.Alert? {
        (try? FeedMessage(decoding: bytes))?.entities.first?.alert
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

    /// What makes a change worth a push: the header in any language, or a
    /// period, as the source sent them (so a change in how this server
    /// normalises them never looks like a change at the source).
    static func materialHash(_ alert: GTFSRealtime.Alert) -> String {
        var text = ""
        for translation in alert.headerText?.translations ?? [] { text += "h\u{0}\(translation.language ?? "")\u{0}\(translation.text)\u{0}" }
        for (kind, periods) in [("a", alert.activePeriods), ("c", alert.communicationPeriods), ("i", alert.impactPeriods)] {
            for period in periods { text += "\(kind)\u{0}\(period.start.map(String.init) ?? "")\u{0}\(period.end.map(String.init) ?? "")\u{0}" }
        }
        return Hex.encode(SHA256.digest(Array(text.utf8)))
    }
}
