import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

@Suite("PushFeedback: dead tokens (spec §6.5)")
struct PushFeedbackTests {
    @Test func gorushFeedbackDeletesDeadTokensAndNeedsTheSecret() async throws {
        try await TestSidecar.run({ $0.gorushWebhookSecret = "hook-secret" }) { (app: TestSidecar) async throws in
            for token in ["dead-a-0", "dead-b-0", "alive-00"] {
                _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", token), ("operating_system", "ios")])
                _ = try await app.post("/api/v2/regions/0/push_registrations", [("token", token), ("operating_system", "ios")])
            }
            let body = Array(
                #"[{"type":"failed-push","platform":"ios","token":"dead-a-0","message":"x","error":"Unregistered"},{"type":"failed-push","platform":"ios","token":"alive-00","message":"x","error":"TooManyRequests"},{"type":"failed-push","platform":"ios","token":"dead-b-0","error":"BadDeviceToken"}]"#
                    .utf8)
            #expect(try await app.send("POST", "/webhooks/gorush", headers: ["Content-Type": "application/json"], body: body).status == 401)
            let response = try await app.send(
                "POST", "/webhooks/gorush", headers: ["Content-Type": "application/json", "Authorization": "Bearer hook-secret"], body: body)
            #expect(response.status == 200)
            #expect(response.json?["deleted"] as? Int == 4, "both regions")
            #expect(try await app.pushStore.count() == 2)
            #expect(try await app.pushStore.find(regionID: 1, token: "alive-00") != nil, "a transient failure keeps the token")
            let single = Array(#"{"type":"failed-push","platform":"android","token":"alive-00","error":"NotRegistered"}"#.utf8)
            _ = try await app.send(
                "POST", "/webhooks/gorush", headers: ["Authorization": "Bearer hook-secret", "Content-Type": "application/json"], body: single)
            #expect(try await app.pushStore.count() == 0)
        }
    }

    @Test func aDeadTokenFromAnAlarmPushLeavesTheAlertAudience() async throws {
        let clock = ManualClock()
        let oba = try FakeOBA { clock.now().epochMillis }
        let gorush = try FakeGorush()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("feedback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let regions = try oba.regionsFile(in: directory)
        try await TestSidecar.run(
            clock: clock,
            {
                $0.regions = regions
                $0.gorushURL = gorush.url
                $0.runsAlarmChecker = false
            }
        ) { (app: TestSidecar) async throws in
            oba.set([FakeOBA.Trip(stopID: "1_1", tripID: "t1", serviceDate: 1, departure: clock.now().epochMillis + 200_000)])
            gorush.failures.withLock { $0 = ["gone-device": "Unregistered"] }
            _ = try await app.post(
                "/api/v2/regions/1/alarms",
                [
                    ("user_push_id", "gone-device"), ("operating_system", "ios"), ("stop_id", "1_1"),
                    ("trip_id", "t1"), ("service_date", "1"), ("seconds_before", "600"),
                ])
            #expect(try await app.pushStore.find(regionID: 1, token: "gone-device") != nil, "v2 alarm creation registered it")
            #expect(await app.sidecar.alarmChecker.runCycle().pushFailures == 1)
            #expect(try await app.pushStore.find(regionID: 1, token: "gone-device") == nil)
        }
        await oba.server.shutdown()
        await gorush.server.shutdown()
    }

    @Test func theGorushWebhookExistsOnlyWithASecret() async throws {
        try await TestSidecar.run { app in
            let response = try await app.send(
                "POST", "/webhooks/gorush", headers: ["Content-Type": "application/json"],
                body: Array(#"{"token":"anyone","error":"Unregistered"}"#.utf8))
            #expect(response.status == 404)
        }
        try await TestSidecar.run({ $0.gorushWebhookSecret = "s3cret" }) { app in
            _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", "victim-0"), ("operating_system", "ios")])
            let body = Array(#"{"token":"victim-0","error":"Unregistered"}"#.utf8)
            let unauthorized = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cre"], body: body)
            #expect(unauthorized.status == 401)
            let invalid = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cret"], body: Array("{not json".utf8))
            #expect(invalid.status == 400)
            #expect(try await app.pushStore.find(regionID: 1, token: "victim-0") != nil)
            let accepted = try await app.send("POST", "/webhooks/gorush", headers: ["Authorization": "Bearer s3cret"], body: body)
            #expect(accepted.status == 200)
            #expect(try await app.pushStore.find(regionID: 1, token: "victim-0") == nil)
        }
    }
}
