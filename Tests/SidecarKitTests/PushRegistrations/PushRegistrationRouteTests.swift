import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("PushRegistrations: POST/DELETE /api/v2/regions/{id}/push_registrations")
struct PushRegistrationRouteTests {
    static let path = "/api/v2/regions/1/push_registrations"

    @Test func formRegistrationIsStoredAndAnswered204WithNoBody() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let response = try await app.post(
                Self.path,
                [
                    ("token", "01abff007f"), ("operating_system", "ios"), ("locale", "es-MX"),
                    ("test_device", "false"), ("apns_sandbox", "1"),
                ])
            #expect(response.status == 204)
            #expect(response.body.isEmpty)
            let stored = try #require(try await app.pushStore.find(regionID: 1, token: "01abff007f"))
            #expect(stored.operatingSystem == .ios)
            #expect(stored.locale == "es")
            #expect(stored.rawLocale == "es-MX")
            #expect(stored.apnsSandbox)
            #expect(!stored.testDevice)
            #expect(stored.lastSeenAt == app.clock.now())
        }
    }

    @Test func jsonRegistrationWithSlugAndTrailingSlash() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let response = try await app.postJSON(
                "/api/v2/regions/1-puget-sound/push_registrations/",
                #"{"token":"fcm:abc-","operating_system":"android","locale":"zh-TW","test_device":true,"description":"Pixel 9","apns_sandbox":"true"}"#
            )
            #expect(response.status == 204)
            let stored = try #require(try await app.pushStore.find(regionID: 1, token: "fcm:abc-"))
            #expect(stored.locale == "zh-Hant")
            #expect(stored.testDevice)
            #expect(stored.description == "Pixel 9")
            #expect(!stored.apnsSandbox, "cleared for Android")
        }
    }

    @Test func regionZeroIsARealRegionAndRegionsAreSeparate() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            #expect(try await app.post("/api/v2/regions/0/push_registrations", [("token", "t-000000"), ("operating_system", "ios")]).status == 204)
            #expect(try await app.pushStore.find(regionID: 0, token: "t-000000") != nil)
            #expect(try await app.pushStore.find(regionID: 1, token: "t-000000") == nil)
            #expect(try await app.send("DELETE", "/api/v2/regions/1/push_registrations?token=t-000000").status == 404)
            #expect(try await app.send("DELETE", "/api/v2/regions/0/push_registrations?token=t-000000").status == 204)
        }
    }

    @Test func stickyUpsertOverHTTP() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            _ = try await app.post(
                Self.path,
                [
                    ("token", "t-000000"), ("operating_system", "ios"), ("locale", "vi"), ("test_device", "1"),
                    ("description", "Lab iPhone"), ("apns_sandbox", "true"),
                ])
            app.clock.advance(seconds: 3600)
            // The launch-time re-POST omits the sticky fields and apns_sandbox.
            #expect(
                try await app.postJSON(Self.path, #"{"token":"t-000000","operating_system":"ios","locale":null,"test_device":null}"#).status == 204)
            var stored = try #require(try await app.pushStore.find(regionID: 1, token: "t-000000"))
            #expect(stored.locale == "vi")
            #expect(stored.testDevice)
            #expect(stored.description == "Lab iPhone")
            #expect(!stored.apnsSandbox)
            #expect(stored.lastSeenAt == app.clock.now())
            #expect(stored.createdAt == app.clock.now().addingTimeInterval(-3600))
            // Explicit false demotes and clears the description.
            #expect(try await app.post(Self.path, [("token", "t-000000"), ("operating_system", "ios"), ("test_device", "false")]).status == 204)
            stored = try #require(try await app.pushStore.find(regionID: 1, token: "t-000000"))
            #expect(!stored.testDevice)
            #expect(stored.description == nil)
            #expect(try await app.pushStore.count() == 1)
        }
    }

    @Test(
        "validation failures are 422 in the messages shape",
        arguments: [
            ([("operating_system", "ios")], "Token can't be blank"),
            ([("token", "t-000000")], "Operating system can't be blank"),
            ([("token", "t-000000"), ("operating_system", "blackberry")], "Operating system is not included in the list"),
            ([("token", String(repeating: "f", count: 5000)), ("operating_system", "ios")], "Token is too long (maximum is 4096 characters)"),
            ([("token", "t-000000"), ("operating_system", "ios"), ("test_device", "true")], "Description can't be blank for a test device"),
        ])
    func rejects(fields: [(String, String)], message: String) async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let response = try await app.post(Self.path, fields)
            #expect(response.status == 422)
            #expect(response.json?["error"] as? String == "Unable to register device")
            #expect((response.json?["messages"] as? [String])?.contains(message) == true, "\(response.text)")
            #expect(try await app.pushStore.count() == 0)
        }
    }

    @Test func deleteByQueryOrBody() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            for token in ["a-000000", "b-000000", "c-000000"] { _ = try await app.post(Self.path, [("token", token), ("operating_system", "ios")]) }
            let byQuery = try await app.send("DELETE", Self.path + "?token=a-000000")
            #expect(byQuery.status == 204)
            #expect(byQuery.body.isEmpty)
            let byForm = try await app.send(
                "DELETE", Self.path, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: Array("token=b-000000".utf8))
            #expect(byForm.status == 204)
            let byJSON = try await app.send(
                "DELETE", Self.path, headers: ["Content-Type": "application/json"], body: Array(#"{"token":"c-000000"}"#.utf8))
            #expect(byJSON.status == 204)
            let again = try await app.send("DELETE", Self.path + "?token=a-000000")
            #expect(again.status == 404)
            #expect(again.body.isEmpty)
            #expect(try await app.send("DELETE", Self.path).status == 404)
            #expect(try await app.pushStore.count() == 0)
        }
    }

    @Test func concurrentFirstRegistrationsOfOneTokenAllSucceed() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<25 {
                    group.addTask {
                        try await app.post(Self.path, [("token", "same-new-token"), ("operating_system", index % 2 == 0 ? "ios" : "android")]).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 204, count: 25))
            #expect(try await app.pushStore.count() == 1)
        }
    }

    @Test func throttleIs30PerMinutePerPeerSharedByPostAndDelete() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            for index in 0..<29 {
                let response = try await app.post(Self.path, [("token", "push-token-\(index)"), ("operating_system", "ios")])
                #expect(response.status == 204)
            }
            #expect(try await app.send("DELETE", Self.path + "?token=push-token-0").status == 204, "the 30th request")
            let limited = try await app.post(Self.path, [("token", "x-000000"), ("operating_system", "ios")])
            #expect(limited.status == 429)
            #expect(limited.header("Retry-After") == "60")
            #expect(limited.json?["error"] as? String != nil)
            #expect(try await app.send("DELETE", Self.path + "?token=t1").status == 429, "DELETE shares the bucket")
            // Keyed on the TCP peer, never on X-Forwarded-For.
            #expect(try await app.send("DELETE", Self.path + "?token=t1", headers: ["X-Forwarded-For": "203.0.113.9"]).status == 429)
            #expect(try await app.post(Self.path, [("token", "y-000000"), ("operating_system", "ios")], source: "127.0.0.2").status == 204)
            // Other paths are not throttled.
            #expect(try await app.send("GET", "/healthz").status == 200)
            app.clock.advance(seconds: 60)
            #expect(try await app.post(Self.path, [("token", "z-000000"), ("operating_system", "ios")]).status == 204)
        }
    }

    @Test func throttleCanBeDisabled() async throws {
        try await TestSidecar.run({ $0.pushRegistrationLimit = 0 }) { (app: TestSidecar) async throws in
            for index in 0..<40 {
                #expect(try await app.post(Self.path, [("token", "push-token-\(index)"), ("operating_system", "ios")]).status == 204)
            }
        }
    }

    @Test func unknownRegionsAre404() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            for region in ["abc", "-3", "99999999999999999999", "999", "%2D3"] {
                let response = try await app.post(
                    "/api/v2/regions/\(region)/push_registrations", [("token", "t-000000"), ("operating_system", "ios")])
                #expect(response.status == 404, "region \(region)")
                #expect(response.json?["error"] as? String == "Couldn't find Region")
                let delete = try await app.send("DELETE", "/api/v2/regions/\(region)/push_registrations?token=t")
                #expect(delete.status == 404)
            }
            let unknownPath = try await app.send("GET", "/api/v2/regions/1/nothing")
            #expect(unknownPath.status == 404)
            #expect(unknownPath.json?["error"] as? String == "Not Found")
        }
    }

    @Test func logsNeverCarryTokensOrAppUID() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let secret = "a1b2c3SECRETTOKEN"
            _ = try await app.post(
                Self.path + "?app_uid=RIDER-UID-123&key=org.example", [("token", secret), ("operating_system", "ios"), ("apns_sandbox", "maybe")])
            _ = try await app.send("DELETE", Self.path + "?token=\(secret)&app_uid=RIDER-UID-123")
            _ = try await app.post(Self.path + "?app_uid=RIDER-UID-123", [("token", secret), ("operating_system", "nokia")])
            let lines = app.log.lines
            #expect(
                lines.contains {
                    $0.contains("route=/api/v2/regions/:region/push_registrations") && $0.contains("status=204") && $0.contains("region=1")
                })
            #expect(lines.contains { $0.contains("unrecognized apns_sandbox") })
            #expect(!lines.contains { $0.contains(secret) || $0.contains("RIDER-UID") || $0.contains("org.example") })
        }
    }

    @Test func dailyPruneDropsRegistrationsUnseenFor180Days() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            // The test advances the clock only once the pruner has finished its
            // cycle and sleeps until its next one: a pruner still mid-cycle
            // would go to sleep after the advance and miss the day it tests.
            // (Counting every loop's sleepers would not do: a loop not yet
            // asleep when counted makes any later count look complete.)
            let pruner = app.sidecar.pruner
            func prunes() -> Int { app.log.lines.filter { $0.contains("pruned stale push registrations") }.count }
            func prunedAndAsleep(after cycles: Int) async throws -> Bool {
                try await app.eventually {
                    prunes() > cycles && app.clock.sleeperCount(until: app.clock.now().addingTimeInterval(pruner.cycleSeconds)) >= 1
                }
            }
            #expect(try await prunedAndAsleep(after: 0))
            _ = try await app.post(Self.path, [("token", "old-0000"), ("operating_system", "ios")])
            var cycles = prunes()
            app.clock.advance(seconds: 100 * 86_400)
            #expect(try await prunedAndAsleep(after: cycles))
            _ = try await app.post(Self.path, [("token", "recent-0"), ("operating_system", "android")])
            // Exactly 180 days after "old" was last seen; the daily loop wakes.
            cycles = prunes()
            app.clock.advance(seconds: 80 * 86_400)
            #expect(try await prunedAndAsleep(after: cycles))
            #expect(try await app.pushStore.find(regionID: 1, token: "old-0000") == nil)
            #expect(try await app.pushStore.find(regionID: 1, token: "recent-0") != nil)
            // A re-registration refreshes last_seen_at and so the retention clock:
            // the loop's cycle 179 days on keeps it, the one a day later drops it.
            // (The test waits for the loop's own cycles; calling pruneOnce beside
            // them would race the loop for the row.)
            _ = try await app.post(Self.path, [("token", "recent-0"), ("operating_system", "android")])
            cycles = prunes()
            app.clock.advance(seconds: 179 * 86_400)
            #expect(try await prunedAndAsleep(after: cycles))
            #expect(try await app.pushStore.find(regionID: 1, token: "recent-0") != nil)
            cycles = prunes()
            app.clock.advance(seconds: 86_400)
            #expect(try await prunedAndAsleep(after: cycles))
            #expect(try await app.pushStore.find(regionID: 1, token: "recent-0") == nil)
            #expect(await pruner.pruneOnce() == 0)
        }
    }
}
