import Foundation
import HTTPServer
import OBA
import TestSupport
import Testing

@testable import SidecarKit

@Suite("LiveActivities: content-state builder (spec §6.2)")
struct ContentStateBuilderTests {
    static func entries(_ path: String) throws -> OBAResponse<StopArrivals> {
        try OBAClient.decode(status: 200, body: try SharedFixtures.bytes(path), as: StopArrivals.self)
    }

    @Test func theIOSDuplicateVehicleFixtureKeepsTheNewestReport() throws {
        let response = try Self.entries("ios/arrivals-and-departures-for-stop-1_10914-duplicates.json")
        let collapsed = ContentStateBuilder.collapseDuplicates(response.entry.arrivalsAndDepartures)
        #expect(collapsed.count == 2)
        #expect(collapsed.first { $0.tripId == "1_40984902" }?.vehicleId == "1_8109999", "newest lastUpdateTime wins")
        let state = ContentStateBuilder.build(
            response.entry.arrivalsAndDepartures, routeShortName: "49", tripHeadsign: "Downtown Seattle Broadway",
            currentTime: response.currentTime)
        #expect(state.arrivals.count == 2)
        #expect(state.arrivals.map(\.departureTime) == [1_541_142_156, 1_541_143_056])
        #expect(state.arrivals.allSatisfy { $0.isArrival && $0.scheduleStatus == "delayed" && $0.scheduleDeviation == 156 })
    }

    @Test func theAndroidFixtureKeepsTheFirstOnATie() throws {
        let response = try Self.entries("android/arrivals_and_departures_for_stop_97_256_duplicate_vehicles.json")
        let collapsed = ContentStateBuilder.collapseDuplicates(response.entry.arrivalsAndDepartures)
        #expect(collapsed.map(\.vehicleId) == ["97_149", ""], "tie on lastUpdateTime: first in response order")
        let route = try #require(collapsed.first?.routeShortName)
        let headsign = try #require(collapsed.first?.tripHeadsign)
        let state = ContentStateBuilder.build(
            response.entry.arrivalsAndDepartures, routeShortName: route, tripHeadsign: headsign,
            currentTime: response.currentTime)
        #expect(state.arrivals.count == 2)
        #expect(state.arrivals[1].scheduleStatus == "unknown")
        #expect(state.arrivals[1].scheduleDeviation == 0)
    }

    static func entry(
        trip: String? = "t", sequence: Int? = 3, vehicle: String = "v", updated: Int64 = 0, predicted: Bool = true,
        arrival: Int64 = 2_000_000, predictedArrival: Int64 = 2_060_000, departure: Int64 = 2_000_000,
        predictedDeparture: Int64 = 2_060_000, route: String = "44", headsign: String = "Ballard"
    ) -> ArrivalAndDeparture {
        ArrivalAndDeparture(
            stopId: "s", tripId: trip, routeId: "r", routeShortName: route, tripHeadsign: headsign, serviceDate: 1,
            stopSequence: sequence, vehicleId: vehicle, predicted: predicted, predictedArrivalTime: EpochMillis(predictedArrival),
            predictedDepartureTime: EpochMillis(predictedDeparture), scheduledArrivalTime: EpochMillis(arrival),
            scheduledDepartureTime: EpochMillis(departure), lastUpdateTime: EpochMillis(updated))
    }

    @Test func aLoopRouteKeepsBothVisitsAndIncompleteIdentitiesStay() {
        let loop = [Self.entry(sequence: 3), Self.entry(sequence: 17, arrival: 3_000_000, predictedArrival: 3_000_000)]
        #expect(ContentStateBuilder.collapseDuplicates(loop).count == 2, "never group by tripId alone")
        let incomplete = [Self.entry(trip: nil), Self.entry(trip: nil)]
        #expect(ContentStateBuilder.collapseDuplicates(incomplete).count == 2, "no nil-keyed group")
    }

