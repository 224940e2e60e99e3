import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("Alarms: over HTTP and the checker loop")
struct AlarmRouteTests {
    static let serviceDate: Int64 = 1_767_168_000_000

    /// A sidecar wired to a fake OBA server (region 1) and a fake gorush.
    static func run(
        transport: Bool = true, configure: (inout SidecarConfiguration) -> Void = { _ in },
        _ body: (TestSidecar, FakeOBA, FakeGorush) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        let gorush = try FakeGorush()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alarm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(
            clock: clock,
            {
                $0.regions = regions
                $0.obaAPIKey = "TEST-KEY"
                $0.runsAlarmChecker = false
                if transport { $0.gorushURL = gorush.url }
                configure(&$0)
            }
        ) { app in try await body(app, oba, gorush) }
        await oba.server.shutdown()
        await gorush.server.shutdown()
    }

    static func trip(_ id: String, stop: String = "1_11420", departsIn seconds: Int64, clock: ManualClock, predicted: Bool = true) -> FakeOBA.Trip {
        FakeOBA.Trip(stopID: stop, tripID: id, serviceDate: serviceDate, departure: clock.now().epochMillis + seconds * 1000, predicted: predicted)
    }

    static func alarmFields(
        _ trip: String, stop: String = "1_11420", push: String = "device-1", os: String = "ios",
        secondsBefore: String = "300.0"
    ) -> [(String, String)] {
        [
            ("user_push_id", push), ("operating_system", os), ("stop_id", stop), ("trip_id", trip),
            ("service_date", String(serviceDate)), ("stop_sequence", "4"), ("vehicle_id", "1_7012"), ("seconds_before", secondsBefore),
        ]
    }

    /// `trips` trips five hours out (past the widest stop window, four
    /// hours), and `alarms` alarms on them in turn, each from its own device.
    static func farAlarms(_ app: TestSidecar, _ oba: FakeOBA, trips: Int, alarms: Int, device: String) async throws {
        oba.set((0..<trips).map { trip("far-\($0)", departsIn: 5 * 3600, clock: app.clock) })
        for index in 0..<alarms {
            let created = try await app.post("/api/v2/regions/1/alarms", alarmFields("far-\(index % trips)", push: "\(device)-\(index)"))
            #expect(created.status == 201, "\(created.text)")
        }
    }

    @Test func v2CreationComposesTheMessageAndRegistersTheDevice() async throws {
        try await Self.run { app, oba, _ in
            oba.set([Self.trip("t1", departsIn: 1800, clock: app.clock)])
            let response = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1") + [("apns_sandbox", "1")])
            #expect(response.status == 201)
            let url = try #require(response.json?["url"] as? String)
            #expect(url.hasPrefix("http://127.0.0.1:\(app.port)/api/v2/regions/1/alarms/"))
            let token = String(url.split(separator: "/").last!)
            #expect(token.count == 22)
            #expect(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            let alarm = try #require(try await AlarmStore(database: app.sidecar.database).find(token: token))
            #expect(alarm.message == "The 10 to Downtown Seattle leaves in 5 minutes")
            #expect(alarm.secondsBefore == 300)
            #expect(alarm.apnsSandbox)
            #expect(alarm.stopSequence == 4)
            #expect(oba.state.value.keys.allSatisfy { $0 == "TEST-KEY" })
            let registration = try #require(try await app.pushStore.find(regionID: 1, token: "device-1"))
            #expect(registration.operatingSystem == .ios)
            #expect(!registration.apnsSandbox, "v2 alarm creation carries no apns_sandbox into the registration")
            #expect(registration.locale == nil)
        }
    }

