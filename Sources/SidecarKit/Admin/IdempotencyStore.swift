import Core
import Database

/// `Idempotency-Key` on admin API POSTs that start work: the first request
/// with a key claims it, and a retry with the same key and the same request
/// gets the first answer back instead of doing the work again.
struct IdempotencyStore: Sendable {
    let database: any Database

    /// How long an answer is kept for retries.
    static let retentionSeconds: Int64 = 24 * 3600
    /// A claim whose request never finished (the process stopped) may be
    /// taken over after this long.
    static let claimSeconds: Int64 = 60

    /// What a claim found.
    enum Claim: Equatable, Sendable {
        /// Nobody used the key: run the request, then `finish` or `release`.
        case claimed
        /// The same request already finished: answer as it was answered.
        case replay(status: Int, body: String, etag: String?)
        /// The same request is running now.
        case running
        /// The key was used for a different request.
        case mismatch
    }

    /// Claims `key` for a caller and a request fingerprint.
    func claim(caller: Int64, key: String, fingerprint: String, now: EpochSeconds) async throws -> Claim {
        try await database.write { connection in
            try connection.execute("DELETE FROM admin_idempotency WHERE created_at < \(now.adding(seconds: -Self.retentionSeconds))")
            if let row = try connection.queryOne("SELECT * FROM admin_idempotency WHERE caller_id = \(caller) AND idempotency_key = \(key)") {
                guard try row.string("fingerprint") == fingerprint else { return .mismatch }
                if let status = try row.optionalInt("status") {
                    return .replay(status: Int(status), body: try row.string("body"), etag: try row.optionalString("etag"))
                }
                guard try row.seconds("created_at") < now.adding(seconds: -Self.claimSeconds) else { return .running }
                try connection.execute(
                    "UPDATE admin_idempotency SET created_at = \(now) WHERE caller_id = \(caller) AND idempotency_key = \(key)")
                return .claimed
            }
            try connection.execute(
                """
                INSERT INTO admin_idempotency (caller_id, idempotency_key, fingerprint, created_at) VALUES (\(caller), \(key), \(fingerprint), \(now))
                """)
            return .claimed
        }
    }

    /// Keeps the answer for retries.
    func finish(caller: Int64, key: String, status: Int, body: String, etag: String?) async throws {
        try await database.write { connection in
            try connection.execute(
                """
                UPDATE admin_idempotency SET status = \(Int64(status)), body = \(body), etag = \(etag) WHERE caller_id = \(caller) AND idempotency_key = \(key)
                """)
        }
    }

    /// Forgets a claim whose request failed for a reason a retry may not meet.
    func release(caller: Int64, key: String) async throws {
        try await database.write { connection in
            try connection.execute("DELETE FROM admin_idempotency WHERE caller_id = \(caller) AND idempotency_key = \(key) AND status IS NULL")
        }
    }
}

extension IdempotencyStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "IdempotencyStore",
        [
            23: [
                .same(
                    """
                    CREATE TABLE admin_idempotency (
                    caller_id BIGINT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    status BIGINT,
                    body TEXT,
                    etag TEXT,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (caller_id, idempotency_key)
                    )
                    """),
                .same("CREATE INDEX admin_idempotency_created ON admin_idempotency (created_at)"),
            ]
        ])
}