    @Test(
        "schedule status is half-open on the late side",
        arguments: [
            (-91 as Int64, "early"), (-90, "on_time"), (0, "on_time"), (89, "on_time"), (90, "delayed"), (600, "delayed"),
        ])
    func status(deviation: Int64, expected: String) {
        #expect(ContentStateBuilder.status(deviationSeconds: deviation) == expected)
    }

    @Test func arrivalOrDepartureAndTheirFallbacks() {
        let first = ContentStateBuilder.arrival(
            for: Self.entry(
                sequence: 0, arrival: 1_000_000, predictedArrival: 1_000_000,
                departure: 2_000_000, predictedDeparture: 2_030_000))!
        #expect(!first.arrival.isArrival)
        #expect(first.arrival.departureTime == 2_030)
        #expect(first.arrival.scheduleDeviation == 30)
        let noArrivalTimes = ContentStateBuilder.arrival(
            for: Self.entry(
                sequence: 5, arrival: 0, predictedArrival: 0,
                departure: 2_000_000, predictedDeparture: 2_120_000))!
        #expect(noArrivalTimes.arrival.isArrival)
        #expect(noArrivalTimes.arrival.departureTime == 2_120)
        #expect(noArrivalTimes.arrival.scheduleStatus == "delayed")
        let scheduleOnly = ContentStateBuilder.arrival(for: Self.entry(predicted: false))!
        #expect(scheduleOnly.arrival == .init(departureTime: 2_000, scheduleStatus: "unknown", scheduleDeviation: 0, isArrival: true))
        let zeroPrediction = ContentStateBuilder.arrival(for: Self.entry(predictedArrival: 0))!
        #expect(zeroPrediction.arrival.scheduleStatus == "unknown", "a non-positive prediction is not used")
    }

    @Test func filtersDropsThePastSortsAndKeepsThree() {
        let entries = [
            Self.entry(trip: "a", arrival: 5_000_000, predictedArrival: 5_000_000),
            Self.entry(trip: "b", arrival: 1_000_000, predictedArrival: 1_000_000),
            Self.entry(trip: "c", arrival: 4_000_000, predictedArrival: 3_940_000),
            Self.entry(trip: "d", arrival: 3_000_000, predictedArrival: 3_000_000),
            Self.entry(trip: "e", arrival: 6_000_000, predictedArrival: 6_000_000),
            Self.entry(trip: "f", route: "45"),
            Self.entry(trip: "g", headsign: "Fremont"),
        ]
        let state = ContentStateBuilder.build(entries, routeShortName: "44", tripHeadsign: "Ballard", currentTime: EpochMillis(2_500_000))
        #expect(state.arrivals.map(\.departureTime) == [3_000, 3_940, 5_000])
        #expect(state.arrivals[1].scheduleStatus == "on_time")
        #expect(state.arrivals[1].scheduleDeviation == -60)
    }

    @Test func theStateDecodesWithTheAppsFixtureShape() throws {
        let fixture = try #require(
            try JSONSerialization.jsonObject(with: Data(SharedFixtures.bytes("ios/live_activity_content_state.json"))) as? [String: Any])
        let state = ContentState(arrivals: [.init(departureTime: 1_767_980_460, scheduleStatus: "on_time", scheduleDeviation: 60, isArrival: false)])
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(state.json.encoded())) as? [String: Any])
        #expect(Set(ours.keys) == Set(fixture.keys))
        let fixtureArrival = try #require((fixture["arrivals"] as? [[String: Any]])?.first)
        let ourArrival = try #require((ours["arrivals"] as? [[String: Any]])?.first)
        #expect(Set(ourArrival.keys) == Set(fixtureArrival.keys))
        #expect(ourArrival["departure_time"] as? Int == fixtureArrival["departure_time"] as? Int)
        #expect(ContentState(json: state.json) == state)
    }
}

@Suite("LiveActivities: over HTTP and the update loop (spec §6)")
struct LiveActivityLoopTests {
    static let path = "/api/v2/regions/1/live_activities"

