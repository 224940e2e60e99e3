import Database

extension SidecarConfiguration {
    /// Whether `--database` names PostgreSQL (a `postgres://` URL) rather
    /// than a SQLite file.
    public var usesPostgreSQL: Bool { PostgresLocation.matches(database) }

    /// Opens the database `--database` names: a SQLite file (created if
    /// missing) or a PostgreSQL server, with a connection pool sized from
    /// `--threads` (`readers` for SQLite's reader pool). A wrong URL or
    /// `sslmode` is a configuration error (exit status 2); an unreachable
    /// server, a wrong password or a missing database exit 1, naming the
    /// host and never the password.
    public func openDatabase(readers: Int) throws(StartupError) -> any Database {
        do {
            if usesPostgreSQL {
                return try PostgreSQLDatabase(url: database, connections: postgresConnections ?? max(4, threads * 4),
                                              statementTimeoutSeconds: Double(databaseTimeoutSeconds))
            }
            return try SQLiteDatabase(path: database, synchronous: sqliteSynchronous, readers: readers)
        } catch let error as DatabaseError {
            if case .invalidConfiguration(let reason) = error { throw StartupError(description: "--database: \(reason)", exitCode: 2) }
            throw StartupError(description: "\(error)", exitCode: 1)
        } catch {
            throw StartupError(description: "\(error)", exitCode: 1)
        }
    }
}
