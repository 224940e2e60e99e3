import Core
import GTFSRealtime
import Push
import Testing

@testable import SidecarKit

@Suite("Alerts: feed rules (spec §3)")
struct AlertFeedRulesTests {
    static func alert(_ id: Int64, start: EpochSeconds, end: EpochSeconds? = nil, published: Bool = true, test: Bool = false, version: Int = 1)
        -> ServiceAlert
    {
        ServiceAlert(
            id: id, regionID: 1, agencyID: "1", header: "Header \(id)", description: "Description \(id)", url: "https://example.org/\(id)",
            cause: .construction, effect: .detour, severity: .warning, startsAt: start, endsAt: end, published: published,
            test: test, sourceVersion: version, createdAt: 0, updatedAt: 0)
    }

    static func select(
        _ alerts: [ServiceAlert], mirrored: [Int64: [UInt8]] = [:], includeTest: Bool = false, now: Int64 = 1_000_000, changedAt: Int64 = 0
    )
        -> AlertFeedSelection
    {
        AlertFeedSelection.select(
            alerts, translations: [:], mirrored: mirrored, includeTest: includeTest, now: EpochSeconds(now), changedAt: EpochSeconds(changedAt))
    }

    /// An alert of source `source`, with its stored message.
    static func mirrored(_ id: Int64, source: Int64, start: Int64, end: Int64? = nil, severity: SeverityLevel = .info) -> (ServiceAlert, [UInt8]) {
        var alert = Self.alert(id, start: EpochSeconds(start), end: end.map { EpochSeconds($0) })
        alert.severity = severity
        alert.sourceID = source
        alert.sourceEntity = "e\(id)"
        let message = Alert(
            activePeriods: [TimeRange(start: UInt64(start), end: end.map(UInt64.init))], informedEntities: [EntitySelector(agencyID: "1")],
            headerText: TranslatedString([.init(text: "Mirrored \(id)", language: "en")]), severityLevel: severity)
        return (alert, AlertSourceMapping.encoded(id: "e\(id)", message))
    }

    // Spec §3 "current conditions, not an archive", as the issue sharpened it:
    // shown now before upcoming, then severity, then start; ended alerts leave.
    @Test func whatRidersNeedNowComesFirst() {
        let now: Int64 = 1_000_000
        var live = Self.alert(1, start: EpochSeconds(now - 600))
        live.severity = .info
        var severe = Self.alert(2, start: EpochSeconds(now - 3600))
        severe.severity = .severe
        let newer = Self.alert(3, start: EpochSeconds(now - 60))
        let soon = Self.alert(4, start: EpochSeconds(now + 600))
        let later = Self.alert(5, start: EpochSeconds(now + 7200))
        let ended = Self.alert(6, start: EpochSeconds(now - 90_000), end: EpochSeconds(now - 93_600 + 3600))
        let expiredDefault = Self.alert(7, start: EpochSeconds(now - 9 * 3600))
        let draft = Self.alert(8, start: EpochSeconds(now), published: false)
        let selection = Self.select([live, severe, newer, soon, later, ended, expiredDefault, draft], now: now)
        #expect(selection.entries.map(\.alert.id) == [2, 3, 1, 4, 5], "severe, then the newer WARNING, then INFO; upcoming soonest first")
        #expect(selection.entries.map(\.activeNow) == [true, true, true, false, false])
        #expect(selection.excluded[6] == .ended && selection.excluded[7] == .ended, "an alert whose end passed (or its 8 hours) leaves")
        #expect(selection.excluded[8] == nil && !selection.includes(8), "a draft is not published: neither in nor explained")
        #expect(AlertVisibility.of(soon, in: selection) == .upcoming && AlertVisibility.of(ended, in: selection) == .ended)
    }

    @Test(
        "test alerts only with a non-blank ?test=",
        arguments: [(nil, false), ("", false), ("  ", false), ("1", true), ("0", true), ("yes", true)] as [(String?, Bool)])
    func testParameter(raw: String?, included: Bool) {
        #expect(AlertFeedRules.includesTestAlerts(raw) == included)
        let selection = Self.select(
            [Self.alert(1, start: 1, test: true), Self.alert(2, start: 2)], includeTest: AlertFeedRules.includesTestAlerts(raw), now: 3)
        #expect(selection.includes(1) == included)
        #expect(included || selection.excluded[1] == .test)
    }

