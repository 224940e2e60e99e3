import Foundation
import GTFSRealtime
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Alerts: feed, admin API, fan-out and CLI")
struct AlertRouteTests {
    /// A sidecar with a fake gorush, region 1 with agency "1", and an API key.
    static func run(
        _ configure: (inout SidecarConfiguration) -> Void = { _ in }, _ body: (TestSidecar, FakeGorush, String) async throws -> Void
    ) async throws {
        let gorush = try FakeGorush()
        // Sends are driven by hand here; the background resumer would race them.
        try await TestSidecar.run({
            $0.gorushURL = gorush.url
            $0.runsSendResumer = false
            configure(&$0)
        }) { app in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles")
            let (key, _) = try await ApiKeyStore(database: app.sidecar.database).create(name: "test", canPush: true, actor: "cli:test", now: 0)
            try await body(app, gorush, key)
        }
        await gorush.server.shutdown()
    }

    static let start = "2026-12-01T08:00:00-08:00"

    @Test func theFeedServesPublishedAlertsAndFollowsEdits() async throws {
        try await Self.run { app, _, _ in
            let admin = app.administration
            let draft = try await admin.create(regionID: 1, fields: ["header": "Draft", "start": Self.start])
            let live = try await admin.create(
                regionID: 1,
                fields: [
                    "header": "Route 44 detoured", "description": "Skips 45th", "start": Self.start,
                    "cause": "CONSTRUCTION", "effect": "DETOUR", "severity": "WARNING",
                ])
            let testAlert = try await admin.create(
                regionID: 1, fields: ["header": "Test push", "start": "2026-12-02T08:00:00-08:00", "test": "true"])
            _ = try await admin.setPublished(id: live.id, true)
            _ = try await admin.setPublished(id: testAlert.id, true)
            _ = try await admin.translate(id: live.id, language: "es", header: "Ruta 44 desviada", description: "No para en la 45")

            var response = try await app.send("GET", "/api/v1/regions/1/alerts")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/octet-stream")
            var feed = try FeedMessage(decoding: response.body)
            #expect(feed.header.gtfsRealtimeVersion == "1.0")
            #expect(feed.entities.map(\.id) == ["Alert_\(live.id)"], "no draft \(draft.id), no test alert")
            let alert = try #require(feed.entities.first?.alert)
            #expect(alert.headerText?.translations.map(\.language) == ["en", "es"])
            #expect(alert.informedEntities == [EntitySelector(agencyID: "1")])
            #expect(alert.activePeriods == [TimeRange(start: 1_796_140_800, end: 1_796_169_600)])

            let withTest = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1-puget-sound/alerts.pb?test=1").body)
            #expect(withTest.entities.map(\.id) == ["Alert_\(live.id)", "Alert_\(testAlert.id)"], "both upcoming: the soonest first")

            // Cached: the same bytes again, then an edit through the API changes them at once.
            #expect(try await app.send("GET", "/api/v1/regions/1/alerts").body == response.body)
            _ = try await admin.edit(id: live.id, fields: ["header": "Route 44 detoured all weekend"])
            feed = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1/alerts").body)
            let edited = try #require(feed.entities.first?.alert)
            #expect(
                edited.headerText?.translations == [.init(text: "Route 44 detoured all weekend", language: "en")], "the es translation is stale now")

            // An edit from another process (the CLI) reaches the feed through the version watcher.
            var other = try #require(try await AlertStore(database: app.sidecar.database).find(id: live.id))
            other.header = "Changed by the CLI"
            _ = try await AlertStore(database: app.sidecar.database).update(other, now: 2)
            await app.sidecar.alertFeedWatcher.refresh()
            feed = try FeedMessage(decoding: try await app.send("GET", "/api/v1/regions/1/alerts").body)
            #expect(feed.entities.first?.alert?.headerText?.translations.first?.text == "Changed by the CLI")

            response = try await app.send("GET", "/api/v1/regions/1/alerts.pbtext")
            #expect(response.header("Content-Type")?.hasPrefix("text/plain") == true)
            #expect(response.text.contains("\"headerText\""))

            let empty = try await app.send("GET", "/api/v1/regions/0/alerts")
            #expect(empty.status == 200)
            #expect(!empty.body.isEmpty, "the header is always there")
            #expect(try FeedMessage(decoding: empty.body).entities.isEmpty)
            #expect(try await app.send("GET", "/api/v1/regions/404/alerts").status == 404)
        }
    }

    @Test func theAdminAPINeedsAKeyAndValidatesLikeTheCLI() async throws {
        try await Self.run { app, gorush, key in
            let auth = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            #expect(try await app.send("GET", "/admin/api/regions").status == 401)
            #expect(try await app.send("GET", "/admin/api/regions", headers: ["Authorization": "Bearer wrong"]).status == 401)
            let regions = try await app.send("GET", "/admin/api/regions", headers: auth)
            #expect(regions.status == 200)
            #expect(regions.text.contains(#""agency_id":"1""#))

            let bad = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: auth,
                body: Array(#"{"header":"x","start":"2026-12-01T08:00:00","cause":"ALIENS"}"#.utf8))
            #expect(bad.status == 422)
            let messages = bad.json?["messages"] as? [String] ?? []
            #expect(messages.contains { $0.hasPrefix("cause must be one of") })
            #expect(messages.contains { $0.hasPrefix("start must be an ISO 8601 time with a UTC offset") })

            let created = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: auth,
                body: Array(
                    #"{"header":"Snow routes","description":"All routes on snow routes","start":"2026-12-01T05:00:00-08:00","effect":"MODIFIED_SERVICE"}"#
                        .utf8))
            #expect(created.status == 201)
            let id = try #require(created.json?["id"] as? Int)
            #expect(created.json?["published"] as? Bool == false)
            #expect(
                try await app.send("POST", "/admin/api/alerts/\(id)/sends", headers: auth, body: Array(#"{"audience":"all"}"#.utf8)).status == 422,
                "a draft is not sent")
            #expect(try await app.send("POST", "/admin/api/alerts/\(id)/publish", headers: auth).json?["published"] as? Bool == true)
            let translation = try await app.send(
                "PUT", "/admin/api/alerts/\(id)/translations/es", headers: auth,
                body: Array(#"{"header":"Rutas de nieve","description":"Todas las rutas de nieve"}"#.utf8))
            #expect(translation.json?["stale"] as? Bool == false)
            _ = try await app.send(
                "PATCH", "/admin/api/alerts/\(id)", headers: auth, body: Array(#"{"description":"Most routes on snow routes"}"#.utf8))
            let shown = try await app.send("GET", "/admin/api/alerts/\(id)", headers: auth)
            #expect((shown.json?["translations"] as? [[String: Any]])?.first?["stale"] as? Bool == true)

            for index in 0..<3 {
                _ = try await app.post(
                    "/api/v2/regions/1/push_registrations",
                    [("token", "token-\(index)-device"), ("operating_system", index == 0 ? "android" : "ios")])
            }
            let send = try await app.send("POST", "/admin/api/alerts/\(id)/sends", headers: auth, body: Array(#"{"audience":"all"}"#.utf8))
            #expect(send.status == 202)
            #expect(try await app.eventually { gorush.notifications.count == 3 })
            #expect(
                try await app.eventually {
                    (try? await app.send("GET", "/admin/api/alerts/\(id)/sends", headers: auth))?.text.contains(#""status":"done""#) == true
                })
            #expect(gorush.notifications.allSatisfy { $0["title"] as? String == "Snow routes" && $0["data"] == nil })
            #expect(try await app.send("DELETE", "/admin/api/alerts/\(id)", headers: auth).status == 204)
            #expect(try await app.send("GET", "/admin/api/alerts/\(id)", headers: auth).status == 404)
            #expect(!app.log.lines.contains { $0.contains(key) }, "API keys never reach the log")
        }
    }

    @Test func aKilledSendResumesWithoutPushingSentPagesAgain() async throws {
        try await Self.run { app, gorush, _ in
            let store = AlertStore(database: app.sidecar.database)
            for index in 0..<250 {
                let locale = ["es-MX", "zh-TW", "en-US", "vi"][index % 4]
                _ = try await app.pushStore.register(
                    PushRegistrationRequest(
                        token: "device-\(index)", operatingSystem: index % 5 == 0 ? .android : .ios,
                        locale: locale, testDevice: index < 3, description: index < 3 ? "Lab \(index)" : nil,
                        apnsSandbox: index % 7 == 0, apnsSandboxUnrecognized: false),
                    regionID: 1, catalog: .standard, now: app.clock.now())
            }
            gorush.failures.withLock { $0 = ["device-10": "Unregistered", "device-11": "BadDeviceToken", "device-12": "TooManyRequests"] }
            let admin = app.administration
            var alert = try await admin.create(
                regionID: 1, fields: ["header": "Route 44 detoured", "description": "Skips 45th", "start": Self.start]
            ).alert
            alert = try await admin.setPublished(id: alert.id, true).alert
            _ = try await admin.translate(id: alert.id, language: "es", header: "Ruta 44 desviada", description: "No para en la 45")
            let transport = try #require(app.sidecar.transport)
            let sender = AlertSender(
                store: store, transport: transport, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()), pageSize: 100,
                retry: .immediate)
            let translations = try await store.translations(alertID: alert.id)

            let (send, _) = try await admin.startSend(id: alert.id, audience: .all)
            let interrupted = try await sender.run(send, alert: alert, translations: translations, stopAfterPages: 1)
            #expect(interrupted.status == "running")
            #expect(interrupted.targeted == 100)
            #expect(Set(gorush.notifications.flatMap { $0["tokens"] as? [String] ?? [] }).count == 100)
            // Still leased by the "dead" runner; a second runner is refused until it lapses.
            await #expect(throws: AlertStoreError.self) { try await admin.startSend(id: alert.id, audience: .all) }
            app.clock.advance(seconds: Double(AlertSendStore.defaultSendLeaseSeconds + 1))
            let (resumed, _) = try await admin.startSend(id: alert.id, audience: .all)
            #expect(resumed.id == send.id)
            #expect(resumed.cursor == interrupted.cursor)
            let finished = try await sender.run(resumed, alert: alert, translations: translations)
            // device-12 kept failing for a passing reason through every retry:
            // the send ends failed, holding exactly that one.
            #expect(finished.status == "failed")
            #expect(finished.targeted == 250)
            #expect(finished.delivered == 247)
            #expect(finished.failed == 2)
            #expect(finished.pruned == 2)
            #expect(finished.pending == 1)
            #expect(finished.lastError?.contains("TooManyRequests") == true)
            let tokens = gorush.notifications.flatMap { $0["tokens"] as? [String] ?? [] }
            #expect(Set(tokens).count == 250, "every registration was tried")
            #expect(tokens.filter { $0 != "device-12" }.count == 249, "no other registration was pushed twice")
            #expect(try await app.pushStore.find(regionID: 1, token: "device-10") == nil, "terminal failures delete the registration")
            #expect(try await app.pushStore.find(regionID: 1, token: "device-12") != nil, "transient failures do not")
            // Once the device accepts pushes again, resuming pushes only it.
            gorush.failures.withLock { $0 = [:] }
            let before = gorush.notifications.count
            let (retried, _) = try await admin.startSend(id: alert.id, audience: .all)
            #expect(retried.id == send.id)
            let done = try await sender.run(retried, alert: alert, translations: translations)
            #expect(done.status == "done")
            #expect(done.delivered == 248)
            #expect(done.pending == 0)
            #expect(gorush.notifications.dropFirst(before).flatMap { $0["tokens"] as? [String] ?? [] } == ["device-12"])
            // Each group got its language; the sandbox follows the registration.
            let spanish = gorush.notifications.filter {
                ($0["tokens"] as? [String])?.first == "device-0" || ($0["tokens"] as? [String])?.first == "device-4"
            }
            #expect(spanish.allSatisfy { $0["title"] as? String == "Ruta 44 desviada" })
            let vietnamese = gorush.notifications.first { ($0["tokens"] as? [String])?.first == "device-3" }
            #expect(vietnamese?["title"] as? String == "Route 44 detoured", "no vi translation: English")
            let sandboxed = gorush.notifications.first { ($0["tokens"] as? [String])?.first == "device-7" }
            #expect(sandboxed?["development"] as? Bool == true)

            gorush.bodies.withLock { $0.removeAll() }
            let (testSend, _) = try await admin.startSend(id: alert.id, audience: .test)
            let testRun = try await sender.run(testSend, alert: alert, translations: translations)
            #expect(testRun.targeted == 3)
            #expect(Set(gorush.notifications.flatMap { $0["tokens"] as? [String] ?? [] }) == ["device-0", "device-1", "device-2"])
        }
    }

    /// Issue 25: a translation's tag normalises into the catalog exactly as
    /// a registration's locale does, or is refused naming the catalog.
    @Test(
        "translation tags through the admin API and the CLI",
        arguments: [
            ("es-MX", "es"), ("zh-TW", "zh-Hant"), ("zh-Hans-CN", "zh-Hans"), ("fil", "tl"), ("ES", "es"),
            ("Spanish", nil), ("xx", nil), ("en", nil),
        ] as [(String, String?)])
    func translationTags(tag: String, stored: String?) async throws {
        try await Self.run { app, _, key in
            let auth = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let created = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: auth,
                body: Array(#"{"header":"Snow routes","description":"All routes","start":"2026-12-01T05:00:00-08:00"}"#.utf8))
            let id = try #require(created.json?["id"] as? Int)
            let answer = try await app.send(
                "PUT", "/admin/api/alerts/\(id)/translations/\(tag)", headers: auth,
                body: Array(#"{"header":"H","description":"D"}"#.utf8))
            let cli = try await RegionExchangeTests.cli(
                app, ["alert", "translate", String(id), "--language", tag, "--header", "H2", "--description", "D2"])
            let translations = try await AlertStore(database: app.sidecar.database).translations(alertID: Int64(id))
            if let stored {
                #expect(answer.status == 200, "\(tag): \(answer.text)")
                #expect(cli.status == 0, "\(tag): \(cli.errors)")
                #expect(translations.map(\.language) == [stored], "one translation per language, stored normalised")
                #expect(translations.first?.header == "H2", "the second save replaced the first")
            } else {
                #expect(answer.status == 422, "\(tag): \(answer.status)")
                #expect(cli.status == 1)
                if tag != "en" {
                    #expect(answer.text.contains("zh-Hant") && answer.text.contains("es-MX"), "the refusal names the catalog: \(answer.text)")
                    #expect(cli.errors.last?.contains("translation catalog") == true, "\(cli.errors)")
                }
                #expect(translations.isEmpty)
            }
        }
    }

    @Test func theCLIAuthorsAndSends() async throws {
        try await Self.run { app, gorush, _ in
            let outputs = Locked<[String]>([])
            let errors = Locked<[String]>([])
            func run(_ arguments: [String]) async throws -> Int32 {
                guard
                    case .admin(let invocation) = try CommandLineInterface.parse(
                        arguments + ["--database", app.sidecar.configuration.database, "--regions", app.sidecar.configuration.regions ?? ""],
                        environment: [:])
                else { throw CommandLineError("not an admin command") }
                return await AdminCommands.run(
                    invocation, clock: app.clock, output: { line in outputs.withLock { $0.append(line) } },
                    errors: { line in errors.withLock { $0.append(line) } })
            }
            #expect(
                try await run([
                    "alert", "create", "--region", "1", "--header", "Elevator out at Westlake", "--start", "2026-12-01T06:00:00Z",
                    "--effect", "ACCESSIBILITY_ISSUE",
                ]) == 0)
            let id = try #require(outputs.value.last?.split(separator: " ")[2]).description
            #expect(
                try await run(["alert", "create", "--region", "1", "--header", "x", "--start", "2026-12-01T06:00:00Z", "--severity", "loud"]) == 1)
            #expect(errors.value.last?.contains("severity must be one of UNKNOWN_SEVERITY, INFO, WARNING, SEVERE") == true)
            #expect(try await run(["alert", "publish", id]) == 0)
            #expect(try await run(["alert", "translate", id, "--language", "es", "--header", "Ascensor fuera de servicio"]) == 0)
            _ = try await app.post(
                "/api/v2/regions/1/push_registrations", [("token", "cli-device"), ("operating_system", "ios"), ("locale", "es-US")])
            #expect(try await run(["alert", "send", id, "--gorush-url", gorush.url]) == 0)
            #expect(outputs.value.last?.contains("targeted 1, delivered 1") == true)
            #expect(errors.value.contains { $0.hasPrefix("[") && $0.contains("100%") }, "a progress bar")
            #expect(gorush.notifications.first?["title"] as? String == "Ascensor fuera de servicio")
            let before = outputs.value.count
            #expect(try await run(["alert", "show", id]) == 0)
            // The alert, then its publish-time checks (no cause given here).
            let shown = outputs.value.dropFirst(before)
            #expect(shown.first?.contains("send 1 to all: done, targeted 1, delivered 1") == true, "\(shown)")
            #expect(shown.contains { $0.hasPrefix("  check:       warning cause_unknown") })
            #expect(try await run(["alert", "list", "--region", "1"]) == 0)
            #expect(try await run(["apikey", "create", "--name", "ops", "--region", "all"]) == 0)
            #expect(outputs.value.last?.contains("sidecar_") == true)
            #expect(try await run(["alert", "delete", id]) == 0)
            #expect(try await run(["alert", "show", id]) == 1)
        }
    }
}