    @Test func theMessageComesFromTheAppsFixture() async throws {
        try await Self.run { app, _, _ in
            let response = try await app.post(
                "/api/v2/regions/1/alarms",
                [
                    ("user_push_id", "device-d"), ("operating_system", "ios"), ("stop_id", "1_11420"), ("trip_id", "1_40989208"),
                    ("service_date", "1538809200000"), ("stop_sequence", "4"), ("seconds_before", "60"),
                ])
            let token = String((response.json?["url"] as? String ?? "").split(separator: "/").last ?? "")
            let alarm = try #require(try await AlarmStore(database: app.sidecar.database).find(token: token))
            #expect(alarm.message == "The 10 to Downtown Seattle leaves in 1 minute")
            #expect(alarm.departureEstimate == EpochMillis(1_538_844_086_000))
        }
    }

    @Test func v2FallsBackToAGenericMessageAndStoresTripFieldsAsSent() async throws {
        try await Self.run { app, oba, _ in
            oba.setMode(.serverError)
            let response = try await app.postJSON(
                "/api/v2/regions/1/alarms",
                #"{"user_push_id":"device-d","operating_system":"android","seconds_before":"-4"}"#)
            #expect(response.status == 201)
            let token = String((response.json?["url"] as? String ?? "").split(separator: "/").last ?? "")
            let alarm = try #require(try await AlarmStore(database: app.sidecar.database).find(token: token))
            #expect(alarm.message == "The bus leaves in 10 minutes")
            #expect(alarm.tripID == nil)
            #expect(alarm.operatingSystem == .android)
        }
    }

    @Test func v1IsIdempotentDefaultsToIOSAndAnswers502WhenTheLookupFails() async throws {
        try await Self.run { app, oba, _ in
            oba.set([Self.trip("t1", departsIn: 1800, clock: app.clock)])
            let fields = Self.alarmFields("t1", push: "onesignal-player").filter { $0.0 != "operating_system" }
            let first = try await app.post("/api/v1/regions/1/alarms", fields)
            #expect(first.status == 201)
            let url = try #require(first.json?["url"] as? String)
            #expect(url.contains("/api/v1/regions/1/alarms/"))
            let again = try await app.post("/api/v1/regions/1/alarms", fields.map { $0.0 == "seconds_before" ? ($0.0, "900") : $0 })
            #expect(again.json?["url"] as? String == url)
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 1)
            let alarm = try #require(try await AlarmStore(database: app.sidecar.database).find(token: String(url.split(separator: "/").last!)))
            #expect(alarm.secondsBefore == 300, "the re-POST changed nothing")
            #expect(alarm.operatingSystem == .ios)
            #expect(try await app.pushStore.count() == 0, "v1 does not register devices")

            oba.setMode(.serverError)
            let failed = try await app.post("/api/v1/regions/1/alarms", Self.alarmFields("t2", push: "other-device"))
            #expect(failed.status == 502)
            #expect(failed.json?["error"] as? String == "Unable to register alarm")
            // v2 is not deduplicated.
            oba.setMode(.normal)
            for _ in 0..<2 { _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1", push: "v2-device")) }
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 3)
        }
    }

    @Test(
        "validation",
        arguments: [
            ("/api/v2/regions/1/alarms", [("operating_system", "ios")], "Push identifier can't be blank"),
            ("/api/v2/regions/1/alarms", [("user_push_id", "push-0001")], "Operating system can't be blank"),
            (
                "/api/v2/regions/1/alarms", [("user_push_id", "push-0001"), ("operating_system", "webos")],
                "Operating system is not included in the list"
            ),
            (
                "/api/v2/regions/1/alarms", [("user_push_id", "p"), ("operating_system", "ios")],
                "Push identifier is not a push token a provider issues (8 to 4096 letters, digits, '_', ':' or '-')"
            ),
            ("/api/v1/regions/1/alarms", [("seconds_before", "60")], "Push identifier can't be blank"),
        ])
    func rejects(path: String, fields: [(String, String)], message: String) async throws {
        try await Self.run { app, _, _ in
            let response = try await app.post(path, fields)
            #expect(response.status == 422)
            #expect(response.json?["error"] as? String == "Unable to register alarm")
            #expect(response.json?["messages"] as? [String] == [message])
        }
    }

