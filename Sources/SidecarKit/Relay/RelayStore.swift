import Core
import Crypto
import Database
import Push

/// The relay's memory: which servers each token is bound to, and the
/// signatures of recent sends. Tokens are stored only as SHA-256 hashes: a
/// copy of the database names no device.
struct RelayStore: Sendable {
    let database: any Database
    /// Bindings one server key, and one client address, may hold (0: no
    /// bound). serverIds cost nothing to make, so the per-client bound is
    /// what stops one address from filling the disk with fresh keys.
    var maxBindingsPerServer = RelayStore.defaultMaxBindings
    var maxBindingsPerClient = RelayStore.defaultMaxBindings
    /// The replay window in memory, for a relay that runs alone (SQLite);
    /// nil: kept in `relay_replays`, shared by relays on one PostgreSQL.
    var replayWindow: ReplayWindow? = nil

    /// Room for the largest region in the apps' directory (MTA New York: about
    /// 0.7 million bus riders, each token replaced once within the 180-day
    /// lapse, plus about 40% headroom); the arithmetic is in docs/relay.md.
    static let defaultMaxBindings = 2_000_000

    /// A new binding past a bound; a send when the replay window is full.
    enum Refusal: Error, Equatable {
        case bindingLimit
        case replayWindowFull
    }

    static func tokenHash(_ token: String) -> String { Base64URL.encode(SHA256.digest(Array(token.utf8))) }
    static func clientHash(_ clientKey: String) -> String { Base64URL.encode(Array(SHA256.digest(Array(clientKey.utf8)).prefix(12))) }

    /// Binds a token to a server (again: refreshes the binding's age). A new
    /// binding counts toward its server's and its client address's bound,
    /// kept in `relay_binding_counts` in the same transaction.
    func bind(token: String, serverID: String, platform: PushPlatform, clientKey: String, nowMillis: EpochMillis) async throws {
        let tokenHash = Self.tokenHash(token)
        let client = Self.clientHash(clientKey)
        let (perServer, perClient) = (maxBindingsPerServer, maxBindingsPerClient)
        // The binding's row and both counters' rows: every binding of one
        // server updates its counter, so such writes queue rather than wait
        // for each other's rows on two connections.
        let rows = ["relay_bindings/\(tokenHash)/\(serverID)", "relay_binding_counts/server:" + serverID, "relay_binding_counts/client:" + client]
        _ = try await database.write(locking: rows) { connection in
            let refreshed = try connection.execute(
                """
                UPDATE relay_bindings SET platform = \(platform.rawValue), bound_at = \(nowMillis) WHERE token_hash = \(tokenHash) AND server_id = \(serverID)
                """)
            guard refreshed == 0 else { return }
            for (owner, limit) in [("server:" + serverID, perServer), ("client:" + client, perClient)] where limit > 0 {
                let held = try connection.queryOne("SELECT bindings FROM relay_binding_counts WHERE owner = \(owner)")?.int("bindings") ?? 0
                if held >= Int64(limit) { throw Refusal.bindingLimit }
            }
            try connection.execute(
                """
                INSERT INTO relay_bindings (token_hash, server_id, platform, bound_at, client_hash) VALUES (\(tokenHash), \(serverID), \(platform.rawValue), \(nowMillis), \(client))
                ON CONFLICT (token_hash, server_id) DO UPDATE SET platform = excluded.platform, bound_at = excluded.bound_at
                """)
            try Self.count(connection, owners: ["server:" + serverID, "client:" + client], by: 1)
        }
    }

    static func count(_ connection: any SQLConnection, owners: [String], by change: Int64) throws {
        for owner in owners {
            try connection.execute(
                """
                INSERT INTO relay_binding_counts (owner, bindings) VALUES (\(owner), \(change))
                ON CONFLICT (owner) DO UPDATE SET bindings = relay_binding_counts.bindings + excluded.bindings
                """)
        }
    }

    /// The bindings an owner (`server:<id>` or `client:<hash>`) holds.
    func held(owner: String) async throws -> Int64 {
        try await database.read { connection in
            try connection.queryOne("SELECT bindings FROM relay_binding_counts WHERE owner = \(owner)")?.int("bindings") ?? 0
        }
    }

    /// The platform each of `tokens` is bound with to `serverID`, in the
    /// tokens' order; nil where there is no binding or it lapsed.
    func bindings(tokens: [String], serverID: String, nowMillis: EpochMillis) async throws -> [PushPlatform?] {
        guard !tokens.isEmpty else { return [] }
        let hashes = tokens.map(Self.tokenHash)
        let since = nowMillis.adding(millis: -RelayProtocol.bindingLifetimeMillis)
        let rows = try await database.read { connection in
            try connection.query(
                """
                SELECT token_hash, platform FROM relay_bindings
                WHERE server_id = \(serverID) AND bound_at > \(since) AND token_hash IN (\(list: hashes))
                """)
        }
        var byHash: [String: PushPlatform] = Dictionary(minimumCapacity: rows.count)
        for row in rows {
            if let platform = PushPlatform(rawValue: try row.string("platform")) { byHash[try row.string("token_hash")] = platform }
        }
        return hashes.map { byHash[$0] }
    }

