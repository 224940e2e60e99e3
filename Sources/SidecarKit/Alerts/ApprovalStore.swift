import Core
import Database

/// The owner of `approval_requests`: what waits for a second person.
struct ApprovalStore: Sendable {
    let database: any Database

    static let columns = "id, region_id, alert_id, action, requested_by, requested_at, status, decided_by, decided_at"

    static func request(_ row: Row) throws -> ApprovalRequest {
        ApprovalRequest(
            id: try row.int("id"), regionID: Int(try row.int("region_id")), alertID: try row.int("alert_id"),
            action: ApprovalRequest.Action(rawValue: try row.string("action")) ?? .publish, requestedBy: try row.string("requested_by"),
            requestedAt: try row.seconds("requested_at"), status: ApprovalRequest.Status(rawValue: try row.string("status")) ?? .rejected,
            decidedBy: try row.optionalString("decided_by"), decidedAt: try row.optionalSeconds("decided_at"))
    }

    /// The open request for this alert and action, made if there is none
    /// (asking twice never makes two).
    func ask(regionID: Int, alertID: Int64, action: ApprovalRequest.Action, by actor: String, now: EpochSeconds) async throws -> ApprovalRequest {
        try await database.write { connection in
            let since = now.adding(seconds: -ApprovalRules.lifetimeSeconds)
            if let open = try connection.queryOne(
                """
                SELECT \(raw: Self.columns) FROM approval_requests
                WHERE alert_id = \(alertID) AND action = \(action.rawValue) AND status = 'pending' AND requested_at > \(since)
                ORDER BY id DESC LIMIT 1
                """
            ).map(Self.request) {
                return open
            }
            guard
                let row = try connection.queryOne(
                    """
                    INSERT INTO approval_requests (region_id, alert_id, action, requested_by, requested_at, status)
                    VALUES (\(Int64(regionID)), \(alertID), \(action.rawValue), \(actor), \(now), 'pending') RETURNING \(raw: Self.columns)
                    """)
            else { throw DatabaseError.failed(code: 0, message: "approval_requests insert returned nothing") }
            return try Self.request(row)
        }
    }

    func find(id: Int64) async throws -> ApprovalRequest? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM approval_requests WHERE id = \(id)").map(Self.request)
        }
    }

    /// A region's requests of the last week, the newest first.
    func list(regionID: Int, now: EpochSeconds) async throws -> [ApprovalRequest] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT \(raw: Self.columns) FROM approval_requests WHERE region_id = \(Int64(regionID)) AND requested_at > \(now.adding(seconds: -7 * 86_400))
                ORDER BY id DESC LIMIT 500
                """
            ).map(Self.request)
        }
    }

    func list(alertID: Int64) async throws -> [ApprovalRequest] {
        try await database.read { connection in
            try connection.query("SELECT \(raw: Self.columns) FROM approval_requests WHERE alert_id = \(alertID) ORDER BY id DESC LIMIT 50").map(
                Self.request)
        }
    }

    /// Decides a pending request; false when someone decided it first.
    func decide(id: Int64, status: ApprovalRequest.Status, by actor: String, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.queryOne(
                """
                UPDATE approval_requests SET status = \(status.rawValue), decided_by = \(actor), decided_at = \(now)
                WHERE id = \(id) AND status = 'pending' RETURNING id
                """) != nil
        }
    }

    static let schema = Schema(
        "ApprovalStore",
        [
            32: [
                .table(
                    "approval_requests", withID: true,
                    """
                    region_id BIGINT NOT NULL,
                    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                    action TEXT NOT NULL,
                    requested_by TEXT NOT NULL,
                    requested_at BIGINT NOT NULL,
                    status TEXT NOT NULL,
                    decided_by TEXT,
                    decided_at BIGINT
                    """),
                .same("CREATE INDEX approval_requests_alert ON approval_requests (alert_id, action, status)"),
                .same("CREATE INDEX approval_requests_region ON approval_requests (region_id, requested_at)"),
            ]
        ])
}
