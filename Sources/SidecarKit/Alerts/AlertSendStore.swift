import Core
import Database
import FoundationEssentials
import GTFSRealtime

/// An alert's sends (tables `alert_sends` and `alert_send_pending`): one
/// per decision to push, resumable from its cursor, leased by the process
/// running it, with the registrations a passing failure left pending.
struct AlertSendStore: Sendable {
    let database: any Database
    /// How long a runner holds a send without recording progress before
    /// another runner (another process, or this one after a restart) may
    /// resume it: a killed run's lease lapses.
    let sendLeaseSeconds: Int64

    init(database: any Database, sendLeaseSeconds: Int64 = AlertSendStore.defaultSendLeaseSeconds) {
        self.database = database
        self.sendLeaseSeconds = sendLeaseSeconds
    }

    /// `--send-lease-seconds` by default.
    static let defaultSendLeaseSeconds: Int64 = 30

    /// Claims the unfinished (running or failed) send of this alert to this
    /// audience, resuming it, or starts a new one. Throws
    /// `AlertStoreError.busy` while another runner holds the lease, so two
    /// processes never push the same pages.
    /// Starts a send, or resumes the unfinished one of the same audience
    /// (which keeps its own text). `messages` replaces the alert's text for
    /// a new send.
    func startSend(alertID: Int64, audience: AlertSend.Audience, messages: AlertSend.Messages? = nil, now: EpochSeconds) async throws -> AlertSend {
        try await database.write { connection in
            if let unfinished = try connection.queryOne(
                """
                SELECT * FROM alert_sends WHERE alert_id = \(alertID) AND audience = \(audience.rawValue) AND status IN ('running', 'failed') ORDER BY id DESC LIMIT 1
                """)
            {
                let lease = try unfinished.optionalSeconds("lease_until") ?? 0
                // The condition is repeated in the UPDATE: with several
                // instances, two may read the same lapsed lease, and only the
                // one whose UPDATE still finds it lapsed gets the send.
                guard
                    let claimed = try connection.queryOne(
                        """
                        UPDATE alert_sends SET status = 'running', finished_at = NULL, lease_until = \(now.adding(seconds: sendLeaseSeconds))
                        WHERE id = \(unfinished.int("id")) AND (status = 'failed' OR lease_until IS NULL OR lease_until <= \(now)) RETURNING *
                        """)
                else {
                    throw AlertStoreError.busy(retryAfter: max(lease.seconds(since: now), 1))
                }
                return try Self.send(claimed)
            }
            // Two instances starting the same send at once: the unique index
            // on unfinished sends lets one insert; the other is told to wait.
            guard let regionID = try AlertStore.region(ofAlert: alertID, connection) else {
                throw AlertStoreError.notFound
            }
            let audienceSize = try PushRegistrationStore.audienceCount(connection, regionID: regionID, testOnly: audience == .test)
            do {
                let row = try connection.queryOne(
                    """
                    INSERT INTO alert_sends (alert_id, audience, status, cursor, targeted, delivered, failed, pruned, started_at, lease_until,
                        audience_size, messages)
                    VALUES (\(alertID), \(audience.rawValue), 'running', 0, 0, 0, 0, 0, \(now), \(now.adding(seconds: sendLeaseSeconds)), \(audienceSize), \(messages.map(AlertSend.encode))) RETURNING *
                    """)
                return try Self.send(row!)
            } catch DatabaseError.constraintViolation(_) {
                throw AlertStoreError.busy(retryAfter: 1)
            }
        }
    }

    /// Claims every running send whose lease lapsed (its runner died or
    /// stopped): any running server resumes them.
    func claimLapsedSends(now: EpochSeconds) async throws -> [AlertSend] {
        try await database.write { connection in
            try connection.query(
                """
                UPDATE alert_sends SET lease_until = \(now.adding(seconds: sendLeaseSeconds))
                WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= \(now)) RETURNING *
                """
            ).map(Self.send)
        }
    }

