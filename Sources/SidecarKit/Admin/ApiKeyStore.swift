import Crypto
import Database

/// Bearer keys for the admin API. A key is shown once, at creation; only
/// its SHA-256 is stored, so a copy of the database yields no usable key.
struct ApiKeyStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    /// A stored key (never the key itself).
    struct Record: Sendable, Equatable {
        var id: Int64
        var name: String
        /// The key's first characters, to tell keys apart in listings.
        var prefix: String
        var createdAt: Int64
        var lastUsedAt: Int64?
        var revokedAt: Int64?
        /// The regions the key may act on (nil: every region).
        var regions: Set<Int>? = nil
        /// Whether the key may start sends (the reference's `push` scope).
        var canPush = false

        /// Whether the key may act on a region.
        func allows(region: Int) -> Bool { regions?.contains(region) ?? true }

        /// `regions 1,3; push` for listings.
        var scopeDescription: String {
            (regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions") + (canPush ? "; push" : "")
        }
    }

    static func hash(_ key: String) -> String { Hex.encode(SHA256.digest(Array(key.utf8))) }

    /// Creates a key and returns it in clear, once.
    func create(name: String, regions: Set<Int>? = nil, canPush: Bool = false, now: Int64) async throws -> (key: String, record: Record) {
        let key = "sidecar_" + Base64URL.encode(SecureRandom.bytes(32))
        let prefix = String(key.prefix(14))
        let id = try await database.write { connection in
            try connection.queryOne(
                """
                INSERT INTO api_keys (name, prefix, key_hash, created_at, regions, can_push) VALUES (\(name), \(prefix), \(Self.hash(key)), \(now), \(ConsoleStore.encodeRegions(regions)), \(canPush ? 1 : 0)) RETURNING id
                """)?.int("id") ?? 0
        }
        return (key, Record(id: id, name: name, prefix: prefix, createdAt: now, lastUsedAt: nil, revokedAt: nil, regions: regions, canPush: canPush))
    }

    /// The live key matching a presented bearer token, if any.
    func verify(_ presented: String, now: Int64) async throws -> Record? {
        let digest = Self.hash(presented)
        guard
            let record = try await database.read({ connection in
                try connection.queryOne("SELECT * FROM api_keys WHERE key_hash = \(digest) AND revoked_at IS NULL").map(Self.record)
            })
        else { return nil }
        if (record.lastUsedAt ?? 0) < now - 60 {
            _ = try? await database.write { connection in
                try connection.execute("UPDATE api_keys SET last_used_at = \(now) WHERE id = \(record.id)")
            }
        }
        return record
    }

    func list() async throws -> [Record] {
        try await database.read { connection in try connection.query("SELECT * FROM api_keys ORDER BY id").map(Self.record) }
    }

    func find(id: Int64) async throws -> Record? {
        try await database.read { connection in try connection.queryOne("SELECT * FROM api_keys WHERE id = \(id)").map(Self.record) }
    }

    func revoke(id: Int64, now: Int64) async throws -> Bool {
        try await database.write { connection in
            try connection.execute("UPDATE api_keys SET revoked_at = \(now) WHERE id = \(id) AND revoked_at IS NULL") > 0
        }
    }

    static func record(_ row: Row) throws -> Record {
        Record(
            id: try row.int("id"), name: try row.string("name"), prefix: try row.string("prefix"),
            createdAt: try row.int("created_at"), lastUsedAt: try row.optionalInt("last_used_at"), revokedAt: try row.optionalInt("revoked_at"),
            regions: ConsoleStore.decodeRegions(try row.optionalString("regions")), canPush: try row.bool("can_push"))
    }

}

extension ApiKeyStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "ApiKeyStore",
        [
            3: [
                .table(
                    "api_keys", withID: true,
                    """
                    name TEXT NOT NULL,
                    prefix TEXT NOT NULL,
                    key_hash TEXT NOT NULL UNIQUE,
                    created_at BIGINT NOT NULL,
                    last_used_at BIGINT,
                    revoked_at BIGINT
                    """)
            ],
            14: [
                .same("ALTER TABLE api_keys ADD COLUMN regions TEXT"),
                .same("ALTER TABLE api_keys ADD COLUMN can_push BIGINT NOT NULL DEFAULT 1"),
            ],
        ])
}
