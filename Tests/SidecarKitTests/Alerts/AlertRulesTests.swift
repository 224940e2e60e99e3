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

    @Test func onlyPublishedNewestFirstAtMost20() {
        var alerts = (1...25).map { Self.alert(Int64($0), start: EpochSeconds(Int64($0) * 100)) }
        alerts.append(Self.alert(99, start: 100_000, published: false))
        let visible = AlertFeedRules.visible(alerts, includeTest: false)
        #expect(visible.count == 20)
        #expect(visible.first?.id == 25)
        #expect(visible.last?.id == 6)
        #expect(!visible.contains { $0.id == 99 }, "drafts are invisible")
    }

    @Test func tiesOnStartPutTheNewestAlertFirst() {
        let visible = AlertFeedRules.visible([Self.alert(3, start: 10), Self.alert(7, start: 10), Self.alert(5, start: 20)], includeTest: false)
        #expect(visible.map(\.id) == [5, 7, 3])
    }

    @Test(
        "test alerts only with a non-blank ?test=",
        arguments: [(nil, false), ("", false), ("  ", false), ("1", true), ("0", true), ("yes", true)] as [(String?, Bool)])
    func testParameter(raw: String?, included: Bool) {
        #expect(AlertFeedRules.includesTestAlerts(raw) == included)
        let visible = AlertFeedRules.visible(
            [Self.alert(1, start: 1, test: true), Self.alert(2, start: 2)], includeTest: AlertFeedRules.includesTestAlerts(raw))
        #expect(visible.contains { $0.id == 1 } == included)
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
        let feed = AlertFeedRules.feed([], translations: [:], includeTest: false, timestamp: 0)
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
        #expect(messages[0].contains("MEDICAL_EMERGENCY"))
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