    /// Extends a send's lease while its runner waits to retry.
    /// A running send whose transport has not answered for a while: says
    /// since when and why (the send's `last_error`), and keeps its lease, so
    /// no other instance takes over a send that is only waiting. The next
    /// recorded page clears it.
    func markStalled(sendID: Int64, since: EpochSeconds, reason: String, now: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE alert_sends SET stalled_since = COALESCE(stalled_since, \(since)), last_error = \(reason), lease_until = \(now.adding(seconds: sendLeaseSeconds))
                WHERE id = \(sendID) AND status = 'running'
                """)
        }
    }

    func renewLease(sendID: Int64, now: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                "UPDATE alert_sends SET lease_until = \(now.adding(seconds: sendLeaseSeconds)) WHERE id = \(sendID) AND status = 'running'")
        }
    }

    /// Gives up a send's lease (a run that stopped early).
    func releaseSend(id: Int64) async throws {
        _ = try await database.write { connection in
            try connection.execute("UPDATE alert_sends SET lease_until = NULL WHERE id = \(id)")
        }
    }

    func send(id: Int64) async throws -> AlertSend? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM alert_sends WHERE id = \(id)").map(Self.send)
        }
    }

    /// A page of a send's pending registrations (pushes that failed for a
    /// passing reason), by registration id.
    func pendingPage(sendID: Int64, after registrationID: Int64, limit: Int) async throws -> [(id: Int64, registration: PushRegistration)] {
        try await database.read { connection in
            var after = registrationID
            while true {
                let ids = try connection.query(
                    """
                    SELECT registration_id FROM alert_send_pending WHERE send_id = \(sendID) AND registration_id > \(after)
                    ORDER BY registration_id LIMIT \(limit)
                    """
                ).map { try $0.int("registration_id") }
                guard let last = ids.last else { return [] }
                // Registrations deleted meanwhile are skipped; a page of
                // only those moves on rather than ending the pending set.
                let page = try PushRegistrationStore.registrations(connection, ids: ids)
                if !page.isEmpty { return page }
                after = last
            }
        }
    }

    /// The number of registrations a send to this audience targets (those
    /// after a cursor: still to try).
    func audienceCount(regionID: Int, audience: AlertSend.Audience, after cursor: Int64 = 0) async throws -> Int {
        try await database.read { connection in
            try PushRegistrationStore.audienceCount(connection, regionID: regionID, testOnly: audience == .test, after: cursor)
        }
    }

    func list(alertID: Int64) async throws -> [AlertSend] {
        try await database.read { connection in
            try connection.query("SELECT * FROM alert_sends WHERE alert_id = \(alertID) ORDER BY id").map(Self.send)
        }
    }

    /// A page of the audience after `cursor`, by registration id.
    func audiencePage(regionID: Int, audience: AlertSend.Audience, after cursor: Int64, limit: Int) async throws -> [(
        id: Int64, registration: PushRegistration
    )] {
        try await database.read { connection in
            try PushRegistrationStore.audiencePage(connection, regionID: regionID, testOnly: audience == .test, after: cursor, limit: limit)
        }
    }

    /// A send with the alert it pushed, for the dashboard.
    struct RecentSend: Sendable {
        var send: AlertSend
        var alertID: Int64
        var header: String
    }

    /// A region's latest sends, newest first.
    static func recentSends(_ connection: any SQLConnection, regionID: Int, limit: Int) throws -> [RecentSend] {
        let sends = try connection.query(
            """
            SELECT * FROM alert_sends WHERE alert_id IN (\(AlertStore.alertIDs(inRegion: regionID))) ORDER BY id DESC LIMIT \(limit)
            """
        ).map(send)
        let headers = try AlertStore.headers(connection, alertIDs: Array(Set(sends.map(\.alertID))))
        return sends.map { RecentSend(send: $0, alertID: $0.alertID, header: headers[$0.alertID] ?? "") }
    }

    /// Sends running now, on any instance.
    static func runningSendCount(_ connection: any SQLConnection) throws -> Int {
        try connection.queryOne("SELECT COUNT(*) AS n FROM alert_sends WHERE status = 'running'")?.count("n") ?? 0
    }

    /// What one page of a send did, recorded in one transaction.
    struct PageRecord: Sendable {
        var sendID: Int64
        /// The last registration id of the audience handled.
        var cursor: Int64
        var now: EpochSeconds
        var targeted = 0
        var delivered = 0
        var failed = 0
        /// Tokens the provider called dead: their registrations are deleted.
        var deadTokens: [(regionID: Int, token: String)] = []
        /// Registration ids whose push failed for a passing reason.
        var stillPending: [Int64] = []
        /// Pending registration ids now settled (delivered, dead or refused).
        var resolved: [Int64] = []
        /// `done` or `failed` to end the send; nil keeps it running (and renews the lease).
        var status: String?
        var lastError: String?

        init(sendID: Int64, cursor: Int64, now: EpochSeconds, status: String? = nil) {
            self.sendID = sendID
            self.cursor = cursor
            self.now = now
            self.status = status
        }
    }

    /// Records a sent page in one transaction: counts, the new cursor, the
    /// pending set, and the deletion of registrations whose tokens the
    /// provider called dead.
    func recordPage(_ record: PageRecord) async throws -> AlertSend {
        try await database.write { connection in
            let pruned = try PushRegistrationStore.deleteDead(connection, record.deadTokens)
            for id in record.stillPending {
                try connection.execute(
                    """
                    INSERT INTO alert_send_pending (send_id, registration_id) VALUES (\(record.sendID), \(id)) ON CONFLICT (send_id, registration_id) DO NOTHING
                    """)
            }
            for id in record.resolved {
                try connection.execute("DELETE FROM alert_send_pending WHERE send_id = \(record.sendID) AND registration_id = \(id)")
            }
            // Pending registrations deleted meanwhile (pruned, opted out) no longer count.
            let pending =
                try connection.queryOne(
                    """
                    SELECT COUNT(*) AS n FROM alert_send_pending p
                    WHERE p.send_id = \(record.sendID) AND \(PushRegistrationStore.exists(idIn: "p.registration_id"))
                    """)?.int("n") ?? 0
            let ending = record.status != nil
            let row = try connection.queryOne(
                """
                UPDATE alert_sends SET cursor = \(record.cursor), targeted = targeted + \(Int64(record.targeted)), delivered = delivered + \(Int64(record.delivered)), failed = failed + \(Int64(record.failed)),
                    pruned = pruned + \(Int64(pruned)), pending = \(pending),
                    status = CASE WHEN status = 'cancelled' THEN status ELSE COALESCE(\(record.status), status) END,
                    finished_at = CASE WHEN status = 'cancelled' THEN finished_at WHEN \(ending) = 1 THEN \(record.now) ELSE finished_at END,
                    lease_until = CASE WHEN \(ending) = 1 OR status = 'cancelled' THEN NULL ELSE \(record.now) + \(sendLeaseSeconds) END,
                    last_error = CASE WHEN \(record.status) = 'done' THEN NULL ELSE COALESCE(\(record.lastError), last_error) END,
                    stalled_since = NULL
                WHERE id = \(record.sendID) RETURNING *
                """)
            guard let row else { throw AlertStoreError.notFound }
            return try Self.send(row)
        }
    }

    /// Cancels a send under way: its runner stops after the page in hand
    /// (what that page pushed is still counted) and no server resumes it.
    /// False when the send is not running (finished, failed or cancelled).
    func cancel(sendID: Int64, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            try connection.execute(
                "UPDATE alert_sends SET status = 'cancelled', finished_at = \(now), lease_until = NULL WHERE id = \(sendID) AND status = 'running'")
                > 0
        }
    }

    /// Forgets a deleted alert's sends (their pending sets go with them).
    static func deleteSends(_ connection: any SQLConnection, alertID: Int64) throws {
        try connection.execute("DELETE FROM alert_sends WHERE alert_id = \(alertID)")
    }

    static func send(_ row: Row) throws -> AlertSend {
        AlertSend(
            id: try row.int("id"), alertID: try row.int("alert_id"),
            audience: AlertSend.Audience(rawValue: try row.string("audience")) ?? .all, status: try row.string("status"),
            cursor: try row.int("cursor"), targeted: Int(try row.int("targeted")), delivered: Int(try row.int("delivered")),
            failed: Int(try row.int("failed")), pruned: Int(try row.int("pruned")), pending: Int(try row.int("pending")),
            startedAt: try row.seconds("started_at"), finishedAt: try row.optionalSeconds("finished_at"),
            lastError: try row.optionalString("last_error"),
            audienceSize: Int(try row.int("audience_size")), messages: try row.optionalString("messages").flatMap(AlertSend.decode),
            stalledSince: try row.optionalSeconds("stalled_since"))
    }
}

extension AlertSendStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "AlertSendStore",
        [
            3: [
                .table(
                    "alert_sends", withID: true,
                    """
                    alert_id BIGINT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                    audience TEXT NOT NULL CHECK (audience IN ('all', 'test')),
                    status TEXT NOT NULL,
                    cursor BIGINT NOT NULL DEFAULT 0,
                    targeted BIGINT NOT NULL DEFAULT 0,
                    delivered BIGINT NOT NULL DEFAULT 0,
                    failed BIGINT NOT NULL DEFAULT 0,
                    pruned BIGINT NOT NULL DEFAULT 0,
                    started_at BIGINT NOT NULL,
                    finished_at BIGINT,
                    lease_until BIGINT
                    """)
            ],
            7: [
                .same("ALTER TABLE alert_sends ADD COLUMN pending BIGINT NOT NULL DEFAULT 0"),
                .same("ALTER TABLE alert_sends ADD COLUMN last_error TEXT"),
                .table(
                    "alert_send_pending",
                    """
                    send_id BIGINT NOT NULL REFERENCES alert_sends (id) ON DELETE CASCADE,
                    registration_id BIGINT NOT NULL,
                    PRIMARY KEY (send_id, registration_id)
                    """),
                .same("CREATE INDEX alert_sends_lease ON alert_sends (status, lease_until)"),
            ],
            11: [
                .same("CREATE UNIQUE INDEX alert_sends_one_unfinished ON alert_sends (alert_id, audience) WHERE status IN ('running', 'failed')")
            ],
            20: [
                .same("ALTER TABLE alert_sends ADD COLUMN audience_size BIGINT NOT NULL DEFAULT 0")
            ],
            23: [
                .same("ALTER TABLE alert_sends ADD COLUMN messages TEXT")
            ],
            26: [
                .same("ALTER TABLE alert_sends ADD COLUMN stalled_since BIGINT")
            ],
        ])
}
