import Foundation
import HTTPServer
import Push
import TestSupport
import Testing

@testable import SidecarKit

/// An alarm that fires tells the truth (the minutes left now, a payload
/// the iOS app decodes), and a stop mid-cycle pushes no alarm twice.
@Suite("Alarms: what fires, and when the checker stops")
struct AlarmFiringTests {
    @Test func theFiredPushSaysTheMinutesLeftNowNotTheLeadTime() async throws {
        try await AlarmRouteTests.run { app, oba, gorush in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", secondsBefore: "600"))
            let stored = try #require(try await AlarmStore(database: app.sidecar.database).due(atOrBefore: EpochMillis(.max)).first)
            #expect(stored.message == "The 10 to Downtown Seattle leaves in 10 minutes", "composed from the lead time at creation")
            // The bus is running late, then suddenly early: it now leaves in 4:40.
            oba.update("t1") { $0.departure = app.clock.now().epochMillis + 280_000 }
            _ = await app.sidecar.alarmChecker.runCycle()
            let pushed = try #require(gorush.notifications.first)
            #expect(pushed["message"] as? String == "The 10 to Downtown Seattle leaves in 4 minutes")
        }
    }

    @Test func aV1AlarmWithoutAStopSequenceFiresAPushTheIOSAppCanDecode() async throws {
        try await AlarmRouteTests.run { app, oba, gorush in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            let fields = AlarmRouteTests.alarmFields("t1", push: "onesignal-1").filter { $0.0 != "stop_sequence" }
            #expect(try await app.post("/api/v1/regions/1/alarms", fields).status == 201)
            app.clock.advance(seconds: 1500 + 30)
            oba.set([AlarmRouteTests.trip("t1", departsIn: 240, clock: app.clock)])
            _ = await app.sidecar.alarmChecker.runCycle()
            let pushed = try #require(gorush.notifications.first)
            let payload = try #require((pushed["data"] as? [String: Any])?["arrival_and_departure"] as? [String: Any])
            #expect(payload["stop_sequence"] as? Int == 4, "filled from the arrival the server looked up")
            let expiration = try #require(pushed["expiration"] as? Int)
            let now = Int(app.clock.now().epochMillis / 1000)
            #expect((now + 230...now + 241).contains(expiration), "it may be delivered until the bus leaves, not after")
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
                let response = try await app.post(
                    "/api/v2/regions/1/alarms",
                    AlarmRouteTests.alarmFields("t\(index)", stop: "stop-\(index)", push: "device-\(index)"),
                    source: "127.0.\(index / 20).\(10 + index)")
                #expect(response.status == 201)
            }
            let stop = StopSignal()
            let base = app.sidecar.alarmChecker
            let checker = AlarmChecker(
                store: base.store, regions: base.regions, oba: base.oba,
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
            let pushed = gorush.tokens
            #expect(pushed.count == 30)
            #expect(Set(pushed).count == 30)
        }
    }
}
