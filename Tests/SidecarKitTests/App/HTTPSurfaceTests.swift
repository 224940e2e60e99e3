import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// What every route shares on the open internet: every stored string is
/// capped, throttles hold a bounded number of clients, and every bad input
/// gets a clear 4xx in the route's error shape and leaves the server
/// answering. (Raw-socket hardening is in HTTPServerTests.)
@Suite("App: the HTTP surface on the open internet")
struct HTTPSurfaceTests {
    static let huge = String(repeating: "x", count: 500_000)

    @Test func aFieldOfHalfAMillionCharactersIsRefusedOnEveryWrite() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            let liveActivity = try await app.post(
                "/api/v2/regions/1/live_activities",
                [
                    ("activity_id", Self.huge), ("push_token", "abc"), ("stop_id", "1_11420"), ("route_short_name", "10"),
                    ("trip_headsign", "Downtown"),
                ])
            #expect(liveActivity.status == 422)
            #expect((liveActivity.json?["messages"] as? [String])?.contains("Activity is too long (maximum is 255 characters)") == true)
            let cases: [(path: String, fields: [(String, String)], message: String)] = [
                (
                    "/api/v2/regions/1/live_activities",
                    [
                        ("activity_id", "a"), ("push_token", "abc"), ("stop_id", "1"), ("route_short_name", Self.huge),
                        ("trip_headsign", "Downtown"),
                    ], "Route short name is too long"
                ),
                ("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: Self.huge), "Push identifier is too long"),
                ("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", stop: Self.huge), "Stop is too long"),
                ("/api/v1/regions/1/alarms", AlarmRouteTests.alarmFields(Self.huge), "Trip is too long"),
                (
                    "/api/v2/regions/1/push_registrations", [("token", "t-000000"), ("operating_system", "ios"), ("locale", Self.huge)],
                    "Locale is too long"
                ),
                (
                    "/api/v2/regions/1/ghost_bus_reports",
                    [
                        ("user_identifier", Self.huge), ("trip_identifier", "t"), ("service_date", "1"),
                        ("wait_duration_minutes", "5"),
                    ], "User identifier is too long"
                ),
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

    @Test func aLimiterKeepsAtMostItsKeysAndAFixedSizeFormOfLongOnes() {
        let limiter = FixedWindowRateLimiter(limit: 5, windowSeconds: 86_400, maxKeys: 1000, now: { 1_000_000 })
        for number in 0..<5000 { _ = limiter.hit(String(repeating: "u", count: 8000) + String(number)) }
        #expect(limiter.trackedKeys == 1000, "the oldest are forgotten")
        #expect(FixedWindowRateLimiter.boundedKey(String(repeating: "x", count: 8192)).utf8.count <= 40)
        #expect(FixedWindowRateLimiter.boundedKey("127.0.0.1") == "127.0.0.1")
        // A key it still holds keeps its count.
        let small = FixedWindowRateLimiter(limit: 2, windowSeconds: 60, maxKeys: 10, now: { 0 })
        #expect(small.hit("a") == .allowed && small.hit("a") == .allowed)
        if case .limited = small.hit("a") {} else { Issue.record("the third hit is over the limit") }
    }

    @Test func aPathThatBeginsWithTwoSlashesIsServed() async throws {
        try await TestSidecar.run({ _ in }) { app in
            let feed = try await app.send("GET", "//api/v1/regions/1/alerts")
            #expect(feed.status == 200)
            let registration = try await app.post("//api/v2/regions/1/push_registrations", [("token", "0a-00000"), ("operating_system", "android")])
            #expect(registration.status == 204)
        }
    }

    // MARK: Bad input, a clear 4xx in each route's shape

    static let path = "/api/v2/regions/1/push_registrations"

    static func expectMessagesShape(_ response: RawResponse, status: Int, mentioning fragment: String) {
        #expect(response.status == status, "\(response.text)")
        #expect(response.json?["error"] as? String != nil, "\(response.text)")
        let messages = response.json?["messages"] as? [String] ?? []
        #expect(messages.contains { $0.contains(fragment) }, "\(messages)")
    }

    @Test func eachBadInputIsAClear4xxAndTheServerStaysUp() async throws {
        try await TestSidecar.run({ $0.pushRegistrationLimit = 0 }) { (app: TestSidecar) async throws in
            let json = ["Content-Type": "application/json"]
            let form = ["Content-Type": "application/x-www-form-urlencoded"]

            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: json, body: Array(#"{"token": "abc", "#.utf8)),
                status: 422, mentioning: "not valid JSON")
            // Valid JSON that is not an object carries no parameters (Rails' _json).
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: json, body: Array(#"["token"]"#.utf8)),
                status: 422, mentioning: "Token can't be blank")
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: json, body: Array(#"{"token": false, "operating_system": "ios"}"#.utf8)),
                status: 422, mentioning: "Token can't be blank")
            Self.expectMessagesShape(
                try await app.send(
                    "POST", Self.path, headers: ["Content-Type": "text/plain"],
                    body: Array(#"{"token":"abc","operating_system":"ios"}"#.utf8)),
                status: 422, mentioning: "Unsupported Content-Type")
            // JSON sent as a form is read as a form: nothing it meant arrives.
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: form, body: Array(#"{"token":"abc","operating_system":"ios"}"#.utf8)),
                status: 422, mentioning: "can't be blank")
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: form, body: Array("token=%zz&operating_system=ios".utf8)),
                status: 422, mentioning: "percent-encoding")
            Self.expectMessagesShape(
                try await app.send("POST", Self.path + "?token=%E0%A4%A&operating_system=ios"),
                status: 422, mentioning: "percent-encoding")
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: form, body: Array("token=%FF%FE&operating_system=ios".utf8)),
                status: 422, mentioning: "UTF-8")
            Self.expectMessagesShape(
                try await app.send(
                    "POST", Self.path, headers: form, body: Array("token=".utf8) + [0xC3, 0x28] + Array("&operating_system=ios".utf8)),
                status: 422, mentioning: "UTF-8")
            Self.expectMessagesShape(
                try await app.send(
                    "POST", Self.path, headers: json, body: Array(#"{"token":""#.utf8) + [0xFF] + Array(#"","operating_system":"ios"}"#.utf8)),
                status: 422, mentioning: "JSON")
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: form, body: [UInt8](repeating: 0x61, count: (1 << 20) + 1)),
                status: 413, mentioning: "exceeds")
            let tenThousand = (0..<10_000).map { "p\($0)=1" }.joined(separator: "&") + "&token=t&operating_system=ios"
            Self.expectMessagesShape(
                try await app.send("POST", Self.path, headers: form, body: Array(tenThousand.utf8)),
                status: 422, mentioning: "more than 1000 parameters")
            let queryFlood = try await app.send("POST", Self.path + "?" + (0..<10_000).map { "q\($0)=1" }.joined(separator: "&"))
            #expect((400..<500).contains(queryFlood.status))
            Self.expectMessagesShape(
                try await app.post(Self.path, [("token", String(repeating: "a", count: 5000)), ("operating_system", "ios")]),
                status: 422, mentioning: "Token is too long")
            for region in ["abc", "-3", "99999999999999999999"] {
                let response = try await app.post(
                    "/api/v2/regions/\(region)/push_registrations", [("token", "t-000000"), ("operating_system", "ios")])
                #expect(response.status == 404)
                #expect(response.text == #"{"error":"Couldn't find Region"}"#)
            }
            // A client that hangs up mid-body.
            var partial = Array(
                "POST \(Self.path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n".utf8)
            partial += Array("token=abc&operating_system=i".utf8)
            try await RawHTTPClient.send(port: app.port, partial, closeAfterSend: true)

            #expect(try await app.send("GET", "/healthz").status == 200)
            #expect(try await app.post(Self.path, [("token", "after-00"), ("operating_system", "ios")]).status == 204)
            #expect(try await app.pushStore.count() == 1, "no bad input stored anything")
        }
    }

    @Test func malformedAndOversizedBodiesAreClear4xxInEachRoutesShape() async throws {
        try await TestSidecar.run { (app: TestSidecar) async throws in
            let json = ["Content-Type": "application/json"]
            let survey = try await app.send("POST", "/api/v1/survey_responses", headers: json, body: Array(#"{"survey_id": "#.utf8))
            #expect(survey.status == 422)
            #expect(survey.json?["errors"] != nil, "the survey routes' shape")
            let ghost = try await app.send(
                "POST", "/api/v2/regions/1/ghost_bus_reports", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: [UInt8](repeating: 0x61, count: (1 << 20) + 10))
            #expect(ghost.status == 413)
            let badForm = try await app.send(
                "POST", "/api/v2/regions/1/ghost_bus_reports", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Array("user_identifier=%GG".utf8))
            #expect(badForm.status == 422)
            #expect(badForm.json?["messages"] != nil)
            #expect(try await app.send("GET", "/api/v1/regions/abc/surveys?user_id=x").status == 404)
            #expect(try await app.send("GET", "/api/v1/regions/-3/weather").status == 404)
            #expect(try await app.send("GET", "/api/v1/regions/99999999999999999999/vehicles?query=abc").status == 404)
            #expect(try await app.send("GET", "/healthz").status == 200)
        }
    }
}