    @Test func deleteByBareIDOrSlugOnlyAfterTheRowIsGone() async throws {
        try await Self.run { app, oba, _ in
            oba.set([Self.trip("t1", departsIn: 1800, clock: app.clock)])
            var tokens: [String] = []
            for _ in 0..<2 {
                let url = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1")).json?["url"] as? String ?? ""
                tokens.append(String(url.split(separator: "/").last!))
            }
            let bare = try await app.send("DELETE", "/api/v2/regions/1/alarms/\(tokens[0])")
            #expect(bare.status == 204)
            #expect(bare.body.isEmpty)
            #expect(try await AlarmStore(database: app.sidecar.database).find(token: tokens[0]) == nil)
            #expect(try await app.send("DELETE", "/api/v2/regions/1-puget-sound/alarms/\(tokens[1])").status == 204)
            let again = try await app.send("DELETE", "/api/v2/regions/1/alarms/\(tokens[1])")
            #expect(again.status == 404)
            #expect(again.body.isEmpty)
            #expect(try await app.send("DELETE", "/api/v1/regions/1/alarms/nope").status == 404)
            #expect(try await app.send("DELETE", "/api/v2/regions/abc/alarms/\(tokens[1])").status == 404)
            #expect(try await app.send("DELETE", "/api/v2/regions/0/alarms/\(tokens[1])").status == 404, "another region's token")
        }
    }

