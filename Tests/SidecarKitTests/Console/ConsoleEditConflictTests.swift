import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// A save that meets someone else's change: what they changed, field by
/// field, and a "Save again" that keeps it unless this editor changed the
/// same field.
@Suite("Console: edit conflicts, field by field")
struct ConsoleEditConflictTests: ConsoleSuite {
    @Test func theMergeKeepsTheirChangeWhereThisEditorLeftTheFieldAlone() {
        let base = ["header": "Detour", "description": "Skips 45th", "severity": "WARNING"]
        let theirs = ["header": "Detour at 45th", "description": "Skips 45th", "severity": "SEVERE"]
        let mine = ["header": "Detour", "description": "Skips 45th and 50th", "severity": "INFO"]
        let outcome = ConsoleEditConflict.merge(mine: mine, base: base, theirs: theirs)
        #expect(outcome.values["header"] == "Detour at 45th", "only they changed it: theirs")
        #expect(outcome.values["description"] == "Skips 45th and 50th", "only I changed it: mine")
        #expect(outcome.values["severity"] == "INFO", "both changed it: mine, said so")
        #expect(outcome.changes.count == 2)
        #expect(outcome.changes[0].hasPrefix("Header: changed by someone else from “Detour” to “Detour at 45th”; their change is kept"))
        #expect(outcome.changes[1].contains("Severity") && outcome.changes[1].contains("saving again puts yours, “INFO”"))
        #expect(ConsoleEditConflict.merge(mine: mine, base: [:], theirs: theirs).changes.isEmpty, "no base (a script): nothing to compare")
    }

    @Test func theConflictPageShowsTheirChangesAndSaveAgainKeepsThem() async throws {
        try await Self.run { app in
            var first = ConsoleBrowser(app: app)
            try await first.login("editor@example.org", Self.password)
            var second = ConsoleBrowser(app: app)
            try await second.login("admin@example.org", Self.password)
            #expect(try await first.post("/admin/regions/1/alerts", Self.newAlert("Route 44 detoured")).status == 303)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            let opened = try await second.get("/admin/alerts/\(alert.id)").text
            func hidden(_ name: String) -> String {
                (ConsoleBrowser.hidden(name, in: opened) ?? "").replacingOccurrences(of: "&quot;", with: "\"")
            }
            let base = ConsoleEditConflict.alertFields.map { ($0.name, ConsoleEditConflict.baseName($0.name)) }.map { ($0.1, hidden($0.1)) }
            // The first editor changes the header meanwhile.
            _ = try await app.administration.edit(id: alert.id, fields: ["header": "Route 44 detoured at 45th"])
            // The second changes only the description, from the form as opened.
            var fields = Self.newAlert("Route 44 detoured")
            fields.removeAll { $0.0 == "description" }
            fields.append(("description", "Buses skip 45th and 50th"))
            let stale = try await second.post("/admin/alerts/\(alert.id)", fields + base + [("version", hidden("version"))])
            #expect(stale.status == 412)
            #expect(stale.text.contains("Header: changed by someone else from “Route 44 detoured” to “Route 44 detoured at 45th”"), "\(stale.text)")
            #expect(stale.text.contains("value=\"Route 44 detoured at 45th\""), "their header is in the form")
            #expect(stale.text.contains("Buses skip 45th and 50th"), "my description is kept")
            // Save again: both changes stand.
            let again = try await second.post(
                "/admin/alerts/\(alert.id)",
                [
                    ("header", "Route 44 detoured at 45th"), ("description", "Buses skip 45th and 50th"), ("cause", "CONSTRUCTION"),
                    ("effect", "DETOUR"), ("severity", "WARNING"), ("start", "2026-12-01T08:00"), ("end", ""), ("url", ""),
                    ("version", (ConsoleBrowser.hidden("version", in: stale.text) ?? "").replacingOccurrences(of: "&quot;", with: "\"")),
                ])
            #expect(again.status == 303)
            let saved = try #require(try await AlertStore(database: app.sidecar.database).find(id: alert.id))
            #expect(saved.header == "Route 44 detoured at 45th" && saved.description == "Buses skip 45th and 50th")
        }
    }
}
