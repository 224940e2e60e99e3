import Crypto
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

@Suite("Console: API keys and the audit log")
struct ConsoleKeyPageTests: ConsoleSuite {
    @Test(arguments: [
        (Set([1]) as Set<Int>?, Set([1]) as Set<Int>?, true), (Set([1, 2]), Set([1]), false), (Set([1]), Set([1, 2]), true), (nil, Set([1]), false),
        (Set([1]), nil, true), (nil, nil, true), (Set<Int>(), Set([1]), true),
    ])
    func usersManageOnlyKeysWithinTheirRegions(keyRegions: Set<Int>?, allowed: Set<Int>?, manages: Bool) {
        #expect(ConsoleRules.mayManageKey(keyRegions: keyRegions, allowed: allowed) == manages)
    }

    @Test func aRegionScopedAdminSeesAndRevokesOnlyItsRegionsKeys() async throws {
        try await Self.run { app in
            let store = ConsoleStore(database: app.sidecar.database)
            let hash = try PasswordHash.hash(Self.password, parameters: .init(logN: 10, r: 8, p: 1))
            _ = try await store.createUser(email: "region1@example.org", passwordHash: hash, role: .admin, regions: [1], now: 0)
            let keys = ApiKeyStore(database: app.sidecar.database)
            let own = try await keys.create(name: "region one", regions: [1], actor: "cli:test", now: 0).record
            let other = try await keys.create(name: "region zero", regions: [0], actor: "cli:test", now: 0).record
            let everywhere = try await keys.create(name: "integration for all", regions: nil, actor: "cli:test", now: 0).record
            var admin = ConsoleBrowser(app: app)
            try await admin.login("region1@example.org", Self.password)
            let page = try await admin.get("/admin/keys")
            #expect(page.text.contains("region one") && !page.text.contains("region zero") && !page.text.contains("integration for all"))
            #expect(try await admin.post("/admin/keys/\(other.id)/revoke", []).status == 404)
            #expect(try await admin.post("/admin/keys/\(everywhere.id)/revoke", []).status == 404)
            let otherAfter = try await keys.find(id: other.id), everywhereAfter = try await keys.find(id: everywhere.id)
            #expect(otherAfter?.revokedAt == nil && everywhereAfter?.revokedAt == nil, "nothing revoked")
            #expect(try await admin.post("/admin/keys/\(own.id)/revoke", []).status == 303)
            #expect(try await keys.find(id: own.id)?.revokedAt != nil)
        }
    }

    @Test func apiKeysAreScopedToRegionsAndThePushScope() async throws {
        try await Self.run { app in
            var admin = ConsoleBrowser(app: app)
            try await admin.login("admin@example.org", Self.password)
            let form = try await admin.get("/admin/keys")
            let keyToken = try #require(ConsoleBrowser.hidden("key_token", in: form.text))
            #expect(try await admin.post("/admin/keys", [("name", "No regions"), ("key_token", keyToken)]).status == 422, "a key names its regions")
            let posted = try await admin.post("/admin/keys", [("name", "CAD <integration>"), ("region_1", "true"), ("key_token", keyToken)])
            #expect(posted.status == 303, "a redirect: a refresh repeats nothing")
            let flash = try #require(
                ConsoleBrowser.value(
                    of: KeyConsolePages.newKeyCookie,
                    in: posted.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)))
            let created = try await app.send("GET", "/admin/keys", headers: ["Cookie": "\(admin.cookie); \(KeyConsolePages.newKeyCookie)=\(flash)"])
            let key = try #require(
                created.text.range(of: "<code id=\"new-key\">").map { created.text[$0.upperBound...].prefix { $0 != "<" } }.map(String.init))
            #expect(key.hasPrefix("obask_1_"), "a key of one region, in the Go reference's format")
            #expect(created.text.contains("CAD &lt;integration&gt;"))
            #expect(!(try await admin.get("/admin/keys")).text.contains(key), "shown once")
            // The same form again (a double click) makes no second key.
            let twice = try await admin.post("/admin/keys", [("name", "CAD <integration>"), ("region_1", "true"), ("key_token", keyToken)])
            #expect(twice.status == 303 && twice.header("Location")?.contains("key-repeated") == true)
            #expect(try await ApiKeyStore(database: app.sidecar.database).list().filter { $0.name == "CAD <integration>" }.count == 1)

            func api(_ method: String, _ path: String, _ body: [(String, String)] = []) async throws -> Int {
                let response = try await app.send(
                    method, "/admin/api" + path,
                    headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/x-www-form-urlencoded"],
                    body: RawHTTPClient.form(body))
                return response.status
            }
            #expect(try await api("GET", "/regions/1/alerts") == 200)
            #expect(try await api("GET", "/regions/0/alerts") == 404)
            #expect(try await api("POST", "/regions/0/alerts", [("header", "x"), ("start", "2026-12-01T08:00:00Z")]) == 404)
            #expect(try await api("POST", "/regions/1/alerts", [("header", "From the API"), ("start", "2026-12-01T08:00:00Z")]) == 201)
            let alert = try #require(try await AlertStore(database: app.sidecar.database).alerts(regionID: 1).first)
            #expect(try await api("POST", "/alerts/\(alert.id)/publish") == 200)
            #expect(try await api("POST", "/alerts/\(alert.id)/sends", [("audience", "test")]) == 403, "no push scope")
            let entries = try await AuditLog(database: app.sidecar.database).entries(regions: nil)
            #expect(entries.contains { $0.action == "alert.create" && $0.actor.hasPrefix("apikey:CAD <integration>#") })
            #expect(entries.contains { $0.action == "apikey.create" && $0.actor == "user:admin@example.org" })

            let revoked = try await admin.post("/admin/keys/1/revoke", [])
            #expect(revoked.status == 303)
            #expect(try await api("GET", "/regions/1/alerts") == 401)
        }
    }
}