    /// The crowding the probe found: 30 mirrored alerts, 20 of them future
    /// INFO ones from one source, and one live SEVERE authored alert.
    @Test func sourcesNeverDisplaceAuthoredAlertsAndKeepToTheirShare() {
        let now: Int64 = 1_000_000
        var authored = Self.alert(1, start: EpochSeconds(now - 300))
        authored.severity = .severe
        var alerts = [authored]
        var messages: [Int64: [UInt8]] = [:]
        for index in 0..<30 {
            let (alert, message) = Self.mirrored(Int64(100 + index), source: 7, start: index < 20 ? now + 3600 + Int64(index) : now - 60)
            alerts.append(alert)
            messages[alert.id] = message
        }
        let selection = Self.select(alerts, mirrored: messages, now: now)
        #expect(selection.entries.first?.alert.id == 1, "the live SEVERE alert leads the feed")
        #expect(selection.entries.count == 1 + AlertFeedRules.maxPerSource)
        #expect(selection.entries.dropFirst().prefix(10).allSatisfy { $0.activeNow }, "the source's live alerts before its future ones")
        #expect(selection.excluded.values.filter { $0 == .sourceShare }.count == 30 - AlertFeedRules.maxPerSource)
        #expect(selection.entries.dropFirst().allSatisfy { $0.entity.id.hasPrefix("Source_7_") })
    }

    @Test func theFeedHoldsAtMostItsCapAndItsBytes() {
        let now: Int64 = 1_000_000
        let many = (1...130).map { Self.alert(Int64($0), start: EpochSeconds(now - Int64($0))) }
        let selection = Self.select(many, now: now)
        #expect(selection.entries.count == AlertFeedRules.maxAlerts)
        #expect(selection.entries.first?.alert.id == 1 && selection.excluded[130] == .full, "the newest start stays")
        var huge = many.prefix(30).map { $0 }
        for index in huge.indices { huge[index].description = String(repeating: "d", count: 9_000) + "\(index)" }
        huge = huge.map { alert in
            var alert = alert
            alert.url = nil
            return alert
        }
        let translations = Dictionary(
            uniqueKeysWithValues: huge.map { alert in
                (
                    alert.id,
                    LocaleCatalog.standard.languages.prefix(12).map {
                        AlertTranslation(language: $0, header: "h", description: String(repeating: "t", count: 9_000), sourceVersion: 1)
                    }
                )
            })
        let bounded = AlertFeedSelection.select(
            huge, translations: translations, mirrored: [:], includeTest: false, now: EpochSeconds(now), changedAt: 0)
        #expect(bounded.entries.reduce(0) { $0 + $1.bytes } <= AlertFeedRules.maxBytes)
        #expect(bounded.excluded.values.contains(.size) && AlertFeedRules.feed(bounded).encoded().count <= AlertFeedRules.maxBytes + 64)
    }

    /// The header stamp moves with the content only, and is never before a
    /// shown alert's start (Android: 0 <= stamp - start <= 24 h,
    /// OneBusAway/onebusaway-android widealerts/GtfsAlertsHelper.kt:63-67).
    @Test func theStampMovesWhenTheContentDoes() {
        let start: Int64 = 1_000_017
        let alert = Self.alert(1, start: EpochSeconds(start), end: EpochSeconds(start + 36 * 3600))
        let before = Self.select([alert], now: start - 100, changedAt: start - 500)
        #expect(before.stamp.value == start - 500 && before.nextChange?.value == start, "published ahead: the next change is its start second")
        #expect(before.entries.first?.activeNow == false)
        let atStart = Self.select([alert], now: start, changedAt: start - 500)
        #expect(atStart.stamp.value == start, "from its start second, not the minute after")
        let later = Self.select([alert], now: start + 3 * 3600, changedAt: start - 500)
        #expect(later.stamp.value == start && later.nextChange?.value == start + AlertFeedSelection.androidWindowSeconds, "unchanged: the same stamp")
        let edited = Self.select([alert], now: start + 3 * 3600, changedAt: start + 3 * 3600 - 5)
        #expect(edited.stamp.value == start + 3 * 3600 - 5)
    }

    /// iOS reads only the first active_period (OneBusAway/onebusaway-ios
    /// OBAKitCore/Models/REST/AgencyAlert.swift:141-163): the current range goes first.
    @Test func aMirroredAlertsCurrentPeriodGoesFirst() throws {
        let now: Int64 = 1_000_000
        var (alert, _) = Self.mirrored(9, source: 2, start: now - 10)
        alert.severity = .warning
        let message = Alert(
            activePeriods: [
                TimeRange(start: UInt64(now - 90_000), end: UInt64(now - 80_000)), TimeRange(start: UInt64(now + 5000), end: nil),
                TimeRange(start: UInt64(now - 10), end: UInt64(now + 100)),
            ], informedEntities: [EntitySelector(agencyID: "1")], headerText: TranslatedString([.init(text: "x", language: "en")]))
        let entity = AlertFeedRules.entity(alert, translations: [], message: message, now: EpochSeconds(now))
        let periods = try #require(entity.alert?.activePeriods)
        #expect(periods.map(\.start) == [UInt64(now - 10), UInt64(now + 5000), UInt64(now - 90_000)])
        #expect(entity.id == "Source_2_e9")
    }

