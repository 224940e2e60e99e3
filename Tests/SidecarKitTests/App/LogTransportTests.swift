import Core
import Foundation
import HTTPServer
import Push
import Testing

@testable import SidecarKit

/// `--push-transport log`: what would be pushed, in full, never the token.
@Suite("App: the log push transport")
struct LogTransportTests {
    @Test func theLogTransportPrintsTheWholePayloadAsJSONWithoutTheToken() async throws {
        let log = MemorySink()
        let transport = LogTransport(logger: Logger(level: .info, format: .text, sink: log), fingerprint: { _ in "fp-1234" }, now: { 1_000_000 })
        var ios = PushMessage(
            token: "secret-ios-token", platform: .ios, title: "OneBusAway", body: "Leaves in 5 minutes",
            data: ["arrival_and_departure": .object(["stop_id": .string("1_1")])])
        ios.attention = .timeSensitive
        ios.badge = 3
        var android = PushMessage(token: "secret-fcm-token", platform: .android, title: "OneBusAway", body: "Leaves in 5 minutes")
        android.androidChannel = "arrival_reminders"
        android.expiration = 1_000_300
        _ = await transport.send([ios, android])
        let lines = log.lines
        #expect(!lines.joined().contains("secret-"), "never a token")
        // The text format escapes quotes logfmt-style, so the payload reads back as the exact JSON.
        func payload(_ line: String) throws -> [String: Any] {
            let start = try #require(line.range(of: "payload=\"")).upperBound
            let escaped = String(line[start...].dropLast())
            let json = escaped.replacingOccurrences(of: "\\\"", with: "\"").replacingOccurrences(of: "\\\\", with: "\\")
            return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        }
        let iosLine = try #require(lines.first { $0.contains("platform=ios") })
        let aps = try #require(try payload(iosLine)["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "time-sensitive" && aps["sound"] as? String == "default" && aps["badge"] as? Int == 3)
        #expect(try payload(iosLine)["arrival_and_departure"] != nil)
        let androidPayload = try #require(lines.first { $0.contains("platform=android") })
        let fcm = try #require(try payload(androidPayload)["message"] as? [String: Any])
        let androidConfig = try #require(fcm["android"] as? [String: Any])
        #expect(
            androidConfig["ttl"] as? String == "300s"
                && (androidConfig["notification"] as? [String: Any])?["channel_id"] as? String == "arrival_reminders")
        #expect(fcm["token"] as? String == "fp-1234", "the fingerprint stands in for the token")
    }
}
