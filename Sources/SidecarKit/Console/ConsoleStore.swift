import Core
import Crypto
import Database

/// Console accounts, their sessions and the audit log.
struct ConsoleStore: Sendable {
    let database: any Database

    struct User: Sendable, Equatable {
        var id: Int64
        var email: String
        var role: ConsoleRole
        /// Nil: every region.
        var regions: Set<Int>?
        var createdAt: EpochSeconds
    }

    struct Session: Sendable {
        var user: User
        var csrfToken: String
        var idHash: String
    }

    enum Failure: Error, Equatable { case duplicateEmail, notFound }

    // MARK: Users

    static func encodeRegions(_ regions: Set<Int>?) -> SQLValue {
        guard let regions else { return .null }
        return .text(regions.sorted().map(String.init).joined(separator: ","))
    }

    static func decodeRegions(_ text: String?) -> Set<Int>? {
        guard let text else { return nil }
        return Set(text.split(separator: ",").compactMap { Int($0) })
    }

    static func user(_ row: Row) throws -> User {
        User(
            id: try row.int("id"), email: try row.string("email"), role: ConsoleRole(rawValue: try row.string("role")) ?? .viewer,
            regions: decodeRegions(try row.optionalString("regions")), createdAt: try row.seconds("created_at"))
    }

    func createUser(email: String, passwordHash: String, role: ConsoleRole, regions: Set<Int>?, now: EpochSeconds) async throws -> User {
        let id: Int64? = try await database.write { connection in
            guard try connection.queryOne("SELECT id FROM console_users WHERE email = \(email)") == nil else { return nil }
            return try connection.queryOne(
                """
                INSERT INTO console_users (email, password_hash, role, regions, created_at, updated_at)
                VALUES (\(email), \(passwordHash), \(role.rawValue), \(Self.encodeRegions(regions)), \(now), \(now)) RETURNING id
                """)?.optionalInt("id")
        }
        guard let id else { throw Failure.duplicateEmail }
        return User(id: id, email: email, role: role, regions: regions, createdAt: now)
    }

    func users() async throws -> [User] {
        try await database.read { connection in try connection.query("SELECT * FROM console_users ORDER BY email").map(Self.user) }
    }

