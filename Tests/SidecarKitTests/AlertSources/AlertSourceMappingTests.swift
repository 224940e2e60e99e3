import Core
import GTFSRealtime
import Testing

@testable import SidecarKit

/// How a source's alert becomes ours, rule by rule: the GTFS-realtime
/// clause (or the app's code) each row follows is named beside it.
@Suite("Alert sources: mapping a feed's alert")
struct AlertSourceMappingTests {
    static let context = AlertSourceRulesTests.context

    static func map(_ alert: Alert, id: String = "e") throws -> MirroredAlert {
        try AlertSourceMapping.map(id: id, alert, context: context).get()
    }

    static func header(_ translations: [(String?, String)]) -> TranslatedString {
        TranslatedString(translations.map { .init(text: $0.1, language: $0.0) })
    }

    /// TranslatedString.Translation.language: "a BCP-47 language code. Can be
    /// omitted if the language is unknown or if no i18n is done at all".
    @Test(
        arguments: [
            (nil, "en"), ("", "en"), ("  ", "en"), ("en", "en"), ("en-US", "en"), ("EN", "en"), ("en_GB", "en"), ("es", "es"), ("es-US", "es"),
            ("ES", "es"), ("es-419", "es"), ("zh-TW", "zh-Hant"), ("zh-Hant-TW", "zh-Hant"), ("zh-CN", "zh-Hans"), ("zh", "zh-Hans"),
            ("tl", "tl"), ("fil-PH", "tl"), ("pt-BR", "pt"), ("nl", "nl"), ("nl-BE", "nl"), ("x!", nil), ("1234", nil),
        ] as [(String?, String?)])
    func languagesNormaliseAsRegistrationsDo(tag: String?, expected: String?) {
        #expect(AlertSourceLanguages.language(tag, catalog: .standard) == expected)
    }

    /// What each phone reads of the feed text, by the apps' own rules:
    /// Android GtfsAlertsHelper.kt:21-34 (exact code, else the last "en",
    /// else ""), iOS AgencyAlert.swift:48-64 (exact code, else the first
    /// "en", else the first).
    static func android(_ text: TranslatedString?, _ language: String) -> String {
        var fallback = ""
        for translation in text?.translations ?? [] where translation.language != nil {
            if translation.language == language { return translation.text }
            if translation.language == "en" { fallback = translation.text }
        }
        return fallback
    }

    static func ios(_ text: TranslatedString?, _ language: String) -> String {
        let translations = text?.translations ?? []
        return (translations.first { $0.language == language } ?? translations.first { $0.language == "en" } ?? translations.first)?.text ?? ""
    }

    @Test(
        arguments: [
            // (source texts, phone code, what the phone must read)
            ([(nil, "Elevator out")], "en", "Elevator out"), ([(nil, "Elevator out")], "es", "Elevator out"),
            ([("en-US", "Detour"), ("es-US", "Desvío")], "es", "Desvío"), ([("en-US", "Detour"), ("es-US", "Desvío")], "en", "Detour"),
            ([("en-US", "Detour"), ("zh-TW", "改道")], "zh", "改道"), ([("en", "Detour"), ("tl", "Inilihis")], "fil", "Inilihis"),
            ([("en", "Detour"), ("tl", "Inilihis")], "tl", "Inilihis"), ([("ES", "Desvío")], "en", "Desvío"), ([("ES", "Desvío")], "es", "Desvío"),
            ([("es", "Desvío"), ("en", "Detour")], "fr", "Detour"),
        ] as [([(String?, String)], String, String)])
    func everyPhoneReadsANonEmptyTextInItsLanguage(source: [(String?, String)], phone: String, expected: String) throws {
        let mapped = try Self.map(Alert(headerText: Self.header(source)))
        #expect(Self.android(mapped.feedAlert.headerText, phone) == expected, "Android, \(phone)")
        #expect(Self.ios(mapped.feedAlert.headerText, phone) == expected, "iOS, \(phone)")
        #expect(mapped.feedAlert.headerText?.translations.first?.language == "en", "en first")
        let tags = mapped.feedAlert.headerText?.translations.map(\.language) ?? []
        #expect(Set(tags).count == tags.count, "no tag twice")
    }

