import Foundation
import Testing

@testable import SidecarKit

/// The admin kit resolves the object a route names before its handler runs:
/// an object of a region the key may not act on, a missing one and a
/// malformed id are all the same 404, on every kind of route (a read, an
/// edit, a send, a list), and nothing is done.
@Suite("Admin API: the object a route names is checked by the kit")
struct AdminObjectScopeTests {
    @Test func anObjectOfAnotherRegionIsAnsweredAsMissing() async throws {
        try await AdminAPITests.run { app, _, keys in
            let theirs = try await app.administration.create(
                regionID: 2, fields: ["header": "Elsewhere", "start": AlertRouteTests.start])
            for (method, path, json) in [
                ("GET", "/admin/api/alerts/\(theirs.id)", nil), ("PATCH", "/admin/api/alerts/\(theirs.id)", #"{"header": "Mine now"}"#),
                ("POST", "/admin/api/alerts/\(theirs.id)/sends", #"{"audience": "test"}"#),
                ("POST", "/admin/api/alerts/\(theirs.id)/publish", nil), ("GET", "/admin/api/regions/2/alerts", nil),
                ("PUT", "/admin/api/regions/2", #"{"timezone": "UTC"}"#), ("GET", "/admin/api/alerts/not-a-number", nil),
                ("GET", "/admin/api/alerts/999999", nil), ("GET", "/admin/api/regions/99999/alarms", nil),
                ("GET", "/admin/api/surveys/999999", nil), ("GET", "/admin/api/sources/x", nil),
            ] {
                let response = try await AdminAPITests.call(app, method, path, key: keys.regionOne, json: json)
                #expect(response.status == 404, "\(method) \(path): \(response.text)")
            }
            let unchanged = try await app.administration.alert(id: theirs.id)
            #expect(unchanged.header == "Elsewhere" && !unchanged.published)
            #expect(try await AdminAPITests.call(app, "GET", "/admin/api/regions/1/alerts", key: keys.regionOne).status == 200)
            // The admin key of every region reaches the same alert.
            #expect(try await AdminAPITests.call(app, "GET", "/admin/api/alerts/\(theirs.id)", key: keys.admin).status == 200)
        }
    }
}
