import Core
import Push
import Testing

@testable import SidecarKit

/// An alert's push lives until the alert's shown period ends (never longer
/// than a provider keeps a push), so a phone that was offline never shows an
/// alert that has already ended.
@Suite("Alerts: pushes expire with the alert")
struct AlertPushExpiryTests {
    static let now: Int64 = 1_800_000_000

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let start: Int64
        let end: Int64?
        let mirrored: Bool
        let expected: Int64
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "an authored alert with an end: its end", start: now - 60, end: now + 7200, mirrored: false, expected: now + 7200),
        Case(
            name: "an authored alert without an end: the 8-hour default", start: now - 60, end: nil, mirrored: false,
            expected: now - 60 + AlertFeedRules.defaultDurationSeconds),
        Case(
            name: "a mirrored alert without an end: the longest a provider keeps a push", start: now - 60, end: nil, mirrored: true,
            expected: now + 28 * 24 * 3600),
        Case(
            name: "an end beyond 28 days: capped at FCM's maximum", start: now, end: now + 90 * 24 * 3600, mirrored: false,
            expected: now + 28 * 24 * 3600),
        Case(name: "an alert that has ended: now (delivered now or never)", start: now - 7200, end: now - 60, mirrored: false, expected: now),
        Case(
            name: "an upcoming alert: until its end", start: now + 3600, end: now + 10_800, mirrored: false, expected: now + 10_800),
    ]

    @Test(arguments: cases) func theExpirationRule(_ example: Case) {
        var alert = AlertFeedRulesTests.alert(1, start: EpochSeconds(example.start), end: example.end.map { EpochSeconds($0) })
        if example.mirrored { alert.sourceID = 3 }
        #expect(AlertPushRules.expiration(for: alert, now: EpochSeconds(Self.now)).value == example.expected)
    }

    /// Every push of a send carries the expiration, which each transport turns
    /// into its own field (APNs `apns-expiration`, FCM `android.ttl`).
    @Test func everyPushOfASendExpiresAtTheAlertsEnd() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let now = app.clock.now().epochMillis / 1000
            let audience = try await AlertSendTests.audienceAndAlert(app)
            let alert = try await app.administration.edit(
                id: audience.id,
                fields: ["start": Timestamp.format(EpochSeconds(now - 60)), "end": Timestamp.format(EpochSeconds(now + 7200))])
            let recording = RecordingTransport()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            let finished = try await AlertSender(
                store: AlertStore(database: app.sidecar.database), transport: recording, clock: app.clock,
                logger: Logger(level: .error, sink: MemorySink()), pageSize: 100
            ).run(send, alert: alert.alert, translations: [])
            #expect(finished.status == "done")
            let sent = recording.sent.withLock { $0 }
            let end = now + 7200
            #expect(sent.count == 250)
            #expect(sent.allSatisfy { $0.expiration == end })
            var android = sent[0]
            android.platform = .android
            let fcm = String(decoding: FCMTransport.body(android, now: app.clock.now().epochMillis / 1000), as: UTF8.self)
            #expect(fcm.contains("\"ttl\":\"\(end - app.clock.now().epochMillis / 1000)s\""), "FCM's time to live: \(fcm)")
        }
    }
}
