import Core
import Crypto
import Foundation
import Testing

@testable import SidecarKit

/// The admin API's cursors are signed: the one a Link header gives is
/// followed; the same cursor with its id edited, one signed with another
/// key, an unsigned one of the old form and one cut short are all 422.
@Suite("Admin API: cursors are signed")
struct AdminCursorTests {
    @Test func anEditedOrForgedCursorIsRefused() async throws {
        try await AdminAPITests.run { app, _, keys in
            for index in 0..<3 {
                _ = try await app.administration.create(regionID: 1, fields: ["header": "Alert \(index)", "start": AlertRouteTests.start])
            }
            let first = try await AdminAPITests.call(app, "GET", "/admin/api/regions/1/alerts?limit=1", key: keys.regionOne)
            let next = try #require(AdminAPITests.next(first))
            #expect(try await AdminAPITests.call(app, "GET", next, key: keys.regionOne).status == 200)
            let cursor = try #require(URLComponents(string: next)?.queryItems?.first { $0.name == "after" }?.value)
            let halves = cursor.split(separator: ".").map(String.init)
            #expect(halves.count == 2)
            let payload = String(decoding: try #require(Base64URL.decodeCanonical(halves[0])), as: UTF8.self)
            let edited = Base64URL.encode(Array(payload.replacingOccurrences(of: "|", with: "|0", options: .backwards).utf8)) + "." + halves[1]
            let otherKey = AdminConventions.cursor(list: "alerts:1", id: 1, key: Array(repeating: 7, count: 32))
            let unsigned = Base64URL.encode(Array("v1|alerts:1|1".utf8))
            for forged in [edited, otherKey, unsigned, halves[0], halves[0] + ".", "." + halves[1]] {
                let answer = try await AdminAPITests.call(
                    app, "GET",
                    "/admin/api/regions/1/alerts?limit=1&after=\(forged.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
                    key: keys.regionOne)
                #expect(answer.status == 422, "\(forged)")
            }
        }
    }
}
