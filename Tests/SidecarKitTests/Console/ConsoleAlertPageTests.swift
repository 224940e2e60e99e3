import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

@Suite("Console: alert pages")
struct ConsoleAlertPageTests: ConsoleSuite {
    @Test func authoringTranslatingPublishingAndSending() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let hostile = "<script>alert('x')</script> \"quoted\" & '; DROP TABLE alerts; --"
            let created = try await editor.post("/admin/regions/1/alerts", Self.newAlert(hostile))
            #expect(created.status == 303, "\(created.text)")
            let location = try #require(created.header("Location"))
            #expect(location.hasSuffix("?done=created"))
            let alerts = AlertStore(database: app.sidecar.database)
            let alert = try #require(try await alerts.alerts(regionID: 1).first)
            #expect(alert.header == hostile, "stored exactly as typed")
            // 08:00 in Los Angeles on 1 December is 16:00 UTC.
            #expect(alert.startsAt == 1_796_140_800)
            #expect(!alert.published)

            let page = try await editor.get("/admin/alerts/\(alert.id)")
            #expect(page.status == 200)
            #expect(!page.text.contains("<script>alert"))
            #expect(page.text.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"))
            #expect(page.text.contains("value=\"2026-12-01T08:00\""), "shown back in the region's time")

            let translated = try await editor.post(
                "/admin/alerts/\(alert.id)/translations",
                [("language", "es"), ("header", "Ruta 44 desviada"), ("description", "No para en la calle 45")])
            #expect(translated.status == 303)
            let published = try await editor.post("/admin/alerts/\(alert.id)/publish", [])
            #expect(published.status == 303)
            #expect(try await alerts.find(id: alert.id)?.published == true)

            // The English changes: the Spanish is marked stale.
            let edited = try await editor.post("/admin/alerts/\(alert.id)", Self.newAlert("Route 44 detoured"))
            #expect(edited.status == 303)
            let afterEdit = try await editor.get("/admin/alerts/\(alert.id)")
            #expect(afterEdit.text.contains("stale: English changed"))

            // An editor sends to test devices, never to everyone.
            let confirmation = try await editor.get("/admin/alerts/\(alert.id)/send?audience=test")
            #expect(confirmation.text.contains("0 test devices"))
            let sendToken = try #require(ConsoleBrowser.hidden("send_token", in: confirmation.text))
            #expect(try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "all"), ("send_token", sendToken)]).status == 403)
            #expect(try await alerts.sends.list(alertID: alert.id).isEmpty)
            #expect(try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test")]).status == 403, "no token, no send")
            let sending = try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test"), ("send_token", sendToken)])
            #expect(sending.status == 303)
            // The same confirmation again (a refresh, a double click) starts nothing.
            let again = try await editor.post("/admin/alerts/\(alert.id)/sends", [("audience", "test"), ("send_token", sendToken)])
            #expect(again.status == 303 && again.header("Location")?.contains("send-repeated") == true)
            #expect(try await alerts.sends.list(alertID: alert.id).map(\.audience) == [.test])
            let progress = try await editor.get("/admin/alerts/\(alert.id)/sends.json")
            #expect(progress.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(progress.text.contains("\"audience\":\"test\""))