    @Test func activePeriodEndsAfter8HoursWhenNoEndIsSet() throws {
        let open = try #require(AlertFeedRules.entity(Self.alert(1, start: 1_800_000_000), translations: []).alert)
        #expect(open.activePeriods == [TimeRange(start: 1_800_000_000, end: 1_800_028_800)])
        let bounded = try #require(AlertFeedRules.entity(Self.alert(1, start: 1_800_000_000, end: 1_800_003_600), translations: []).alert)
        #expect(bounded.activePeriods == [TimeRange(start: 1_800_000_000, end: 1_800_003_600)])
    }

    @Test func entityCarriesIdAgencyEnumsAndEnglishFirstWithoutStaleTranslations() throws {
        let translations = [
            AlertTranslation(language: "zh-Hant", header: "繞道", description: "", sourceVersion: 2),
            AlertTranslation(language: "es", header: "Desvío", description: "Descripción", sourceVersion: 2),
            AlertTranslation(language: "vi", header: "Cũ", description: "Cũ", sourceVersion: 1),
        ]
        let entity = AlertFeedRules.entity(Self.alert(42, start: 5, version: 2), translations: translations)
        #expect(entity.id == "Alert_42")
        let alert = try #require(entity.alert)
        #expect(alert.informedEntities == [EntitySelector(agencyID: "1")])
        #expect(alert.cause == .construction && alert.effect == .detour && alert.severityLevel == .warning)
        #expect(
            alert.headerText?.translations.map(\.language) == ["en", "es", "zh-Hant", "zh"],
            "English first; the stale vi is withheld; the only Chinese also goes out under the bare zh both apps ask for")
        #expect(alert.descriptionText?.translations.map(\.language) == ["en", "es"], "a blank translated description is left out")
        #expect(alert.url?.translations == [.init(text: "https://example.org/42", language: "en")], "url is English only")
    }

    @Test func theFeedAlwaysHasAHeader() {
        let feed = AlertFeedRules.feed(Self.select([]))
        #expect(feed.header.gtfsRealtimeVersion == "1.0")
        #expect(!feed.encoded().isEmpty)
    }

    // MARK: Translations both apps match

    @Test(arguments: [
        (["es"], ["es"]),
        (["tl"], ["tl", "fil"]),
        (["zh-Hans", "zh-Hant"], ["zh-Hans", "zh-Hant", "zh"]),
        (["zh-Hant"], ["zh-Hant", "zh"]),
        (["es", "pt-BR", "tl", "zh-Hans"], ["es", "pt-BR", "tl", "zh-Hans", "pt", "fil", "zh"]),
        (["fil", "tl"], ["fil", "tl"]),
        (["he"], ["he", "iw"]),
    ])
    func translationsGoOutUnderTheTagsTheAppsMatch(_ stored: [String], _ emitted: [String]) {
        let tags = AlertFeedRules.feedLanguageTags(stored)
        #expect(tags.map(\.tag) == emitted)
        #expect(
            tags.allSatisfy {
                stored[$0.index].lowercased().hasPrefix(String($0.tag.prefix(2)).lowercased())
                    || ["fil": "tl", "tl": "fil", "iw": "he"][$0.tag] == stored[$0.index]
            })
    }
}

@Suite("Alerts: push copy (spec §4)")
struct AlertPushRulesTests {
    @Test(
        "truncation",
        arguments: [
            ("Short", 48, "Short"), (String(repeating: "a", count: 48), 48, String(repeating: "a", count: 48)),
            (String(repeating: "a", count: 49), 48, String(repeating: "a", count: 47) + "…"),
            ("Route 44 detoured between Ballard and the U District this weekend", 48, "Route 44 detoured between Ballard and the U Dis…"),
            ("word word word word word word word word word wo rd", 48, "word word word word word word word word word wo…"),
            ("🚌🚌🚌", 2, "🚌…"), ("  padded  ", 48, "padded"),
        ])
    func truncates(text: String, limit: Int, expected: String) {
        #expect(AlertPushRules.truncate(text, limit: limit) == expected)
        #expect(AlertPushRules.truncate(text, limit: limit).count <= limit)
    }

