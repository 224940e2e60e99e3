import Core
import Foundation
import GTFSRealtime
import TestSupport
import Testing

@testable import SidecarKit

/// Publish-time checks (issue 40): errors refuse a publish; warnings are
/// said on the form, the API's answer and `alert publish` until an editor
/// acknowledges them.
@Suite("Alerts: checks before publishing")
struct AlertPublishCheckTests {
    static let now = EpochSeconds(1_764_604_800)  // 2025-12-01T16:00:00Z

    static func alert(_ change: (inout ServiceAlert) -> Void = { _ in }) -> ServiceAlert {
        var alert = ServiceAlert(
            id: 7, regionID: 1, agencyID: "1", header: "Route 44 detoured", description: "Buses skip 45th St.", url: nil,
            cause: .construction, effect: .detour, severity: .warning, startsAt: now.adding(seconds: -600), endsAt: nil, published: false,
            test: false, sourceVersion: 1, createdAt: 0, updatedAt: 0)
        change(&alert)
        return alert
    }

    static func codes(
        _ alert: ServiceAlert, translations: [AlertTranslation] = [], languages: [(locale: String?, count: Int)] = [],
        live: [ServiceAlert] = [], scope: [(AlertScope.Lookup, AlertScopeVerdict)]? = nil
    ) -> [String] {
        AlertPublishChecks.findings(
            .init(alert: alert, translations: translations, languages: languages, liveAlerts: live, now: now, scope: scope)
        ).map { "\($0.level.rawValue) \($0.code)" }
    }

    @Test func aWellFormedAlertHasNothingToSay() {
        #expect(Self.codes(Self.alert()).isEmpty)
    }

    /// One alert per clause, and the one finding it must give.
    static func clause(_ name: String) -> ServiceAlert {
        Self.alert { alert in
            switch name {
            case "an end before the start": alert.endsAt = alert.startsAt.adding(seconds: -1)
            case "an end already past": alert.endsAt = now.adding(seconds: -1)
            case "no end, and 8 hours since the start": alert.startsAt = now.adding(seconds: -8 * 3600)
            case "started two days ago":
                alert.startsAt = now.adding(seconds: -48 * 3600)
                alert.endsAt = now.adding(seconds: 3600)
            case "a headline a lock screen cuts": alert.header = String(repeating: "h", count: 49)
            case "a description iOS's list cuts": alert.description = String(repeating: "d", count: 257)
            case "no cause": alert.cause = .unknownCause
            case "no effect": alert.effect = .unknownEffect
            default: Issue.record("no clause \(name)")
            }
        }
    }

    @Test(arguments: [
        ("an end before the start", "error end_before_start"), ("an end already past", "error ended"),
        ("no end, and 8 hours since the start", "error ended"), ("started two days ago", "warning started_long_ago"),
        ("a headline a lock screen cuts", "warning header_long"), ("a description iOS's list cuts", "warning description_long"),
        ("no cause", "warning cause_unknown"), ("no effect", "warning effect_unknown"),
    ])
    func eachClauseOfTheChecks(_ name: String, _ expected: String) {
        #expect(Self.codes(Self.clause(name)) == [expected], "\(name)")
    }

