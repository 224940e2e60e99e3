import Database
import GTFSRealtime

/// Storage of alerts, their translations and push sends, and region settings.
public struct AlertStore: Sendable {
    let database: any Database
    /// How long a runner holds a send without recording progress before
    /// another runner (another process, or this one after a restart) may
    /// resume it: a killed run's lease lapses.
    public let sendLeaseSeconds: Int64

    public init(database: any Database, sendLeaseSeconds: Int64 = AlertStore.defaultSendLeaseSeconds) {
        self.database = database
        self.sendLeaseSeconds = sendLeaseSeconds
    }

    static let columns = """
        id, region_id, agency_id, header, description, url, cause, effect, severity, starts_at, ends_at, published, test, \
        source_version, created_at, updated_at, impact_starts_at, impact_ends_at, withdrawn_at
        """

    // MARK: Region settings

    public func regionSettings() async throws -> [Int: RegionSettings] {
        try await database.read { connection in
            var settings: [Int: RegionSettings] = [:]
            for row in try connection.query("SELECT region_id, agency_id, timezone FROM region_settings") {
                let id = Int(try row.int("region_id"))
                settings[id] = RegionSettings(regionID: id, agencyID: try row.optionalString("agency_id"), timezone: try row.optionalString("timezone"))
            }
            return settings
        }
    }

    public func setRegionSettings(_ settings: RegionSettings) async throws {
        _ = try await database.write { connection in
            try connection.execute("""
                INSERT INTO region_settings (region_id, agency_id, timezone) VALUES (\(Int64(settings.regionID)), \(settings.agencyID), \(settings.timezone))
                ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id, timezone = excluded.timezone
                """)
        }
    }

    // MARK: Alerts

    /// Inserts a new alert and returns it with its id.
    public func create(_ alert: ServiceAlert) async throws -> ServiceAlert {
        try await database.write { connection in
            let id = try Self.nextID(connection)
            let fields = Self.fields(alert)
            try connection.execute("""
                INSERT INTO alerts (\(fields.columns), source_version, created_at, updated_at, id)
                VALUES (\(fields.values), 1, \(alert.createdAt), \(alert.createdAt), \(id))
                """)
            var created = alert
            created.id = id
            created.sourceVersion = 1
            try Self.bumpFeed(connection, regionID: alert.regionID, now: alert.createdAt)
            return created
        }
    }

