import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Before a send the console says what riders will get: who gets the
/// English because a translation went stale, when the apps show the alert,
/// and that an ended alert goes out only with a reason. "End now" ends a
/// live alert at once, once.
@Suite("Console: what a send and an end will do")
struct ConsoleSendConfirmationTests: ConsoleSuite {
    static func at(_ seconds: Int64) -> String { Timestamp.format(EpochSeconds(seconds)) }

    @Test func anEndedAlertIsPushedOnlyWithAReasonWhichTheAuditKeeps() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            // Published while it ran (an ended alert is not published), then over.
            let ended = try await app.administration.create(
                regionID: 1, fields: ["header": "Bridge closed", "start": Self.at(now - 7200), "end": Self.at(now + 60)])
            _ = try await app.administration.setPublished(id: ended.id, true)
            _ = try await app.administration.edit(id: ended.id, fields: ["end": Self.at(now - 60)])
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let confirmation = try await admin.get("/admin/alerts/\(ended.id)/send?audience=test")
            #expect(confirmation.text.contains("This alert ended"), "\(confirmation.text)")
            #expect(confirmation.text.contains("name=\"ended_reason\""))
            let token = try #require(ConsoleBrowser.hidden("send_token", in: confirmation.text))
            let refused = try await admin.post("/admin/alerts/\(ended.id)/sends", [("audience", "test"), ("send_token", token)])
            #expect(refused.status == 422)
            #expect(try await AlertStore(database: app.sidecar.database).sends.list(alertID: ended.id).isEmpty, "nothing sent")
            let sent = try await admin.post(
                "/admin/alerts/\(ended.id)/sends", [("audience", "test"), ("send_token", token), ("ended_reason", "Reopened late: tell riders")])
            #expect(sent.status == 303, "the same confirmation, with a reason")
            #expect(try await AlertStore(database: app.sidecar.database).sends.list(alertID: ended.id).count == 1)
            let audit = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(audit.contains { $0.action == "alert.send" && ($0.detail ?? "").contains("pushed after it ended: Reopened late") })
        }
    }

    /// Issue 39: a send whose transport stopped answering reads `stalled`
    /// on the alert's page, with since when (in the region's zone) and what
    /// the transport last said.
    @Test func aStalledSendSaysSoOnTheAlertPage() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": Self.at(now - 60)])
            _ = try await app.administration.setPublished(id: alert.id, true)
            let (send, _) = try await app.administration.startSend(id: alert.id, audience: .test)
            let store = AlertStore(database: app.sidecar.database)
            try await store.sends.markStalled(
                sendID: send.id, since: EpochSeconds(now), reason: "no progress for 30 s; the transport's last answer: gorush answered HTTP 503",
                now: EpochSeconds(now + 30))
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let page = try await admin.get("/admin/alerts/\(alert.id)")
            #expect(page.text.contains("data-stalled-for=\"\(send.id)\""), "\(page.text)")
            #expect(page.text.contains("No progress since"))
            #expect(page.text.contains("gorush answered HTTP 503"))
            #expect(page.text.contains(">stalled<"))
        }
    }

    @Test func theConfirmationSaysWhenEachAppShowsIt() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            let saturday = try await app.administration.create(
                regionID: 1, fields: ["header": "Saturday detour", "start": Self.at(now + 3 * 86400), "end": Self.at(now + 4 * 86400)])
            _ = try await app.administration.setPublished(id: saturday.id, true)
            let info = try await app.administration.create(
                regionID: 1, fields: ["header": "Elevator out", "start": Self.at(now - 60), "severity": "INFO"])
            _ = try await app.administration.setPublished(id: info.id, true)
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let upcoming = try await admin.get("/admin/alerts/\(saturday.id)/send?audience=test")
            #expect(upcoming.text.contains("A push now arrives before the apps show it"), "\(upcoming.text)")
            let hidden = try await admin.get("/admin/alerts/\(info.id)/send?audience=test")
            #expect(hidden.text.contains("never shows it (INFO"), "Android's rule, from AlertAppVisibility")
        }
    }

    @Test func aStaleTranslationIsFlaggedWithItsDevicesAndAWayToUpdateIt() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            for index in 0..<3 {
                _ = try await app.pushStore.register(
                    PushRegistrationRequest(
                        token: "spanish-device-\(index)", operatingSystem: .ios, locale: "es-MX", testDevice: true, description: "phone \(index)",
                        apnsSandbox: false, apnsSandboxUnrecognized: false),
                    regionID: 1, catalog: .standard, now: app.clock.now())
            }
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Route 44 detoured", "start": Self.at(now - 60)])
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            _ = try await editor.post(
                "/admin/alerts/\(alert.id)/translations", [("language", "es"), ("header", "Ruta 44 desviada"), ("description", "")])
            _ = try await app.administration.edit(id: alert.id, fields: ["header": "Route 44 detoured at 45th"])
            let confirmation = try await editor.get("/admin/alerts/\(alert.id)/send?audience=test")
            #expect(confirmation.text.contains("3 devices would get the English"), "\(confirmation.text)")
            #expect(confirmation.text.contains("Update translation"))
            #expect(confirmation.text.contains("Send anyway to 3 test devices (3 get English)"))
        }
    }

    @Test func endNowEndsALiveAlertOnceEvenInItsStartSecond() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Just now", "start": Self.at(now)])
            _ = try await app.administration.setPublished(id: alert.id, true)
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            #expect(try await editor.get("/admin/alerts/\(alert.id)").text.contains(">End now<"))
            let ended = try await editor.post("/admin/alerts/\(alert.id)/end", [])
            #expect(ended.status == 303)
            #expect(ended.header("Location")?.hasSuffix("?done=ended") == true)
            let stored = try #require(try await AlertStore(database: app.sidecar.database).find(id: alert.id))
            #expect(stored.endsAt?.value == now + 1, "an end must follow the start: its start second + 1")
            app.clock.advance(seconds: 5)
            _ = try await editor.post("/admin/alerts/\(alert.id)/end", [])
            #expect(
                try await AlertStore(database: app.sidecar.database).find(id: alert.id)?.endsAt?.value == now + 1, "a second click changes nothing")
            #expect(!(try await editor.get("/admin/alerts/\(alert.id)").text.contains(">End now<")), "no End now on an ended alert")
        }
    }
}
