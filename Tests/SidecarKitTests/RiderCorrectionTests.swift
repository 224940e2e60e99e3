import Foundation
import GTFSRealtime
import HTTPClient
import HTTPServer
import OBA
import Push
import Testing
import TestSupport
@testable import SidecarKit

/// Issue 12: an alarm that rings and tells the truth, and what outside checks found.
@Suite("Rider-facing corrections")
struct RiderCorrectionTests {
    // MARK: The text at firing

    @Test("minutes remaining, rounded down; now under a minute", arguments: [
        (Int64(-5), "leaves now"), (0, "leaves now"), (59, "leaves now"), (60, "leaves in 1 minute"), (119, "leaves in 1 minute"),
        (120, "leaves in 2 minutes"), (299, "leaves in 4 minutes"), (300, "leaves in 5 minutes"), (3_599, "leaves in 59 minutes"),
    ])
    func departurePhrase(seconds: Int64, expected: String) {
        #expect(AlarmRules.departurePhrase(secondsUntilDeparture: seconds) == expected)
    }

    @Test("the text pushed at firing", arguments: [
        ("44", "Ballard", Int64(300), "The 44 to Ballard leaves in 5 minutes"),
        ("44", "Ballard", 61, "The 44 to Ballard leaves in 1 minute"),
        ("44", "Ballard", 30, "The 44 to Ballard leaves now"),
        ("E Line", "", 600, "The E Line leaves in 10 minutes"),
        ("E Line", nil, 600, "The E Line leaves in 10 minutes"),
        (nil, "Ballard", 300, "stored text"),
        ("  ", "Ballard", 300, "stored text"),
    ] as [(String?, String?, Int64, String)])
    func firingMessage(route: String?, headsign: String?, seconds: Int64, expected: String) {
        #expect(AlarmRules.firingMessage(route: route, headsign: headsign, secondsUntilDeparture: seconds, stored: "stored text") == expected)
    }