    @Test func translationsForPushesAreTheCatalogsLanguages() throws {
        let mapped = try Self.map(
            Alert(headerText: Self.header([("en-US", "Detour"), ("es-US", "Desvío"), ("zh-TW", "改道"), ("nl", "Omleiding"), ("es", "Otra")])))
        #expect(mapped.header == "Detour")
        #expect(mapped.translations.map(\.language) == ["es", "zh-Hant"], "nl is outside the catalog: in the feed only; the first es wins")
        #expect(AlertPushRules.copy(for: Self.stored(mapped), translations: mapped.translations, locale: "es").title == "Desvío")
    }

    static func stored(_ mapped: MirroredAlert) -> ServiceAlert {
        ServiceAlert(
            id: 1, regionID: 1, agencyID: "1", header: mapped.header, description: mapped.description, url: mapped.url, cause: mapped.cause,
            effect: mapped.effect, severity: mapped.severity, startsAt: mapped.startsAt, endsAt: mapped.endsAt, published: true, test: false,
            sourceVersion: 0, createdAt: 0, updatedAt: 0, sourceID: 1, sourceEntity: mapped.entityID)
    }

    /// google/transit#546: communication_period (when to show) and
    /// impact_period (when service is affected) replace active_period, which
    /// the iOS app still reads alone (AgencyAlert.swift:141-163).
    @Test func theIOSAppsPeriodIsFilledFromWhatTheSourceSent() throws {
        let first = AlertSourceRulesTests.now
        let header = Self.header([("en", "x")])
        let communication = try Self.map(Alert(communicationPeriods: [TimeRange(start: 100, end: 200)], headerText: header))
        #expect(communication.feedAlert.activePeriods == [TimeRange(start: 100, end: 200)])
        #expect(communication.feedAlert.communicationPeriods == [TimeRange(start: 100, end: 200)] && communication.feedAlert.impactPeriods.isEmpty)
        let impact = try Self.map(Alert(impactPeriods: [TimeRange(start: 150, end: 180)], headerText: header))
        #expect(impact.feedAlert.activePeriods == [TimeRange(start: 150, end: 180)] && impact.feedAlert.communicationPeriods.isEmpty)
        let none = try Self.map(Alert(headerText: header))
        #expect(none.feedAlert.activePeriods == [TimeRange(start: UInt64(first.value), end: nil)], "open-ended from first seen")
        #expect(none.startsAt == first && none.endsAt == nil)
        let active = try Self.map(
            Alert(activePeriods: [TimeRange(start: 1, end: 2)], communicationPeriods: [TimeRange(start: 0, end: 3)], headerText: header))
        #expect(active.feedAlert.activePeriods == [TimeRange(start: 1, end: 2)], "the source's own active_period stays")
        #expect(active.startsAt == EpochSeconds(0) && active.endsAt == EpochSeconds(3), "shown as Android shows it: communication first")
    }

    /// EntitySelector: "at least one specifier must be given ... if several
    /// are given, the matching has to apply to all" (a conjunction).
    @Test(
        arguments: [
            ([], [EntitySelector(agencyID: "1")]),
            ([EntitySelector(routeID: "44")], [EntitySelector(agencyID: "1", routeID: "44")]),
            ([EntitySelector(stopID: "s1")], [EntitySelector(agencyID: "1", stopID: "s1")]),
            ([EntitySelector(agencyID: "KCM", routeType: 4)], [EntitySelector(agencyID: "KCM", routeType: 4)]),
            (
                [EntitySelector(trip: TripDescriptor(tripID: "t1", scheduleRelationship: 3)), EntitySelector(routeType: 3)],
                [
                    EntitySelector(agencyID: "1", trip: TripDescriptor(tripID: "t1", scheduleRelationship: 3)),
                    EntitySelector(agencyID: "1", routeType: 3),
                ]
            ),
        ] as [([EntitySelector], [EntitySelector])])
    func scopeStaysAsTheAgencyWroteIt(source: [EntitySelector], expected: [EntitySelector]) throws {
        #expect(try Self.map(Alert(informedEntities: source, headerText: Self.header([("en", "x")]))).feedAlert.informedEntities == expected)
    }

