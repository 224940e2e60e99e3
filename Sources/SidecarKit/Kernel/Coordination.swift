import Core
import Crypto
import Database
import HTTPServer

/// What several instances sharing one database coordinate through it:
/// singleton leases (one instance at a time runs the daily prune or fetches
/// the regions directory), documents one instance fetched for all, and
/// throttle counters that hold across instances on PostgreSQL.
struct CoordinationStore: Sendable {
    let database: any Database
    /// This process, as lease holders are named (random per start).
    let instance: String

    init(database: any Database, instance: String = "sidecar-" + SecureToken.hex(bytes: 6)) {
        self.database = database
        self.instance = instance
    }

    /// Takes or renews the lease `name` for `ttlSeconds`; true when this
    /// instance holds it now. Atomic on both backends: the upsert only
    /// overwrites a lapsed lease or this instance's own.
    func acquire(_ name: String, ttlSeconds: Int64, nowSeconds: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.queryOne(
                """
                INSERT INTO leases (name, holder, expires_at) VALUES (\(name), \(instance), \(nowSeconds.adding(seconds: ttlSeconds)))
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                WHERE leases.expires_at <= \(nowSeconds) OR leases.holder = excluded.holder
                RETURNING holder
                """) != nil
        }
    }

    /// Gives the lease back early (work done), if this instance holds it.
    func release(_ name: String) async throws {
        _ = try await database.write { connection in
            try connection.execute("DELETE FROM leases WHERE name = \(name) AND holder = \(instance)")
        }
    }

    /// Stores a document fetched once for every instance.
    func storeDocument(_ name: String, body: [UInt8], nowSeconds: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                INSERT INTO shared_documents (name, body, fetched_at) VALUES (\(name), \(body), \(nowSeconds))
                ON CONFLICT (name) DO UPDATE SET body = excluded.body, fetched_at = excluded.fetched_at
                """)
        }
    }

    /// A shared document and when it was fetched.
    func document(_ name: String) async throws -> (body: [UInt8], fetchedAt: EpochSeconds)? {
        try await database.read { connection in
            guard let row = try connection.queryOne("SELECT body, fetched_at FROM shared_documents WHERE name = \(name)") else {
                return nil
            }
            guard case .blob(let body) = try row.value("body") else { return nil }
            return (body, try row.seconds("fetched_at"))
        }
    }

}

/// Throttle counters in the database, so a limit holds across every
/// instance sharing it: "30 a minute per client" is 30 in total. Each check
/// is one atomic upsert that returns the new count.
struct DatabaseWindowCounter: SharedWindowCounter {
    let database: any Database

    func increment(key: String, windowStart: Int64, by hits: Int) async throws -> Int {
        try await database.write { connection in
            Int(
                try connection.queryOne(
                    """
                    INSERT INTO rate_limits (key, window_start, hits) VALUES (\(key), \(windowStart), \(Int64(hits)))
                    ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + excluded.hits
                    RETURNING hits
                    """)?.int("hits") ?? Int64(hits))
        }
    }

    func count(key: String, windowStart: Int64) async throws -> Int {
        try await database.read { connection in
            Int(try connection.queryOne("SELECT hits FROM rate_limits WHERE key = \(key) AND window_start = \(windowStart)")?.int("hits") ?? 0)
        }
    }

    /// Forgets windows that ended before `cutoff` (epoch seconds).
    func prune(endedBefore cutoff: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute("DELETE FROM rate_limits WHERE window_start < \(cutoff)")
        }
    }
}

extension CoordinationStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "CoordinationStore",
        [
            12: [
                .table(
                    "leases",
                    """
                    name TEXT PRIMARY KEY,
                    holder TEXT NOT NULL,
                    expires_at BIGINT NOT NULL
                    """),
                .engines(
                    sqlite: """
                        CREATE TABLE shared_documents (
                            name TEXT PRIMARY KEY,
                            body BLOB NOT NULL,
                            fetched_at BIGINT NOT NULL
                        )
                        """,
                    postgresql: """
                        CREATE TABLE shared_documents (
                            name TEXT PRIMARY KEY,
                            body BYTEA NOT NULL,
                            fetched_at BIGINT NOT NULL
                        )
                        """),
                .table(
                    "rate_limits",
                    """
                    key TEXT NOT NULL,
                    window_start BIGINT NOT NULL,
                    hits BIGINT NOT NULL,
                    PRIMARY KEY (key, window_start)
                    """),
            ]
        ])
}