    @Test func theLimitsAreWhatTheAppsShow() {
        #expect(Self.codes(Self.alert { $0.header = String(repeating: "h", count: 48) }).isEmpty, "48 characters fit a lock screen")
        #expect(Self.codes(Self.alert { $0.description = String(repeating: "d", count: 256) }).isEmpty, "256 fit iOS's list")
        let now = Self.now
        #expect(
            Self.codes(
                Self.alert {
                    $0.startsAt = now.adding(seconds: -24 * 3600)
                    $0.endsAt = now.adding(seconds: 60)
                }
            ).isEmpty)
    }

    @Test func aLanguageManyDevicesReadNeedsACurrentTranslation() {
        let languages: [(locale: String?, count: Int)] = [(nil, 80), ("es", 12), ("vi", 4), ("zh-Hans", 4)]
        #expect(Self.codes(Self.alert(), languages: languages) == ["warning translation_missing:es"], "vi and zh-Hans are too few")
        let spanish = AlertTranslation(language: "es", header: "Ruta 44 desviada", description: "No para en la 45", sourceVersion: 1)
        #expect(Self.codes(Self.alert(), translations: [spanish], languages: languages).isEmpty)
        // A stale translation (made from older English) does not count.
        let stale = AlertTranslation(language: "es", header: "Ruta 44", description: "", sourceVersion: 0)
        #expect(Self.codes(Self.alert(), translations: [stale], languages: languages) == ["warning translation_missing:es"])
        // Five devices and 5%: both are needed.
        #expect(Self.codes(Self.alert(), languages: [(nil, 1000), ("es", 40)]).isEmpty, "4% of the region")
        #expect(Self.codes(Self.alert(), languages: [(nil, 10), ("es", 4)]).isEmpty, "four devices")
    }

    @Test func aNearDuplicateOfALiveAlertIsNamed() {
        var other = Self.alert()
        other.id = 3
        other.header = "ROUTE 44 DETOURED"
        #expect(Self.codes(Self.alert(), live: [other]) == ["warning near_duplicate:3"])
        other.header = "Route 45 detoured"
        #expect(Self.codes(Self.alert(), live: [other]).isEmpty, "one word in three differs")
        #expect(Self.codes(Self.alert(), live: [Self.alert()]).isEmpty, "never itself")
    }

    @Test func scopeIdsOneBusAwayDoesNotKnowAreWarnings() {
        let route = AlertScope.Lookup(kind: .route, id: "1_44"), stop = AlertScope.Lookup(kind: .stop, id: "1_9")
        #expect(Self.codes(Self.alert(), scope: [(route, .known), (stop, .unknown)]) == ["warning scope_unknown:stop/1_9"])
        #expect(Self.codes(Self.alert(), scope: [(route, .unchecked("down")), (stop, .unchecked("down"))]) == ["warning scope_unchecked"])
    }

    @Test func publishingRefusesErrorsSaysWarningsAndAcknowledgementsSilenceThem() async throws {
        try await AlertRouteTests.run { app, _, key in
            let now = app.clock.nowSeconds
            let admin = app.administration
            let ended = try await admin.create(
                regionID: 1,
                fields: [
                    "header": "Bridge closed", "start": Timestamp.format(now.adding(seconds: -7200)),
                    "end": Timestamp.format(now.adding(seconds: -60)),
                ])
            await #expect(throws: AdministrationError.self) { _ = try await admin.setPublished(id: ended.id, true) }
            #expect(try await admin.alert(id: ended.id).published == false, "an error refuses it")
            // Warnings: published, and said.
            let draft = try await admin.create(regionID: 1, fields: ["header": "Elevator out at Westlake", "start": AlertRouteTests.start])
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let checks = try await app.send("GET", "/admin/api/alerts/\(draft.id)/checks", headers: headers)
            #expect(checks.status == 200)
            #expect(checks.text.contains(#""code":"cause_unknown""#) && checks.text.contains(#""acknowledged":false"#))
            // Acknowledging a warning it does not have is refused, naming the ones it has.
            let wrong = try await app.send(
                "POST", "/admin/api/alerts/\(draft.id)/acknowledge", headers: headers, body: Array(#"{"codes": "header_long"}"#.utf8))
            #expect(wrong.status == 422 && wrong.text.contains("cause_unknown"), "\(wrong.text)")
            let acknowledged = try await app.send(
                "POST", "/admin/api/alerts/\(draft.id)/acknowledge", headers: headers, body: Array(#"{"codes": "cause_unknown"}"#.utf8))
            #expect(acknowledged.status == 200 && acknowledged.text.contains(#""acknowledged":true"#), "\(acknowledged.text)")
            let published = try await app.send("POST", "/admin/api/alerts/\(draft.id)/publish", headers: headers)
            #expect(published.status == 200)
            #expect(published.text.contains("[effect_unknown]"), "the warning not acknowledged is said")
            #expect(!published.text.contains("[cause_unknown]"), "the acknowledged one is not")
            // The API refuses the ended one with its reason.
            let refused = try await app.send("POST", "/admin/api/alerts/\(ended.id)/publish", headers: headers)
            #expect(refused.status == 422 && refused.text.contains("Not published: Its shown period ended"), "\(refused.text)")
            let audit = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(audit.contains { $0.action == "alert.acknowledge" && $0.detail == "cause_unknown" })
        }
    }
}

@Suite("Alerts: checks before publishing, from the CLI", .enabled(if: TestBackend.isSQLite, "SQLite files of their own: once, on the SQLite run"))
struct AlertPublishCheckCommandTests: OperatorCommandSuite {
    @Test func alertPublishPrintsWarningsAndAlertCheckAcknowledgesThem() async throws {
        try await Self.inDirectory { directory in
            let database = directory.appendingPathComponent("s.sqlite3").path
            #expect(
                try await Self.run(["region", "set", "--id", "1", "--agency-id", "1", "--agency-check", "false"], database: database).status == 0)
            let created = try await Self.run(
                ["alert", "create", "--region", "1", "--header", "Elevator out", "--start", "2030-12-01T08:00:00-08:00", "--effect", "DETOUR"],
                database: database)
            #expect(created.status == 0)
            let check = try await Self.run(["alert", "check", "1"], database: database)
            #expect(check.output == ["warning\tcause_unknown\tNo cause is given (Unknown cause)."], "\(check)")
            let published = try await Self.run(["alert", "publish", "1"], database: database)
            #expect(published.status == 0 && published.output == ["alert 1 is published"])
            #expect(
                published.errors.first { $0.hasPrefix("warning:") } == "warning: [cause_unknown] No cause is given (Unknown cause).",
                "\(published.errors)")
            let acknowledged = try await Self.run(["alert", "check", "1", "--acknowledge", "cause_unknown"], database: database)
            #expect(acknowledged.output == ["acknowledged\tcause_unknown\tNo cause is given (Unknown cause)."])
            let shown = try await Self.run(["alert", "show", "1"], database: database)
            #expect(shown.output.contains("  check:       acknowledged cause_unknown: No cause is given (Unknown cause)."), "\(shown.output)")
            let unknown = try await Self.run(["alert", "check", "1", "--acknowledge", "ended"], database: database)
            #expect(unknown.status != 0 && unknown.errors.joined().contains("no such warning"))
        }
    }
}
