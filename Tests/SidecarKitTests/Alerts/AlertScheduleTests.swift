import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Scheduled sends (issue 40): at the alert's start or a chosen time,
/// listed, changed and cancelled until they go; once across servers; an
/// alert changed meanwhile holds or skips its send, as the editor chose.
@Suite("Alerts: scheduled sends")
struct AlertScheduleTests {
    static let now = AlertPublishCheckTests.now

    static func schedule(_ change: (inout AlertSchedule) -> Void = { _ in }) -> AlertSchedule {
        var schedule = AlertSchedule(
            id: 1, alertID: 7, regionID: 1, audience: .all, atStart: false, runAt: now, ifChanged: .hold,
            alertFingerprint: AlertScheduleRules.fingerprint(live), status: .starting, sendID: nil, reason: nil, createdBy: "t", createdAt: 0,
            updatedAt: 0)
        change(&schedule)
        return schedule
    }

    static var live: ServiceAlert { AlertPublishCheckTests.alert { $0.published = true } }

    @Test func aDueScheduleGoesUnlessItsAlertChanged() {
        #expect(AlertScheduleRules.decide(Self.schedule(), alert: Self.live, now: Self.now) == .go)
        var edited = Self.live
        edited.header = "Route 44 detoured at 46th"
        #expect(
            AlertScheduleRules.decide(Self.schedule(), alert: edited, now: Self.now) == .hold("the alert was edited after the send was scheduled"))
        #expect(
            AlertScheduleRules.decide(Self.schedule { $0.ifChanged = .skip }, alert: edited, now: Self.now)
                == .skip("the alert was edited after the send was scheduled"))
        var withdrawn = Self.live
        withdrawn.published = false
        withdrawn.withdrawnAt = Self.now
        #expect(AlertScheduleRules.decide(Self.schedule(), alert: withdrawn, now: Self.now) == .hold("the alert was withdrawn"))
        var draft = Self.live
        draft.published = false
        #expect(
            AlertScheduleRules.decide(Self.schedule { $0.audience = .test }, alert: draft, now: Self.now) == .go, "a draft may go to test devices")
        var ended = Self.live
        ended.endsAt = Self.now.adding(seconds: -1)
        #expect(AlertScheduleRules.decide(Self.schedule { $0.ifChanged = .skip }, alert: ended, now: Self.now) == .skip("the alert has ended"))
        #expect(AlertScheduleRules.decide(Self.schedule(), alert: nil, now: Self.now) == .skip("the alert was deleted"))
        // Publishing is not a change of what riders get.
        #expect(AlertScheduleRules.fingerprint(Self.live) == AlertScheduleRules.fingerprint(AlertPublishCheckTests.alert()))
    }

    @Test(arguments: [
        ("start", true), ("2026-12-01T08:00:00-08:00", false), ("2024-01-01T00:00:00Z", false), ("2030-01-01T00:00:00Z", false),
        ("tomorrow", false),
    ])
    func whenAScheduleMayRun(_ at: String, _ accepted: Bool) {
        let alert = AlertPublishCheckTests.alert { $0.startsAt = Self.now.adding(seconds: 3600) }
        let result = AlertScheduleRules.runAt(at, alert: alert, now: EpochSeconds(1_764_000_000), parse: AlertInputRules.parseTime)
        if case .success = result { #expect(accepted, "\(at)") } else { #expect(!accepted, "\(at)") }
    }

    @Test func aScheduledSendGoesOnceAtItsTimeOrWaitsForAnEditor() async throws {
        try await AlertRouteTests.run { app, gorush, key in
            try await app.registerDevices("scheduled", count: 3)
            let now = app.clock.nowSeconds
            let admin = app.administration
            let alert = try await admin.create(
                regionID: 1,
                fields: [
                    "header": "Route 44 detoured", "start": Timestamp.format(now.adding(seconds: 600)), "cause": "CONSTRUCTION", "effect": "DETOUR",
                ]
            ).alert
            // Through the API: at its start, to everyone (the push scope).
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let made = try await app.send(
                "POST", "/admin/api/alerts/\(alert.id)/schedules", headers: headers, body: Array(#"{"at": "start", "audience": "all"}"#.utf8))
            #expect(made.status == 201 && made.text.contains(#""at":"start""#), "\(made.text)")
            _ = try await admin.setPublished(id: alert.id, true)
            let other = try await admin.schedule(
                alertID: alert.id, at: Timestamp.format(now.adding(seconds: 900)), audience: "all", ifChanged: "skip")

            let runner = app.sidecar.context.alertSends
            func scheduler() -> AlertScheduler {
                AlertScheduler(
                    administration: admin, runner: runner, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()),
                    work: app.sidecar.context.work, startsSends: true)
            }
            await scheduler().startDue()
            #expect(try await admin.schedules.list(alertID: alert.id).allSatisfy { $0.status == .scheduled }, "nothing is due yet")
            app.clock.advance(seconds: 601)
            // Two servers look at once: one starts it.
            async let first: Void = scheduler().startDue()
            async let second: Void = scheduler().startDue()
            _ = await (first, second)
            let started = try await admin.schedules.list(alertID: alert.id).filter { $0.status == .started }
            #expect(started.count == 1 && started[0].sendID != nil, "\(started)")
            #expect(try await AlertStore(database: app.sidecar.database).sends.list(alertID: alert.id).count == 1, "one send, once")
            #expect(try await app.eventually { gorush.tokens.filter { $0.hasPrefix("scheduled-") }.count >= 3 })
            // Edited before the second's time, which was to skip then.
            _ = try await admin.edit(id: alert.id, fields: ["header": "Route 44 detoured at 46th"])
            app.clock.advance(seconds: 300)
            await scheduler().startDue()
            let skipped = try await admin.schedule(id: other.id)
            #expect(skipped.status == .skipped && skipped.reason == "the alert was edited after the send was scheduled")
            // Cancelled while still to go; a second cancel changes nothing.
            let third = try await admin.schedule(
                alertID: alert.id, at: Timestamp.format(app.clock.nowSeconds.adding(seconds: 60)), audience: "test", ifChanged: nil)
            let cancelled = try await app.send("DELETE", "/admin/api/alerts/\(alert.id)/schedules/\(third.id)", headers: headers)
            #expect(cancelled.status == 204)
            #expect(try await admin.schedule(id: third.id).status == .cancelled)
            await #expect(throws: AdministrationError.self) { try await admin.cancelSchedule(id: third.id) }
            let listed = try await app.send("GET", "/admin/api/alerts/\(alert.id)/schedules", headers: headers)
            #expect(listed.status == 200 && listed.text.contains(#""status":"skipped""#) && listed.text.contains(#""status":"cancelled""#))
        }
    }

    @Test func aHeldSendWaitsAndCanBeScheduledAgain() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let now = app.clock.nowSeconds
            let admin = app.administration
            let alert = try await admin.create(
                regionID: 1,
                fields: [
                    "header": "Elevator out", "start": Timestamp.format(now.adding(seconds: 60)), "cause": "MAINTENANCE",
                    "effect": "ACCESSIBILITY_ISSUE",
                ]
            ).alert
            _ = try await admin.setPublished(id: alert.id, true)
            let schedule = try await admin.schedule(alertID: alert.id, at: "start", audience: "all", ifChanged: "hold")
            _ = try await admin.setPublished(id: alert.id, false)
            app.clock.advance(seconds: 61)
            let scheduler = AlertScheduler(
                administration: admin, runner: app.sidecar.context.alertSends, clock: app.clock, logger: Logger(level: .error, sink: MemorySink()),
                work: app.sidecar.context.work, startsSends: true)
            await scheduler.startDue()
            let held = try await admin.schedule(id: schedule.id)
            #expect(held.status == .held && held.reason == "the alert was withdrawn")
            // An editor gives it a new time: it goes with the alert as it is then.
            let again = try await admin.reschedule(id: schedule.id, at: Timestamp.format(app.clock.nowSeconds.adding(seconds: 120)), ifChanged: nil)
            #expect(again.status == .scheduled && again.reason == nil)
            let lines = AlertScheduleCommands.line(again, zone: .utc)
            #expect(lines.hasPrefix("\(again.id)\talert \(alert.id)\tall\t"), "\(lines)")
        }
    }
}