    @Test("minutes from the predicted time when predicted, else the scheduled one")
    func minutesFromPredictedAndScheduledTimes() throws {
        let now: EpochMillis = 1_767_225_600_000
        let predicted = ArrivalAndDeparture(routeShortName: "44", tripHeadsign: "Ballard", predicted: true,
                                            predictedDepartureTime: now.adding(millis: 290_000), scheduledDepartureTime: now.adding(millis: 600_000))
        let scheduled = ArrivalAndDeparture(routeShortName: "44", tripHeadsign: "Ballard", predicted: false,
                                            predictedDepartureTime: 0, scheduledDepartureTime: now.adding(millis: 600_000))
        for (entry, expected) in [(predicted, "The 44 to Ballard leaves in 4 minutes"), (scheduled, "The 44 to Ballard leaves in 10 minutes")] {
            let departure = try #require(entry.effectiveDepartureTime)
            let seconds = AlarmRules.secondsUntilDeparture(departure, currentTime: now)
            #expect(AlarmRules.firingMessage(route: AlarmRules.routeName(of: entry, references: nil), headsign: entry.tripHeadsign,
                                             secondsUntilDeparture: seconds, stored: "x") == expected)
        }
    }

    @Test func theFiredPushSaysTheMinutesLeftNowNotTheLeadTime() async throws {
        try await AlarmRouteTests.run { app, oba, gorush in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", secondsBefore: "600"))
            let stored = try #require(try await AlarmStore(database: app.sidecar.database).due(atOrBefore: .max).first)
            #expect(stored.message == "The 10 to Downtown Seattle leaves in 10 minutes", "composed from the lead time at creation")
            // The bus is running late, then suddenly early: it now leaves in 4:40.
            oba.update("t1") { $0.departure = app.clock.now().epochMillis + 280_000 }
            _ = await app.sidecar.alarmChecker.runCycle()
            let pushed = try #require(gorush.notifications.first)
            #expect(pushed["message"] as? String == "The 10 to Downtown Seattle leaves in 4 minutes")
        }
    }

    // MARK: Payloads that ring

    static func alarm(_ os: PushPlatform) -> Alarm {
        Alarm(id: 1, token: "tok", regionID: 1, apiVersion: .v2, userPushID: "device", operatingSystem: os, apnsSandbox: false, stopID: "1_75403",
              tripID: "1_123", serviceDate: 1_767_168_000_000, vehicleID: nil, stopSequence: 4, secondsBefore: 600,
              message: "The 44 to Ballard leaves in 10 minutes", failureCount: 0, departureEstimate: nil, nextCheckAt: 0, createdAt: 0)
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func anAlarmPushRingsThroughDirectAPNs() throws {
        let root = try Self.object(APNsTransport.payload(AlarmRules.push(for: Self.alarm(.ios), text: "The 44 to Ballard leaves now")))
        #expect(Set(root.keys) == ["aps", "arrival_and_departure"])
        let aps = try #require(root["aps"] as? [String: Any])
        #expect(Set(aps.keys) == ["alert", "sound", "interruption-level"])
        #expect(aps["sound"] as? String == "default")
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect((aps["alert"] as? [String: String]) == ["title": "OneBusAway", "body": "The 44 to Ballard leaves now"])
        // An alert push keeps the ordinary sound and level.
        let alert = try Self.object(APNsTransport.payload(PushMessage(token: "t", platform: .ios, title: "Detour", body: "Route 44")))
        let alertAPS = try #require(alert["aps"] as? [String: Any])
        #expect(Set(alertAPS.keys) == ["alert", "sound"])
        #expect(alertAPS["sound"] as? String == "default")
    }

    @Test func anAlarmPushRingsThroughFCM() throws {
        let message = try #require(try Self.object(FCMTransport.body(AlarmRules.push(for: Self.alarm(.android))))["message"] as? [String: Any])
        #expect(Set(message.keys) == ["token", "android", "notification", "data"])
        let android = try #require(message["android"] as? [String: Any])
        #expect(Set(android.keys) == ["priority", "notification"])
        #expect(android["priority"] as? String == "high")
        #expect((android["notification"] as? [String: String]) == ["sound": "default", "notification_priority": "PRIORITY_MAX",
                                                                  "channel_id": "arrival_reminders"])
        #expect(Set((message["data"] as? [String: String] ?? [:]).keys) == ["arrival_and_departure"])
        let alert = try #require(try Self.object(FCMTransport.body(PushMessage(token: "t", platform: .android, title: "Detour", body: "x")))["message"]
            as? [String: Any])
        #expect(((alert["android"] as? [String: Any])?["notification"] as? [String: String]) == ["sound": "default"])
    }

    @Test func anAlarmPushRingsThroughGorush() throws {
        let gorush = GorushTransport(baseURL: "http://127.0.0.1:1", apnsTopic: "org.onebusaway.iphone", http: HTTPClient())
        let body = try Self.object(gorush.requestBody([AlarmRules.push(for: Self.alarm(.ios)), AlarmRules.push(for: Self.alarm(.android)),
                                                       PushMessage(token: "t", platform: .ios, title: "Detour", body: "x")]))
        let notifications = try #require(body["notifications"] as? [[String: Any]])
        #expect(Set(notifications[0].keys) == ["tokens", "platform", "title", "message", "data", "sound", "priority", "interruption_level",
                                               "development", "topic"])
        #expect(notifications[0]["sound"] as? String == "default")
        #expect(notifications[0]["interruption_level"] as? String == "time-sensitive")
        #expect(notifications[0]["priority"] as? String == "high")
        #expect(Set(notifications[1].keys) == ["tokens", "platform", "title", "message", "data", "sound", "priority", "notification"])
        #expect(notifications[1]["notification"] as? [String: String] == ["android_channel_id": "arrival_reminders"])
        #expect(notifications[1]["sound"] as? String == "default")
        #expect(notifications[1]["priority"] as? String == "high")
        #expect(Set(notifications[2].keys) == ["tokens", "platform", "title", "message", "sound", "development", "topic"],
                "an alert push: ordinary sound, no time-sensitive level")
    }

    // MARK: The rest

    @Test func loopIntervalsAcceptOneSecond() throws {
        guard case .serve(let configuration) = try CommandLineInterface.parse(
            ["serve", "--alarm-check-interval", "1", "--live-activity-interval", "1"], environment: [:]) else {
            Issue.record("not a serve command"); return
        }
        #expect(configuration.alarmCheckIntervalSeconds == 1)
        #expect(configuration.liveActivityIntervalSeconds == 1)
        #expect(throws: CommandLineError.self) { try CommandLineInterface.parse(["serve", "--alarm-check-interval", "0"], environment: [:]) }
    }

    @Test func aV1AlarmWithoutTripIdentityIs422AndAsksNobody() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            let response = try await app.post("/api/v1/regions/1/alarms", [("user_push_id", "onesignal-1"), ("seconds_before", "300")])
            #expect(response.status == 422)
            #expect(response.json?["error"] as? String == "Unable to register alarm")
            #expect(response.json?["messages"] as? [String] == ["Stop can't be blank", "Trip can't be blank", "Service date can't be blank"])
            let partial = try await app.post("/api/v1/regions/1/alarms", [("user_push_id", "onesignal-1"), ("stop_id", "1_75403"),
                                                                         ("trip_id", "1_1")])
            #expect(partial.json?["messages"] as? [String] == ["Service date can't be blank"])
            #expect(oba.counts.trip == 0 && oba.counts.stop == 0, "the OneBusAway server was not asked")
            // A lookup that really fails still answers 502.
            let failing = try await app.post("/api/v1/regions/1/alarms", AlarmRouteTests.alarmFields("unknown-trip"))
            #expect(failing.status == 502)
        }
    }

    @Test func theFeedIsStampedWithTheMinuteOfTheResponseAndLastModifiedWithItsLastChange() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let start = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 3600 + 59)
            let response = try await app.send("GET", "/api/v1/regions/0/alerts")
            let empty = try FeedMessage(decoding: response.body)
            #expect(empty.entities.isEmpty)
            let now = app.clock.now().epochMillis / 1000
            #expect(empty.header.timestamp == UInt64(now / 60 * 60), "the Android app's now: rounded down, never ahead")
            #expect(response.header("Last-Modified") == HTTPDate.format(start), "an untouched region: the server's start")
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Gone soon", "start": AlertRouteTests.start])
            app.clock.advance(seconds: 60)
            try await app.administration.delete(id: alert.id)
            let deletedAt = app.clock.now().epochMillis / 1000
            app.clock.advance(seconds: 600)
            let emptiedResponse = try await app.send("GET", "/api/v1/regions/1/alerts")
            let emptied = try FeedMessage(decoding: emptiedResponse.body)
            #expect(emptied.entities.isEmpty)
            #expect(emptied.header.timestamp == UInt64((deletedAt + 600) / 60 * 60), "stamped now, not at the last change")
            #expect(emptiedResponse.header("Last-Modified") == HTTPDate.format(deletedAt), "the time its content last changed")
        }
    }

    @Test func debugLogsSayWhatTheLoopsAndThrottlesDecidedButNoToken() async throws {
        try await AlarmRouteTests.run { app, oba, _ in
            oba.set([AlarmRouteTests.trip("t1", departsIn: 1800, clock: app.clock)])
            _ = try await app.post("/api/v2/regions/1/alarms", AlarmRouteTests.alarmFields("t1", push: "secret-device-token"))
            _ = await app.sidecar.alarmChecker.runCycle()
            for _ in 0..<31 { _ = try await app.post("/api/v2/regions/1/push_registrations", [("token", "secret-device-token"), ("operating_system", "ios")]) }
            let lines = app.log.lines
            #expect(lines.contains { $0.contains("DEBUG alarm stop checked") && $0.contains("stop=1_11420") && $0.contains("wait=1") })
            #expect(lines.contains { $0.contains("DEBUG upstream request") && $0.contains("method=arrivals-and-departures-for-stop")
                && $0.contains("duration_ms=") })
            #expect(lines.contains { $0.contains("DEBUG throttled limiter=push_registrations key=127.0.0.1") })
            #expect(!lines.contains { $0.contains("secret-device-token") || $0.contains("TEST-KEY") }, "never a token or a key")
        }
    }

    @Test func secretsCanComeFromFiles() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "sk_live_from_file\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        guard case .serve(let fromFlag) = try CommandLineInterface.parse(["serve", "--stripe-secret-key-file", file.path], environment: [:]),
              case .serve(let fromEnvironment) = try CommandLineInterface.parse(["serve"], environment: ["SIDECAR_OBA_API_KEY_FILE": file.path]) else {
            Issue.record("not serve commands"); return
        }
        #expect(fromFlag.stripeSecretKey == "sk_live_from_file")
        #expect(fromEnvironment.obaAPIKey == "sk_live_from_file")
        do {
            _ = try CommandLineInterface.parse(["serve", "--pirate-weather-key-file", "/nonexistent/key"], environment: [:])
            Issue.record("a missing secret file was accepted")
        } catch {
            #expect(error.description == "--pirate-weather-key-file: cannot read /nonexistent/key")
        }
    }
}
