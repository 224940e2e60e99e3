import Foundation
import GTFSRealtime
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// Probe round 3 against the live poller: no key can turn a source against
/// the agency (its secret, its network), a hostile feed cannot flood
/// devices or the operator, and a stop does not wait for a poll.
@Suite("Alert sources: secrets, addresses, floods and stops")
struct AlertSourceSafetyTests {
    static func administration(_ app: TestSidecar, _ poller: AlertSourcePoller) -> AlertSourceAdministration {
        AlertSourceAdministration(
            store: AlertSourceStore(database: app.sidecar.database), alerts: AlertStore(database: app.sidecar.database),
            regions: app.sidecar.regions, clock: app.clock, poller: poller, listening: { ("127.0.0.1", app.port) })
    }

    static func call(_ app: TestSidecar, _ method: String, _ path: String, _ key: String, _ json: String = "") async throws -> RawResponse {
        try await app.send(method, path, headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"], body: Array(json.utf8))
    }

    /// The probe: a region key changed a CLI-made source's URL and the next
    /// poll sent its `X-Api-Key` to the new host.
    @Test func aKeyCannotMoveASourcesSecretToAnotherHost() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let elsewhere = try FeedStandIn()
            let secret = FileManager.default.temporaryDirectory.appendingPathComponent("feed-key-\(UUID().uuidString)")
            try "s3cret".write(to: secret, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: secret) }
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url, "header_file": "X-Api-Key:\(secret.path)"])
            _ = try await poller.pollNow(sourceID: source.id)
            #expect(feed.headers.value["x-api-key"] == "s3cret", "the agency's feed gets its key")

            let keys = ApiKeyStore(database: app.sidecar.database)
            let (plain, _) = try await keys.create(name: "plain", regions: [1], canPush: true, actor: "cli:test", now: 0)
            let (sources, _) = try await keys.create(name: "sources", regions: [1], canManageSources: true, actor: "cli:test", now: 0)
            let (admin, _) = try await keys.create(name: "admin", regions: [1], isAdmin: true, actor: "cli:test", now: 0)
            let path = "/admin/api/sources/\(source.id)"
            let etag = try #require(try await Self.call(app, "GET", path, plain).header("ETag"))
            let refused = try await app.send(
                "PATCH", path, headers: ["Authorization": "Bearer \(plain)", "Content-Type": "application/json", "If-Match": etag],
                body: Array(#"{"url": "\#(elsewhere.url)"}"#.utf8))
            #expect(refused.status == 403, "a plain region key may only read sources: \(refused.text)")
            // A sources key may move it, but the secret and the allowance stay behind.
            let moved = try await Self.call(app, "PATCH", path, sources, #"{"url": "\#(elsewhere.url)"}"#)
            #expect(moved.status == 422 && moved.text.contains("loopback"), "the allowance was for the old feed: \(moved.text)")
            let byAdmin = try await Self.call(app, "PATCH", path, admin, #"{"url": "\#(elsewhere.url)", "allow_private": true}"#)
            #expect(byAdmin.status == 200, "\(byAdmin.text)")
            #expect((byAdmin.json?["headers"] as? [String]) == [], "the header was dropped with the old URL")
            _ = try await poller.pollNow(sourceID: source.id)
            #expect(elsewhere.requests.value == 1 && elsewhere.headers.value["x-api-key"] == "", "the new host never sees the key")
            await elsewhere.server.shutdown()
        }
    }

    @Test func privateAddressesNeedTheSourcesAllowance() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            // Written without the allowance past `add` (as before this version): the poll refuses it.
            let store = AlertSourceStore(database: app.sidecar.database)
            var denied = try #require(try await store.source(id: source.id)?.0)
            denied.allowPrivate = false
            try await store.update(denied, now: 1)
            let report = try await poller.pollNow(sourceID: source.id)
            #expect(report.failure?.contains("loopback address, which a source reaches only when allowed (allow_private)") == true, "\(report)")
            #expect(feed.requests.value == 0, "nothing was sent")
            // A name that resolves to loopback is refused on the connected socket.
            denied.url = "http://localhost.:\(feed.server.port)/alerts.pb"
            try await store.update(denied, now: 2)
            let byName = try await poller.pollNow(sourceID: source.id)
            #expect(byName.failure?.contains("refused") == true && feed.requests.value == 0, "\(byName)")
        }
    }

    /// With a proxy the socket reaches the proxy, so the target's
    /// addresses are checked before anything is sent.
    @Test func throughAProxyTheTargetsAddressesAreChecked() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let proxy = try FeedStandIn()
            var proxied = poller
            proxied.proxy = proxy.url.replacingOccurrences(of: "/alerts.pb", with: "")
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            let store = AlertSourceStore(database: app.sidecar.database)
            var denied = try #require(try await store.source(id: source.id)?.0)
            denied.allowPrivate = false
            denied.url = "http://localhost:\(feed.server.port)/alerts.pb"
            try await store.update(denied, now: 1)
            let report = await proxied.poll(denied, AlertSourceStatus())
            #expect(report.failure?.contains("loopback") == true, "\(report)")
            #expect(proxy.requests.value == 0 && feed.requests.value == 0, "neither the proxy nor the target was asked")
            await proxy.server.shutdown()
        }
    }

    /// The probe: a feed that invents a new entity id every poll pushed
    /// every 15 s to every device.
    @Test func aFeedThatFlipsIdsPushesAtMostTheHourlyCap() async throws {
        try await AlertSourcePollTests.run { app, feed, gorush, poller in
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url, "push": "auto"])
            _ = try await poller.pollNow(sourceID: source.id)  // the baseline
            var held: [String] = []
            for poll in 0..<8 {
                feed.set([FeedStandIn.alert("flip-\(poll)", "Delays on the line")])
                let report = try await poller.pollNow(sourceID: source.id)
                held += report.lines.filter { $0.contains("held") }
            }
            let states = try await AlertSourceStore(database: app.sidecar.database).states(sourceID: source.id)
            #expect(states.values.filter { $0.pushedAt != nil }.count == AlertSourceRules.defaultPushesPerHour)
            #expect(held.count == 8 - AlertSourceRules.defaultPushesPerHour && held.allSatisfy { $0.contains("in the last hour (at most 4)") })
            #expect(try await app.eventually { gorush.tokens.count == 3 * AlertSourceRules.defaultPushesPerHour })
            let status = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1)
            #expect(status.heldReason?.contains("approve to push anyway") == true, "the reason is shown")
        }
    }

    @Test func aDeletedEntityWithdrawsItsAlertAndAHugeFeedMakesABoundedReport() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            feed.set([FeedStandIn.alert("a", "Route 44 detoured"), FeedStandIn.alert("b", "Line 1 closed")])
            _ = try await poller.pollNow(sourceID: source.id)
            var deleted = FeedStandIn.alert("a", "Route 44 detoured")
            deleted.isDeleted = true
            feed.set([deleted, FeedStandIn.alert("b", "Line 1 closed")])
            let report = try await poller.pollNow(sourceID: source.id)
            #expect(report.lines.contains("removed a: the source marked it deleted"), "\(report)")
            let ids = try await AlertSourcePollTests.feedEntities(app).map(\.id)
            #expect(ids == ["Source_\(source.id)_b"], "is_deleted withdraws, never mirrors as live")

            // 20,000 entities that each fail: the answer stays small.
            let broken = (0..<20_000).map {
                FeedEntity(id: "bad-\($0)", alert: Alert(url: TranslatedString([.init(text: "https://x", language: "en")])))
            }
            feed.set(broken)
            let huge = try await poller.pollNow(sourceID: source.id)
            #expect(huge.lines.count <= AlertSourcePoller.maxReportLines, "\(huge.lines.count) lines")
            #expect(huge.lines.joined(separator: "\n").utf8.count < 64 * 1024)
            let status = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1)
            #expect(status.problems.count <= 20)
        }
    }

    @Test func aLongValidatorIsNotStored() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            feed.etagPadding.withLock { $0 = String(repeating: "x", count: 2048) }
            _ = try await poller.pollNow(sourceID: source.id)
            let status = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1)
            #expect(status.etag == nil, "a 2 KiB ETag is neither stored nor sent back")
        }
    }

    /// A graceful stop cancels a poll in flight instead of waiting for the
    /// feed: the poll ends "cancelled", not "timed out".
    @Test func aStopCancelsAPollInFlight() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url])
            feed.hold.withLock { $0 = true }
            let work = BackgroundWork()
            let result = Locked<AlertSourcePoller.Report?>(nil)
            let (current, status) = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id))
            work.run {
                result.withLock { $0 = nil }
                let report = await poller.poll(current, status)
                result.withLock { $0 = report }
            }
            #expect(try await app.eventually { feed.requests.value == 1 }, "the poll reached the feed")
            let stopped = await work.stopAndWait(until: .now + .seconds(60))
            #expect(stopped)
            #expect(result.value?.failure == "cancelled: the server is stopping", "\(String(describing: result.value))")
            feed.hold.withLock { $0 = false }
            let after = try #require(try await AlertSourceStore(database: app.sidecar.database).source(id: source.id)?.1)
            #expect(after.failures == 0 && after.nextPollAt <= app.clock.nowSeconds, "still due: polled again after a start")
        }
    }

    /// A move (export, import) keeps each mirrored alert's link to its
    /// source, so a withdrawal at the agency still removes it afterwards.
    @Test func exportAndImportKeepSourcesAndTheirAlertsLinks() async throws {
        try await AlertSourcePollTests.run { app, feed, _, poller in
            let secret = FileManager.default.temporaryDirectory.appendingPathComponent("k-\(UUID().uuidString)")
            try "k".write(to: secret, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: secret) }
            let source = try await AlertSourcePollTests.add(app, ["url": feed.url, "header_file": "X-Api-Key:\(secret.path)"])
            feed.set([FeedStandIn.alert("a", "Route 44 detoured", spanish: "Ruta 44 desviada"), FeedStandIn.alert("b", "Line 1 closed")])
            _ = try await poller.pollNow(sourceID: source.id)
            let document = try await RegionExport.export(regionID: 1, database: app.sidecar.database, nowMillis: 0)
            let text = String(decoding: document.encoded(), as: UTF8.self)
            #expect(text.contains("\"alert_sources\"") && text.contains("\"needs_headers\":[\"X-Api-Key\"]") && !text.contains(secret.path))
            try await TestSidecar.run({
                $0.regions = app.sidecar.configuration.regions
                $0.runsSourcePoller = false
            }) { fresh in
                let parsed = try RegionDocumentParser.parse(document, regions: fresh.sidecar.regions)
                let summary = try await RegionImport.importDocument(parsed, database: fresh.sidecar.database, dryRun: false, nowSeconds: 0)
                #expect(summary.alertSources.added == 1 && summary.alerts.added == 2)
                #expect(summary.lines.contains { $0.contains("give them again") && $0.contains("X-Api-Key") }, "\(summary.lines)")
                let again = try await RegionExport.export(regionID: 1, database: fresh.sidecar.database, nowMillis: 0)
                let againText = String(decoding: again.encoded(), as: UTF8.self)
                #expect(
                    againText == text.replacingOccurrences(of: "\"needs_headers\":[\"X-Api-Key\"]", with: "\"needs_headers\":[]"),
                    "export, import, export: the same document, but for the secret header to give again")
                let moved = try #require(try await AlertStore(database: fresh.sidecar.database).alerts(regionID: 1).first { $0.sourceEntity == "a" })
                #expect(moved.sourceID == source.id, "still the source's alert, not an authored one")
                // The agency withdraws "a": the poll on the new home removes it.
                feed.set([FeedStandIn.alert("b", "Line 1 closed")])
                let freshPoller = try #require(fresh.sidecar.feature(AlertSourcePolling.self)).poller
                var stored = try #require(try await AlertSourceStore(database: fresh.sidecar.database).source(id: source.id)?.0)
                stored.allowPrivate = true
                try await AlertSourceStore(database: fresh.sidecar.database).update(stored, now: 1)
                let report = try await freshPoller.pollNow(sourceID: source.id)
                #expect(report.lines.contains("removed a"), "\(report)")
                #expect(try await AlertStore(database: fresh.sidecar.database).find(id: moved.id)?.published == false)
            }
        }
    }
}
