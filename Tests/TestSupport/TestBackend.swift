import Foundation

// The admin connection that creates and drops databases is internal to Database.
@testable import Database

/// Which database the suites run against: SQLite files by default, or, with
/// `SIDECAR_TEST_POSTGRES_URL` set (a role allowed to create databases), a
/// fresh PostgreSQL database per test. `script/test` runs the store and
/// route suites (DatabaseTests, SidecarKitTests) both ways.
public enum TestBackend {
    public static let postgresURL = ProcessInfo.processInfo.environment["SIDECAR_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    public static var isPostgreSQL: Bool { postgresURL != nil }
    public static var isSQLite: Bool { postgresURL == nil }

    /// A database made for one test: its name and the URL that opens it.
    public struct PostgresDatabase: Sendable {
        public let name: String
        public let url: String
    }

    /// A new empty database on the test server, or nil on SQLite. Blocking
    /// (libpq): call it through `offPool`.
    public static func makePostgresDatabase() throws -> PostgresDatabase? {
        guard let admin = postgresURL else { return nil }
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try PostgreSQLConnection(PostgresLocation(url: admin)).run("CREATE DATABASE \(name)")
        return PostgresDatabase(name: String(name), url: url(admin, database: String(name)))
    }

    /// Drops a database made by `makePostgresDatabase`, closing whatever is
    /// still connected to it. Blocking (libpq): through `offPool`, or on a
    /// thread of its own.
    public static func dropPostgresDatabase(_ database: PostgresDatabase) throws {
        guard let admin = postgresURL else { return }
        try PostgreSQLConnection(PostgresLocation(url: admin)).run("DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
    }

    /// The same server URL naming another database (any query kept).
    public static func url(_ url: String, database: String) -> String {
        let query = url.firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        let base = url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url
        let slash = base.lastIndex(of: "/")!
        return base[..<slash] + "/" + database + query
    }
}