    static func run(_ body: (TestSidecar, FakeOBA, FakeGorush) async throws -> Void) async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        let gorush = try FakeGorush()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("la-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(
            clock: clock,
            {
                $0.regions = regions
                $0.gorushURL = gorush.url
                $0.runsAlarmChecker = false
                $0.runsLiveActivityUpdater = false
            }
        ) { app in try await body(app, oba, gorush) }
        await oba.server.shutdown()
        await gorush.server.shutdown()
    }

    static func fields(_ activity: String, token: String, stop: String = "1_11420", sandbox: String = "0") -> [(String, String)] {
        [
            ("activity_id", activity), ("push_token", token), ("stop_id", stop), ("route_short_name", "10"),
            ("trip_headsign", "Downtown Seattle"), ("apns_sandbox", sandbox), ("trip_id", "t1"),
        ]
    }

    static func trip(_ id: String, departsIn seconds: Int64, clock: ManualClock, stop: String = "1_11420") -> FakeOBA.Trip {
        FakeOBA.Trip(stopID: stop, tripID: id, serviceDate: 1, departure: clock.now().epochMillis + seconds * 1000)
    }

    @Test func registrationIsAnUpsertWithTheFirstURL() async throws {
        try await Self.run { app, _, _ in
            let first = try await app.post(Self.path, Self.fields("activity-1", token: "token-a1", sandbox: "1"))
            #expect(first.status == 201)
            let url = try #require(first.json?["url"] as? String)
            #expect(url.contains("/api/v2/regions/1/live_activities/"))
            let token = String(url.split(separator: "/").last!)
            #expect(token.count == 22)
            let rotated = try await app.postJSON(
                Self.path,
                #"{"activity_id":"activity-1","push_token":"token-b1","stop_id":"1_11420","route_short_name":"10","trip_headsign":"Downtown Seattle"}"#
            )
            #expect(rotated.json?["url"] as? String == url, "the app keeps the first URL")
            let stored = try #require(try await LiveActivityStore(database: app.sidecar.database).find(token: token))
            #expect(stored.pushToken == "token-b1")
            #expect(!stored.apnsSandbox, "re-read on every registration")
            #expect(stored.expiresAt == app.clock.nowSeconds.adding(seconds: 8 * 3600))
            let invalid = try await app.post(Self.path, [("activity_id", "x")])
            #expect(invalid.status == 422)
            #expect(invalid.json?["error"] as? String == "Unable to register live activity")
            #expect((invalid.json?["messages"] as? [String])?.contains("Push token can't be blank") == true)
            let concurrent = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<10 {
                    group.addTask { try await app.post(Self.path, Self.fields("race", token: "push-token-\(index)")).json?["url"] as? String ?? "" }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(concurrent.count == 1, "one subscription, one URL")
            #expect(try await app.send("DELETE", "/api/v2/regions/1-puget-sound/live_activities/\(token)").status == 204)
            #expect(try await app.send("DELETE", "/api/v2/regions/1/live_activities/\(token)").status == 404)
        }
    }

    /// A cycle's pages go in stop order and each starts after the last one's
    /// end: every due subscription once, none passed over, none twice.
    @Test func pagesWalkTheStopsInOrderFromWhereTheLastEnded() async throws {
        try await Self.run { app, _, _ in
            for index in 0..<9 {
                let created = try await app.post(Self.path, Self.fields("walk-\(index)", token: "push-token-\(index)", stop: "1_\(3 - index % 3)"))
                #expect(created.status == 201)
            }
            let store = LiveActivityStore(database: app.sidecar.database)
            let now = app.clock.now().epochMillis
            var position: LiveActivityStore.Position?
            var walked: [LiveActivity] = []
            while true {
                let page = try await store.claimDue(atOrBefore: EpochMillis(now + 60_000), nowMillis: EpochMillis(now), limit: 2, after: position)
                if page.isEmpty { break }
                #expect(page.count <= 2)
                position = LiveActivityStore.Position.last(of: page)
                walked += page.sorted { ($0.stopID, $0.id) < ($1.stopID, $1.id) }
            }
            #expect(walked.count == 9)
            #expect(Set(walked.map(\.id)).count == 9, "none twice")
            #expect(walked.map(\.stopID) == ["1_1", "1_1", "1_1", "1_2", "1_2", "1_2", "1_3", "1_3", "1_3"], "in stop order")
            #expect(walked.map(\.id) == walked.sorted { ($0.stopID, $0.id) < ($1.stopID, $1.id) }.map(\.id))
        }
    }

    @Test func aCycleLongerThanItsIntervalSaysSo() async throws {
        try await Self.run { app, oba, _ in
            oba.set([Self.trip("t1", departsIn: 600, clock: app.clock)])
            _ = try await app.post(Self.path, Self.fields("a1", token: "push-0001"))
            let updater = app.sidecar.liveActivityUpdater
            #expect(await updater.runCycle().overran == false)
            // The upstream is so slow that the cycle outlasts its interval.
            let clock = app.clock
            let interval = Double(updater.intervalSeconds)
            // Next interval, past the stop cache: the stop is asked again.
            clock.advance(seconds: max(interval, 60))
            oba.state.withLock { $0.whileAnsweringStop = { clock.advance(seconds: interval + 1) } }
            let late = await updater.runCycle()
            #expect(late.subscriptions == 1 && late.overran)
        }
    }

    /// Issue 39: a stop asked for during a page asks about no further stop;
    /// those subscriptions wait for the next cycle with no failure counted,
    /// and the stops already answered are pushed as usual.
    @Test func aStopDuringAPageAsksAboutNoFurtherStop() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([
                Self.trip("t1", departsIn: 600, clock: app.clock), Self.trip("t1", departsIn: 600, clock: app.clock, stop: "1_22222"),
            ])
            _ = try await app.post(Self.path, Self.fields("first-stop", token: "push-token-first"))
            _ = try await app.post(Self.path, Self.fields("second-stop", token: "push-token-second", stop: "1_22222"))
            var updater = app.sidecar.liveActivityUpdater
            updater.maxConcurrentStops = 1  // one stop after the other, so the stop lands between them
            let work = app.sidecar.context.work
            oba.state.withLock { $0.whileAnsweringStop = { work.stop.stop() } }
            let report = await updater.runCycle()
            #expect(report.subscriptions == 2)
            #expect(report.stopRequests == 1, "the second stop was not asked about")
            #expect(report.failures == 0)
            #expect(report.updates == 1)
            #expect(gorush.notifications.count == 1)
            let waiting = try await LiveActivityStore(database: app.sidecar.database).activities(regionID: 1, after: 0, limit: 10)
            #expect(waiting.count == 2 && waiting.allSatisfy { $0.failureCount == 0 })
        }
    }

    @Test func updatesKeepalivesFailuresExpiryAndSharedFetches() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 600, clock: app.clock), Self.trip("t2", departsIn: 1500, clock: app.clock)])
            for index in 0..<3 {
                _ = try await app.post(Self.path, Self.fields("a\(index)", token: "push-token-\(index)", sandbox: index == 0 ? "true" : ""))
            }
            let updater = app.sidecar.liveActivityUpdater
            var report = await updater.runCycle()
            #expect(report.subscriptions == 3)
            #expect(report.stopRequests == 1, "three subscriptions on one stop cost one request")
            #expect(report.updates == 3)
            let first = try #require(gorush.notifications.first { ($0["tokens"] as? [String]) == ["push-token-0"] })
            #expect(first["push_type"] as? String == "liveactivity")
            #expect(first["topic"] as? String == "org.onebusaway.iphone.push-type.liveactivity")
            #expect(first["priority"] as? String == "high")
            #expect(first["development"] as? Bool == true)
            #expect(first["event"] as? String == "update")
            #expect(first["title"] == nil && first["message"] == nil)
            #expect(first["stale-date"] as? Int == Int(app.clock.now().epochMillis / 1000) + 600)
            let state = try #require(first["content-state"] as? [String: Any])
            // Registered with trip_id t1: pinned to that bus alone (iOS PR #1381).
            #expect((state["arrivals"] as? [[String: Any]])?.count == 1)

            // Unchanged and under 55 s: nothing. The per-stop cache answers too.
            app.clock.advance(seconds: 30)
            report = await updater.runCycle()
            #expect(report.updates == 0)
            #expect(report.stopRequests == 0, "served from the ~55 s stop cache")
            // 55 s after the last push: a keepalive, with a newer timestamp.
            app.clock.advance(seconds: 30)
            report = await updater.runCycle()
            #expect(report.updates == 3)
            let stamps = gorush.notifications.filter { ($0["tokens"] as? [String]) == ["push-token-1"] }.compactMap { $0["timestamp"] as? Int }
            #expect(stamps.count == 2 && stamps[1] > stamps[0])

            // Two failures do not end it; a non-empty build resets the count; three in a row do.
            oba.setMode(.serverError)
            for _ in 0..<2 {
                app.clock.advance(seconds: 60)
                #expect(await updater.runCycle().failures == 3)
            }
            oba.setMode(.normal)
            app.clock.advance(seconds: 60)
            #expect(await updater.runCycle().updates == 3)
            oba.set([])  // an empty result counts as a failure
            for _ in 0..<2 {
                app.clock.advance(seconds: 60)
                #expect(await updater.runCycle().ended == 0)
            }
            app.clock.advance(seconds: 60)
            report = await updater.runCycle()
            #expect(report.ended == 3)
            let end = try #require(gorush.notifications.last)
            #expect(end["event"] as? String == "end")
            #expect(end["dismissal-date"] as? Int == Int(app.clock.now().epochMillis / 1000) + 900)
            #expect(((end["content-state"] as? [String: Any])?["arrivals"] as? [Any])?.count == 1, "the last known state")
            #expect(try await LiveActivityStore(database: app.sidecar.database).count() == 0)
        }
    }

    @Test func expiryEndsItAndADeadTokenIsDeletedWithoutAnEndPush() async throws {
        try await Self.run { app, oba, gorush in
            oba.set([Self.trip("t1", departsIn: 600, clock: app.clock)])
            _ = try await app.post(Self.path, Self.fields("old", token: "push-old"))
            _ = try await app.post(Self.path, Self.fields("dead", token: "push-dead"))
            gorush.failures.withLock { $0 = ["push-dead": "BadDeviceToken"] }
            var report = await app.sidecar.liveActivityUpdater.runCycle()
            #expect(report.pushFailures == 1)
            #expect(gorush.notifications.filter { ($0["tokens"] as? [String]) == ["push-dead"] }.allSatisfy { $0["event"] as? String == "update" })
            #expect(try await LiveActivityStore(database: app.sidecar.database).count() == 1)
            app.clock.advance(seconds: 8 * 3600 + 1)
            oba.set([Self.trip("t1", departsIn: 600, clock: app.clock)])
            report = await app.sidecar.liveActivityUpdater.runCycle()
            #expect(report.ended == 1)
            #expect(gorush.notifications.last?["event"] as? String == "end")
            #expect(try await LiveActivityStore(database: app.sidecar.database).count() == 0)
        }
    }

    @Test func liveActivityWritesAreLimitedPerClient() async throws {
        try await TestSidecar.run { app in
            var statuses: [Int] = []
            for index in 0..<40 {
                statuses.append(
                    try await app.post(
                        "/api/v2/regions/1/live_activities",
                        [
                            ("activity_id", "a\(index)"), ("push_token", "push-token-\(index)"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                            ("trip_headsign", "Downtown"),
                        ]
                    ).status)
            }
            #expect(statuses.filter { $0 == 201 }.count == 30)
            #expect(statuses.suffix(10).allSatisfy { $0 == 429 })
        }
    }
}
