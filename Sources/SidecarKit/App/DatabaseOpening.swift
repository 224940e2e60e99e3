import Database
import FoundationEssentials
import Push

#if canImport(Glibc)
import Glibc
#endif

extension SidecarConfiguration {
    /// Whether `--database` names PostgreSQL (a `postgres://` URL) rather
    /// than a SQLite file.
    var usesPostgreSQL: Bool { PostgresLocation.matches(database) }

    /// How messages and logs name the database: the SQLite file's absolute
    /// path, or the PostgreSQL URL without its password
    /// (`DatabaseLocation.forHumans`, the one rendering).
    var databaseName: String {
        if usesPostgreSQL || database.hasPrefix("/") || database == ":memory:" { return DatabaseLocation.forHumans(database) }
        return DatabaseLocation.forHumans(FileManager.default.currentDirectoryPath + "/" + database)
    }

    /// Whether `--database` names a SQLite file that does not exist yet
    /// (opening it would create it).
    var databaseIsMissing: Bool {
        !usesPostgreSQL && database != ":memory:" && !FileManager.default.fileExists(atPath: database)
    }

    /// PostgreSQL connections when `--database-connections` is not given:
    /// two per HTTP thread, at least four. Measured on two cores with
    /// PostgreSQL beside the sidecar (`bench/postgres_tail.sh`): four
    /// connections committed a third more registrations a second than
    /// eight, with a lower p99, because each backend and worker competes for
    /// the same cores and fewer of them commit bigger batches.
    static func defaultPostgresConnections(threads: Int) -> Int { max(4, threads * 2) }

    /// Opens the database `--database` names: a SQLite file (created if
    /// missing) or a PostgreSQL server, with a connection pool sized from
    /// `--threads` (`readers` for SQLite's reader pool). A wrong URL or
    /// `sslmode` is a configuration error (exit status 2); an unreachable
    /// server, a wrong password or a missing database exit 1, naming the
    /// host and never the password.
    func openDatabase(readers: Int) throws(StartupError) -> any Database {
        do {
            if usesPostgreSQL {
                return try PostgreSQLDatabase(
                    url: database, connections: postgresConnections ?? Self.defaultPostgresConnections(threads: server.threads),
                    statementTimeoutSeconds: Double(databaseTimeoutSeconds))
            }
            try Self.makeParentDirectory(of: database)
            return try SQLiteDatabase(path: database, synchronous: sqliteSynchronous, readers: readers)
        } catch let error as DatabaseError {
            if case .invalidConfiguration(let reason) = error { throw StartupError(description: "--database: \(reason)", exitCode: 2) }
            throw StartupError(description: "\(error)", exitCode: 1)
        } catch {
            throw StartupError(description: "\(error)", exitCode: 1)
        }
    }

    /// A new SQLite file's directory, made (private to this user) when it
    /// is missing, so `--database /var/lib/sidecar/sidecar.sqlite3` works on
    /// a host where nothing made /var/lib/sidecar yet.
    static func makeParentDirectory(of path: String) throws(StartupError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = String(path[..<slash])
        guard access(directory, F_OK) != 0 else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StartupError(description: "--database: cannot create the directory \(directory) for \(path)", exitCode: 1)
        }
    }

    /// Opens and migrates the database for a command that tells the
    /// operator which database it touched (on `announce`, standard error for
    /// the CLI): a command that only reads never creates one, and a new
    /// database is said to be new. A database holding another program's
    /// tables (a relay's for a sidecar, or the reverse) is refused.
    func openMigrated(
        for owner: SchemaOwner = .sidecar, readsOnly: Bool = false, changesOnly: Bool = false, readers: Int = 2,
        announce: (String) -> Void
    ) async throws(StartupError) -> (database: any Database, applied: [Int]) {
        let missing = databaseIsMissing
        if (readsOnly || changesOnly) && missing {
            let why = readsOnly ? "this command only reads and never creates one" : "this command changes what a database holds and never creates one"
            throw StartupError(
                description: "there is no database at \(databaseName) (\(why)); "
                    + "pass --database PATH|URL or set SIDECAR_DATABASE to the server's database", exitCode: 1)
        }
        let database = try openDatabase(readers: readers)
        do {
            let existing = try await SchemaOwner.appliedVersions(database)
            try owner.check(existing, database: databaseName)
            if readsOnly && existing.isEmpty {
                throw StartupError(
                    description: "\(databaseName) holds no \(owner.name) tables yet (this command only reads and never creates them); "
                        + "pass --database PATH|URL or set SIDECAR_DATABASE to the server's database", exitCode: 1)
            }
            // Version 25 removes tokens no provider issues: counted first, so the removal is said.
            let removing =
                owner == .sidecar && !existing.isEmpty && !existing.contains(25)
                ? try await database.read { connection in
                    (
                        try PushRegistrationStore.tokensBreakingTheRule(connection), try AlarmStore.tokensBreakingTheRule(connection),
                        try LiveActivityStore.tokensBreakingTheRule(connection)
                    )
                } : (0, 0, 0)
            let applied = try await database.migrate(owner.migrations)
            if applied.contains(25) && removing.0 + removing.1 + removing.2 > 0 {
                announce(
                    "migration 25 removed \(removing.0) push registrations, \(removing.1) alarms and \(removing.2) Live Activities whose tokens "
                        + "no provider issues (a token is \(PushToken.rule))")
            }
            announce(
                missing
                    ? "created a new database at \(databaseName)"
                    : existing.isEmpty
                        ? "database: \(databaseName) (its \(owner.name) tables were created now)"
                        : "database: \(databaseName)")
            return (database, applied)
        } catch let error as StartupError {
            await database.close()
            throw error
        } catch {
            await database.close()
            throw StartupError(description: "\(databaseName): \(error)", exitCode: 1)
        }
    }
}

/// Which program's tables a database holds, told apart by migration
/// versions: a sidecar's are below 1000, the relay's from 1000 up. Each
/// refuses the other's database, so one environment file or a mistyped
/// path cannot mix them.
enum SchemaOwner: Sendable {
    case sidecar
    case relay

    var name: String { self == .sidecar ? "sidecar" : "relay" }

    var migrations: [Migration] { self == .sidecar ? Migrations.sidecar : Migrations.relay }

    func owns(_ version: Int) -> Bool { self == .sidecar ? version < 1000 : version >= 1000 }

    /// Refuses a database with another program's migrations applied.
    func check(_ applied: [Int], database: String) throws(StartupError) {
        guard let foreign = applied.first(where: { !owns($0) }) else { return }
        let other = owns(foreign) ? name : (self == .sidecar ? "relay" : "sidecar")
        throw StartupError(
            description: "\(database) is a \(other)'s database (migration \(foreign)); the \(name) keeps its own: "
                + (self == .relay ? "pass the relay's --database (SIDECAR_RELAY_DATABASE)" : "pass the sidecar's --database"),
            exitCode: 2)
    }

    /// The migration versions applied to a database; none when it has no
    /// migrations table yet.
    static func appliedVersions(_ database: any Database) async throws -> [Int] {
        do {
            return try await database.read { connection in
                try connection.query("SELECT version FROM schema_migrations").compactMap { try $0.optionalInt("version") }.map(Int.init)
            }
        } catch let error as DatabaseError {
            // A database no one migrated has no such table: nothing applied.
            switch error {
            case .unavailable, .closed, .busy: throw error
            default: return []
            }
        }
    }
}
