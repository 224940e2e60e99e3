import Database
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import SidecarKit

/// An alert's ETag and If-Match: a stale edit is 412, and a read's tag
/// covers its whole body (translations and sends included).
@Suite("Admin API: an alert's ETag")
struct AdminAlertETagTests {
    @Test func aStaleAlertEditIsRefusedAndAReadsTagCoversItsWholeBody() async throws {
        try await AdminAPITests.run { app, _, keys in
            // Alerts too: a stale edit is 412, in the documented shape.
            let alert = try await AdminAPITests.call(
                app, "POST", "/admin/api/regions/1/alerts", key: keys.regionOne,
                json: #"{"header":"Snow","start":"2026-12-01T05:00:00-08:00"}"#)
            let alertID = try #require(alert.json?["id"] as? Int)
            let alertTag = try #require(alert.header("ETag"))
            let first = try await AdminAPITests.call(
                app, "PATCH", "/admin/api/alerts/\(alertID)", key: keys.regionOne, json: #"{"header":"Snow routes"}"#,
                headers: ["If-Match": alertTag])
            #expect(first.status == 200)
            let second = try await AdminAPITests.call(
                app, "PATCH", "/admin/api/alerts/\(alertID)", key: keys.regionOne, json: #"{"header":"Ice"}"#, headers: ["If-Match": alertTag])
            #expect(second.status == 412)
            #expect((second.json?["messages"] as? [String])?.first?.contains("changed since you read it") == true)
            #expect(try await AlertStore(database: app.sidecar.database).find(id: Int64(alertID))?.header == "Snow routes")

            // A read's strong ETag is its whole body's: a translation changes it, and
            // an edit holding the tag read before the translation is refused.
            let read = try await AdminAPITests.call(app, "GET", "/admin/api/alerts/\(alertID)", key: keys.regionOne)
            let readTag = try #require(read.header("ETag"))
            #expect(try await AdminAPITests.call(app, "GET", "/admin/api/alerts/\(alertID)", key: keys.regionOne).header("ETag") == readTag)
            let translated = try await AdminAPITests.call(
                app, "PUT", "/admin/api/alerts/\(alertID)/translations/es", key: keys.regionOne, json: #"{"header":"Nieve"}"#)
            #expect((200...201).contains(translated.status))
            let reread = try await AdminAPITests.call(app, "GET", "/admin/api/alerts/\(alertID)", key: keys.regionOne)
            let rereadTag = try #require(reread.header("ETag"))
            #expect(rereadTag != readTag)
            let staleRead = try await AdminAPITests.call(
                app, "PATCH", "/admin/api/alerts/\(alertID)", key: keys.regionOne, json: #"{"header":"Ice"}"#, headers: ["If-Match": readTag])
            #expect(staleRead.status == 412)
            let currentRead = try await AdminAPITests.call(
                app, "PATCH", "/admin/api/alerts/\(alertID)", key: keys.regionOne, json: #"{"header":"Snow and ice"}"#,
                headers: ["If-Match": rereadTag])
            #expect(currentRead.status == 200)
        }
    }
}
