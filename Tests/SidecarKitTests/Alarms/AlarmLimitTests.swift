import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// Alarm writes are limited per client, alarms per device, and a request
/// that cannot name a trip costs the OneBusAway server nothing.
@Suite("Alarms: what one client or device may ask")
struct AlarmLimitTests {
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
            let other = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "other-device"), source: "127.0.0.2")
            #expect(other.status == 201)
            // A minute later the budget is back.
            app.clock.advance(seconds: 60)
            #expect(try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "again-device")).status == 201)
        }
    }

    @Test func aDeviceHasAtMostTwentyAlarmsAndATokenTenLiveActivities() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 3600, clock: app.clock)])
            for index in 0..<20 {
                let response = try await app.post(
                    "/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "one-device", secondsBefore: String(60 + index)))
                #expect(response.status == 201)
            }
            let twentyFirst = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "one-device"))
            #expect(twentyFirst.status == 422)
            #expect((twentyFirst.json?["messages"] as? [String]) == ["This device already has 20 alarms waiting"])
            for index in 0..<10 {
                let response = try await app.post(
                    "/api/v2/regions/1/live_activities",
                    [
                        ("activity_id", "activity-\(index)"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                        ("trip_headsign", "Downtown"),
                    ], source: "127.0.0.3")
                #expect(response.status == 201)
            }
            let eleventh = try await app.post(
                "/api/v2/regions/1/live_activities",
                [
                    ("activity_id", "activity-10"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown"),
                ], source: "127.0.0.3")
            #expect(eleventh.status == 422)
            // Re-registering one of the ten (a rotated token arrives this way) is fine.
            let again = try await app.post(
                "/api/v2/regions/1/live_activities",
                [
                    ("activity_id", "activity-3"), ("push_token", "one-token"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown"),
                ], source: "127.0.0.3")
            #expect(again.status == 201)
        }
    }

    @Test func aV1AlarmWithoutTripIdentityIs422AndAsksNobody() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            let response = try await app.post("/api/v1/regions/1/alarms", [("user_push_id", "onesignal-1"), ("seconds_before", "300")])
            #expect(response.status == 422)
            #expect(response.json?["error"] as? String == "Unable to register alarm")
            #expect(response.json?["messages"] as? [String] == ["Stop can't be blank", "Trip can't be blank", "Service date can't be blank"])
            let partial = try await app.post(
                "/api/v1/regions/1/alarms",
                [
                    ("user_push_id", "onesignal-1"), ("stop_id", "1_75403"),
                    ("trip_id", "1_1"),
                ])
            #expect(partial.json?["messages"] as? [String] == ["Service date can't be blank"])
            #expect(oba.counts.trip == 0 && oba.counts.stop == 0, "the OneBusAway server was not asked")
            // A lookup that really fails still answers 502.
            let failing = try await app.post("/api/v1/regions/1/alarms", AlarmRouteTests.alarmFields("unknown-trip"))
            #expect(failing.status == 502)
        }
    }
}
