import Database
import Foundation
import TestSupport
import Testing

@testable import SidecarKit

/// Issue 35: instances on one database are upgraded one at a time. The
/// first of a newer release migrates; an older instance still running
/// then refuses writes (503, `/healthz` unhealthy, one log line) and keeps
/// serving reads, so it never writes into a schema it does not know.
@Suite("App: an older instance meeting a newer schema")
struct SchemaGuardTests {
    @Test func writesAreRefusedReadsServedAndTheLogSaysWhy() async throws {
        try await TestSidecar.run { sidecar in
            let register: [(String, String)] = [("token", "guard-token-0001"), ("operating_system", "ios"), ("app_uid", "guard-phone")]
            #expect(try await sidecar.post("/api/v2/regions/1/push_registrations", register).status == 204)
            let watch = try #require(sidecar.sidecar.features.lazy.compactMap { $0 as? SchemaWatch }.first)
            let known = watch.schema.known
            // What the newer release's start does: one more migration.
            try await sidecar.sidecar.database.migrate(
                Migrations.all + [
                    Migration(
                        version: known + 1, name: "from a newer release", owners: ["test"],
                        statements: [.same("CREATE TABLE newer_release_table (id INTEGER PRIMARY KEY)")])
                ])
            await watch.checkOnce()
            let refused = try await sidecar.post("/api/v2/regions/1/push_registrations", register)
            #expect(refused.status == 503)
            let health = try await sidecar.send("GET", "/healthz")
            #expect(health.status == 503)
            #expect(String(decoding: health.body, as: UTF8.self).contains("schema"))
            #expect(try await sidecar.send("GET", "/api/v1/regions/1/alerts.pb").status == 200)
            let lines = sidecar.log.lines.filter { $0.contains("writes refused: newer schema") }
            #expect(lines.count == 1)
            #expect(lines.first?.contains("schema \(known + 1) is newer than this sidecar knows (\(known))") == true)
            await watch.checkOnce()
            #expect(sidecar.log.lines.filter { $0.contains("writes refused: newer schema") }.count == 1, "said once")
        }
    }
}