    /// The account and its stored password hash.
    func credentials(email: String) async throws -> (User, String)? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM console_users WHERE email = \(email)").map { (try Self.user($0), try $0.string("password_hash")) }
        }
    }

    /// Sets a password and ends every session of the account.
    func setPassword(email: String, passwordHash: String, now: EpochSeconds) async throws {
        let changed = try await database.write { connection in
            guard let id = try connection.queryOne("SELECT id FROM console_users WHERE email = \(email)")?.optionalInt("id") else { return false }
            _ = try connection.execute("UPDATE console_users SET password_hash = \(passwordHash), updated_at = \(now) WHERE id = \(id)")
            _ = try connection.execute("DELETE FROM console_sessions WHERE user_id = \(id)")
            return true
        }
        guard changed else { throw Failure.notFound }
    }

    func deleteUser(email: String) async throws {
        let deleted = try await database.write { connection in
            guard let id = try connection.queryOne("SELECT id FROM console_users WHERE email = \(email)")?.optionalInt("id") else { return false }
            _ = try connection.execute("DELETE FROM console_sessions WHERE user_id = \(id)")
            _ = try connection.execute("DELETE FROM console_users WHERE id = \(id)")
            return true
        }
        guard deleted else { throw Failure.notFound }
    }

    // MARK: Sessions

    /// A new session with a fresh id (never one the browser sent: no
    /// fixation). Returns the cookie value; only its SHA-256 is stored.
    func startSession(userID: Int64, now: EpochSeconds) async throws -> (cookie: String, csrfToken: String) {
        let cookie = Base64URL.encode(SecureRandom.bytes(32))
        let csrf = Base64URL.encode(SecureRandom.bytes(24))
        try await database.write { connection in
            // Sessions long dead are swept as new ones start.
            _ = try connection.execute(
                "DELETE FROM console_sessions WHERE last_seen_at < \(now.adding(seconds: -ConsoleRules.idleSeconds)) OR created_at < \(now.adding(seconds: -ConsoleRules.absoluteSeconds))"
            )
            _ = try connection.execute(
                """
                INSERT INTO console_sessions (id_hash, user_id, csrf_token, created_at, last_seen_at) VALUES (\(Self.hash(cookie)), \(userID), \(csrf), \(now), \(now))
                """)
        }
        return (cookie, csrf)
    }

    static func hash(_ cookie: String) -> String { Hex.encode(SHA256.digest(Array(cookie.utf8))) }

    /// The first live session among the values a request sent for the
    /// session cookie (the console's, scoped to `/admin`, and the admin
    /// API's, scoped to `/`, can both arrive).
    func session(cookies: [String], now: EpochSeconds) async throws -> Session? {
        for cookie in cookies.prefix(4) {
            if let session = try await session(cookie: cookie, now: now) { return session }
        }
        return nil
    }

    /// The live session a cookie names, touching it at most once a minute.
    func session(cookie: String, now: EpochSeconds) async throws -> Session? {
        guard cookie.utf8.count <= 128 else { return nil }
        let idHash = Self.hash(cookie)
        guard
            let row = try await database.read({ connection in
                try connection.queryOne(
                    """
                    SELECT s.csrf_token, s.created_at AS session_created, s.last_seen_at, u.*
                    FROM console_sessions s JOIN console_users u ON u.id = s.user_id WHERE s.id_hash = \(idHash)
                    """)
            })
        else { return nil }
        let created = try row.optionalSeconds("session_created") ?? 0
        let lastSeen = try row.seconds("last_seen_at")
        guard ConsoleRules.sessionIsLive(createdAt: created, lastSeenAt: lastSeen, now: now) else {
            try await endSession(idHash: idHash)
            return nil
        }
        if now.seconds(since: lastSeen) >= ConsoleRules.touchEverySeconds {
            _ = try await database.write { connection in
                try connection.execute("UPDATE console_sessions SET last_seen_at = \(now) WHERE id_hash = \(idHash)")
            }
        }
        return Session(user: try Self.user(row), csrfToken: try row.string("csrf_token"), idHash: idHash)
    }

    func endSession(idHash: String) async throws {
        _ = try await database.write { connection in
            try connection.execute("DELETE FROM console_sessions WHERE id_hash = \(idHash)")
        }
    }

    // MARK: Secrets

    /// A random secret the console signs with (the sign-in form's token),
    /// made once and shared by every instance through the database.
    func secret(named name: String) async throws -> [UInt8] {
        let fresh = Base64URL.encode(SecureRandom.bytes(32))
        let stored = try await database.write { connection in
            try connection.execute("INSERT INTO console_secrets (name, value) VALUES (\(name), \(fresh)) ON CONFLICT (name) DO NOTHING")
            return try connection.queryOne("SELECT value FROM console_secrets WHERE name = \(name)")?.optionalString("value")
        }
        return Base64URL.decode(stored ?? fresh) ?? Array(fresh.utf8)
    }

    /// Records a single-use form token as spent; false when it already was.
    /// Spent tokens older than their lifetime are forgotten as new ones come.
    func spendFormToken(_ tokenHash: String, now: EpochSeconds, forgetBefore: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.execute("DELETE FROM console_spent_tokens WHERE spent_at < \(forgetBefore)")
            return try connection.execute(
                """
                INSERT INTO console_spent_tokens (token_hash, spent_at) VALUES (\(tokenHash), \(now)) ON CONFLICT (token_hash) DO NOTHING
                """) > 0
        }
    }

    // MARK: Migrations

}

extension ConsoleStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "ConsoleStore",
        [
            14: [
                .table(
                    "console_users", withID: true,
                    """
                    email TEXT NOT NULL UNIQUE,
                    password_hash TEXT NOT NULL,
                    role TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
                    regions TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                    """),
                .table(
                    "console_sessions",
                    """
                    id_hash TEXT PRIMARY KEY,
                    user_id BIGINT NOT NULL,
                    csrf_token TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    last_seen_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX console_sessions_user ON console_sessions (user_id)"),
            ],
            18: [
                .table(
                    "console_secrets",
                    """
                    name TEXT PRIMARY KEY,
                    value TEXT NOT NULL
                    """),
                .table(
                    "console_spent_tokens",
                    """
                    token_hash TEXT PRIMARY KEY,
                    spent_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX console_spent_tokens_age ON console_spent_tokens (spent_at)"),
            ],
        ])
}
