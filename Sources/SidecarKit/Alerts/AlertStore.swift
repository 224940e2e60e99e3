import Core
import Database
import GTFSRealtime

/// Storage of alerts (authored and mirrored), their translations and each
/// region's feed version; an alert's sends are `sends` (`AlertSendStore`).
struct AlertStore: Sendable {
    let database: any Database
    /// The sends of these alerts and the pushes they left pending.
    let sends: AlertSendStore

    init(database: any Database, sendLeaseSeconds: Int64 = AlertSendStore.defaultSendLeaseSeconds) {
        self.database = database
        self.sends = AlertSendStore(database: database, sendLeaseSeconds: sendLeaseSeconds)
    }

    // MARK: Alerts

    /// Inserts a new alert and returns it with its id.
    func create(_ alert: ServiceAlert) async throws -> ServiceAlert {
        try await database.write { connection in
            let id = try Self.nextID(connection)
            let fields = Self.fields(alert)
            try connection.execute(
                """
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
    func update(_ alert: ServiceAlert, now: EpochSeconds) async throws -> ServiceAlert {
        try await database.write { connection in
            guard let previous = try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(alert.id)").map(Self.alert) else {
                throw AlertStoreError.notFound
            }
            var saved = alert
            saved.sourceVersion = previous.sourceVersion + (previous.header != alert.header || previous.description != alert.description ? 1 : 0)
            saved.updatedAt = now
            try connection.execute(
                """
                UPDATE alerts SET \(Self.fields(saved).assignments), source_version = \(saved.sourceVersion), updated_at = \(now),
                    withdrawn_at = \(saved.withdrawnAt)
                WHERE id = \(saved.id)
                """)
            try Self.bumpFeed(connection, regionID: saved.regionID, now: now)
            return saved
        }
    }

    func delete(id: Int64, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT region_id FROM alerts WHERE id = \(id)") else { return false }
            try Self.deleteAlerts(connection, ids: [id])
            try Self.bumpFeed(connection, regionID: Int(row.int("region_id")), now: now)
            return true
        }
    }

    func find(id: Int64) async throws -> ServiceAlert? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(id)").map(Self.alert)
        }
    }

    /// A page of a region's alerts in id order (the admin API's lists).
    func alerts(regionID: Int, after: Int64, limit: Int) async throws -> [ServiceAlert] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT \(raw: Self.columns) FROM alerts WHERE region_id = \(Int64(regionID)) AND id > \(after) ORDER BY id LIMIT \(Int64(limit))
                """
            ).map(Self.alert)
        }
    }