    static let alert = AlertFeedRulesTests.alert(1, start: 0, version: 3)

    @Test func copyInTheGroupsLanguageElseEnglish() {
        let translations = [
            AlertTranslation(language: "es", header: "Desvío de la ruta 44", description: "Los autobuses no paran en la calle 45", sourceVersion: 3),
            AlertTranslation(language: "vi", header: "Cũ", description: "Cũ", sourceVersion: 2),
        ]
        #expect(
            AlertPushRules.copy(for: Self.alert, translations: translations, locale: "es") == (
                "Desvío de la ruta 44", "Los autobuses no paran en la calle 45"
            ))
        #expect(AlertPushRules.copy(for: Self.alert, translations: translations, locale: "vi") == ("Header 1", "Description 1"), "stale: English")
        #expect(AlertPushRules.copy(for: Self.alert, translations: translations, locale: nil) == ("Header 1", "Description 1"))
        var noDescription = Self.alert
        noDescription.description = ""
        #expect(AlertPushRules.copy(for: noDescription, translations: [], locale: nil) == ("Header 1", "Header 1"))
    }

    @Test func groupsByPlatformLocaleAndEnvironment() {
        func registration(_ os: PushPlatform, _ locale: String?, _ sandbox: Bool) -> PushRegistration {
            PushRegistration(
                regionID: 1, token: "t", operatingSystem: os, locale: locale, rawLocale: locale, apnsSandbox: sandbox,
                testDevice: false, description: nil, createdAt: .distantPast, lastSeenAt: .distantPast)
        }
        #expect(AlertPushRules.group(of: registration(.ios, "es", true)) == .init(platform: .ios, locale: "es", apnsSandbox: true))
        #expect(AlertPushRules.group(of: registration(.android, nil, true)) == .init(platform: .android, locale: nil, apnsSandbox: false))
        #expect(AlertPushRules.group(of: registration(.ios, "es", false)) != AlertPushRules.group(of: registration(.ios, "es", true)))
    }
}

@Suite("Alerts: authoring input")
struct AlertInputRulesTests {
    @Test(
        "times need an explicit offset",
        arguments: [
            ("2026-12-01T08:00:00-08:00", Int64(1_796_140_800)), ("2026-12-01T16:00:00Z", 1_796_140_800), ("2026-12-01T16:00Z", 1_796_140_800),
            ("2026-12-01T17:00:00+01:00", 1_796_140_800), ("2026-12-01T17:00:00+0100", 1_796_140_800), ("2026-12-01 16:00:00Z", 1_796_140_800),
            ("2026-12-01T16:00:00.250Z", 1_796_140_800), ("1970-01-01T00:00:00Z", 0), ("2024-02-29T00:00:00Z", 1_709_164_800),
        ])
    func parses(text: String, expected: Int64) {
        #expect(AlertInputRules.parseTime(text) == EpochSeconds(expected))
    }

    @Test(
        "refused times",
        arguments: [
            "2026-12-01T08:00:00", "2026-12-01", "tomorrow", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
            "2025-02-29T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T08:00:00+8", "", "1796140800",
        ])
    func refuses(text: String) {
        #expect(AlertInputRules.parseTime(text) == nil)
    }

    @Test func unknownEnumsNameTheValidValues() {
        var alert = AlertFeedRulesTests.alert(1, start: 0)
        let messages = AlertInputRules.apply(["cause": "aliens", "effect": "detour", "severity": "loud"], to: &alert)
        #expect(messages.count == 2)
        #expect(messages[0].hasPrefix("cause must be one of UNKNOWN_CAUSE, OTHER_CAUSE"))
        #expect(messages[0].contains("MEDICAL_EMERGENCY, SPECIAL_EVENT"), "cause 13, official since 2026-06")
        #expect(messages[1].contains("UNKNOWN_SEVERITY, INFO, WARNING, SEVERE"))
        #expect(alert.effect == .detour, "case-insensitive")
    }

    @Test func endMustFollowStartAndCanBeCleared() {
        var alert = AlertFeedRulesTests.alert(1, start: 1_796_140_800)
        #expect(AlertInputRules.apply(["end": "2026-12-01T07:00:00-08:00"], to: &alert) == ["end must be after start"])
        alert.endsAt = 1_796_200_000
        #expect(AlertInputRules.apply(["end": "none"], to: &alert).isEmpty)
        #expect(alert.endsAt == nil)
    }
}
