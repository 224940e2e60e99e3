import Foundation
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

@Suite("PushRegistrations: the apns_sandbox allow-list (spec §2.7)")
struct ApnsSandboxTests {
    @Test(
        "readings",
        arguments: [
            ("1", ApnsSandbox.Reading.sandbox), ("t", .sandbox), ("true", .sandbox), ("on", .sandbox),
            ("TRUE", .sandbox), (" True ", .sandbox), ("On", .sandbox), ("T", .sandbox),
            ("0", .production), ("f", .production), ("false", .production), ("off", .production),
            ("", .production), ("  ", .production), ("FALSE", .production),
            ("yes", .unrecognized), ("y", .unrecognized), ("2", .unrecognized), ("sandbox", .unrecognized),
            ("truee", .unrecognized), ("-1", .unrecognized), ("development", .unrecognized),
        ])
    func reads(raw: String, expected: ApnsSandbox.Reading) {
        #expect(ApnsSandbox.read(raw) == expected)
    }

    @Test func absentIsProductionAndUnrecognizedNeverRoutesToTheSandbox() {
        #expect(ApnsSandbox.read(nil) == .production)
        #expect(ApnsSandbox.flag("yes", operatingSystem: .ios) == false)
        #expect(ApnsSandbox.flag("1", operatingSystem: .ios) == true)
        #expect(ApnsSandbox.flag("1", operatingSystem: .android) == false, "meaningless off iOS: cleared")
    }
}

@Suite("PushRegistrations: locale normalization (spec §4)")
struct LocaleTests {
    @Test(
        "catalog mapping",
        arguments: [
            ("es", "es"), ("ES", "es"), ("es-MX", "es"), ("es_MX", "es"), ("zh-CN", "zh-Hans"), ("zh-SG", "zh-Hans"),
            ("zh-TW", "zh-Hant"), ("zh-HK", "zh-Hant"), ("zh-hant", "zh-Hant"), ("ZH-HANS", "zh-Hans"),
            ("fil", "tl"), ("FIL", "tl"), ("pt-BR", "pt"), ("pt-PT", "pt"), ("vi-VN", "vi"), ("tl", "tl"),
            // What Android's Locale.toLanguageTag() sends: the script decides Chinese, then the region.
            ("zh-Hans-CN", "zh-Hans"), ("zh-Hant-TW", "zh-Hant"), ("zh-Hant-HK", "zh-Hant"), ("zh-Hans-HK", "zh-Hans"),
            ("zh-Hant-CN", "zh-Hant"), ("zh-MO", "zh-Hant"), ("zh", "zh-Hans"), ("zh_Hant_TW", "zh-Hant"),
            // Aliases apply after the region is dropped.
            ("fil-PH", "tl"), ("es-419", "es"), ("sr-Latn-RS", nil), ("ko-KR-u-ca-dangi", "ko"), ("de-CH-1996", "de"),
            // Text beyond ASCII is lower-cased as Unicode says (the Kelvin sign
            // is a K), and letters beyond ASCII never make a subtag.
            ("\u{212A}O", "ko"), ("es-\u{212A}R", "es"), ("é", nil), ("es-Ñ1", "es"), ("ES-١٢٣", "es"),
            // A one-character subtag ends the language part, whatever its
            // script (a two-byte é as well as an ASCII x).
            ("zh-é-TW", "zh-Hans"), ("zh-x-TW", "zh-Hans"), ("zh-e\u{301}-TW", "zh-Hans"), ("pt-BR-x-hant", "pt"),
        ] as [(String, String?)])
    func maps(tag: String, expected: String?) {
        #expect(LocaleCatalog.standard.normalize(tag) == expected)
    }

    @Test("English and unknown tags are nil (English copy)", arguments: ["en", "en-US", "xx", "klingon", "", "  ", "-", "x-private", "123", "e"])
    func english(tag: String) {
        #expect(LocaleCatalog.standard.normalize(tag) == nil)
    }

