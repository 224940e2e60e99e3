import Core
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Deleting asks first and says what riders get afterwards; only a draft
/// riders never saw can be deleted.
@Suite("Console: deleting confirms first")
struct ConsoleDeleteTests: ConsoleSuite {
    @Test func aDraftIsDeletedAfterAConfirmationAndALiveAlertNever() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            let draft = try await app.administration.create(
                regionID: 1, fields: ["header": "Test draft", "start": Timestamp.format(EpochSeconds(now)), "test": "true"])
            let live = try await app.administration.create(regionID: 1, fields: ["header": "Live", "start": Timestamp.format(EpochSeconds(now))])
            _ = try await app.administration.setPublished(id: live.id, true)
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            #expect(try await editor.get("/admin/alerts/\(draft.id)").text.contains("Delete draft…"))
            #expect(!(try await editor.get("/admin/alerts/\(live.id)").text.contains("Delete draft…")))
            let confirmation = try await editor.get("/admin/alerts/\(draft.id)/delete")
            #expect(confirmation.text.contains("Riders never saw it") && confirmation.text.contains("It is a test alert."))
            #expect(try await AlertStore(database: app.sidecar.database).find(id: draft.id) != nil, "asking deletes nothing")
            let deleted = try await editor.post("/admin/alerts/\(draft.id)/delete", [])
            #expect(deleted.status == 303)
            #expect(try await AlertStore(database: app.sidecar.database).find(id: draft.id) == nil)
            let refused = try await editor.post("/admin/alerts/\(live.id)/delete", [])
            #expect(refused.status == 409)
            #expect(try await AlertStore(database: app.sidecar.database).find(id: live.id) != nil)
        }
    }

    @Test func aTranslationIsDeletedAfterAConfirmationSayingWhoGetsEnglish() async throws {
        try await Self.run { app in
            let now = app.clock.now().epochMillis / 1000
            let alert = try await app.administration.create(regionID: 1, fields: ["header": "Detour", "start": Timestamp.format(EpochSeconds(now))])
            var editor = ConsoleBrowser(app: app)
            try await editor.login("editor@example.org", Self.password)
            _ = try await editor.post("/admin/alerts/\(alert.id)/translations", [("language", "fr"), ("header", "Déviation"), ("description", "")])
            let page = try await editor.get("/admin/alerts/\(alert.id)")
            #expect(page.text.contains("translations/delete?language=fr"), "Delete is a link to a confirmation")
            let confirmation = try await editor.get("/admin/alerts/\(alert.id)/translations/delete?language=fr")
            #expect(confirmation.text.contains("Delete the French translation?"))
            #expect(confirmation.text.contains("French devices get the English"))
            #expect(try await AlertStore(database: app.sidecar.database).translations(alertID: alert.id).count == 1, "asking deletes nothing")
            let deleted = try await editor.post("/admin/alerts/\(alert.id)/translations/delete", [("language", "fr")])
            #expect(deleted.status == 303)
            #expect(try await AlertStore(database: app.sidecar.database).translations(alertID: alert.id).isEmpty)
        }
    }
}
