@testable import Database
import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import SidecarKit
import Push

/// Spec-independent duties of a server on the open internet (issue 11): every
/// write is limited per client, every stored string is capped, storage faults
/// are told truthfully, and sends survive failures.
@Suite("Safe on the open internet")
struct OpenInternetTests {
    static let huge = String(repeating: "x", count: 500_000)

    @Test func aFieldOfHalfAMillionCharactersIsRefusedOnEveryWrite() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            let liveActivity = try await app.post("/api/v2/regions/1/live_activities", [
                ("activity_id", Self.huge), ("push_token", "abc"), ("stop_id", "1_11420"), ("route_short_name", "10"), ("trip_headsign", "Downtown")])
            #expect(liveActivity.status == 422)
            #expect((liveActivity.json?["messages"] as? [String])?.contains("Activity is too long (maximum is 255 characters)") == true)
            let cases: [(path: String, fields: [(String, String)], message: String)] = [
                ("/api/v2/regions/1/live_activities", [("activity_id", "a"), ("push_token", "abc"), ("stop_id", "1"), ("route_short_name", Self.huge),
                                                       ("trip_headsign", "Downtown")], "Route short name is too long"),
                ("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: Self.huge), "Push identifier is too long"),
                ("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", stop: Self.huge), "Stop is too long"),
                ("/api/v1/regions/1/alarms", AlarmRouteTests.alarmFields(Self.huge), "Trip is too long"),
                ("/api/v2/regions/1/push_registrations", [("token", "t"), ("operating_system", "ios"), ("locale", Self.huge)], "Locale is too long"),
                ("/api/v2/regions/1/ghost_bus_reports", [("user_identifier", Self.huge), ("trip_identifier", "t"), ("service_date", "1"),
                                                         ("wait_duration_minutes", "5")], "User identifier is too long"),
            ]
            for (path, fields, message) in cases {
                let response = try await app.post(path, fields)
                #expect(response.status == 422, "\(path) \(message)")
                #expect((response.json?["messages"] as? [String])?.contains { $0.hasPrefix(message) } == true, "\(path): \(message)")
            }
            #expect(try await LiveActivityStore(database: app.sidecar.database).count() == 0)
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 0)
            #expect(try await app.pushStore.count() == 0, "nothing oversized was stored")
        }
    }

    @Test func oneClientCannotFloodAlarmsOrUseThemToRegisterDevices() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 3600, clock: app.clock)])
            var statuses: [Int] = []
            for index in 0..<100 {
                let response = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "device-\(index)"))
                statuses.append(response.status)
            }
            #expect(statuses.prefix(30).allSatisfy { $0 == 201 })
            #expect(statuses.dropFirst(30).allSatisfy { $0 == 429 }, "30 alarm writes a minute per client")
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 30)
            #expect(try await app.pushStore.count() == 30, "the implicit registrations draw on the registration budget")
            let registrations = try await app.post("/api/v2/regions/1/push_registrations", [("token", "direct"), ("operating_system", "ios")])
            #expect(registrations.status == 429, "that budget is spent")
            #expect(oba.counts.trip == 30, "one lookup per accepted alarm, none for refused ones")
            // Another client is untouched.
            let other = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "other"), source: "127.0.0.2")
            #expect(other.status == 201)
            // A minute later the budget is back.
            app.clock.advance(seconds: 60)
            #expect(try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "again")).status == 201)
        }
    }

    @Test func aDeviceHasAtMostTwentyAlarmsAndATokenTenLiveActivities() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 3600, clock: app.clock)])
            for index in 0..<20 {
                let response = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "one-device", secondsBefore: String(60 + index)))
                #expect(response.status == 201)
            }
            let twentyFirst = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "one-device"))
            #expect(twentyFirst.status == 422)
            #expect((twentyFirst.json?["messages"] as? [String]) == ["This device already has 20 alarms waiting"])
            for index in 0..<10 {
                let response = try await app.post("/api/v2/regions/1/live_activities", [
                    ("activity_id", "activity-\(index)"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown")], source: "127.0.0.3")
                #expect(response.status == 201)
            }
            let eleventh = try await app.post("/api/v2/regions/1/live_activities", [
                ("activity_id", "activity-10"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                ("trip_headsign", "Downtown")], source: "127.0.0.3")
            #expect(eleventh.status == 422)
            // Re-registering one of the ten (a rotated token arrives this way) is fine.
            let again = try await app.post("/api/v2/regions/1/live_activities", [
                ("activity_id", "activity-3"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                ("trip_headsign", "Downtown")], source: "127.0.0.3")
            #expect(again.status == 201)
        }
    }

    @Test func liveActivityWritesAreLimitedPerClient() async throws {
        try await TestSidecar.run { app in
            var statuses: [Int] = []
            for index in 0..<40 {
                statuses.append(try await app.post("/api/v2/regions/1/live_activities", [
                    ("activity_id", "a\(index)"), ("push_token", "t\(index)"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown")]).status)
            }
            #expect(statuses.filter { $0 == 201 }.count == 30)
            #expect(statuses.suffix(10).allSatisfy { $0 == 429 })
        }
    }

    @Test func theGorushWebhookExistsOnlyWithASecret() async throws {
        try await TestSidecar.run { app in
            let response = try await app.send("POST", "/webhooks/gorush", headers: ["Content-Type": "application/json"],
                                              body: Array(#"{"token":"anyone","error":"Unregistered"}"#.utf8))
            #expect(response.status == 404)
        }
        try await TestSidecar.run({ $0.gorushWebhookSecret = "s3cret" }) { app in
            _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", "victim"), ("operating_system", "ios")])
            let body = Array(#"{"token":"victim","error":"Unregistered"}"#.utf8)
            let unauthorized = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cre"], body: body)
            #expect(unauthorized.status == 401)
            let invalid = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cret"], body: Array("{not json".utf8))
            #expect(invalid.status == 400)
            #expect(try await app.pushStore.find(regionID: 1, token: "victim") != nil)
            let accepted = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cret"], body: body)
            #expect(accepted.status == 200)
            #expect(try await app.pushStore.find(regionID: 1, token: "victim") == nil)
        }
    }

    @Test(.enabled(if: TestBackend.isSQLite, "a SQLite file")) func healthzTellsTheTruthWhenTheDatabaseFileIsDeleted() async throws {
        try await TestSidecar.run({ $0.healthCacheSeconds = 0 }) { app in
            #expect(try await app.send("GET", "/healthz").status == 200)
            #expect(try await app.send("HEAD", "/healthz").status == 200)
            try FileManager.default.removeItem(atPath: app.sidecar.configuration.database)
            let health = try await app.send("GET", "/healthz")
            #expect(health.status == 503)
            #expect(health.json?["problems"] as? [String] == ["database file"], "the public body names the failing check")
            #expect(!health.text.contains(app.sidecar.configuration.database) && !health.text.contains("deleted"), "and nothing more")
            let write = try await app.post("/api/v2/regions/1/push_registrations", [("token", "lost"), ("operating_system", "ios")])
            #expect(write.status == 503, "never a 2xx for a write that would be lost")
            #expect(app.log.lines.contains { $0.contains("was deleted while the server was running") }, "the log says why")
        }
    }

    @Test(.enabled(if: TestBackend.isSQLite, "a SQLite file")) func healthzNoticesACorruptDatabase() async throws {
        try await TestSidecar.run({ $0.healthCacheSeconds = 0 }) { app in
            for index in 0..<200 { _ = try await app.pushStore.register(
                PushRegistrationRequest(token: "device-\(index)-" + String(repeating: "z", count: 200), operatingSystem: .ios, locale: nil,
                                        testDevice: nil, description: nil, apnsSandbox: false, apnsSandboxUnrecognized: false),
                regionID: 1, catalog: .standard, now: app.clock.now()) }
            // Move everything from the WAL into the main file, then damage it.
            try SQLiteConnection(path: app.sidecar.configuration.database, readOnly: false, synchronous: .normal).run("PRAGMA wal_checkpoint(TRUNCATE)")
            let handle = try #require(FileHandle(forWritingAtPath: app.sidecar.configuration.database))
            try handle.seek(toOffset: 4096 * 2)
            handle.write(Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }))
            try handle.close()
            let health = try await app.send("GET", "/healthz")
            #expect(health.status == 503)
            let problems = Set(health.json?["problems"] as? [String] ?? [])
            #expect(!problems.isEmpty && problems.isSubset(of: ["read", "integrity", "write"]))
            #expect(!health.text.contains("malformed") && !health.text.contains(".sqlite3"), "no engine message or path in public")
            #expect(app.log.lines.contains { $0.contains("storage is unhealthy") && ($0.contains("malformed") || $0.contains("corrupt")) },
                    "the details are in the log")
        }
    }

    // MARK: Sends

    /// 250 registrations in region 1 and a published alert.
    static func audienceAndAlert(_ app: TestSidecar) async throws -> ServiceAlert {
        for index in 0..<250 {
            _ = try await app.pushStore.register(PushRegistrationRequest(token: "device-\(index)", operatingSystem: .ios, locale: nil, testDevice: nil,
                                                                         description: nil, apnsSandbox: false, apnsSandboxUnrecognized: false),
                                                 regionID: 1, catalog: .standard, now: app.clock.now())
        }
        let alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start])
        return try await app.administration.setPublished(id: alert.id, true)
    }

    static func cli(_ app: TestSidecar, _ arguments: [String], errors: Locked<[String]>) async throws -> Int32 {
        guard case .admin(var invocation) = try CommandLineInterface.parse(
            arguments + ["--database", app.sidecar.configuration.database, "--regions", app.sidecar.configuration.regions ?? ""],
            environment: [:]) else { throw CommandLineError("not an admin command") }
        invocation.configuration.sendRetry = .immediate
        return await AdminCommands.run(invocation, clock: app.clock, output: { _ in }, errors: { line in errors.withLock { $0.append(line) } })
    }

    static func tokens(_ gorush: FakeGorush) -> [String] { gorush.notifications.flatMap { $0["tokens"] as? [String] ?? [] } }

    @Test func aSendAgainstAGorushThatFailsThenRecoversDeliversEachPushOnce() async throws {
        try await AlertRouteTests.run { app, gorush, key in
            let alert = try await Self.audienceAndAlert(app)
            gorush.outage.withLock { $0 = 3 }
            let started = try await app.send("POST", "/admin/api/alerts/\(alert.id)/sends", headers: ["Authorization": "Bearer \(key)"])
            #expect(started.status == 202)
            let finished = try await app.eventually {
                try await AlertStore(database: app.sidecar.database).sends(alertID: alert.id).first?.status == "done"
            }
            #expect(finished)
            let send = try #require(try await AlertStore(database: app.sidecar.database).sends(alertID: alert.id).first)
            #expect(send.delivered == 250)
            #expect(send.pending == 0)
            #expect(Self.tokens(gorush).count == 250, "retried after the outage, each push delivered once")
            #expect(Set(Self.tokens(gorush)).count == 250)
        }
    }

    @Test func aSendAgainstAGorushThatStaysDownEndsFailedAndResumesOnlyWhatWasNotDelivered() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            gorush.outage.withLock { $0 = -1 }
            let errors = Locked<[String]>([])
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 1)
            #expect(errors.value.contains { $0.contains("250 pushes were not delivered (gorush answered HTTP 500)") })
            let failed = try #require(try await AlertStore(database: app.sidecar.database).sends(alertID: alert.id).first)
            #expect(failed.status == "failed")
            #expect(failed.delivered == 0)
            #expect(Self.tokens(gorush).isEmpty)
            // Sending again while it is still down changes nothing.
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 1)
            gorush.outage.withLock { $0 = 0 }
            #expect(try await Self.cli(app, ["alert", "send", String(alert.id), "--gorush-url", gorush.url], errors: errors) == 0)
            let sends = try await AlertStore(database: app.sidecar.database).sends(alertID: alert.id)
            #expect(sends.count == 1, "the failed send was resumed, not started anew")
            #expect(sends.first?.status == "done")
            #expect(sends.first?.delivered == 250)
            #expect(Self.tokens(gorush).count == 250)
            #expect(Set(Self.tokens(gorush)).count == 250, "nobody pushed twice")
        }
    }

    @Test func aSendWhoseRunnerDiedIsResumedByARunningServer() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            let store = AlertStore(database: app.sidecar.database)
            let transport = try #require(app.sidecar.transport)
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let dying = AlertSender(store: store, transport: transport, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()), pageSize: 100)
            _ = try await dying.run(send, alert: alert, translations: [], stopAfterPages: 1)
            await app.sidecar.alertSends.resumeLapsed()
            #expect(try await store.send(id: send.id)?.status == "running", "not while the lease holds")
            app.clock.advance(seconds: Double(AlertStore.defaultSendLeaseSeconds + 1))
            await app.sidecar.alertSends.resumeLapsed()
            #expect(try await app.eventually { try await store.send(id: send.id)?.status == "done" })
            #expect(Self.tokens(gorush).count == 250)
            #expect(Set(Self.tokens(gorush)).count == 250)
        }
    }

    @Test func aStopBetweenPagesFinishesThePageAndReleasesTheLease() async throws {
        try await AlertRouteTests.run { app, gorush, _ in
            let alert = try await Self.audienceAndAlert(app)
            let store = AlertStore(database: app.sidecar.database)
            let transport = try #require(app.sidecar.transport)
            let stop = StopSignal()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let sender = AlertSender(store: store, transport: StoppingTransport(inner: transport, stop: stop), clock: app.clock,
                                     logger: Logger(level: .error, sink: MemorySink()), pageSize: 100, stop: stop)
            let paused = try await sender.run(send, alert: alert, translations: [])
            #expect(paused.status == "running")
            #expect(paused.targeted == 100, "the page under way was pushed and recorded")
            #expect(Self.tokens(gorush).count == 100)
            // The lease was given back: another runner may take it at once.
            let (resumed, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let finished = try await AlertSender(store: store, transport: transport, clock: app.clock,
                                                 logger: Logger(level: .error, sink: MemorySink()), pageSize: 100).run(resumed, alert: alert, translations: [])
            #expect(finished.status == "done")
            #expect(Self.tokens(gorush).count == 250)
            #expect(Set(Self.tokens(gorush)).count == 250, "no page pushed twice")
        }
    }

    @Test func aStopDuringAlarmFiringFinishesThePageAndPushesNoneTwice() async throws {
        try await AlarmRouteTests.run { app, oba, gorush in
            var trips: [FakeOBA.Trip] = []
            for index in 0..<30 {
                trips.append(AlarmRouteTests.trip("t\(index)", stop: "stop-\(index)", departsIn: 120, clock: app.clock))
            }
            oba.set(trips)
            for index in 0..<30 {
                let response = try await app.post("/api/v2/regions/1/alarms",
                                                  AlarmRouteTests.alarmFields("t\(index)", stop: "stop-\(index)", push: "device-\(index)"),
                                                  source: "127.0.\(index / 20).\(10 + index)")
                #expect(response.status == 201)
            }
            let stop = StopSignal()
            let base = app.sidecar.alarmChecker
            let checker = AlarmChecker(store: base.store, regions: base.regions, oba: base.oba,
                                       transport: StoppingTransport(inner: try #require(app.sidecar.transport), stop: stop),
                                       pushRegistrations: base.pushRegistrations, clock: base.clock, logger: base.logger,
                                       intervalSeconds: base.intervalSeconds, stop: stop, alarmsPerPage: 10)
            let first = await checker.runCycle()
            #expect(first.fired == 10, "the page under way was pushed and committed, later pages left")
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 20)
            // After the restart the rest fire, and nothing fires twice.
            var restarted = app.sidecar.alarmChecker
            restarted.alarmsPerPage = 10
            let second = await restarted.runCycle()
            #expect(second.fired == 20)
            let pushed = Self.tokens(gorush)
            #expect(pushed.count == 30)
            #expect(Set(pushed).count == 30)
        }
    }
}

/// A transport that asks for a stop as soon as its first batch is sent,
/// like a SIGTERM arriving mid-page.
struct StoppingTransport: PushTransport {
    let inner: any PushTransport
    let stop: StopSignal
    var name: String { inner.name }
    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        let outcomes = await inner.send(messages)
        stop.stop()
        return outcomes
    }
}
