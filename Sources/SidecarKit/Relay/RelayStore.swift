import Core
import Crypto
import Database
import Push

/// The relay's memory: which servers each token is bound to, and the
/// signatures of recent sends. Tokens are stored only as SHA-256 hashes: a
/// copy of the database names no device.
struct RelayStore: Sendable {
    let database: any Database

    static func tokenHash(_ token: String) -> String { Base64URL.encode(SHA256.digest(Array(token.utf8))) }

    /// Binds a token to a server (again: refreshes the binding's age).
    func bind(token: String, serverID: String, platform: PushPlatform, nowMillis: Int64) async throws {
        _ = try await database.write { connection in
            try connection.execute("""
                INSERT INTO relay_bindings (token_hash, server_id, platform, bound_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (token_hash, server_id) DO UPDATE SET platform = excluded.platform, bound_at = excluded.bound_at
                """, [.text(Self.tokenHash(token)), .text(serverID), .text(platform.rawValue), .integer(nowMillis)])
        }
    }

    /// The platform of each of `tokens` bound to `serverID` and not lapsed.
    func bindings(tokens: [String], serverID: String, nowMillis: Int64) async throws -> [String: PushPlatform] {
        let hashes = Dictionary(tokens.map { (Self.tokenHash($0), $0) }, uniquingKeysWith: { first, _ in first })
        guard !hashes.isEmpty else { return [:] }
        let placeholders = (0..<hashes.count).map { "$\($0 + 3)" }.joined(separator: ", ")
        let parameters: [SQLValue] = [.text(serverID), .integer(nowMillis - RelayProtocol.bindingLifetimeMillis)] + hashes.keys.map { .text($0) }
        let rows = try await database.read { connection in
            try connection.query("""
                SELECT token_hash, platform FROM relay_bindings WHERE server_id = $1 AND bound_at > $2 AND token_hash IN (\(placeholders))
                """, parameters)
        }
        var found: [String: PushPlatform] = [:]
        for row in rows {
            if let hash = row.string("token_hash"), let token = hashes[hash], let platform = PushPlatform(rawValue: row.string("platform") ?? "") {
                found[token] = platform
            }
        }
        return found
    }

    /// A dead token is forgotten for every server.
    func forget(token: String) async throws {
        _ = try await database.write { connection in
            try connection.execute("DELETE FROM relay_bindings WHERE token_hash = $1", [.text(Self.tokenHash(token))])
        }
    }

    /// Records a send's signature; false when it was seen within the window
    /// (a replay). Expired entries are swept as new ones arrive.
    func remember(signature: String, nowMillis: Int64) async throws -> Bool {
        let key = Base64URL.encode(SHA256.digest(Array(signature.utf8)))
        return try await database.write { connection in
            _ = try connection.execute("DELETE FROM relay_replays WHERE expires_at <= $1", [.integer(nowMillis)])
            let inserted = try connection.execute("""
                INSERT INTO relay_replays (signature_hash, expires_at) VALUES ($1, $2) ON CONFLICT (signature_hash) DO NOTHING
                """, [.text(key), .integer(nowMillis + RelayProtocol.replayMillis)])
            return inserted > 0
        }
    }

    /// Lapsed bindings are removed daily.
    func sweep(nowMillis: Int64) async throws -> Int {
        try await database.write { connection in
            try connection.execute("DELETE FROM relay_bindings WHERE bound_at <= $1", [.integer(nowMillis - RelayProtocol.bindingLifetimeMillis)])
        }
    }

    /// The relay's own schema, numbered apart from the sidecar's so the two
    /// are never applied to one database by mistake.
    static let migrations: [Migration] = [
        Migration(version: 1001, name: "relay bindings and replay window", sql: """
            CREATE TABLE relay_bindings (
                token_hash TEXT NOT NULL,
                server_id TEXT NOT NULL,
                platform TEXT NOT NULL,
                bound_at INTEGER NOT NULL,
                PRIMARY KEY (token_hash, server_id)
            );
            CREATE INDEX relay_bindings_server ON relay_bindings (server_id, token_hash);
            CREATE TABLE relay_replays (
                signature_hash TEXT PRIMARY KEY,
                expires_at INTEGER NOT NULL
            );
            CREATE INDEX relay_replays_expiry ON relay_replays (expires_at)
            """),
    ]
}
