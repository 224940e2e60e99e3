import Foundation
import GTFSRealtime
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// A local GTFS-realtime feed whose content a test changes between polls;
/// it answers conditional GETs with 304 and can fail in the usual ways.
final class FeedStandIn: Sendable {
    enum Mode: Sendable { case ok, serverError, html, garbage, truncated }
    let entities = Locked<[FeedEntity]>([])
    let mode = Locked(Mode.ok)
    let version = Locked(1)
    let requests = Locked(0)
    let notModified = Locked(0)
    let headers = Locked<[String: String]>([:])
    /// Appended to every ETag (a hostile feed's huge validator).
    let etagPadding = Locked("")
    /// While set, requests wait unanswered (a feed that hangs).
    let hold = Locked(false)
    let server: HTTPServer

    init() throws {
        var router = Router()
        let (entities, mode, version, requests, notModified, headers) = (entities, mode, version, requests, notModified, headers)
        let (etagPadding, hold) = (etagPadding, hold)
        router.add(
            Route("GET", "/alerts.pb", parsesParameters: false) { request in
                requests.withLock { $0 += 1 }
                headers.withLock { $0 = ["x-api-key": request.header("x-api-key") ?? ""] }
                while hold.value { try? await Task.sleep(for: .milliseconds(20)) }
                let etag = "\"v\(version.value)\(etagPadding.value)\""
                switch mode.value {
                case .serverError: return .json(500, ["error": "down"])
                case .html: return .bytes(200, contentType: "text/html", Array("<html><body>Maintenance</body></html>".utf8))
                case .garbage: return .bytes(200, contentType: "application/octet-stream", [0xFF, 0x13, 0x37, 0x00, 0x99])
                case .truncated:
                    let bytes = FeedMessage(header: FeedHeader(timestamp: 1), entities: entities.value).encoded()
                    return .bytes(200, contentType: "application/x-protobuf", Array(bytes.prefix(bytes.count / 2)))
                case .ok: break
                }
                if request.header("if-none-match") == etag {
                    notModified.withLock { $0 += 1 }
                    return Response(status: 304, headers: [("ETag", etag)], body: [])
                }
                return .bytes(
                    200, contentType: "application/x-protobuf", FeedMessage(header: FeedHeader(timestamp: 1), entities: entities.value).encoded()
                )
                .adding(header: "ETag", etag)
            })
        server = try startLocalServer(router)
    }

    var url: String { "http://127.0.0.1:\(server.port)/alerts.pb" }

    func set(_ alerts: [FeedEntity]) {
        entities.withLock { $0 = alerts }
        version.withLock { $0 += 1 }
    }

    static func alert(_ id: String, _ header: String, severity: SeverityLevel = .severe, stop: String? = nil, spanish: String? = nil) -> FeedEntity {
        FeedEntity(
            id: id,
            alert: Alert(
                activePeriods: [TimeRange(start: 1_796_000_000, end: nil)],
                informedEntities: stop.map { [EntitySelector(stopID: $0)] } ?? [EntitySelector(routeID: "44", routeType: 3)],
                effect: .detour,
                headerText: TranslatedString([.init(text: header, language: "en")] + (spanish.map { [.init(text: $0, language: "es")] } ?? [])),
                severityLevel: severity))
    }
}

