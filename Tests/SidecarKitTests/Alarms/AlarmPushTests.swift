import Foundation
import HTTPClient
import Push
import Testing

@testable import SidecarKit

/// What an alarm push carries through each transport: it rings (sound,
/// time-sensitive on iOS, the reminders channel on Android) and expires
/// with the bus, where an alert push keeps the ordinary defaults.
@Suite("Alarms: the push that rings")
struct AlarmPushTests {
    static func alarm(_ os: PushPlatform) -> Alarm {
        Alarm(
            id: 1, token: "tok", regionID: 1, apiVersion: .v2, userPushID: "device", operatingSystem: os, apnsSandbox: false, stopID: "1_75403",
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
        #expect(
            (android["notification"] as? [String: String]) == [
                "sound": "default", "notification_priority": "PRIORITY_MAX",
                "channel_id": "arrival_reminders",
            ])
        #expect(Set((message["data"] as? [String: String] ?? [:]).keys) == ["arrival_and_departure"])
        let alert = try #require(
            try Self.object(FCMTransport.body(PushMessage(token: "t", platform: .android, title: "Detour", body: "x")))["message"]
                as? [String: Any])
        #expect(((alert["android"] as? [String: Any])?["notification"] as? [String: String]) == ["sound": "default"])
    }

    @Test func anAlarmPushRingsThroughGorush() throws {
        let gorush = GorushTransport(baseURL: "http://127.0.0.1:1", apnsTopic: "org.onebusaway.iphone", http: HTTPClient())
        let body = try Self.object(
            gorush.requestBody([
                AlarmRules.push(for: Self.alarm(.ios)), AlarmRules.push(for: Self.alarm(.android)),
                PushMessage(token: "t", platform: .ios, title: "Detour", body: "x"),
            ]))
        let notifications = try #require(body["notifications"] as? [[String: Any]])
        #expect(
            Set(notifications[0].keys) == [
                "tokens", "platform", "title", "message", "data", "sound", "priority", "interruption_level",
                "development", "topic",
            ])
        #expect(notifications[0]["sound"] as? String == "default")
        #expect(notifications[0]["interruption_level"] as? String == "time-sensitive")
        #expect(notifications[0]["priority"] as? String == "high")
        #expect(Set(notifications[1].keys) == ["tokens", "platform", "title", "message", "data", "android"])
        let android = try #require(try Self.gorushAndroid(gorush.requestBody([AlarmRules.push(for: Self.alarm(.android))])).first)
        #expect(android.android?.priority == "high")
        #expect(android.android?.notification?.channelID == "arrival_reminders")
        #expect(android.android?.notification?.sound == "default", "gorush adds no sound when an android object is sent")
        #expect(
            Set(notifications[2].keys) == ["tokens", "platform", "title", "message", "sound", "development", "topic"],
            "an alert push: ordinary sound, no time-sensitive level")
    }

    @Test func androidAlarmPushesExpireWithTheBusAndUseTheRemindersChannel() throws {
        let alarm = Alarm(
            id: 1, token: "t", regionID: 1, apiVersion: .v2, userPushID: "fcm-token", operatingSystem: .android, apnsSandbox: false,
            stopID: "1_1", tripID: "t1", serviceDate: 1, vehicleID: nil, stopSequence: 3, secondsBefore: 300, message: "m",
            failureCount: 0, departureEstimate: nil, nextCheckAt: 0, createdAt: 0)
        let message = AlarmRules.push(for: alarm, text: "The 44 leaves in 4 minutes", expiresAt: 1_000_240)
        let fcm = try #require(try JSONSerialization.jsonObject(with: Data(FCMTransport.body(message, now: 1_000_000))) as? [String: Any])
        let android = try #require((fcm["message"] as? [String: Any])?["android"] as? [String: Any])
        #expect(android["ttl"] as? String == "240s")
        #expect((android["notification"] as? [String: Any])?["channel_id"] as? String == "arrival_reminders")
        let gorush = GorushTransport(baseURL: "http://127.0.0.1:1", apnsTopic: nil, http: HTTPClient(), now: { 1_000_000 })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(gorush.requestBody([message]))) as? [String: Any])
        let notification = try #require((body["notifications"] as? [[String: Any]])?.first)
        #expect(notification["time_to_live"] == nil, "gorush's current struct has no top-level time_to_live")
        let decoded = try #require(try Self.gorushAndroid(gorush.requestBody([message])).first)
        #expect(decoded.android?.ttlSeconds == 240)
        #expect(decoded.android?.notification?.channelID == "arrival_reminders")
        // A service alert keeps the provider's default lifetime and channel.
        let alert = PushMessage(token: "t", platform: .android, title: "Detour", body: "x")
        let alertBody = try #require(try JSONSerialization.jsonObject(with: Data(FCMTransport.body(alert, now: 1_000_000))) as? [String: Any])
        #expect(((alertBody["message"] as? [String: Any])?["android"] as? [String: Any])?["ttl"] == nil)
    }

    /// The part of gorush's request struct an Android push reaches FCM v1
    /// through: appleboy/gorush `notify/notification.go` `PushNotification`
    /// (`Tokens`, `Platform`, `Title`, `Message`, `Android
    /// *messaging.AndroidConfig`), and firebase-admin-go's `AndroidConfig`
    /// JSON (`priority`, `ttl` as a duration string such as `"240s"`,
    /// `notification` with `channel_id` and `sound`). Keys decode as Go's
    /// `encoding/json` matches them; a field under any other name is lost.
    struct GorushNotification: Decodable {
        struct AndroidConfig: Decodable {
            struct Notification: Decodable {
                var channelID: String?
                var sound: String?
                enum CodingKeys: String, CodingKey {
                    case channelID = "channel_id"
                    case sound
                }
            }
            var priority: String?
            var ttl: String?
            var notification: Notification?

            /// firebase-admin-go reads `ttl` as seconds with an `s` suffix.
            var ttlSeconds: Int? {
                guard let ttl, ttl.hasSuffix("s") else { return nil }
                return Int(ttl.dropLast())
            }
        }
        var tokens: [String]
        var platform: Int
        var title: String?
        var message: String?
        var android: AndroidConfig?
    }

    static func gorushAndroid(_ body: [UInt8]) throws -> [GorushNotification] {
        struct Request: Decodable { var notifications: [GorushNotification] }
        return try JSONDecoder().decode(Request.self, from: Data(body)).notifications.filter { $0.platform == 2 }
    }
}
