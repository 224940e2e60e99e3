import FoundationEssentials

/// A connection that can run DDL: statements without parameters, several
/// separated by semicolons.
protocol DDLConnection: SQLConnection {
    func run(_ sql: String) throws(DatabaseError)
}

extension SQLiteConnection: DDLConnection {}
extension PostgreSQLConnection: DDLConnection {}

/// Applying migrations, written once for both engines: inside the caller's
/// write transaction, the versions `schema_migrations` does not list yet
/// are run in order and recorded, so a failed one leaves nothing half done;
/// a database migrated by a newer binary (a version above every known one)
/// is refused rather than written to.
enum Migrator {
    static func apply(_ migrations: [Migration], on connection: some DDLConnection) throws -> [Int] {
        let ordered = migrations.sorted { $0.version < $1.version }
        let versionType = connection.dialect == .postgresql ? "BIGINT" : "INTEGER"
        try connection.run(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version \(versionType) PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        let applied = Set(
            try connection.query("SELECT version FROM schema_migrations", []).compactMap { try $0.optionalInt("version") }.map(Int.init))
        let known = ordered.last?.version ?? 0
        if let newest = applied.max(), newest > known { throw DatabaseError.schemaTooNew(applied: newest, known: known) }
        var done: [Int] = []
        for migration in ordered where !applied.contains(migration.version) {
            do {
                for statement in migration.statements {
                    let text = statement.text(for: connection.dialect)
                    if !text.isEmpty { try connection.run(text) }
                }
                try connection.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    [.integer(Int64(migration.version)), .text(migration.name), .text(Date.now.formatted(.iso8601))])
            } catch {
                throw DatabaseError.migrationFailed(version: migration.version, name: migration.name, message: "\(error)")
            }
            done.append(migration.version)
        }
        return done
    }
}