@Suite("Alert sources: polls, mirrors and pushes")
struct AlertSourcePollTests {
    static func run(_ body: (TestSidecar, FeedStandIn, FakeGorush, AlertSourcePoller) async throws -> Void) async throws {
        let feed = try FeedStandIn()
        // Polled by hand: the background poller would race the test's polls.
        try await AlertRouteTests.run({ $0.runsSourcePoller = false }) { app, gorush, _ in
            for index in 0..<3 {
                _ = try await app.pushStore.register(
                    PushRegistrationRequest(
                        token: "device-\(index)", operatingSystem: .ios, locale: index == 0 ? "es-US" : "en-US", testDevice: nil,
                        description: nil, apnsSandbox: false, apnsSandboxUnrecognized: false),
                    regionID: 1, catalog: .standard, now: app.clock.now())
            }
            try await body(app, feed, gorush, try #require(app.sidecar.feature(AlertSourcePolling.self)).poller)
        }
        await feed.server.shutdown()
    }

    static func add(_ app: TestSidecar, _ fields: [String: String], region: Int = 1) async throws -> AlertSource {
        let poller = try #require(app.sidecar.feature(AlertSourcePolling.self)).poller
        let administration = AlertSourceAdministration(
            store: AlertSourceStore(database: app.sidecar.database), alerts: AlertStore(database: app.sidecar.database),
            regions: app.sidecar.regions, clock: app.clock, poller: poller, listening: { ("127.0.0.1", app.port) })
        // The stand-in listens on loopback: allowed as an on-premises feed would be.
        return try await administration.add(regionID: region, fields: ["allow_private": "true"].merging(fields) { _, given in given })
    }

    static func feedEntities(_ app: TestSidecar) async throws -> [FeedEntity] {
        let response = try await app.send("GET", "/api/v1/regions/1/alerts")
        return try FeedMessage(decoding: response.body).entities
    }

    @Test func aMirrorFollowsItsSourceAndAnswers304sCheaply() async throws {
        try await Self.run { app, feed, gorush, poller in
            let authored = try await app.administration.create(regionID: 1, fields: ["header": "Authored", "start": AlertRouteTests.start])
            _ = try await app.administration.setPublished(id: authored.id, true)
            feed.set([FeedStandIn.alert("a", "Route 44 detoured", spanish: "Ruta 44 desviada")])
            let source = try await Self.add(app, ["url": feed.url, "push": "auto"])
            let first = try await poller.pollNow(sourceID: source.id)
            #expect(first.failure == nil && first.lines.contains("baseline a"), "\(first)")
            var entities = try await Self.feedEntities(app)
            let mirrored = try #require(entities.first { $0.id == "Source_\(source.id)_a" })
            #expect(entities.contains { $0.id == "Alert_\(authored.id)" })
            #expect(mirrored.alert?.headerText?.translations.map(\.language) == ["en", "es"])
            #expect(mirrored.alert?.informedEntities == [EntitySelector(agencyID: "1", routeID: "44", routeType: 3)], "route-scoped, as written")
            #expect(gorush.tokens.isEmpty, "the baseline is never pushed")

            let again = try await poller.pollNow(sourceID: source.id)
            #expect(again.lines.first == "not modified")
            #expect(feed.notModified.value == 1)
            #expect(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1.notModified == 1)
            // Another URL is another resource: no validators carried over, a full fetch.
            let administration = AlertSourceAdministration(
                store: AlertSourceStore(database: app.sidecar.database), alerts: AlertStore(database: app.sidecar.database),
                regions: app.sidecar.regions, clock: app.clock, poller: poller, listening: { ("127.0.0.1", app.port) })
            _ = try await administration.edit(id: source.id, fields: ["url": feed.url + "?moved=1", "allow_private": "true"])
            #expect(try await poller.pollNow(sourceID: source.id).lines.first != "not modified")

            // A new alert pushes once, in each device's language; a re-poll does not push it again.
            feed.set([
                FeedStandIn.alert("a", "Route 44 detoured", spanish: "Ruta 44 desviada"),
                FeedStandIn.alert("b", "Line 1 closed", spanish: "Línea 1 cerrada"),
            ])
            let third = try await poller.pollNow(sourceID: source.id)
            #expect(third.lines.contains("added b") && third.lines.contains { $0.hasPrefix("push b: send ") }, "\(third)")
            #expect(try await app.eventually { gorush.tokens.count == 3 })
            let titles = Set(gorush.notifications.compactMap { $0["title"] as? String })
            #expect(titles == ["Line 1 closed", "Línea 1 cerrada"], "\(titles)")
            feed.version.withLock { $0 += 1 }  // the same content under a new ETag
            _ = try await poller.pollNow(sourceID: source.id)
            try await Task.sleep(for: .milliseconds(200))
            #expect(gorush.tokens.count == 3)

            // An alert that leaves the source leaves the feed; an authored change to a mirrored alert is refused.
            feed.set([FeedStandIn.alert("b", "Line 1 closed", spanish: "Línea 1 cerrada")])
            let fourth = try await poller.pollNow(sourceID: source.id)
            #expect(fourth.lines.contains("removed a"))
            entities = try await Self.feedEntities(app)
            #expect(!entities.contains { $0.id == "Source_\(source.id)_a" } && entities.contains { $0.id == "Source_\(source.id)_b" })
            let stored = try await app.administration.store.alerts(regionID: 1).first { $0.sourceEntity == "b" }
            await #expect(throws: AdministrationError.self) { try await app.administration.edit(id: stored!.id, fields: ["header": "x"]) }
        }
    }

    @Test func reviewApprovalPushesOnceAndRulesFilter() async throws {
        try await Self.run { app, feed, gorush, poller in
            let source = try await Self.add(app, ["url": feed.url])
            _ = try await poller.pollNow(sourceID: source.id)  // an empty baseline
            feed.set([
                FeedStandIn.alert("severe", "Station closed"), FeedStandIn.alert("info", "Elevator note", severity: .info),
                FeedStandIn.alert("stop", "Stop moved", stop: "75403"),
            ])
            let report = try await poller.pollNow(sourceID: source.id)
            #expect(report.lines.contains("review severe: waiting for an editor"), "\(report)")
            #expect(report.lines.contains("skipped info: severity INFO is below WARNING"))
            #expect(report.lines.contains("skipped stop: scoped to single stops or trips"))
            let store = AlertSourceStore(database: app.sidecar.database)
            #expect(try await store.reviews(sourceID: source.id).map(\.state.entityID) == ["severe"])
            let administration = AlertSourceAdministration(
                store: store, alerts: AlertStore(database: app.sidecar.database), regions: app.sidecar.regions, clock: app.clock, poller: poller,
                listening: { ("127.0.0.1", app.port) })
            let lines = try await administration.decide(id: source.id, entityID: "severe", approve: true)
            #expect(lines.first?.hasPrefix("push severe: send ") == true)
            await #expect(throws: AdministrationError.self) { try await administration.decide(id: source.id, entityID: "severe", approve: true) }
            #expect(try await app.eventually { gorush.tokens.count == 3 })
            try await Task.sleep(for: .milliseconds(200))
            #expect(gorush.tokens.count == 3, "approved once, pushed once")
        }
    }

    @Test func aFloodIsHeldAndFailuresKeepTheLastGoodAlerts() async throws {
        try await Self.run { app, feed, gorush, poller in
            let source = try await Self.add(app, ["url": feed.url, "push": "auto", "flood_threshold": "5"])
            feed.set([FeedStandIn.alert("keep", "Kept")])
            _ = try await poller.pollNow(sourceID: source.id)
            feed.set([FeedStandIn.alert("keep", "Kept")] + (0..<6).map { FeedStandIn.alert("n\($0)", "New \($0)") })
            let flood = try await poller.pollNow(sourceID: source.id)
            #expect(
                flood.lines.contains { $0.hasPrefix("held as a possible flood: 6 alerts appeared or changed in one poll (more than 5)") }, "\(flood)")
            #expect(try await AlertSourceStore(database: app.sidecar.database).reviews(sourceID: source.id).count == 6)
            #expect(gorush.tokens.isEmpty)
            for (mode, message) in [
                (FeedStandIn.Mode.serverError, "the source answered HTTP 500"), (.html, "the answer is not a GTFS-realtime feed"),
                (.garbage, "the answer is not a GTFS-realtime feed"), (.truncated, "the answer is not a GTFS-realtime feed"),
            ] {
                feed.mode.withLock { $0 = mode }
                feed.version.withLock { $0 += 1 }
                let failed = try await poller.pollNow(sourceID: source.id)
                #expect(failed.failure == message, "\(mode): \(failed)")
                #expect(
                    failed.failure?.contains("Maintenance") != true && failed.failure?.contains("text/html") != true, "no banner of what answered")
                #expect(try await Self.feedEntities(app).count == 7, "the last good alerts stay")
            }
            let status = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1)
            #expect(status.state == "failing" && status.failures == 4 && status.nextPollAt > app.clock.nowSeconds.adding(seconds: 60))
        }
    }

    @Test func theAdminAPIManagesSourcesWithinTheKeysScope() async throws {
        try await Self.run { app, feed, gorush, _ in
            let keys = ApiKeyStore(database: app.sidecar.database)
            let (pusher, _) = try await keys.create(name: "editor", regions: [1], canPush: true, canManageSources: true, actor: "cli:test", now: 0)
            let (noPush, _) = try await keys.create(name: "viewer", regions: [1], canPush: false, actor: "cli:test", now: 0)
            let (plainPusher, _) = try await keys.create(name: "plain", regions: [1], canPush: true, actor: "cli:test", now: 0)
            let (otherRegion, _) = try await keys.create(name: "other", regions: [2], canPush: true, actor: "cli:test", now: 0)
            func call(_ method: String, _ path: String, _ key: String, _ json: String = "") async throws -> RawResponse {
                try await app.send(
                    method, path, headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"], body: Array(json.utf8))
            }
            let refused = try await call("POST", "/admin/api/regions/1/sources", pusher, #"{"url": "\#(feed.url)", "header_file": "X:/etc/shadow"}"#)
            #expect(refused.status == 422 && refused.text.contains("only be set by an operator on the server itself"), "\(refused.text)")
            let plain = try await call("POST", "/admin/api/regions/1/sources", plainPusher, #"{"url": "https://feeds.example.org/a"}"#)
            #expect(plain.status == 403 && plain.text.contains("sources or admin scope"), "a plain region key only reads sources: \(plain.text)")
            let privateRefused = try await call("POST", "/admin/api/regions/1/sources", pusher, #"{"url": "\#(feed.url)", "push": "review"}"#)
            #expect(privateRefused.status == 422 && privateRefused.text.contains("loopback address"), "\(privateRefused.text)")
            let notAdmin = try await call("POST", "/admin/api/regions/1/sources", pusher, #"{"url": "\#(feed.url)", "allow_private": true}"#)
            #expect(notAdmin.status == 403 && notAdmin.text.contains("admin scope"), "\(notAdmin.text)")
            let (admin, _) = try await keys.create(name: "admin", regions: [1], canPush: true, isAdmin: true, actor: "cli:test", now: 0)
            let created = try await call(
                "POST", "/admin/api/regions/1/sources", admin, #"{"url": "\#(feed.url)", "push": "review", "allow_private": true}"#)
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? Int)
            #expect(try await call("GET", "/admin/api/sources/\(id)", otherRegion).status == 404, "another region's key sees nothing")
            #expect((try await call("GET", "/admin/api/regions/1/sources", noPush).text).contains(feed.url))
            #expect(try await call("GET", "/admin/api/sources/\(id)", noPush).status == 200, "any region key reads a source")
            #expect(try await call("POST", "/admin/api/sources/\(id)/poll", noPush).status == 403, "polling needs the sources scope")
            #expect(try await call("DELETE", "/admin/api/sources/\(id)", plainPusher).status == 403)
            #expect(try await call("POST", "/admin/api/sources/\(id)/poll", pusher).json?["failure"] is NSNull)
            feed.set([FeedStandIn.alert("x", "Bridge closed")])
            let polled = try await call("POST", "/admin/api/sources/\(id)/poll", pusher)
            #expect((polled.json?["lines"] as? [String])?.contains("review x: waiting for an editor") == true, "\(polled.text)")
            #expect(try await call("POST", "/admin/api/sources/\(id)/reviews/x/approve", noPush).status == 403, "approving pushes")
            let approved = try await call("POST", "/admin/api/sources/\(id)/reviews/x/approve", pusher)
            #expect(approved.status == 200 && approved.text.contains("push x: send"), "\(approved.text)")
            #expect(try await call("POST", "/admin/api/sources/\(id)/reviews/x/approve", pusher).status == 422, "once")
            #expect(try await app.eventually { gorush.tokens.count == 3 })
            let shown = try await call("GET", "/admin/api/sources/\(id)", pusher)
            #expect(((shown.json?["status"] as? [String: Any])?["pushes"] as? Int) == 1, "\(shown.text)")
            #expect(try await call("DELETE", "/admin/api/sources/\(id)", pusher).status == 204)
            #expect(!(try await Self.feedEntities(app)).contains { $0.id.hasPrefix("Source_\(id)_") })
        }
    }

    @Test func theServerItselfAndMissingAgencyAreRefused() async throws {
        try await Self.run { app, feed, _, poller in
            await #expect(throws: AdministrationError.self) {
                _ = try await Self.add(app, ["url": "http://127.0.0.1:\(app.port)/api/v1/regions/1/alerts"])
            }
            // Written past the checks of `add` (as an older version or another
            // instance with another port might have): the poll refuses it.
            let store = AlertSourceStore(database: app.sidecar.database)
            let own = try await store.create(
                try AlertSourceRules.settings(
                    ["url": "http://127.0.0.1:\(app.port)/api/v1/regions/1/alerts", "allow_private": "true"], regionID: 1, base: nil, now: 0
                ).get())
            let report = try await poller.pollNow(sourceID: own.id)
            #expect(report.failure?.contains("this server's own listener") == true, "\(report)")
            #expect(try await store.source(id: own.id)?.1.state == "failing")
            // With the one above: the most a region may have.
            for index in 0..<(AlertSourceRules.maximumSourcesPerRegion - 1) { _ = try await Self.add(app, ["url": feed.url + "?n=\(index)"]) }
            await #expect(throws: AdministrationError.self, "a region's sources are bounded") {
                _ = try await Self.add(app, ["url": feed.url + "?n=last"])
            }
            // Region 2 has no agency id set.
            await #expect(throws: AdministrationError.self) { _ = try await Self.add(app, ["url": feed.url], region: 2) }
        }
    }
}
