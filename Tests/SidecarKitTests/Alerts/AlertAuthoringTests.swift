import Foundation
import HTML
import TestSupport
import Testing

@testable import SidecarKit

/// Text that would read as something else is refused or shown visibly,
/// and an alert id, once used, is never given to another alert.
@Suite("Alerts: stored text and ids")
struct AlertAuthoringTests {
    @Test func bidirectionalControlsAreRefusedInStoredTextAndShownVisibly() async throws {
        try await AlertRouteTests.run { app, _, key in
            let headers = ["Authorization": "Bearer \(key)", "Content-Type": "application/json"]
            let refused = try await app.send(
                "POST", "/admin/api/regions/1/alerts", headers: headers,
                body: Array(#"{"header": "invoice\u202Egnp.exe", "start": "2026-12-01T08:00:00Z"}"#.utf8))
            #expect(refused.status == 422)
            #expect(refused.text.contains("bidirectional control"))
            let report = try await app.post(
                "/api/v2/regions/1/ghost_bus_reports",
                [
                    ("user_identifier", "r"), ("trip_identifier", "t"),
                    ("service_date", "1"), ("wait_duration_minutes", "5"),
                    ("comment", "bus\u{2067}never came"),
                ])
            #expect(report.status == 422)
            // Marks that reorder nothing (RLM in Arabic text) are kept.
            let arabic = try await app.administration.create(
                regionID: 1, fields: ["header": "تحويل\u{200F} الخط 44", "start": AlertRouteTests.start])
            #expect(arabic.header.contains("\u{200F}"))
        }
        #expect(HTML.escape("a\u{202E}gnp.exe") == "a\u{FFFD}gnp.exe")
        #expect(CSV.cell("a\u{2066}b") == "\"a\u{FFFD}b\"")
    }

    @Test func alertIDsAreNeverReused() async throws {
        try await AlertRouteTests.run { app, _, _ in
            let first = try await app.administration.create(regionID: 1, fields: ["header": "One", "start": AlertRouteTests.start])
            let second = try await app.administration.create(regionID: 1, fields: ["header": "Two", "start": AlertRouteTests.start])
            try await app.administration.delete(id: second.id)
            let third = try await app.administration.create(regionID: 1, fields: ["header": "Three", "start": AlertRouteTests.start])
            #expect(third.id > second.id && second.id > first.id, "\(first.id), \(second.id), \(third.id)")
        }
    }
}
