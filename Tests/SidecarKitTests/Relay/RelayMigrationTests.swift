import Core
import Foundation
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// Migration 1003: a relay's bindings rebuilt into a table clustered on
/// its key (SQLite), and the index by server dropped (both engines), with
/// every binding and count kept.
@Suite("Relay: the bindings' table rebuilt")
struct RelayMigrationTests {
    static let now = EpochMillis(1_780_000_000_000)

    /// Binds tokens to two servers through the store, as a relay at
    /// migration 1002 would have.
    static func bindSome(_ store: RelayStore) async throws {
        for token in ["a0000001", "a0000002", "shared01"] {
            try await store.bind(token: token, serverID: "server-a", platform: .ios, clientKey: "198.51.100.7", nowMillis: now)
        }
        try await store.bind(token: "shared01", serverID: "server-b", platform: .android, clientKey: "198.51.100.8", nowMillis: now)
    }

    static func expectKept(_ store: RelayStore) async throws {
        let tokens = ["a0000001", "shared01", "unbound1", "a0000002"]
        #expect(try await store.bindings(tokens: tokens, serverID: "server-a", nowMillis: now) == [.ios, .ios, nil, .ios])
        #expect(try await store.bindings(tokens: tokens, serverID: "server-b", nowMillis: now) == [nil, .android, nil, nil])
        #expect(try await store.held(owner: "server:server-a") == 3)
        #expect(try await store.held(owner: "server:server-b") == 1)
        // Bound again after the rebuild: the count moves only for a new binding.
        try await store.bind(token: "a0000001", serverID: "server-a", platform: .ios, clientKey: "198.51.100.7", nowMillis: now)
        try await store.bind(token: "a0000003", serverID: "server-a", platform: .ios, clientKey: "198.51.100.7", nowMillis: now)
        #expect(try await store.held(owner: "server:server-a") == 4)
        try await store.forget(token: "a0000003", serverID: "server-a")
        #expect(try await store.bindings(tokens: ["a0000003"], serverID: "server-a", nowMillis: now) == [nil])
        #expect(try await store.held(owner: "server:server-a") == 3)
    }

    @Test(.enabled(if: TestBackend.isSQLite, "SQLite's table layout"))
    func sqliteBindingsMoveIntoATableClusteredOnTheirKey() async throws {
        try await TemporaryDirectory.run("relay-1003") { directory in
            let database = try SQLiteDatabase(path: directory.appendingPathComponent("relay.sqlite3").path, readers: 1)
            let before = Migrations.relay.filter { $0.version < 1003 }
            #expect(before.map(\.version) == [1001, 1002])
            _ = try await database.migrate(before)
            let store = RelayStore(database: database)
            try await Self.bindSome(store)

            _ = try await database.migrate(Migrations.relay)
            let schema = try await database.read { connection in
                try connection.query("SELECT name, type, sql FROM sqlite_master WHERE name LIKE 'relay_bindings%' ORDER BY name", []).map {
                    (name: try $0.string("name"), type: try $0.string("type"), sql: try $0.optionalString("sql"))
                }
            }
            #expect(schema.map(\.name) == ["relay_bindings"], "the old table and the index by server are gone")
            #expect(schema.first { $0.name == "relay_bindings" }?.sql?.hasSuffix("WITHOUT ROWID") == true)
            let plan = try await database.read { connection in
                try connection.query(
                    "EXPLAIN QUERY PLAN SELECT platform FROM relay_bindings WHERE server_id = 'server-a' AND bound_at > 0 AND token_hash IN ('x', 'y')",
                    []
                ).map { try $0.string("detail") }
            }
            #expect(plan.contains { $0.contains("USING PRIMARY KEY") }, "\(plan)")
            try await Self.expectKept(store)
            await database.close()
        }
    }

    @Test(.enabled(if: TestBackend.isPostgreSQL, "needs the PostgreSQL test server"))
    func postgresqlDropsOnlyTheIndexByServer() async throws {
        let created = try await offPool { try TestBackend.makePostgresDatabase() }
        let target = try #require(created)
        let database = try PostgreSQLDatabase(url: target.url, connections: 1)
        _ = try await database.migrate(Migrations.relay.filter { $0.version < 1003 })
        let store = RelayStore(database: database)
        try await Self.bindSome(store)
        _ = try await database.migrate(Migrations.relay)
        let indexes = try await database.read { connection in
            try connection.query("SELECT indexname FROM pg_indexes WHERE tablename = 'relay_bindings' ORDER BY indexname", []).map {
                try $0.string("indexname")
            }
        }
        #expect(indexes == ["relay_bindings_pkey"])
        try await Self.expectKept(store)
        await database.close()
        try await offPool { try TestBackend.dropPostgresDatabase(target) }
    }

    @Test func aRebuiltTableIsCopiedOnceInItsPlace() {
        #expect(Migrations.tables(Migrations.relay).map(\.name) == ["relay_bindings", "relay_replays", "relay_binding_counts"])
    }
}