            // Every change is in the audit log under the editor's name.
            let entries = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(Set(entries.map(\.action)).isSuperset(of: ["alert.create", "alert.translate", "alert.publish", "alert.edit", "alert.send"]))
            #expect(entries.allSatisfy { $0.actor == "user:editor@example.org" })
            let auditPage = try await editor.get("/admin/audit")
            #expect(auditPage.text.contains("alert.publish"))
            #expect(!auditPage.text.contains("<script>alert"))
        }
    }

    @Test func changesAreLimitedPerUser() async throws {
        try await Self.run(writeLimit: 3) { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            var statuses: [Int] = []
            for number in 0..<4 { statuses.append(try await editor.post("/admin/regions/1/alerts", Self.newAlert("Alert \(number)")).status) }
            #expect(statuses == [303, 303, 303, 429])
            #expect(try await Self.alertCount(app) == 3)
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            #expect(try await admin.post("/admin/regions/1/alerts", Self.newAlert("Another user")).status == 303, "each user has their own budget")
        }
    }

    @Test func aStaleEditIsRefusedWithTheEditorsTextKept() async throws {
        try await Self.run { app in
            var first = ConsoleBrowser(app: app)
            try await first.login("editor@example.org", Self.password)
            var second = ConsoleBrowser(app: app)
            try await second.login("admin@example.org", Self.password)
            #expect(try await first.post("/admin/regions/1/alerts", Self.newAlert("Route 44 detoured")).status == 303)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            // Both open the alert; each form carries the version it showed.
            let firstVersion = try #require(ConsoleBrowser.hidden("version", in: try await first.get("/admin/alerts/\(alert.id)").text))
            let secondVersion = try #require(ConsoleBrowser.hidden("version", in: try await second.get("/admin/alerts/\(alert.id)").text))
            #expect(firstVersion == secondVersion)
            #expect(firstVersion == AdminConventions.etag(AdminJSON.alert(alert)).replacingOccurrences(of: "\"", with: "&quot;"))
            let saved = try await first.post(
                "/admin/alerts/\(alert.id)",
                Self.newAlert("Route 44 detoured at 45th") + [("version", "\"" + firstVersion.replacingOccurrences(of: "&quot;", with: "") + "\"")])
            #expect(saved.status == 303, "\(saved.text)")
            // The second editor saves over a version that is gone: refused, their text shown back.
            let stale = try await second.post(
                "/admin/alerts/\(alert.id)",
                Self.newAlert("Route 44 back to normal") + [("version", "\"" + secondVersion.replacingOccurrences(of: "&quot;", with: "") + "\"")])
            #expect(stale.status == 412)
            #expect(stale.text.contains("Someone changed this alert after you opened it"))
            #expect(stale.text.contains("Not saved:") && !stale.text.contains("Please correct"), "nothing in the form is wrong")
            #expect(stale.text.contains("value=\"Route 44 back to normal\""))
            #expect(try await AlertStore(database: app.sidecar.database).find(id: alert.id)?.header == "Route 44 detoured at 45th")
            // Saving again from that page replaces the other change knowingly.
            let current = try #require(ConsoleBrowser.hidden("version", in: stale.text)).replacingOccurrences(of: "&quot;", with: "\"")
            #expect(current != secondVersion.replacingOccurrences(of: "&quot;", with: "\""))
            let again = try await second.post("/admin/alerts/\(alert.id)", Self.newAlert("Route 44 back to normal") + [("version", current)])
            #expect(again.status == 303)
            #expect(try await AlertStore(database: app.sidecar.database).find(id: alert.id)?.header == "Route 44 back to normal")
        }
    }

    @Test func badInputIsAClearPageAndChangesNothing() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let overlong = try await editor.post("/admin/regions/1/alerts", Self.newAlert(String(repeating: "x", count: 600)))
            #expect(overlong.status == 422)
            #expect(overlong.text.contains("Header is too long"))
            let badTime = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Fine", start: "tomorrow morning"))
            #expect(badTime.status == 422)
            #expect(badTime.text.contains("Starts must be a date and time"))
            let badEnum = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Fine") + [("cause", "<b>BOGUS</b>")])
            #expect(badEnum.status == 422)
            #expect(!badEnum.text.contains("<b>BOGUS</b>"))
            let unknownRegion = try await editor.post("/admin/regions/4242/alerts", Self.newAlert("Fine"))
            #expect(unknownRegion.status == 404)
            #expect(try await Self.alertCount(app) == 0)
            #expect(try await editor.get("/admin/alerts/99999").status == 404)
            #expect(try await editor.get("/admin/alerts/not-a-number").status == 404)
        }
    }

    @Test func anImpactPeriodIsAuthoredInTheRegionsZoneAndRefusedOutsideTheShownPeriod() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            let form = try await editor.get("/admin/regions/1/alerts/new")
            #expect(form.text.contains("Service affected from") && form.text.contains("when the disruption itself happens"))
            #expect(form.text.contains("Info and Unknown severity are hidden there"))
            let outside = try await editor.post(
                "/admin/regions/1/alerts",
                Self.newAlert("Closed", start: "2026-12-05T08:00") + [
                    ("impact_start", "2026-12-05T06:00"), ("impact_end", "2026-12-05T12:00"),
                ])
            #expect(outside.status == 422)
            #expect(outside.text.contains("must lie within the shown period"), "the form is shown again with the error")
            #expect(outside.text.contains("2026-12-05T06:00"), "what was typed survives")
            let inside = try await editor.post(
                "/admin/regions/1/alerts",
                Self.newAlert("Closed", start: "2026-12-05T08:00") + [
                    ("impact_start", "2026-12-05T09:00"), ("impact_end", "2026-12-05T12:00"),
                ])
            #expect(inside.status == 303)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            #expect(alert.impactStartsAt == 1_796_490_000, "09:00 in America/Los_Angeles is 17:00 UTC")
            #expect(alert.impactEndsAt == 1_796_500_800)
        }
    }

    @Test func viewersReadAndRegionScopedUsersSeeOnlyTheirRegions() async throws {
        try await Self.run { app in
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            _ = try await editor.post("/admin/regions/1/alerts", Self.newAlert("Region one"))
            _ = try await editor.post("/admin/regions/0/alerts", Self.newAlert("Region zero"))
            let alerts = AlertStore(database: app.sidecar.database)
            let one = try #require(try await alerts.alerts(regionID: 1).first)
            let zero = try #require(try await alerts.alerts(regionID: 0).first)

            var viewer = ConsoleBrowser(app: app)
            try await viewer.login("viewer@example.org", Self.password)
            #expect(try await viewer.get("/admin").header("Location") == "/admin/regions/1", "one region: straight to it")
            let page = try await viewer.get("/admin/alerts/\(one.id)")
            #expect(page.status == 200)
            #expect(!page.text.contains(">Publish<"))
            let publish = try await viewer.post("/admin/alerts/\(one.id)/publish", [])
            #expect(publish.status == 403)
            #expect(try await alerts.find(id: one.id)?.published == false)
            #expect(try await viewer.post("/admin/alerts/\(one.id)/sends", [("audience", "test")]).status == 403)
            #expect(try await viewer.get("/admin/keys").status == 403)
            // Another region is as if it did not exist.
            #expect(try await viewer.get("/admin/regions/0").status == 404)
            #expect(try await viewer.get("/admin/alerts/\(zero.id)").status == 404)
            #expect(try await viewer.get("/admin/regions/0/alerts").status == 404)
        }
    }
}
