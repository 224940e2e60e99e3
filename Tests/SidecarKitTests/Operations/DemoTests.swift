import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 14: `sidecar serve --demo`, a region simulated by the process.
@Suite("Operations: the demo region")
struct DemoTests {
    /// Noon UTC on 2026-01-01.
    static let noon: EpochMillis = 1_767_268_800_000

    @Test(arguments: [
        ("demo_1_0_600", true), ("demo_2X_0_600", false), ("demo_2_1_615", true), ("demo_2_1_610", false),
        ("demo_3_2_600", false), ("demo_1_0_1440", false), ("demo_1_0_-10", false), ("demo_1_0", false), ("other_1_0_600", false),
    ])
    func tripIDsNameOnlyTripsThatRun(id: String, runs: Bool) {
        #expect((DemoTransit.trip(id: id, serviceDate: Self.noon.adding(millis: -43_200_000)) != nil) == runs)
        // Service dates are midnights (UTC).
        #expect(DemoTransit.trip(id: id, serviceDate: Self.noon) == nil)
    }

    @Test func predictionsStayRealisticAndDriftSlowly() {
        let today = Self.noon.adding(millis: -43_200_000)
        for route in DemoTransit.routes {
            for minute in stride(from: 0, to: 1440, by: route.headwayMinutes * 7) {
                let trip = DemoTransit.Trip(route: route, direction: minute % 2, startMinute: minute, serviceDate: today)
                var previous = trip.deviationSeconds(now: trip.start)
                for step in 1...60 {
                    let deviation = trip.deviationSeconds(now: trip.start.adding(millis: Int64(step) * 10_000))
                    // At most a minute early, at most five late.
                    #expect((-120...300).contains(deviation))
                    // Ten seconds later, the prediction has moved by at most four (0.31 s a second, rounded).
                    #expect(abs(deviation - previous) <= 4)
                    previous = deviation
                }
            }
        }
    }

    @Test func departuresAtAStopAreOrderedAndComeFromEveryRouteServingIt() {
        let visits = DemoTransit.visits(stopID: "demo_1003", from: Self.noon, to: Self.noon.adding(millis: 3_600_000), now: Self.noon)
        #expect(visits.count >= 10)
        #expect(zip(visits, visits.dropFirst()).allSatisfy { $0.expected <= $1.expected })
        #expect(Set(visits.map(\.trip.route.id)) == ["demo_1", "demo_2"])
        #expect(visits.allSatisfy { $0.stop.id == "demo_1003" })
        // Trips far off have no real-time data yet; those about to leave do.
        #expect(visits.contains { $0.predicted == nil })
        #expect(visits.contains { $0.predicted != nil })
        #expect(!DemoTransit.activeTrips(now: Self.noon).isEmpty)
    }

