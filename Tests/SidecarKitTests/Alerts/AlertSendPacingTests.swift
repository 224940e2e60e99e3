import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Paced fan-out (issue 40): a region's pace spreads a send over minutes,
/// the confirmation says when the last device gets it, severe alerts go at
/// full speed.
@Suite("Alerts: paced fan-out")
struct AlertSendPacingTests {
    @Test(arguments: [
        ("600", 600), ("0", 0), ("none", 0), ("", 0), (" 1000000 ", 1_000_000), ("60", 60),
    ])
    func pacesARegionMaySet(_ text: String, _ expected: Int) throws {
        #expect(try AlertSendPacing.parse(text).get() == expected)
    }

    @Test(arguments: ["59", "1000001", "-5", "fast", "6.5"])
    func pacesRefused(_ text: String) {
        #expect(throws: ValidationFailure.self) { try AlertSendPacing.parse(text).get() }
    }

    @Test func severeAlertsAreNotPacedAndPagesAreTenSecondsWorth() {
        var alert = AlertPublishCheckTests.alert()
        #expect(AlertSendPacing.pace(for: alert, perMinute: 600) == 600)
        #expect(AlertSendPacing.pace(for: alert, perMinute: 0) == nil)
        alert.severity = .severe
        #expect(AlertSendPacing.pace(for: alert, perMinute: 600) == nil, "urgent: full speed")
        #expect(AlertSendPacing.pageSize(pace: 600, base: 1000) == 100)
        #expect(AlertSendPacing.pageSize(pace: 60, base: 1000) == 10)
        #expect(AlertSendPacing.pageSize(pace: 1_000_000, base: 1000) == 1000)
        #expect(AlertSendPacing.due(sent: 300, pace: 600, runStartedAt: 1000) == 1030)
        #expect(AlertSendPacing.lastDevice(audience: 100_000, pace: 10_000, now: EpochSeconds(0)) == EpochSeconds(600))
        #expect(AlertSendPacing.lastDevice(audience: 1, pace: 60, now: EpochSeconds(0)) == EpochSeconds(1))
        #expect(AlertSendPacing.lastDevice(audience: 100, pace: nil, now: EpochSeconds(0)) == nil)
    }

    @Test func aPacedSendGoesOutPageByPageAsTheClockAllows() async throws {
        try await TestSidecar.run({ $0.runsSendResumer = false }) { app in
            _ = try await app.administration.setRegion(id: 1, agencyID: "1", timezone: "America/Los_Angeles", pushPace: "60")
            #expect(try await RegionSettingsStore(database: app.sidecar.database).all()[1]?.pushPacePerMinute == 60)
            try await app.registerDevices("paced-device", count: 25)
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start])
                .alert
            _ = try await app.administration.setPublished(id: alert.id, true)
            let store = AlertStore(database: app.sidecar.database)
            let transport = RecordingTransport()
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .all)
            // A clock of its own: the server's loops sleep on the app's, so
            // the one sleeper here is the send waiting for its next page.
            let clock = ManualClock(app.clock.now())
            let sender = AlertSender(
                store: store, transport: transport, clock: clock, logger: Logger(level: .error, sink: MemorySink()), retry: .immediate,
                pacePerMinute: AlertSendPacing.pace(for: alert, perMinute: 60))
            let running = Task { [alert] in try await sender.run(send, alert: alert, translations: []) }
            let sent = { transport.sent.withLock { $0.count } }
            // Ten seconds' worth at once, then the send waits on the clock.
            #expect(try await app.eventually { sent() == 10 && clock.sleeperCount == 1 })
            clock.advance(seconds: 5)
            #expect(try await app.eventually { clock.sleeperCount == 1 })
            #expect(sent() == 10, "not before its time")
            clock.advance(seconds: 5)
            #expect(try await app.eventually { sent() == 20 && clock.sleeperCount == 1 })
            clock.advance(seconds: 10)
            let finished = try await running.value
            #expect(finished.status == "done" && finished.delivered == 25 && sent() == 25)
        }
    }

    @Test func theAdminAPISetsThePaceAndItsSendAnswerSaysWhenTheLastDeviceGetsIt() async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let refused = try await app.send("PUT", "/admin/api/regions/1", headers: headers, body: Array(#"{"push_pace_per_minute": 5}"#.utf8))
            #expect(refused.status == 422 && refused.text.contains("from 60 to 1000000"), "\(refused.text)")
            let set = try await app.send("PUT", "/admin/api/regions/1", headers: headers, body: Array(#"{"push_pace_per_minute": 600}"#.utf8))
            #expect(set.status == 200 && set.text.contains(#""push_pace_per_minute":600"#), "\(set.text)")
            try await app.registerDevices("api-paced", count: 3)
            let alert = try await app.administration.create(
                regionID: 1, fields: ["header": "Route 44 detoured", "start": AlertRouteTests.start, "cause": "CONSTRUCTION", "effect": "DETOUR"])
            _ = try await app.administration.setPublished(id: alert.id, true)
            let started = try await app.send(
                "POST", "/admin/api/alerts/\(alert.id)/sends", headers: headers, body: Array(#"{"audience": "all"}"#.utf8))
            #expect(started.status == 202, "\(started.text)")
            #expect(started.text.contains(#""paced_per_minute":600"#) && started.text.contains(#""last_device_at":"#), "\(started.text)")
        }
    }

    @Test func theConfirmationSaysWhenTheLastDeviceGetsIt() {
        let alert = AlertPublishCheckTests.alert()
        let text = AlertSendConsolePages.pacing(alert, perMinute: 1000, devices: 30_000, now: EpochSeconds(0), zone: .utc).rendered
        #expect(text.contains("Paced at 1,000 pushes a minute"), "\(text)")
        #expect(text.contains("the last device gets it about 1970-01-01 00:30"), "\(text)")
        var severe = alert
        severe.severity = .severe
        #expect(
            AlertSendConsolePages.pacing(severe, perMinute: 1000, devices: 30_000, now: EpochSeconds(0), zone: .utc).rendered.contains("full speed"))
        #expect(AlertSendConsolePages.pacing(alert, perMinute: 0, devices: 30_000, now: EpochSeconds(0), zone: .utc).rendered.isEmpty)
    }
}
