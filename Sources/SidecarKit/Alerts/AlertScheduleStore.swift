import Core
import Database

/// The owner of `alert_schedules`: sends scheduled for later, claimed by
/// one server when due.
struct AlertScheduleStore: Sendable {
    let database: any Database

    static let columns = """
        id, alert_id, region_id, audience, at_start, run_at, if_changed, alert_fingerprint, status, send_id, reason, created_by, \
        created_at, updated_at
        """

    static func schedule(_ row: Row) throws -> AlertSchedule {
        AlertSchedule(
            id: try row.int("id"), alertID: try row.int("alert_id"), regionID: Int(try row.int("region_id")),
            audience: AlertSend.Audience(rawValue: try row.string("audience")) ?? .test, atStart: try row.bool("at_start"),
            runAt: try row.seconds("run_at"), ifChanged: AlertSchedule.IfChanged(rawValue: try row.string("if_changed")) ?? .hold,
            alertFingerprint: try row.string("alert_fingerprint"),
            status: AlertSchedule.Status(rawValue: try row.string("status")) ?? .held, sendID: try row.optionalInt("send_id"),
            reason: try row.optionalString("reason"), createdBy: try row.string("created_by"), createdAt: try row.seconds("created_at"),
            updatedAt: try row.seconds("updated_at"))
    }

    func create(_ schedule: AlertSchedule) async throws -> AlertSchedule {
        try await database.write { connection in
            guard
                let row = try connection.queryOne(
                    """
                    INSERT INTO alert_schedules (alert_id, region_id, audience, at_start, run_at, if_changed, alert_fingerprint, status, created_by, created_at, updated_at)
                    VALUES (\(schedule.alertID), \(Int64(schedule.regionID)), \(schedule.audience.rawValue), \(schedule.atStart), \(schedule.runAt), \(schedule.ifChanged.rawValue), \(schedule.alertFingerprint), 'scheduled', \(schedule.createdBy), \(schedule.createdAt), \(schedule.createdAt))
                    RETURNING \(raw: Self.columns)
                    """)
            else { throw DatabaseError.failed(code: 0, message: "alert_schedules insert returned nothing") }
            return try Self.schedule(row)
        }
    }

    func find(id: Int64) async throws -> AlertSchedule? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM alert_schedules WHERE id = \(id)").map(Self.schedule)
        }
    }

    func list(alertID: Int64) async throws -> [AlertSchedule] {
        try await database.read { connection in
            try connection.query("SELECT \(raw: Self.columns) FROM alert_schedules WHERE alert_id = \(alertID) ORDER BY run_at, id").map(
                Self.schedule)
        }
    }

    /// A region's open schedules (to go, or held), the soonest first.
    func open(regionID: Int) async throws -> [AlertSchedule] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT \(raw: Self.columns) FROM alert_schedules WHERE region_id = \(Int64(regionID)) AND status IN ('scheduled', 'held')
                ORDER BY run_at, id LIMIT 1000
                """
            ).map(Self.schedule)
        }
    }

    func openCount(alertID: Int64) async throws -> Int {
        try await database.read { connection in
            Int(
                try connection.queryOne("SELECT COUNT(*) AS n FROM alert_schedules WHERE alert_id = \(alertID) AND status IN ('scheduled', 'held')")?
                    .int("n") ?? 0)
        }
    }

    /// Changes an open schedule's time and choice (back to `scheduled`,
    /// with the alert's content as it is now); nil when it is no longer open.
    func reschedule(
        id: Int64, atStart: Bool, runAt: EpochSeconds, ifChanged: AlertSchedule.IfChanged, fingerprint: String, now: EpochSeconds
    ) async throws -> AlertSchedule? {
        try await database.write { connection in
            try connection.queryOne(
                """
                UPDATE alert_schedules SET at_start = \(atStart), run_at = \(runAt), if_changed = \(ifChanged.rawValue),
                    alert_fingerprint = \(fingerprint), status = 'scheduled', reason = NULL, updated_at = \(now)
                WHERE id = \(id) AND status IN ('scheduled', 'held') RETURNING \(raw: Self.columns)
                """
            ).map(Self.schedule)
        }
    }

    /// Cancels an open schedule; false when it is no longer open.
    func cancel(id: Int64, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.queryOne(
                "UPDATE alert_schedules SET status = 'cancelled', updated_at = \(now) WHERE id = \(id) AND status IN ('scheduled', 'held') RETURNING id"
            ) != nil
        }
    }

    /// Schedules due now, claimed by this server: each goes to exactly one
    /// server, which starts it or says why not. A claim left by a server
    /// that died is due again after `staleClaimSeconds`.
    func claimDue(now: EpochSeconds, limit: Int = 50) async throws -> [AlertSchedule] {
        try await database.write { connection in
            try connection.execute(
                """
                UPDATE alert_schedules SET status = 'scheduled', updated_at = \(now)
                WHERE status = 'starting' AND updated_at < \(now.adding(seconds: -AlertScheduleRules.staleClaimSeconds))
                """)
            var claimed: [AlertSchedule] = []
            for row in try connection.query(
                "SELECT id FROM alert_schedules WHERE status = 'scheduled' AND run_at <= \(now) ORDER BY run_at, id LIMIT \(Int64(limit))")
            {
                if let schedule = try connection.queryOne(
                    """
                    UPDATE alert_schedules SET status = 'starting', updated_at = \(now)
                    WHERE id = \(try row.int("id")) AND status = 'scheduled' RETURNING \(raw: Self.columns)
                    """
                ).map(Self.schedule) {
                    claimed.append(schedule)
                }
            }
            return claimed
        }
    }

    /// Records what a claimed schedule became.
    func settle(id: Int64, status: AlertSchedule.Status, sendID: Int64?, reason: String?, now: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE alert_schedules SET status = \(status.rawValue), send_id = \(sendID), reason = \(reason), updated_at = \(now)
                WHERE id = \(id) AND status = 'starting'
                """)
        }
    }

    static let schema = Schema(
        "AlertScheduleStore",
        [
            31: [
                .table(
                    "alert_schedules", withID: true,
                    """
                    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                    region_id BIGINT NOT NULL,
                    audience TEXT NOT NULL,
                    at_start BIGINT NOT NULL DEFAULT 0,
                    run_at BIGINT NOT NULL,
                    if_changed TEXT NOT NULL,
                    alert_fingerprint TEXT NOT NULL,
                    status TEXT NOT NULL,
                    send_id BIGINT,
                    reason TEXT,
                    created_by TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX alert_schedules_due ON alert_schedules (status, run_at)"),
                .same("CREATE INDEX alert_schedules_alert ON alert_schedules (alert_id)"),
            ]
        ])
}