    @Test func enumsLinksAndDetailsAreKeptOrDroppedAloneAndSaid() throws {
        var alert = Alert(
            cause: .specialEvent, url: Self.header([("en", "javascript:alert(1)"), ("es", "https://agency.example/es")]),
            headerText: Self.header([("en", "Game day"), ("es", "Día de partido")]))
        alert.causeDetail = Self.header([(nil, "Stadium event")])
        alert.ttsHeaderText = Self.header([("en-US", "Game day")])
        alert.image = TranslatedImage([
            .init(url: "data:image/png;base64,AAAA", mediaType: "image/png", language: nil),
            .init(url: "https://a.example/m.png", mediaType: "image/png", language: "en-US"),
        ])
        alert.unrecognized = ["effect 99"]
        let mapped = try Self.map(alert)
        #expect(mapped.cause == .specialEvent && mapped.feedAlert.cause == .specialEvent)
        #expect(mapped.unknownValues == 1 && mapped.notes.contains { $0.contains("effect 99 is not a value this server knows") })
        #expect(
            mapped.feedAlert.url?.translations.map(\.text) == ["https://agency.example/es", "https://agency.example/es"],
            "only the web link, under en and es")
        #expect(mapped.notes.contains { $0.contains("(javascript:)") } && mapped.notes.contains { $0.contains("an image was dropped (data:)") })
        #expect(mapped.feedAlert.causeDetail?.translations == [.init(text: "Stadium event", language: "en")])
        #expect(mapped.feedAlert.ttsHeaderText?.translations == [.init(text: "Game day", language: "en")])
        #expect(mapped.feedAlert.image?.localizedImages == [.init(url: "https://a.example/m.png", mediaType: "image/png", language: "en")])
        let decoded = try #require(AlertSourceMapping.decoded(AlertSourceMapping.encoded(id: "e", mapped.feedAlert)))
        #expect(decoded == mapped.feedAlert, "every field survives our encoding")
    }

    @Test func boundsAreAnAuthoredAlertsAndAHugeFeedMakesFewProblems() {
        var long = Alert(headerText: Self.header([("en", "x")]))
        long.ttsDescriptionText = Self.header([("en", String(repeating: "d", count: 10_001))])
        guard case .failure(let failure) = AlertSourceMapping.map(id: "e", long, context: Self.context) else {
            Issue.record("accepted")
            return
        }
        #expect(failure.messages == ["Spoken description (en) is too long (maximum is 10000 characters)"])
        var big = Alert(headerText: Self.header([("en", "x")]))
        big.informedEntities = (0..<900).map { EntitySelector(routeID: String(repeating: "r", count: 200) + "\($0)") }
        guard case .failure(let size) = AlertSourceMapping.map(id: "e", big, context: Self.context) else {
            Issue.record("a 180 KB alert was accepted")
            return
        }
        #expect(size.messages.first?.contains("bytes encoded (at most 65536)") == true)
        let feed = FeedMessage(header: FeedHeader(timestamp: 1), entities: (0..<5000).map { FeedEntity(id: "b\($0)", alert: Alert()) })
        let (alerts, _, problems) = AlertSourceMapping.alerts(feed, context: Self.context, rejected: [])
        #expect(alerts.isEmpty && problems.count == AlertSourceMapping.maxProblems + 1 && problems.last == "and 4950 more problems")
    }

    @Test func aDeletedEntityIsWithdrawnNotMirrored() {
        var deleted = FeedEntity(id: "gone", alert: Alert(headerText: Self.header([("en", "x")])))
        deleted.isDeleted = true
        let feed = FeedMessage(
            header: FeedHeader(timestamp: 1), entities: [deleted, FeedEntity(id: "kept", alert: Alert(headerText: Self.header([("en", "y")])))])
        let (alerts, gone, problems) = AlertSourceMapping.alerts(feed, context: Self.context, rejected: [])
        #expect(alerts.map(\.entityID) == ["kept"] && gone == ["gone"] && problems.isEmpty)
    }
}