    @Test func aTagReadAgainReadsTheSameAndTheMemoStaysBounded() {
        let catalog = LocaleCatalog(["es", "zh-Hant"])
        for _ in 0..<2 {
            #expect(catalog.normalize("es-MX") == "es")
            #expect(catalog.normalize("zh-TW") == "zh-Hant")
            #expect(catalog.normalize("en-US") == nil)
        }
        #expect(catalog.tagsKept == 3, "English is remembered too")
        for index in 0..<3000 { _ = catalog.normalize("es-\(index)") }
        _ = catalog.normalize("es-" + String(repeating: "a", count: 100))
        #expect(catalog.tagsKept == 1024)
        #expect(catalog.normalize("es-2999") == "es", "a tag past the bound is still read")
        #expect(catalog.normalize("zh-TW") == "zh-Hant")
    }

    @Test func aliasesOnlyApplyWhenTheTargetIsInTheCatalog() {
        let catalog = LocaleCatalog(["es"])
        #expect(catalog.normalize("zh-CN") == nil)
        #expect(catalog.normalize("fil") == nil)
        #expect(LocaleCatalog(["zh"]).normalize("zh-CN") == "zh", "falls through to the primary subtag")
    }
}

@Suite("PushRegistrations: request and upsert rule (spec §4)")
struct PushRegistrationRuleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func request(_ fields: [String: String]) -> Result<PushRegistrationRequest, ValidationFailure> {
        PushRegistrationRequest.parse(Parameters(fields.mapValues { .string($0) }))
    }

    @Test(
        "validation",
        arguments: [
            ([:], ["Token can't be blank", "Operating system can't be blank"]),
            (["token": "  ", "operating_system": "ios"], ["Token can't be blank"]),
            (["token": "token-0001"], ["Operating system can't be blank"]),
            (["token": "token-0001", "operating_system": "windows"], ["Operating system is not included in the list"]),
            (["token": String(repeating: "a", count: 4097), "operating_system": "ios"], ["Token is too long (maximum is 4096 characters)"]),
            (
                ["token": "token-0001", "operating_system": "ios", "description": String(repeating: "d", count: 256)],
                ["Description is too long (maximum is 255 characters)"]
            ),
        ])
    func rejects(fields: [String: String], messages: [String]) {
        #expect(throws: ValidationFailure(messages)) { try request(fields).get() }
    }

    @Test func acceptsTheLongestToken() throws {
        let parsed = try request(["token": String(repeating: "a", count: 4096), "operating_system": "IOS"]).get()
        #expect(parsed.operatingSystem == .ios)
    }

    func merge(_ existing: PushRegistration?, _ fields: [String: String]) -> Result<PushRegistration, ValidationFailure> {
        let parsed: PushRegistrationRequest
        do { parsed = try request(fields).get() } catch { return .failure(error) }
        return PushRegistrationRules.merge(
            existing: existing, request: parsed, regionID: 1, catalogLocale: LocaleCatalog.standard.normalize(parsed.locale), now: Self.now)
    }

    func stored(
        locale: String? = "es", raw: String? = "es-MX", test: Bool = false, description: String? = nil,
        sandbox: Bool = false, os: PushPlatform = .ios
    ) -> PushRegistration {
        PushRegistration(
            regionID: 1, token: "token-0001", operatingSystem: os, locale: locale, rawLocale: raw, apnsSandbox: sandbox,
            testDevice: test, description: description, createdAt: Date(timeIntervalSince1970: 1),
            lastSeenAt: Date(timeIntervalSince1970: 2))
    }

    @Test func firstRegistrationNormalizesAndKeepsTheRawTag() throws {
        let merged = try merge(nil, ["token": "token-0001", "operating_system": "ios", "locale": "zh-TW", "apns_sandbox": "1"]).get()
        #expect(merged.locale == "zh-Hant")
        #expect(merged.rawLocale == "zh-TW")
        #expect(merged.apnsSandbox)
        #expect(!merged.testDevice)
        #expect(merged.description == nil)
        #expect(merged.createdAt == Self.now)
        #expect(merged.lastSeenAt == Self.now)
    }

    @Test func stickyFieldsSurviveARoutineRePost() throws {
        let existing = stored(test: true, description: "Aaron's iPhone 17", sandbox: true)
        let merged = try merge(existing, ["token": "token-0001", "operating_system": "ios"]).get()
        #expect(merged.locale == "es")
        #expect(merged.rawLocale == "es-MX")
        #expect(merged.testDevice)
        #expect(merged.description == "Aaron's iPhone 17")
        #expect(!merged.apnsSandbox, "apns_sandbox is not sticky: absent means production")
        #expect(merged.createdAt == existing.createdAt)
        #expect(merged.lastSeenAt == Self.now)
    }

    @Test func blankValuesDoNotOverwriteStickyFields() throws {
        let existing = stored(test: true, description: "Lab iPad")
        let merged = try merge(existing, ["token": "token-0001", "operating_system": "ios", "locale": " ", "test_device": "", "description": ""])
            .get()
        #expect(merged.locale == "es")
        #expect(merged.testDevice)
        #expect(merged.description == "Lab iPad")
    }

    @Test func aRealLocaleOverwritesEvenWhenItMapsToEnglish() throws {
        let merged = try merge(stored(), ["token": "token-0001", "operating_system": "ios", "locale": "en-GB"]).get()
        #expect(merged.locale == nil)
        #expect(merged.rawLocale == "en-GB")
    }

    @Test func explicitFalseDemotesAndClearsTheDescription() throws {
        let merged = try merge(
            stored(test: true, description: "Lab iPad"),
            ["token": "token-0001", "operating_system": "ios", "test_device": "false", "description": "ignored"]
        ).get()
        #expect(!merged.testDevice)
        #expect(merged.description == nil)
    }

    @Test func aTestDeviceNeedsADescription() {
        #expect(throws: ValidationFailure(["Description can't be blank for a test device"])) {
            try merge(nil, ["token": "token-0001", "operating_system": "ios", "test_device": "true"]).get()
        }
        #expect(throws: Never.self) {
            try merge(nil, ["token": "token-0001", "operating_system": "ios", "test_device": "1", "description": "Pixel 9"]).get()
        }
        // A stored description satisfies a re-POST that promotes again.
        #expect(throws: Never.self) {
            try merge(stored(test: true, description: "Lab"), ["token": "token-0001", "operating_system": "ios", "test_device": "true"]).get()
        }
    }

    @Test func aRegularDeviceKeepsNoDescription() throws {
        let merged = try merge(nil, ["token": "token-0001", "operating_system": "ios", "description": "Someone's phone"]).get()
        #expect(merged.description == nil)
    }

    @Test func androidNeverStoresSandbox() throws {
        let merged = try merge(stored(sandbox: true), ["token": "token-0001", "operating_system": "android", "apns_sandbox": "true"]).get()
        #expect(!merged.apnsSandbox)
        #expect(merged.operatingSystem == .android, "operating_system is rewritten every time")
    }

    /// A request that does not need the stored row merges to the same
    /// stored fields whatever was stored (the creation time aside, which the
    /// upsert keeps); one that needs it names a field the row supplies.
    @Test(
        arguments: [
            (["locale": "es-MX", "test_device": "false"], false),
            (["locale": "fr", "test_device": "true", "description": "Lab iPad"], false),
            (["locale": "fr", "test_device": "0", "description": "ignored"], false),
            (["test_device": "false"], true),
            (["locale": "es-MX"], true),
            (["locale": "es-MX", "test_device": "maybe"], true),
            (["locale": "es-MX", "test_device": "true"], true),
            ([:], true),
        ] as [([String: String], Bool)])
    func theStoredRowIsReadOnlyWhenItCanChangeTheOutcome(fields: [String: String], needsRow: Bool) throws {
        let all = fields.merging(["token": "token-0001", "operating_system": "ios"]) { first, _ in first }
        let parsed = try request(all).get()
        #expect(PushRegistrationRules.needsStoredRow(parsed) == needsRow)
        guard !needsRow else { return }
        let alone = try merge(nil, all).get()
        for existing in [stored(), stored(locale: nil, raw: nil), stored(test: true, description: "Old name", sandbox: true, os: .android)] {
            var merged = try merge(existing, all).get()
            merged.createdAt = alone.createdAt
            #expect(merged == alone, "stored \(existing)")
        }
    }

    @Test func pruneCutoffIs180Days() {
        let now = Date(timeIntervalSince1970: 200 * 86_400)
        #expect(PushRegistrationRules.pruneCutoff(now: now) == Date(timeIntervalSince1970: 20 * 86_400))
    }
}
