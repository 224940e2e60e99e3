import Core
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
        var createdAt: EpochSeconds
        var lastUsedAt: EpochSeconds?
        var revokedAt: EpochSeconds?
        /// The regions the key may act on (nil: every region).
        var regions: Set<Int>? = nil
        /// Whether the key may start sends (the reference's `push` scope).
        var canPush = false
        /// Whether the key may manage other keys (within its regions).
        var isAdmin = false
        /// Whether the key may add, edit, poll and remove alert sources
        /// (an admin key may too): each source is a request this server
        /// makes every interval, so a plain region key only reads them.
        var canManageSources = false
        /// A service principal: deployment-wide, and it may only manage keys.
        var isPrincipal = false
        /// The principal that made this key, if one did.
        var principalID: Int64? = nil
        /// Who made it: `cli`, `principal:<id>`, `apikey:<id>` or `user:<email>`.
        var createdBy = "cli"
        /// Who revoked it, in the same form; nil while it is live.
        var revokedBy: String? = nil

        /// The credential as `created_by` and `revoked_by` record it.
        var actorTag: String { (isPrincipal ? "principal:" : "apikey:") + String(id) }

        /// Whether the key may act on a region.
        func allows(region: Int) -> Bool { regions?.contains(region) ?? true }

        /// `regions 1,3; push` for listings.
        var scopeDescription: String {
            if isPrincipal { return "service principal" }
            return (regions.map { "regions " + $0.sorted().map(String.init).joined(separator: ",") } ?? "all regions") + (canPush ? "; push" : "")
                + (canManageSources ? "; sources" : "") + (isAdmin ? "; admin" : "")
        }

        /// Whether this credential may add, edit, poll and remove alert sources.
        var managesSources: Bool { !isPrincipal && (isAdmin || canManageSources) }

        /// Whether this credential may create, list and revoke keys.
        var managesKeys: Bool { isPrincipal || isAdmin }

        /// Whether this credential may manage principals: an admin key of every region.
        var managesPrincipals: Bool { isAdmin && !isPrincipal && regions == nil }

        /// Whether this credential may grant a key these powers: never more
        /// regions, push or admin than it has itself; a principal grants
        /// region-scoped keys only, never admin.
        func mayGrant(regions granted: Set<Int>?, push: Bool, admin: Bool, sources: Bool = false) -> Bool {
            if isPrincipal { return granted != nil && !admin && !sources }
            guard isAdmin, !push || canPush else { return false }
            guard let own = regions else { return true }
            return granted.map { $0.isSubset(of: own) } ?? false
        }

        /// Whether this credential may see or revoke a key.
        func mayManage(_ other: Record) -> Bool {
            if isPrincipal { return other.principalID == id }
            guard isAdmin, !other.isPrincipal else { return false }
            guard let own = regions else { return true }
            return other.regions.map { $0.isSubset(of: own) } ?? false
        }
    }

    static func hash(_ key: String) -> String { Hex.encode(SHA256.digest(Array(key.utf8))) }

    /// Creates a key (or, with `principal`, a service principal) and returns
    /// it in clear, once. `actor` is who made it (`Record.createdBy`). A key
    /// of one region reads `obask_<region>_…`, a principal `obasp_…`
    /// (`ApiKeyFormat`).
    func create(
        name: String, regions: Set<Int>? = nil, canPush: Bool = false, isAdmin: Bool = false, canManageSources: Bool = false,
        principal: Bool = false, madeBy principalID: Int64? = nil, actor: String, now: EpochSeconds
    ) async throws -> (key: String, record: Record) {
        let regions = principal ? nil : regions
        let key = ApiKeyFormat.mint(secret: Base64URL.encode(SecureRandom.bytes(32)), principal: principal, regions: regions, isAdmin: isAdmin)
        let prefix = ApiKeyFormat.listedPrefix(key)
        let kind = principal ? "principal" : "key"
        let id = try await database.write { connection in
            try connection.queryOne(
                """
                INSERT INTO api_keys (name, prefix, key_hash, created_at, regions, can_push, is_admin, can_manage_sources, kind, principal_id, created_by) VALUES (\(name), \(prefix), \(Self.hash(key)), \(now), \(ConsoleStore.encodeRegions(regions)), \(canPush && !principal ? 1 : 0), \(isAdmin && !principal ? 1 : 0), \(canManageSources && !principal ? 1 : 0), \(kind), \(principalID), \(actor)) RETURNING id
                """)?.int("id") ?? 0
        }
        return (
            key,
            Record(
                id: id, name: name, prefix: prefix, createdAt: now, lastUsedAt: nil, revokedAt: nil, regions: regions,
                canPush: canPush && !principal, isAdmin: isAdmin && !principal, canManageSources: canManageSources && !principal,
                isPrincipal: principal, principalID: principalID, createdBy: actor)
        )
    }

    /// How long a key's `last_used_at` stands before a use writes it again
    /// (as the reference: a busy key costs one write an hour, not one a request).
    static let lastUseResolutionSeconds: Int64 = 3600

    /// The live key matching a presented bearer token, if any. Text that is
    /// no credential of ours is refused before it is hashed, and a key whose
    /// text names a region that is not its own is refused like an unknown one.
    func verify(_ presented: String, now: EpochSeconds) async throws -> Record? {
        guard let claim = ApiKeyFormat.parse(presented) else { return nil }
        let digest = Self.hash(presented)
        guard
            let record = try await database.read({ connection in
                try connection.queryOne("SELECT * FROM api_keys WHERE key_hash = \(digest) AND revoked_at IS NULL").map(Self.record)
            })
        else { return nil }
        switch claim {
        case .regionKey(let region): guard !record.isPrincipal, record.regions == [region] else { return nil }
        case .principal: guard record.isPrincipal else { return nil }
        case .sidecar: break
        }
        if Self.lastUseIsDue(record.lastUsedAt, now: now) {
            do {
                _ = try await database.write { connection in
                    try connection.execute("UPDATE api_keys SET last_used_at = \(now) WHERE id = \(record.id)")
                }
            } catch {
                // Best effort: a key that cannot note its use still works.
            }
        }
        return record
    }

    /// Whether a use at `now` writes `last_used_at`: never written, or written an hour or more ago.
    static func lastUseIsDue(_ lastUsedAt: EpochSeconds?, now: EpochSeconds) -> Bool {
        guard let lastUsedAt else { return true }
        return now.value - lastUsedAt.value >= lastUseResolutionSeconds
    }

    /// Keys (or principals) in id order, `after` an id when paging.
    func list(principals: Bool = false, after: Int64 = 0, limit: Int = Int(Int32.max)) async throws -> [Record] {
        let kind = principals ? "principal" : "key"
        return try await database.read { connection in
            try connection.query("SELECT * FROM api_keys WHERE kind = \(kind) AND id > \(after) ORDER BY id LIMIT \(Int64(limit))").map(Self.record)
        }
    }

    /// Revokes a principal and, when asked, every live key it made; returns
    /// how many keys went with it, or nil when no live principal has the id.
    /// The keys go first, so a principal revoked is never seen with live keys.
    func revokePrincipal(id: Int64, withKeys: Bool, actor: String, now: EpochSeconds) async throws -> [Int64]? {
        try await database.write { connection in
            guard try connection.queryOne("SELECT id FROM api_keys WHERE id = \(id) AND kind = 'principal' AND revoked_at IS NULL") != nil
            else { return nil }
            var revoked: [Int64] = []
            if withKeys {
                revoked = try connection.query(
                    "UPDATE api_keys SET revoked_at = \(now), revoked_by = \(actor) WHERE principal_id = \(id) AND revoked_at IS NULL RETURNING id"
                ).map { try $0.int("id") }.sorted()
            }
            try connection.execute("UPDATE api_keys SET revoked_at = \(now), revoked_by = \(actor) WHERE id = \(id)")
            return revoked
        }
    }

    func find(id: Int64) async throws -> Record? {
        try await database.read { connection in try connection.queryOne("SELECT * FROM api_keys WHERE id = \(id)").map(Self.record) }
    }

    func revoke(id: Int64, actor: String, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.execute(
                "UPDATE api_keys SET revoked_at = \(now), revoked_by = \(actor) WHERE id = \(id) AND kind = 'key' AND revoked_at IS NULL") > 0
        }
    }

    static func record(_ row: Row) throws -> Record {
        Record(
            id: try row.int("id"), name: try row.string("name"), prefix: try row.string("prefix"),
            createdAt: try row.seconds("created_at"), lastUsedAt: try row.optionalSeconds("last_used_at"),
            revokedAt: try row.optionalSeconds("revoked_at"),
            regions: ConsoleStore.decodeRegions(try row.optionalString("regions")), canPush: try row.bool("can_push"),
            isAdmin: try row.bool("is_admin"), canManageSources: try row.bool("can_manage_sources"),
            isPrincipal: try row.string("kind") == "principal", principalID: try row.optionalInt("principal_id"),
            createdBy: try row.string("created_by"), revokedBy: try row.optionalString("revoked_by"))
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
            23: [
                .same("ALTER TABLE api_keys ADD COLUMN is_admin BIGINT NOT NULL DEFAULT 0"),
                .same("ALTER TABLE api_keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'key'"),
                .same("ALTER TABLE api_keys ADD COLUMN principal_id BIGINT"),
            ],
            24: [
                .same("ALTER TABLE api_keys ADD COLUMN can_manage_sources BIGINT NOT NULL DEFAULT 0")
            ],
            33: [
                .same("ALTER TABLE api_keys ADD COLUMN created_by TEXT NOT NULL DEFAULT 'cli'"),
                .same("ALTER TABLE api_keys ADD COLUMN revoked_by TEXT"),
            ],
        ])
}