    /// Saves an edited alert; a changed English header or description bumps
    /// its source version, which makes older translations stale.
    public func update(_ alert: ServiceAlert, now: Int64) async throws -> ServiceAlert {
        try await database.write { connection in
            guard let previous = try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(alert.id)").map(Self.alert) else {
                throw AlertStoreError.notFound
            }
            var saved = alert
            saved.sourceVersion = previous.sourceVersion + (previous.header != alert.header || previous.description != alert.description ? 1 : 0)
            saved.updatedAt = now
            try connection.execute("""
                UPDATE alerts SET \(Self.fields(saved).assignments), source_version = \(saved.sourceVersion), updated_at = \(now),
                    withdrawn_at = \(saved.withdrawnAt)
                WHERE id = \(saved.id)
                """)
            try Self.bumpFeed(connection, regionID: saved.regionID, now: now)
            return saved
        }
    }

    public func delete(id: Int64, now: Int64) async throws -> Bool {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT region_id FROM alerts WHERE id = \(id)") else { return false }
            try connection.execute("DELETE FROM alert_translations WHERE alert_id = \(id)")
            try connection.execute("DELETE FROM alert_sends WHERE alert_id = \(id)")
            try connection.execute("DELETE FROM alerts WHERE id = \(id)")
            try Self.bumpFeed(connection, regionID: Int(row.int("region_id")), now: now)
            return true
        }
    }

    public func find(id: Int64) async throws -> ServiceAlert? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(id)").map(Self.alert)
        }
    }

    /// Alerts of a region, newest start first (all, or only published ones).
    public func alerts(regionID: Int, publishedOnly: Bool = false) async throws -> [ServiceAlert] {
        try await database.read { connection in
            try connection.query("""
                SELECT \(raw: Self.columns) FROM alerts WHERE region_id = \(Int64(regionID)) AND (\(publishedOnly) = 0 OR published = 1) ORDER BY starts_at DESC, id DESC
                """).map(Self.alert)
        }
    }

    /// What the feed needs in one read: published alerts, their
    /// translations, and when the region's alerts last changed.
    public func feedSnapshot(regionID: Int) async throws -> (alerts: [ServiceAlert], translations: [Int64: [AlertTranslation]], changedAt: Int64?, version: Int64) {
        try await database.read { connection in
            let alerts = try connection.query("SELECT \(raw: Self.columns) FROM alerts WHERE region_id = \(Int64(regionID)) AND published = 1").map(Self.alert)
            var translations: [Int64: [AlertTranslation]] = [:]
            for row in try connection.query("""
                SELECT t.alert_id, t.language, t.header, t.description, t.source_version FROM alert_translations t
                JOIN alerts a ON a.id = t.alert_id WHERE a.region_id = \(Int64(regionID)) AND a.published = 1
                """) {
                translations[try row.int("alert_id"), default: []].append(try Self.translation(row))
            }
            let row = try connection.queryOne("SELECT changed_at, version FROM alert_feed_versions WHERE region_id = \(Int64(regionID))")
            return (alerts, translations, try row?.optionalInt("changed_at"), try row?.int("version") ?? 0)
        }
    }

    /// Every region's feed version (the server polls this to notice edits
    /// made by other processes, such as the CLI).
    public func feedVersions() async throws -> [Int: Int64] {
        try await database.read { connection in
            Dictionary(try connection.query("SELECT region_id, version FROM alert_feed_versions").map {
                (Int(try $0.int("region_id")), try $0.int("version"))
            }, uniquingKeysWith: { first, _ in first })
        }
    }

    // MARK: Translations

    public func translations(alertID: Int64) async throws -> [AlertTranslation] {
        try await database.read { connection in
            try connection.query("SELECT alert_id, language, header, description, source_version FROM alert_translations WHERE alert_id = \(alertID) ORDER BY language").map(Self.translation)
        }
    }

    /// Stores a translation made from the alert's current English text.
    public func translate(alertID: Int64, language: String, header: String, description: String, now: Int64) async throws -> AlertTranslation {
        try await database.write { connection in
            guard let alert = try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(alertID)").map(Self.alert) else {
                throw AlertStoreError.notFound
            }
            try connection.execute("""
                INSERT INTO alert_translations (alert_id, language, header, description, source_version, source_header, source_description)
                VALUES (\(alertID), \(language), \(header), \(description), \(Int64(alert.sourceVersion)), \(alert.header), \(alert.description))
                ON CONFLICT (alert_id, language) DO UPDATE SET header = excluded.header, description = excluded.description,
                    source_version = excluded.source_version, source_header = excluded.source_header,
                    source_description = excluded.source_description
                """)
            try Self.bumpFeed(connection, regionID: alert.regionID, now: now)
            return AlertTranslation(language: language, header: header, description: description, sourceVersion: alert.sourceVersion)
        }
    }

    /// Deletes one translation; false when there was none.
    public func deleteTranslation(alertID: Int64, language: String, now: Int64) async throws -> Bool {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT region_id FROM alerts WHERE id = \(alertID)") else { return false }
            let deleted = try connection.execute("DELETE FROM alert_translations WHERE alert_id = \(alertID) AND language = \(language)")
            if deleted > 0 { try Self.bumpFeed(connection, regionID: Int(row.int("region_id")), now: now) }
            return deleted > 0
        }
    }

    // MARK: Sends

    /// `--send-lease-seconds` by default.
    public static let defaultSendLeaseSeconds: Int64 = 30

    /// Claims the unfinished (running or failed) send of this alert to this
    /// audience, resuming it, or starts a new one. Throws
    /// `AlertStoreError.busy` while another runner holds the lease, so two
    /// processes never push the same pages.
    public func startSend(alertID: Int64, audience: AlertSend.Audience, now: Int64) async throws -> AlertSend {
        try await database.write { connection in
            if let unfinished = try connection.queryOne("""
                SELECT * FROM alert_sends WHERE alert_id = \(alertID) AND audience = \(audience.rawValue) AND status IN ('running', 'failed') ORDER BY id DESC LIMIT 1
                """) {
                let lease = try unfinished.optionalInt("lease_until") ?? 0
                // The condition is repeated in the UPDATE: with several
                // instances, two may read the same lapsed lease, and only the
                // one whose UPDATE still finds it lapsed gets the send.
                guard let claimed = try connection.queryOne("""
                    UPDATE alert_sends SET status = 'running', finished_at = NULL, lease_until = \(now + sendLeaseSeconds)
                    WHERE id = \(unfinished.int("id")) AND (status = 'failed' OR lease_until IS NULL OR lease_until <= \(now)) RETURNING *
                    """) else {
                    throw AlertStoreError.busy(retryAfter: max(lease - now, 1))
                }
                return try Self.send(claimed)
            }
            // Two instances starting the same send at once: the unique index
            // on unfinished sends lets one insert; the other is told to wait.
            do {
                let row = try connection.queryOne("""
                    INSERT INTO alert_sends (alert_id, audience, status, cursor, targeted, delivered, failed, pruned, started_at, lease_until,
                        audience_size)
                    VALUES (\(alertID), \(audience.rawValue), 'running', 0, 0, 0, 0, 0, \(now), \(now + sendLeaseSeconds), (
                        SELECT COUNT(*) FROM push_registrations r JOIN alerts a ON a.region_id = r.region_id
                        WHERE a.id = \(alertID) AND (\(audience == .test) = 0 OR r.test_device = 1))) RETURNING *
                    """)
                return try Self.send(row!)
            } catch DatabaseError.constraintViolation(_) {
                throw AlertStoreError.busy(retryAfter: 1)
            }
        }
    }

    /// Claims every running send whose lease lapsed (its runner died or
    /// stopped): any running server resumes them.
    public func claimLapsedSends(now: Int64) async throws -> [AlertSend] {
        try await database.write { connection in
            try connection.query("""
                UPDATE alert_sends SET lease_until = \(now + sendLeaseSeconds)
                WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= \(now)) RETURNING *
                """).map(Self.send)
        }
    }

    /// Extends a send's lease while its runner waits to retry.
    public func renewLease(sendID: Int64, now: Int64) async throws {
        _ = try await database.write { connection in
            try connection.execute("UPDATE alert_sends SET lease_until = \(now + sendLeaseSeconds) WHERE id = \(sendID) AND status = 'running'")
        }
    }

    /// Gives up a send's lease (a run that stopped early).
    public func releaseSend(id: Int64) async throws {
        _ = try await database.write { connection in
            try connection.execute("UPDATE alert_sends SET lease_until = NULL WHERE id = \(id)")
        }
    }

    public func send(id: Int64) async throws -> AlertSend? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM alert_sends WHERE id = \(id)").map(Self.send)
        }
    }

    /// A page of a send's pending registrations (pushes that failed for a
    /// passing reason), by registration id.
    public func pendingPage(sendID: Int64, after registrationID: Int64, limit: Int) async throws -> [(id: Int64, registration: PushRegistration)] {
        try await database.read { connection in
            try connection.query("""
                SELECT r.id, \(raw: PushRegistrationStore.columns(qualifiedBy: "r"))
                FROM alert_send_pending p JOIN push_registrations r ON r.id = p.registration_id
                WHERE p.send_id = \(sendID) AND r.id > \(registrationID) ORDER BY r.id LIMIT \(Int64(limit))
                """).map {
                (try $0.int("id"), try PushRegistrationStore.registration($0))
            }
        }
    }

    /// The number of registrations a send to this audience targets (those
    /// after a cursor: still to try).
    public func audienceCount(regionID: Int, audience: AlertSend.Audience, after cursor: Int64 = 0) async throws -> Int {
        try await database.read { connection in
            Int(try connection.queryOne("""
                SELECT COUNT(*) AS n FROM push_registrations WHERE region_id = \(Int64(regionID)) AND (\(audience == .test) = 0 OR test_device = 1) AND id > \(cursor)
                """)?.int("n") ?? 0)
        }
    }

    public func sends(alertID: Int64) async throws -> [AlertSend] {
        try await database.read { connection in
            try connection.query("SELECT * FROM alert_sends WHERE alert_id = \(alertID) ORDER BY id").map(Self.send)
        }
    }

    /// A page of the audience after `cursor`, by registration id.
    public func audiencePage(regionID: Int, audience: AlertSend.Audience, after cursor: Int64, limit: Int) async throws -> [(id: Int64, registration: PushRegistration)] {
        try await database.read { connection in
            try connection.query("""
                SELECT id, \(raw: PushRegistrationStore.columns) FROM push_registrations
                WHERE region_id = \(Int64(regionID)) AND id > \(cursor) AND (\(audience == .test) = 0 OR test_device = 1) ORDER BY id LIMIT \(Int64(limit))
                """).map {
                (try $0.int("id"), try PushRegistrationStore.registration($0))
            }
        }
    }

    /// What one page of a send did, recorded in one transaction.
    public struct PageRecord: Sendable {
        public var sendID: Int64
        /// The last registration id of the audience handled.
        public var cursor: Int64
        public var now: Int64
        public var targeted = 0
        public var delivered = 0
        public var failed = 0
        /// Tokens the provider called dead: their registrations are deleted.
        public var deadTokens: [(regionID: Int, token: String)] = []
        /// Registration ids whose push failed for a passing reason.
        public var stillPending: [Int64] = []
        /// Pending registration ids now settled (delivered, dead or refused).
        public var resolved: [Int64] = []
        /// `done` or `failed` to end the send; nil keeps it running (and renews the lease).
        public var status: String?
        public var lastError: String?

        public init(sendID: Int64, cursor: Int64, now: Int64, status: String? = nil) {
            self.sendID = sendID
            self.cursor = cursor
            self.now = now
            self.status = status
        }
    }

    /// Records a sent page in one transaction: counts, the new cursor, the
    /// pending set, and the deletion of registrations whose tokens the
    /// provider called dead.
    public func recordPage(_ record: PageRecord) async throws -> AlertSend {
        try await database.write { connection in
            var pruned = 0
            for dead in record.deadTokens {
                pruned += try connection.execute("DELETE FROM push_registrations WHERE region_id = \(Int64(dead.regionID)) AND token = \(dead.token)")
            }
            for id in record.stillPending {
                try connection.execute("""
                    INSERT INTO alert_send_pending (send_id, registration_id) VALUES (\(record.sendID), \(id)) ON CONFLICT (send_id, registration_id) DO NOTHING
                    """)
            }
            for id in record.resolved {
                try connection.execute("DELETE FROM alert_send_pending WHERE send_id = \(record.sendID) AND registration_id = \(id)")
            }
            // Pending registrations deleted meanwhile (pruned, opted out) no longer count.
            let pending = try connection.queryOne("""
                SELECT COUNT(*) AS n FROM alert_send_pending p JOIN push_registrations r ON r.id = p.registration_id WHERE p.send_id = \(record.sendID)
                """)?.int("n") ?? 0
            let ending = record.status != nil
            let row = try connection.queryOne("""
                UPDATE alert_sends SET cursor = \(record.cursor), targeted = targeted + \(Int64(record.targeted)), delivered = delivered + \(Int64(record.delivered)), failed = failed + \(Int64(record.failed)),
                    pruned = pruned + \(Int64(pruned)), pending = \(pending), status = COALESCE(\(record.status), status),
                    finished_at = CASE WHEN \(ending) = 1 THEN \(record.now) ELSE finished_at END,
                    lease_until = CASE WHEN \(ending) = 1 THEN NULL ELSE \(record.now) + \(sendLeaseSeconds) END,
                    last_error = CASE WHEN \(record.status) = 'done' THEN NULL ELSE COALESCE(\(record.lastError), last_error) END
                WHERE id = \(record.sendID) RETURNING *
                """)
            guard let row else { throw AlertStoreError.notFound }
            return try Self.send(row)
        }
    }

    // MARK: Ids

    /// The next alert id. Ids are never reused, on either engine: SQLite
    /// would hand the largest id out again after its alert was deleted, and
    /// the audit log names alerts by id.
    static func nextID(_ connection: any SQLConnection) throws -> Int64 {
        guard let id = try connection.queryOne("UPDATE alert_id_sequence SET last_id = last_id + 1 RETURNING last_id")?.optionalInt("last_id") else {
            throw DatabaseError.failed(code: 0, message: "alert_id_sequence has no row")
        }
        return id
    }

    /// After alerts were written with ids of their own (an import), the
    /// sequence moves past them.
    static func advanceIDs(_ connection: any SQLConnection) throws {
        try connection.execute("""
            UPDATE alert_id_sequence SET last_id = (SELECT MAX(id) FROM alerts) WHERE last_id < (SELECT COALESCE(MAX(id), 0) FROM alerts)
            """)
    }

    // MARK: Rows

    static func bumpFeed(_ connection: any SQLConnection, regionID: Int, now: Int64) throws {
        try connection.execute("""
            INSERT INTO alert_feed_versions (region_id, version, changed_at) VALUES (\(Int64(regionID)), 1, \(now))
            ON CONFLICT (region_id) DO UPDATE SET version = alert_feed_versions.version + 1, changed_at = excluded.changed_at
            """)
    }

    /// The columns an author sets, for INSERT and UPDATE alike.
    static func fields(_ alert: ServiceAlert) -> SQLFields {
        var fields = SQLFields()
        fields.set("region_id", alert.regionID)
        fields.set("agency_id", alert.agencyID)
        fields.set("header", alert.header)
        fields.set("description", alert.description)
        fields.set("url", alert.url)
        fields.set("cause", alert.cause.name)
        fields.set("effect", alert.effect.name)
        fields.set("severity", alert.severity.name)
        fields.set("starts_at", alert.startsAt)
        fields.set("ends_at", alert.endsAt)
        fields.set("published", alert.published)
        fields.set("test", alert.test)
        fields.set("impact_starts_at", alert.impactStartsAt)
        fields.set("impact_ends_at", alert.impactEndsAt)
        return fields
    }

    static func alert(_ row: Row) throws -> ServiceAlert {
        ServiceAlert(id: try row.int("id"), regionID: Int(try row.int("region_id")), agencyID: try row.optionalString("agency_id") ?? "",
                     header: try row.string("header"), description: try row.optionalString("description") ?? "", url: try row.optionalString("url"),
                     cause: Cause(name: try row.string("cause")) ?? .unknownCause,
                     effect: Effect(name: try row.string("effect")) ?? .unknownEffect,
                     severity: SeverityLevel(name: try row.string("severity")) ?? .unknownSeverity,
                     startsAt: try row.int("starts_at"), endsAt: try row.optionalInt("ends_at"), published: try row.bool("published"),
                     test: try row.bool("test"), sourceVersion: Int(try row.int("source_version")),
                     createdAt: try row.int("created_at"), updatedAt: try row.optionalInt("updated_at") ?? 0,
                     impactStartsAt: try row.optionalInt("impact_starts_at"), impactEndsAt: try row.optionalInt("impact_ends_at"), withdrawnAt: try row.optionalInt("withdrawn_at"))
    }

    static func translation(_ row: Row) throws -> AlertTranslation {
        AlertTranslation(language: try row.string("language"), header: try row.string("header"),
                         description: try row.optionalString("description") ?? "", sourceVersion: Int(try row.int("source_version")))
    }

    static func send(_ row: Row) throws -> AlertSend {
        AlertSend(id: try row.int("id"), alertID: try row.int("alert_id"),
                  audience: AlertSend.Audience(rawValue: try row.string("audience")) ?? .all, status: try row.string("status"),
                  cursor: try row.int("cursor"), targeted: Int(try row.int("targeted")), delivered: Int(try row.int("delivered")),
                  failed: Int(try row.int("failed")), pruned: Int(try row.int("pruned")), pending: Int(try row.int("pending")),
                  startedAt: try row.int("started_at"), finishedAt: try row.optionalInt("finished_at"), lastError: try row.optionalString("last_error"),
                  audienceSize: Int(try row.int("audience_size")))
    }

    static let migrations = [
        Migration(version: 3, name: "create alerts", sql: """
            CREATE TABLE region_settings (
                region_id INTEGER PRIMARY KEY,
                agency_id TEXT,
                timezone TEXT
            );
            CREATE TABLE alerts (
                id INTEGER PRIMARY KEY,
                region_id INTEGER NOT NULL,
                agency_id TEXT NOT NULL,
                header TEXT NOT NULL,
                description TEXT NOT NULL DEFAULT '',
                url TEXT,
                cause TEXT NOT NULL,
                effect TEXT NOT NULL,
                severity TEXT NOT NULL,
                starts_at INTEGER NOT NULL,
                ends_at INTEGER,
                published INTEGER NOT NULL DEFAULT 0,
                test INTEGER NOT NULL DEFAULT 0,
                source_version INTEGER NOT NULL DEFAULT 1,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            );
            CREATE INDEX alerts_region ON alerts (region_id, published, starts_at);
            CREATE TABLE alert_translations (
                alert_id INTEGER NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                language TEXT NOT NULL,
                header TEXT NOT NULL,
                description TEXT NOT NULL DEFAULT '',
                source_version INTEGER NOT NULL,
                PRIMARY KEY (alert_id, language)
            );
            CREATE TABLE alert_sends (
                id INTEGER PRIMARY KEY,
                alert_id INTEGER NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
                audience TEXT NOT NULL CHECK (audience IN ('all', 'test')),
                status TEXT NOT NULL,
                cursor INTEGER NOT NULL DEFAULT 0,
                targeted INTEGER NOT NULL DEFAULT 0,
                delivered INTEGER NOT NULL DEFAULT 0,
                failed INTEGER NOT NULL DEFAULT 0,
                pruned INTEGER NOT NULL DEFAULT 0,
                started_at INTEGER NOT NULL,
                finished_at INTEGER,
                lease_until INTEGER
            );
            CREATE TABLE alert_feed_versions (
                region_id INTEGER PRIMARY KEY,
                version INTEGER NOT NULL,
                changed_at INTEGER NOT NULL
            );
            CREATE TABLE api_keys (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                prefix TEXT NOT NULL,
                key_hash TEXT NOT NULL UNIQUE,
                created_at INTEGER NOT NULL,
                last_used_at INTEGER,
                revoked_at INTEGER
            );
            """),
        Migration(version: 7, name: "alert sends keep pushes to retry", sql: """
            ALTER TABLE alert_sends ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE alert_sends ADD COLUMN last_error TEXT;
            CREATE TABLE alert_send_pending (
                send_id INTEGER NOT NULL REFERENCES alert_sends (id) ON DELETE CASCADE,
                registration_id INTEGER NOT NULL,
                PRIMARY KEY (send_id, registration_id)
            );
            CREATE INDEX alert_sends_lease ON alert_sends (status, lease_until);
            """),
        Migration(version: 11, name: "one unfinished send per alert and audience", sql: """
            CREATE UNIQUE INDEX alert_sends_one_unfinished ON alert_sends (alert_id, audience) WHERE status IN ('running', 'failed');
            """),
        Migration(version: 16, name: "alerts keep an impact period", sql: """
            ALTER TABLE alerts ADD COLUMN impact_starts_at INTEGER;
            ALTER TABLE alerts ADD COLUMN impact_ends_at INTEGER
            """),
        Migration(version: 20, name: "a send remembers its audience's size", sql: """
            ALTER TABLE alert_sends ADD COLUMN audience_size INTEGER NOT NULL DEFAULT 0
            """),
        Migration(version: 19, name: "alerts remember being withdrawn", sql: """
            ALTER TABLE alerts ADD COLUMN withdrawn_at INTEGER
            """),
        Migration(version: 17, name: "alert ids are never reused", sql: """
            CREATE TABLE alert_id_sequence (
                last_id INTEGER NOT NULL
            );
            INSERT INTO alert_id_sequence (last_id) SELECT COALESCE(MAX(id), 0) FROM alerts
            """),
    ]
}

/// Storage outcomes a caller answers with a 4xx.
public enum AlertStoreError: Error, Equatable {
    case notFound
    /// Another runner holds the send's lease for this many more seconds.
    case busy(retryAfter: Int64)
}
