import Foundation
import TestSupport
import Testing

@testable import Database
@testable import SidecarKit

/// The one ordered list of migrations: versions unique and contiguous,
/// every store's DDL listed under its name, and both engines reaching the
/// same schema from it.
@Suite("App: migration list")
struct MigrationListTests {
    @Test func versionsAreUniqueAndContiguous() {
        let sidecar = Migrations.sidecar.map(\.version)
        #expect(sidecar == Array(1...sidecar.count), "\(sidecar)")
        let relay = Migrations.relay.map(\.version)
        #expect(relay == Array(1001..<(1001 + relay.count)), "\(relay)")
        for migration in Migrations.sidecar + Migrations.relay {
            #expect(!migration.statements.isEmpty, "migration \(migration.version) changes nothing")
            #expect(!migration.owners.isEmpty)
        }
    }

    @Test func everyStoresDDLIsListedUnderItsName() {
        let listed = Dictionary(
            grouping: (Migrations.sidecar + Migrations.relay).flatMap { migration in
                migration.owners.map { (owner: $0, version: migration.version) }
            }, by: \.owner
        ).mapValues { Set($0.map(\.version)) }
        #expect(Set(Migrations.schemas.map(\.owner)).count == Migrations.schemas.count, "an owner named twice")
        for schema in Migrations.schemas {
            #expect(
                Set(schema.changes.keys) == listed[schema.owner] ?? [],
                "\(schema.owner): declared \(schema.changes.keys.sorted()), listed \((listed[schema.owner] ?? []).sorted())")
        }
    }

    /// Columns as both engines describe them: name, a type family, and
    /// whether NULL is refused.
    struct Column: Hashable, CustomStringConvertible {
        let table: String, name: String, type: String, notNull: Bool
        var description: String { "\(table).\(name) \(type)\(notNull ? " NOT NULL" : "")" }
    }

    static func family(_ declared: String) -> String {
        let type = declared.lowercased()
        if type.contains("int") { return "integer" }
        if type.contains("double") || type.contains("real") { return "real" }
        if type.contains("blob") || type.contains("bytea") { return "bytes" }
        return "text"
    }

    static let bookkeeping: Set<String> = ["schema_migrations", "sidecar_health"]

    @Test(.enabled(if: TestBackend.isPostgreSQL, "needs the PostgreSQL test server"))
    func bothEnginesReachTheSameSchema() async throws {
        try await TemporaryDirectory.run("schema") { directory in
            let sqlite = try SQLiteDatabase(path: directory.appendingPathComponent("schema.sqlite3").path, readers: 1)
            try await sqlite.migrate(Migrations.sidecar)
            let sqliteSchema = try await sqlite.read { connection -> (columns: Set<Column>, indexes: Set<String>) in
                var columns = Set<Column>()
                for table in try connection.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", []) {
                    let name = try table.string("name")
                    guard !Self.bookkeeping.contains(name) else { continue }
                    for column in try connection.query("SELECT name, type, \"notnull\" AS required, pk FROM pragma_table_info('\(name)')", []) {
                        columns.insert(
                            Column(
                                table: name, name: try column.string("name"), type: Self.family(try column.string("type")),
                                notNull: try column.bool("required") || (try column.int("pk")) > 0))
                    }
                }
                let indexes = Set(
                    try connection.query("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL", []).map { try $0.string("name") })
                return (columns, indexes)
            }
            await sqlite.close()

            let created = try await offPool { try TestBackend.makePostgresDatabase() }
            let postgresDatabase = try #require(created)
            let postgres = try PostgreSQLDatabase(url: postgresDatabase.url, connections: 1)
            try await postgres.migrate(Migrations.sidecar)
            let postgresSchema = try await postgres.read { connection -> (columns: Set<Column>, indexes: Set<String>) in
                let columns = Set(
                    try connection.query(
                        """
                        SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'public'
                        """, []
                    ).compactMap { row -> Column? in
                        let table = try row.string("table_name")
                        guard !Self.bookkeeping.contains(table) else { return nil }
                        return Column(
                            table: table, name: try row.string("column_name"), type: Self.family(try row.string("data_type")),
                            notNull: try row.string("is_nullable") == "NO")
                    })
                // Only indexes created by name: not those behind PRIMARY KEY and UNIQUE.
                let indexes = Set(
                    try connection.query(
                        """
                        SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = 'public'
                        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)
                        """, []
                    ).map { try $0.string("indexname") }
                ).subtracting(["schema_migrations_pkey", "sidecar_health_pkey"])
                return (columns, indexes)
            }
            await postgres.close()
            try await offPool { try TestBackend.dropPostgresDatabase(postgresDatabase) }
            #expect(sqliteSchema.columns.count > 100)
            #expect(sqliteSchema.columns.subtracting(postgresSchema.columns).sorted { $0.description < $1.description }.map(\.description) == [])
            #expect(postgresSchema.columns.subtracting(sqliteSchema.columns).sorted { $0.description < $1.description }.map(\.description) == [])
            #expect(sqliteSchema.indexes == postgresSchema.indexes)
        }
    }
}