    @Test func firesOnceWithTheExactPayloadThenDeletes() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 900, clock: app.clock), Self.trip("t2", departsIn: 900, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1", push: "ios-device") + [("apns_sandbox", "true")])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t2", push: "android-device", os: "android"))
            let checker = app.sidecar.alarmChecker
            var report = await checker.runCycle()
            #expect(report.waiting == 2)
            #expect(report.fired == 0)
            #expect(gorush.notifications.isEmpty)
            app.clock.advance(seconds: 60 * 10)  // 300 s before departure
            report = await checker.runCycle()
            #expect(report.fired == 2)
            let notifications = gorush.notifications
            #expect(notifications.count == 2)
            let ios = try #require(notifications.first { $0["platform"] as? Int == 1 })
            #expect(ios["tokens"] as? [String] == ["ios-device"])
            #expect(ios["title"] as? String == "OneBusAway")
            #expect(ios["message"] as? String == "The 10 to Downtown Seattle leaves in 5 minutes")
            #expect(ios["development"] as? Bool == true)
            #expect(ios["topic"] as? String == "org.onebusaway.iphone")
            let iosData = try #require(ios["data"] as? [String: Any])
            #expect(Set(iosData.keys) == ["arrival_and_departure"])
            let payload = try #require(iosData["arrival_and_departure"] as? [String: Any])
            #expect(Set(payload.keys) == ["region_id", "stop_id", "trip_id", "service_date", "vehicle_id", "stop_sequence"])
            #expect(payload["region_id"] as? Int == 1)
            #expect(payload["service_date"] as? Int64 == Self.serviceDate)
            #expect(payload["stop_sequence"] as? Int == 4)
            let android = try #require(notifications.first { $0["platform"] as? Int == 2 })
            let androidData = try #require(android["data"] as? [String: Any])
            #expect(Set(androidData.keys) == ["arrival_and_departure"])
            let encoded = try #require(androidData["arrival_and_departure"] as? String)
            let decoded = try JSONSerialization.jsonObject(with: Data(encoded.utf8)) as? [String: Any]
            #expect(decoded?["trip_id"] as? String == "t2")
            #expect(android["message"] as? String == "The 10 to Downtown Seattle leaves in 5 minutes")
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 0)
            app.clock.advance(seconds: 60)
            _ = await checker.runCycle()
            #expect(gorush.notifications.count == 2, "an alarm fires at most once")
        }
    }

    @Test func aDepartedBusIsDeletedWithoutAPush() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 1200, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1", secondsBefore: "60"))
            // The bus leaves early: by the next check it has gone.
            oba.update("t1") { $0.departure = app.clock.now().epochMillis - 5_000 }
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.expired == 1)
            #expect(gorush.notifications.isEmpty)
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 0)
            let dropped = app.log.lines.first { $0.contains("alarm dropped without a push") }
            #expect(dropped?.contains("INFO") == true, "said at info, where operators look: \(dropped ?? "nothing")")
            #expect(dropped?.contains("the bus left 5 s before this check") == true, "with its reason: \(dropped ?? "nothing")")
            #expect(dropped?.contains("trip=t1") == true)
        }
    }

    @Test func threeNotFoundLookupsReapButTransientFailuresDoNotCount() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 3600, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1"))
            let store = AlarmStore(database: app.sidecar.database)
            let checker = app.sidecar.alarmChecker
            oba.set([])  // the trip aged out of the feed
            _ = await checker.runCycle()
            app.clock.advance(seconds: 60)
            _ = await checker.runCycle()
            #expect(try await store.due(atOrBefore: EpochMillis(.max)).first?.failureCount == 2)
            oba.setMode(.serverError)  // transient: no change
            for _ in 0..<3 {
                app.clock.advance(seconds: 60)
                #expect(await checker.runCycle().transient == 1)
            }
            #expect(try await store.due(atOrBefore: EpochMillis(.max)).first?.failureCount == 2)
            oba.setMode(.normal)
            oba.set([Self.trip("t1", departsIn: 3000, clock: app.clock)])  // back: the streak resets
            app.clock.advance(seconds: 60)
            _ = await checker.runCycle()
            #expect(try await store.due(atOrBefore: EpochMillis(.max)).first?.failureCount == 0)
            oba.set([])
            var reaped = 0
            for _ in 0..<40 where reaped == 0 {
                app.clock.advance(seconds: 60)
                reaped += await checker.runCycle().reaped
            }
            #expect(reaped == 1)
            #expect(try await store.count() == 0)
            #expect(gorush.notifications.isEmpty)
        }
    }

    @Test func alarmsAtOneStopShareOneRequestAndFarOffAlarmsAreCheckedLessOften() async throws {
        try await Self.run { app, oba, _ in
            oba.set(
                (0..<6).map { Self.trip("t\($0)", departsIn: 3 * 3600, clock: app.clock) } + [
                    Self.trip("near", stop: "1_999", departsIn: 900, clock: app.clock)
                ])
            for index in 0..<6 { _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t\(index)", push: "device-\(index)")) }
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("near", stop: "1_999", push: "near-device"))
            let before = oba.counts
            var report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.checked == 7)
            #expect(report.stopRequests == 2, "one request per stop")
            #expect(report.tripRequests == 0)
            #expect(oba.counts.stop - before.stop == 2)
            app.clock.advance(seconds: 60)
            report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.checked == 1, "the far-off alarms sleep; the near one is checked")
            #expect(report.stopRequests == 1)
        }
    }

    /// Issue 39: alarms waiting for the same visit of a trip the stop's
    /// window does not reach share one trip request per cycle, whoever set
    /// them and whatever vehicle each names: 40 alarms, one request.
    @Test func alarmsOnOneTripOutsideTheStopWindowShareOneTripRequest() async throws {
        try await Self.run(configure: {
            $0.alarmLimit = 0
            $0.upstreamLookupLimit = 0
        }) { app, oba, _ in
            // Five hours out: past the widest stop window (four hours).
            oba.set([Self.trip("far", departsIn: 5 * 3600, clock: app.clock)])
            for index in 0..<40 {
                let fields = Self.alarmFields("far", push: "rider-device-\(index)").map { $0.0 == "vehicle_id" ? ($0.0, "1_\(7000 + index)") : $0 }
                let created = try await app.post("/api/v2/regions/1/alarms", fields)
                #expect(created.status == 201, "\(created.text)")
            }
            let before = oba.counts
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.checked == 40)
            #expect(report.stopRequests == 1)
            #expect(report.tripRequests == 1, "one request for the visit, not one per alarm")
            #expect(oba.counts.trip - before.trip == 1)
        }
    }

    /// Issue 39: alarms waiting on many trips past one stop's window are not
    /// asked one trip after another (100,000 such alarms took 11 minutes a
    /// cycle so): the page's trip requests run together, each visit once.
    @Test func tripsPastTheStopWindowAreAskedTogether() async throws {
        try await Self.run(configure: {
            $0.alarmLimit = 0
            $0.upstreamLookupLimit = 0
        }) { app, oba, _ in
            try await Self.farAlarms(app, oba, trips: 8, alarms: 16, device: "rider-device")
            // Creating them asked about each trip; the cycle's eight requests are held until all have come.
            oba.state.withLock {
                $0.tripBarrier = $0.tripRequests + 8
                $0.maxTripsInFlight = 0
            }
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.checked == 16 && report.stopRequests == 1 && report.tripRequests == 8 && report.waiting == 16)
            #expect(oba.state.withLock { $0.maxTripsInFlight } == 8, "all eight visits asked at once")
        }
    }

    /// Issue 39: a stop asked for during a page of lookups ends the page
    /// after the request under way: what was not looked up waits for the
    /// next cycle (its failure count untouched), nothing is fired or lost.
    @Test func aStopDuringAPageOfLookupsAsksNothingMore() async throws {
        try await Self.run(configure: {
            $0.alarmLimit = 0
            $0.upstreamLookupLimit = 0
        }) { app, oba, _ in
            try await Self.farAlarms(app, oba, trips: 5, alarms: 5, device: "stopping-device")
            let work = app.sidecar.context.work
            oba.state.withLock { $0.whileAnsweringStop = { work.stop.stop() } }
            let before = oba.counts
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.checked == 5 && report.transient == 5 && report.fired == 0)
            #expect(oba.counts.stop - before.stop == 1)
            #expect(oba.counts.trip - before.trip == 0, "no trip request once the stop was asked for")
            let alarms = try await AlarmStore(database: app.sidecar.database).alarms(regionID: 1, after: 0, limit: 10)
            #expect(alarms.count == 5 && alarms.allSatisfy { $0.failureCount == 0 })
        }
    }

    @Test func withoutATransportAlarmsAreCheckedAndReapedNeverFired() async throws {
        try await Self.run(transport: false) { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 200, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1"))
            var report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.fired == 0)
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 1)
            app.clock.advance(seconds: 240)
            report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.expired == 1)
            #expect(try await AlarmStore(database: app.sidecar.database).count() == 0)
            #expect(gorush.notifications.isEmpty)
        }
    }

    @Test func aTerminalPushFailureDeletesATransientOneRetries() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 200, clock: app.clock), Self.trip("t2", departsIn: 200, clock: app.clock)])
            gorush.failures.withLock { $0 = ["dead-device": "Unregistered", "busy-device": "TooManyRequests"] }
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1", push: "dead-device"))
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t2", push: "busy-device"))
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.pushFailures == 2)
            let left = try await AlarmStore(database: app.sidecar.database).due(atOrBefore: EpochMillis(.max))
            #expect(left.map(\.userPushID) == ["busy-device"])
            gorush.failures.withLock { $0 = [:] }
            app.clock.advance(seconds: 60)
            #expect(await app.sidecar.alarmChecker.runCycle().fired == 1)
        }
    }

    @Test func theLoopRunsOnItsClock() async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        let gorush = try FakeGorush()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("alarm-loop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(
            clock: clock,
            {
                $0.regions = regions
                $0.gorushURL = gorush.url
            }
        ) { app in
            oba.set([Self.trip("t1", departsIn: 330, clock: clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", Self.alarmFields("t1"))
            #expect(try await app.eventually { clock.sleeperCount >= 2 })  // the pruner and the checker
            clock.advance(seconds: 60)
            #expect(try await app.eventually { gorush.notifications.count == 1 })
            #expect(try await app.eventually { app.log.lines.contains { $0.contains("alarm cycle") && $0.contains("fired=1") } })
            #expect(!app.log.lines.contains { $0.contains("device-1") }, "push tokens never reach the log")
        }
        await oba.server.shutdown()
        await gorush.server.shutdown()
    }
}