    /// The `-d name=value` arguments of the guide's curl command after `heading`.
    static func curlFields(_ guide: String, after heading: String) -> [(String, String)] {
        guard let start = guide.range(of: heading) else { return [] }
        let paragraph = guide[start.upperBound...].components(separatedBy: "\n\n").first ?? ""
        var fields: [(String, String)] = []
        var rest = Substring(paragraph)
        while let flag = rest.range(of: "-d ") {
            rest = rest[flag.upperBound...]
            let argument: Substring
            if rest.first == "'" {
                let body = rest.dropFirst()
                let end = body.firstIndex(of: "'") ?? body.endIndex
                argument = body[..<end]
                rest = body[end...].dropFirst()
            } else {
                let end = rest.firstIndex { $0 == " " || $0 == "\n" } ?? rest.endIndex
                argument = rest[..<end]
                rest = rest[end...]
            }
            let parts = argument.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields.append((String(parts[0]), String(parts[1]))) }
        }
        return fields
    }

    @Test func aNewcomerFollowsTheGuideAndSeesTheAlarmFireAndTheActivityUpdate() async throws {
        let clock = ManualClock(Date(epochMillis: Self.noon.value))
        try await TestSidecar.run(clock: clock, { $0.demo = true }) { app in
            let region = try #require(app.sidecar.demoRegionID)
            #expect(region == DemoRegion.preferredID)
            let guide = try await app.send("GET", "/demo")
            #expect(guide.status == 200)
            #expect(guide.header("Content-Type")?.hasPrefix("text/plain") == true)

            // The simulated OneBusAway server answers the app's calls.
            let arrivals = try await app.send("GET", "/demo/oba/api/where/arrivals-and-departures-for-stop/demo_1003.json?key=demo")
            #expect(arrivals.status == 200)
            let data = arrivals.json?["data"] as? [String: Any]
            let entry = data?["entry"] as? [String: Any]
            #expect((entry?["arrivalsAndDepartures"] as? [Any])?.isEmpty == false)
            #expect(try await app.send("GET", "/demo/oba/api/where/current-time.json?key=demo").json?["code"] as? Int == 200)

            // The region is listed, with sample alerts and a survey.
            let feed = try await app.send("GET", "/api/v1/regions/\(region)/alerts.pbtext")
            #expect(feed.text.contains("Route 2X detoured at Stadium"))
            #expect(feed.text.contains("Ruta 2X desviada"))
            let surveys = try await app.send("GET", "/api/v1/regions/\(region)/surveys.json?user_id=demo")
            #expect(surveys.text.contains("How was your trip today?"))

            // The alarm of the guide fires at the next check, into the log.
            let alarm = Self.curlFields(guide.text, after: "An alarm")
            #expect(
                alarm.map(\.0) == [
                    "user_push_id", "operating_system", "stop_id", "trip_id", "service_date", "vehicle_id",
                    "stop_sequence", "seconds_before",
                ])
            let created = try await app.post("/api/v2/regions/\(region)/alarms", alarm)
            #expect(created.status == 201 || created.status == 200, "\(created.text)")
            let report = await app.sidecar.alarmChecker.runCycle()
            #expect(report.fired == 1)
            #expect(app.log.lines.contains { $0.contains("push (log transport)") && $0.contains("kind=alert") })

            // The Live Activity of the guide gets an update with its content state.
            let activity = Self.curlFields(guide.text, after: "A Live Activity")
            #expect(activity.contains { $0.0 == "trip_headsign" })
            let registered = try await app.post("/api/v2/regions/\(region)/live_activities", activity)
            #expect((200..<300).contains(registered.status), "\(registered.text)")
            let cycle = await app.sidecar.liveActivityUpdater.runCycle()
            #expect(cycle.updates == 1)
            #expect(app.log.lines.contains { $0.contains("kind=liveactivity") && $0.contains("content_state=") })
        }
    }
}

/// `--demo`'s simulated agency feed and its source (issue 27).
@Suite("Operations: the demo's agency alerts feed")
struct DemoAgencyFeedTests {
    @Test func aSecondAlertAppearsAfterTheDelay() {
        #expect(DemoAgencyFeed.feed(secondsSinceStart: 0, startedAt: 1_000, delaySeconds: 60).entities.map(\.id) == ["weekend-works"])
        #expect(
            DemoAgencyFeed.feed(secondsSinceStart: 60, startedAt: 1_000, delaySeconds: 60).entities.map(\.id) == ["weekend-works", "signal-problem"])
    }

    @Test func theDemoRegionHasASourceOnItsOwnLoopbackPortThatPollsCleanly() async throws {
        try await TestSidecar.run({
            $0.demo = true
            $0.runsSourcePoller = false
        }) { app in
            let region = try #require(app.sidecar.demoRegionID)
            let store = AlertSourceStore(database: app.sidecar.database)
            #expect(try await app.eventually { try await !store.sources(regionID: region).isEmpty })
            let source = try #require(try await store.sources(regionID: region).first?.0)
            #expect(source.url.hasPrefix("http://127.0.0.1:") && !source.url.contains(":\(app.port)/") && source.push == .review)
            let poller = try #require(app.sidecar.feature(AlertSourcePolling.self)).poller
            let report = try await poller.pollNow(sourceID: source.id)
            #expect(report.failure == nil && report.lines.contains("baseline weekend-works"), "\(report)")
        }
    }
}