    /// Alerts of a region, newest start first (all, or only published ones).
    func alerts(regionID: Int, publishedOnly: Bool = false) async throws -> [ServiceAlert] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT \(raw: Self.columns) FROM alerts WHERE region_id = \(Int64(regionID)) AND (\(publishedOnly) = 0 OR published = 1) ORDER BY starts_at DESC, id DESC
                """
            ).map(Self.alert)
        }
    }

    /// What `AlertFeedSelection` needs in one read: a region's published
    /// alerts (those kept out of the feed too, when `keptOut`: the console
    /// says why each is not in it), their translations, the source messages
    /// of mirrored ones, and when the region's alerts last changed.
    func feedSnapshot(regionID: Int, keptOut: Bool = false) async throws -> (
        alerts: [ServiceAlert], translations: [Int64: [AlertTranslation]], mirrored: [Int64: [UInt8]], changedAt: EpochSeconds?, version: Int64
    ) {
        try await database.read { connection in
            let alerts = try connection.query(
                """
                SELECT \(raw: Self.columns) FROM alerts WHERE region_id = \(Int64(regionID)) AND published = 1 AND (\(keptOut) = 1 OR in_feed = 1)
                """
            ).map(Self.alert)
            let ids = alerts.map(\.id)
            var translations: [Int64: [AlertTranslation]] = [:]
            var mirrored: [Int64: [UInt8]] = [:]
            if !ids.isEmpty {
                for row in try connection.query("SELECT \(raw: Self.translationColumns) FROM alert_translations WHERE alert_id IN (\(list: ids))") {
                    translations[try row.int("alert_id"), default: []].append(try Self.translation(row))
                }
                for row in try connection.query("SELECT id, source_alert FROM alerts WHERE id IN (\(list: ids)) AND source_alert IS NOT NULL") {
                    if case .blob(let bytes) = try row.value("source_alert") { mirrored[try row.int("id")] = bytes }
                }
            }
            let row = try connection.queryOne("SELECT changed_at, version FROM alert_feed_versions WHERE region_id = \(Int64(regionID))")
            return (alerts, translations, mirrored, try row?.optionalSeconds("changed_at"), try row?.int("version") ?? 0)
        }
    }

    /// The stored feed message of a mirrored alert (nil for an authored one).
    func mirroredMessage(alertID: Int64) async throws -> [UInt8]? {
        try await database.read { connection in
            guard let row = try connection.queryOne("SELECT source_alert FROM alerts WHERE id = \(alertID)"),
                case .blob(let bytes) = try row.value("source_alert")
            else { return nil }
            return bytes
        }
    }

    /// Every region's feed version (the server polls this to notice edits
    /// made by other processes, such as the CLI).
    func feedVersions() async throws -> [Int: Int64] {
        try await database.read { connection in
            Dictionary(
                try connection.query("SELECT region_id, version FROM alert_feed_versions").map {
                    (Int(try $0.int("region_id")), try $0.int("version"))
                }, uniquingKeysWith: { first, _ in first })
        }
    }

    // MARK: Translations

    func translations(alertID: Int64) async throws -> [AlertTranslation] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT \(raw: Self.translationColumns) FROM alert_translations WHERE alert_id = \(alertID) ORDER BY language
                """
            ).map(Self.translation)
        }
    }

    /// Stores a translation made from the alert's current English text.
    func translate(alertID: Int64, language: String, header: String, description: String, now: EpochSeconds) async throws -> AlertTranslation {
        try await database.write { connection in
            guard let alert = try connection.queryOne("SELECT \(raw: Self.columns) FROM alerts WHERE id = \(alertID)").map(Self.alert) else {
                throw AlertStoreError.notFound
            }
            try connection.execute(
                """
                INSERT INTO alert_translations (alert_id, language, header, description, source_version, source_header, source_description)
                VALUES (\(alertID), \(language), \(header), \(description), \(Int64(alert.sourceVersion)), \(alert.header), \(alert.description))
                ON CONFLICT (alert_id, language) DO UPDATE SET header = excluded.header, description = excluded.description,
                    source_version = excluded.source_version, source_header = excluded.source_header,
                    source_description = excluded.source_description
                """)
            try Self.bumpFeed(connection, regionID: alert.regionID, now: now)
            return AlertTranslation(
                language: language, header: header, description: description, sourceVersion: alert.sourceVersion,
                sourceHeader: alert.header, sourceDescription: alert.description)
        }
    }

    /// Deletes one translation; false when there was none.
    func deleteTranslation(alertID: Int64, language: String, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT region_id FROM alerts WHERE id = \(alertID)") else { return false }
            let deleted = try connection.execute("DELETE FROM alert_translations WHERE alert_id = \(alertID) AND language = \(language)")
            if deleted > 0 { try Self.bumpFeed(connection, regionID: Int(row.int("region_id")), now: now) }
            return deleted > 0
        }
    }

    // MARK: For other features

    /// The ids of a region's alerts, as a subquery.
    static func alertIDs(inRegion regionID: Int) -> SQL { "SELECT id FROM alerts WHERE region_id = \(regionID)" }

    /// Alerts' headers by id.
    static func headers(_ connection: any SQLConnection, alertIDs: [Int64]) throws -> [Int64: String] {
        guard !alertIDs.isEmpty else { return [:] }
        return Dictionary(
            try connection.query("SELECT id, header FROM alerts WHERE id IN (\(list: alertIDs))").map {
                (try $0.int("id"), try $0.string("header"))
            }, uniquingKeysWith: { first, _ in first })
    }

    /// A region's alerts with their translations, oldest first (an export).
    static func alertsWithTranslations(_ connection: any SQLConnection, regionID: Int) throws -> [(
        alert: ServiceAlert, translations: [AlertTranslation]
    )] {
        try connection.query("SELECT \(raw: columns) FROM alerts WHERE region_id = \(regionID) ORDER BY id").map { row in
            let alert = try alert(row)
            let translations = try connection.query(
                """
                SELECT \(raw: translationColumns) FROM alert_translations WHERE alert_id = \(alert.id) ORDER BY language
                """
            ).map(translation)
            return (alert, translations)
        }
    }

    /// The region an alert id belongs to, if the id is taken.
    static func region(ofAlert id: Int64, _ connection: any SQLConnection) throws -> Int? {
        try connection.queryOne("SELECT region_id FROM alerts WHERE id = \(id)")?.count("region_id")
    }

    /// The stored feed messages of a region's mirrored alerts, by id (an export).
    static func mirroredMessages(_ connection: any SQLConnection, regionID: Int) throws -> [Int64: [UInt8]] {
        var messages: [Int64: [UInt8]] = [:]
        for row in try connection.query("SELECT id, source_alert FROM alerts WHERE region_id = \(regionID) AND source_alert IS NOT NULL") {
            if case .blob(let bytes) = try row.value("source_alert") { messages[try row.int("id")] = bytes }
        }
        return messages
    }

    /// Adds an alert as it was exported, its id kept, with its translations
    /// (each current when made from the text the alert has now) and, for a
    /// mirrored one, its link to its source and the message it re-emits.
    static func insertImported(
        _ connection: any SQLConnection, alert: ServiceAlert, translations: [AlertTranslation], message: [UInt8]? = nil
    ) throws {
        var fields = fields(alert)
        if let sourceID = alert.sourceID {
            fields.set("source_id", sourceID)
            fields.set("source_entity", alert.sourceEntity)
            fields.set("source_alert", message)
            fields.set("in_feed", alert.inFeed)
        }
        fields.set("withdrawn_at", alert.withdrawnAt)
        try connection.execute(
            """
            INSERT INTO alerts (\(fields.columns), id, source_version, created_at, updated_at)
            VALUES (\(fields.values), \(alert.id), 1, \(alert.createdAt), \(alert.updatedAt))
            """)
        for translation in translations {
            try connection.execute(
                """
                INSERT INTO alert_translations (alert_id, language, header, description, source_version, source_header, source_description)
                VALUES (\(alert.id), \(translation.language), \(translation.header), \(translation.description), \(translation.sourceVersion),
                    \(translation.sourceHeader), \(translation.sourceDescription))
                """)
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

    /// The last alert id handed out.
    static func lastID(_ connection: any SQLConnection) throws -> Int64 {
        try connection.queryOne("SELECT last_id FROM alert_id_sequence")?.int("last_id") ?? 0
    }

    /// Raises the alert id sequence to `minimum` when it is below (the next
    /// id is then `minimum + 1`), so ids another server gave out can be
    /// imported here without meeting an id this one gave.
    static func raiseIDs(_ connection: any SQLConnection, to minimum: Int64) throws {
        try connection.execute("UPDATE alert_id_sequence SET last_id = \(minimum) WHERE last_id < \(minimum)")
    }

    /// After alerts were written with ids of their own (an import), new
    /// ones continue after them.
    static func advanceIdentities(_ connection: any SQLConnection) throws {
        try connection.advanceIdentity(table: "alerts")
        try advanceIDs(connection)
    }

    /// After alerts were written with ids of their own (an import), the
    /// sequence moves past them.
    static func advanceIDs(_ connection: any SQLConnection) throws {
        try connection.execute(
            """
            UPDATE alert_id_sequence SET last_id = (SELECT MAX(id) FROM alerts) WHERE last_id < (SELECT COALESCE(MAX(id), 0) FROM alerts)
            """)
    }

    // MARK: Rows

    /// A region's alerts changed: its feed version moves on, and its
    /// `changed_at` (the feed's header stamp) to now, never back (an
    /// instance whose clock lags another's must not move it backwards, and
    /// it is never ahead of the writer's clock).
    static func bumpFeed(_ connection: any SQLConnection, regionID: Int, now: EpochSeconds) throws {
        try connection.execute(
            """
            INSERT INTO alert_feed_versions (region_id, version, changed_at) VALUES (\(Int64(regionID)), 1, \(now))
            ON CONFLICT (region_id) DO UPDATE SET version = alert_feed_versions.version + 1,
                changed_at = CASE WHEN excluded.changed_at > alert_feed_versions.changed_at THEN excluded.changed_at
                    ELSE alert_feed_versions.changed_at END
            """)
    }

    // MARK: Alerts from a source (AlertSourceStore calls these inside its own writes)

    /// Writes an alert mirrored from a source: a new row, or `existingID`'s
    /// brought in step (its source version rises and its translations are
    /// replaced, so none is ever stale). One that had left the source and
    /// came back is published again. Returns the alert's id.
    static func saveMirrored(
        _ connection: any SQLConnection, _ alert: ServiceAlert, translations: [AlertTranslation], message: [UInt8], existingID: Int64?,
        now: EpochSeconds
    ) throws -> Int64 {
        var fields = fields(alert)
        fields.set("source_id", alert.sourceID)
        fields.set("source_entity", alert.sourceEntity)
        fields.set("source_alert", message)
        fields.set("in_feed", alert.inFeed)
        let id: Int64
        let version: Int64
        if let existingID, let previous = try connection.queryOne("SELECT source_version FROM alerts WHERE id = \(existingID)") {
            id = existingID
            version = try previous.int("source_version") + 1
            try connection.execute(
                """
                UPDATE alerts SET \(fields.assignments), source_version = \(version), updated_at = \(now), withdrawn_at = NULL WHERE id = \(id)
                """)
        } else {
            id = try nextID(connection)
            version = 1
            try connection.execute(
                """
                INSERT INTO alerts (\(fields.columns), source_version, created_at, updated_at, id)
                VALUES (\(fields.values), 1, \(now), \(now), \(id))
                """)
        }
        try connection.execute("DELETE FROM alert_translations WHERE alert_id = \(id)")
        for translation in translations {
            try connection.execute(
                """
                INSERT INTO alert_translations (alert_id, language, header, description, source_version, source_header, source_description)
                VALUES (\(id), \(translation.language), \(translation.header), \(translation.description), \(version), \(alert.header),
                    \(alert.description))
                """)
        }
        try bumpFeed(connection, regionID: alert.regionID, now: now)
        return id
    }

    /// Withdraws mirrored alerts that left their source: out of the feed,
    /// kept (with their sends) as withdrawn.
    static func withdrawMirrored(_ connection: any SQLConnection, ids: [Int64], regionID: Int, now: EpochSeconds) throws {
        guard !ids.isEmpty else { return }
        let changed = try connection.execute(
            "UPDATE alerts SET published = 0, withdrawn_at = \(now), updated_at = \(now) WHERE id IN (\(list: ids)) AND published = 1")
        if changed > 0 { try bumpFeed(connection, regionID: regionID, now: now) }
    }

    /// Puts a source's alerts in or out of the feed (its mode changed).
    static func setMirroredInFeed(_ connection: any SQLConnection, sourceID: Int64, inFeed: Bool, regionID: Int, now: EpochSeconds) throws {
        let changed = try connection.execute("UPDATE alerts SET in_feed = \(inFeed) WHERE source_id = \(sourceID) AND in_feed <> \(inFeed)")
        if changed > 0 { try bumpFeed(connection, regionID: regionID, now: now) }
    }

    /// Puts one mirrored alert in or out of the feed (an editor dismissed it).
    static func setMirroredAlertInFeed(_ connection: any SQLConnection, alertID: Int64, inFeed: Bool, regionID: Int, now: EpochSeconds) throws {
        let changed = try connection.execute("UPDATE alerts SET in_feed = \(inFeed) WHERE id = \(alertID) AND in_feed <> \(inFeed)")
        if changed > 0 { try bumpFeed(connection, regionID: regionID, now: now) }
    }

    /// Keeps mirrored alerts out of the feed (dismissed by an editor).
    static func keepOutOfFeed(_ connection: any SQLConnection, ids: [Int64], regionID: Int, now: EpochSeconds) throws {
        guard !ids.isEmpty else { return }
        let changed = try connection.execute("UPDATE alerts SET in_feed = 0 WHERE id IN (\(list: ids)) AND in_feed = 1")
        if changed > 0 { try bumpFeed(connection, regionID: regionID, now: now) }
    }

    /// Deletes a removed source's alerts with their translations and sends.
    static func deleteMirrored(_ connection: any SQLConnection, sourceID: Int64, regionID: Int, now: EpochSeconds) throws {
        let ids = try connection.query("SELECT id FROM alerts WHERE source_id = \(sourceID)").map { try $0.int("id") }
        guard !ids.isEmpty else { return }
        try deleteAlerts(connection, ids: ids)
        try bumpFeed(connection, regionID: regionID, now: now)
    }

    /// Withdrawn mirrored alerts older than `cutoff` are forgotten, so a
    /// busy source does not grow the table for ever. Returns their ids.
    static func forgetWithdrawnMirrored(_ connection: any SQLConnection, sourceID: Int64, withdrawnBefore cutoff: EpochSeconds) throws -> [Int64] {
        let ids = try connection.query(
            "SELECT id FROM alerts WHERE source_id = \(sourceID) AND published = 0 AND withdrawn_at < \(cutoff)"
        ).map { try $0.int("id") }
        try deleteAlerts(connection, ids: ids)
        return ids
    }

    /// Deletes alerts with their translations and sends.
    static func deleteAlerts(_ connection: any SQLConnection, ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try connection.execute("DELETE FROM alert_translations WHERE alert_id IN (\(list: ids))")
        for id in ids { try AlertSendStore.deleteSends(connection, alertID: id) }
        try connection.execute("DELETE FROM alerts WHERE id IN (\(list: ids))")
    }
}