    /// A token the provider called dead on a server's send: that server's
    /// binding ends, and no other server's.
    func forget(token: String, serverID: String) async throws {
        _ = try await database.write { connection in
            for row in try connection.query(
                "DELETE FROM relay_bindings WHERE token_hash = \(Self.tokenHash(token)) AND server_id = \(serverID) RETURNING client_hash")
            {
                try Self.count(
                    connection, owners: ["server:" + serverID] + (row.optionalString("client_hash").map { ["client:" + $0] } ?? []), by: -1)
            }
        }
    }

    /// Records a send (its `RelayProtocol.replayKey`); false when it was
    /// seen within the window (a replay). Expired entries are swept as new
    /// ones arrive.
    func remember(_ replayKey: String, nowMillis: EpochMillis) async throws -> Bool {
        if let replayWindow {
            switch replayWindow.remember(replayKey, nowMillis: nowMillis) {
            case .new: return true
            case .replay: return false
            case .full: throw Refusal.replayWindowFull
            }
        }
        let key = Base64URL.encode(SHA256.digest(Array(replayKey.utf8)))
        return try await database.write { connection in
            _ = try connection.execute("DELETE FROM relay_replays WHERE expires_at <= \(nowMillis)")
            let inserted = try connection.execute(
                """
                INSERT INTO relay_replays (signature_hash, expires_at) VALUES (\(key), \(nowMillis.adding(millis: RelayProtocol.replayMillis))) ON CONFLICT (signature_hash) DO NOTHING
                """)
            return inserted > 0
        }
    }

    /// Lapsed bindings are removed daily (and leave their owners' counts).
    func sweep(nowMillis: EpochMillis) async throws -> Int {
        try await database.write { connection in
            let cutoff = nowMillis.adding(millis: -RelayProtocol.bindingLifetimeMillis).sqlValue
            for row in try connection.query(
                """
                SELECT server_id, client_hash, COUNT(*) AS n FROM relay_bindings WHERE bound_at <= \(cutoff) GROUP BY server_id, client_hash
                """)
            {
                let owners = ["server:" + (try row.string("server_id"))] + (try row.optionalString("client_hash").map { ["client:" + $0] } ?? [])
                try Self.count(connection, owners: owners, by: -(row.int("n")))
            }
            try connection.execute("DELETE FROM relay_binding_counts WHERE bindings <= 0")
            return try connection.execute("DELETE FROM relay_bindings WHERE bound_at <= \(cutoff)")
        }
    }

}

extension RelayStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "RelayStore",
        [
            1001: [
                .table(
                    "relay_bindings",
                    """
                    token_hash TEXT NOT NULL,
                    server_id TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    bound_at BIGINT NOT NULL,
                    PRIMARY KEY (token_hash, server_id)
                    """),
                .same("CREATE INDEX relay_bindings_server ON relay_bindings (server_id, token_hash)"),
                .table(
                    "relay_replays",
                    """
                    signature_hash TEXT PRIMARY KEY,
                    expires_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX relay_replays_expiry ON relay_replays (expires_at)"),
            ],
            1002: [
                .same("ALTER TABLE relay_bindings ADD COLUMN client_hash TEXT"),
                .table(
                    "relay_binding_counts",
                    """
                    owner TEXT PRIMARY KEY,
                    bindings BIGINT NOT NULL
                    """),
                .same(
                    "INSERT INTO relay_binding_counts (owner, bindings) SELECT 'server:' || server_id, COUNT(*) FROM relay_bindings GROUP BY server_id"
                ),
            ],
            // A send looks up 100 tokens of one server at a time. On SQLite the
            // bindings move into a table clustered on its key (WITHOUT ROWID),
            // so each token is one B-tree descent rather than an index's and
            // then the row's; the index by server goes on both engines (the
            // primary key answers every query, and without statistics SQLite
            // chose the index by server, the slower of the two).
            1003: [
                .same("DROP INDEX IF EXISTS relay_bindings_server"),
                .sqliteOnly("ALTER TABLE relay_bindings RENAME TO relay_bindings_1002"),
                .sqliteOnly(
                    """
                    CREATE TABLE relay_bindings (
                        token_hash TEXT NOT NULL,
                        server_id TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        bound_at BIGINT NOT NULL,
                        client_hash TEXT,
                        PRIMARY KEY (token_hash, server_id)
                    ) WITHOUT ROWID
                    """),
                .sqliteOnly(
                    """
                    INSERT INTO relay_bindings (token_hash, server_id, platform, bound_at, client_hash)
                    SELECT token_hash, server_id, platform, bound_at, client_hash FROM relay_bindings_1002
                    """),
                .sqliteOnly("DROP TABLE relay_bindings_1002"),
            ],
        ])
}
