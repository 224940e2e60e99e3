import Core
import Database
import GTFSRealtime

/// Storage of alert sources (table `alert_sources`: settings and poll
/// status) and of what each source's alerts became (`source_alerts`: the
/// stored alert, content fingerprints and the push decision). The alerts
/// themselves are written through `AlertStore`, in the same transaction.
struct AlertSourceStore: Sendable {
    let database: any Database

    static let columns = """
        id, region_id, url, mode, interval_seconds, push, min_severity, effects, scope, quiet_start, quiet_end, audience, flood_threshold, \
        push_corrections, pushes_per_hour, headers, allow_link_local, allow_private, max_bytes, created_at, updated_at, last_poll_at, state, last_success_at, failing_since, \
        last_error, problems, etag, last_modified, failures, next_poll_at, baselined, alert_count, polls, not_modified, failed_polls, pushes, \
        held_reason
        """

    // MARK: Sources

    func create(_ source: AlertSource) async throws -> AlertSource {
        try await database.write { connection in
            let row = try connection.queryOne(
                "INSERT INTO alert_sources (\(Self.fields(source).columns)) VALUES (\(Self.fields(source).values)) RETURNING id")
            var created = source
            created.id = try row?.int("id") ?? 0
            return created
        }
    }

    /// Saves edited settings; the source is polled again at once (without
    /// the old validators when its URL changed), and a changed mode puts
    /// its alerts in or out of the feed.
    func update(_ source: AlertSource, now: EpochSeconds) async throws {
        try await database.write { connection in
            // Another URL is another resource: the old one's validators do not apply.
            try connection.execute(
                """
                UPDATE alert_sources SET \(Self.fields(source).assignments), next_poll_at = 0,
                    etag = CASE WHEN url = \(source.url) THEN etag ELSE NULL END,
                    last_modified = CASE WHEN url = \(source.url) THEN last_modified ELSE NULL END
                WHERE id = \(source.id)
                """)
            try AlertStore.setMirroredInFeed(connection, sourceID: source.id, inFeed: source.mode == .mirror, regionID: source.regionID, now: now)
            // Alerts an editor dismissed from the feed stay out of it.
            try AlertStore.keepOutOfFeed(
                connection,
                ids: try connection.query(
                    "SELECT alert_id FROM source_alerts WHERE source_id = \(source.id) AND hidden = 1"
                ).map { try $0.int("alert_id") },
                regionID: source.regionID, now: now)
        }
    }

    /// Removes a source with its alerts (and their sends). False when there was none.
    func remove(id: Int64, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            guard let row = try connection.queryOne("SELECT region_id FROM alert_sources WHERE id = \(id)") else { return false }
            try AlertStore.deleteMirrored(connection, sourceID: id, regionID: row.count("region_id"), now: now)
            try connection.execute("DELETE FROM source_alerts WHERE source_id = \(id)")
            try connection.execute("DELETE FROM alert_sources WHERE id = \(id)")
            return true
        }
    }

    func source(id: Int64) async throws -> (AlertSource, AlertSourceStatus)? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM alert_sources WHERE id = \(id)").map(Self.source)
        }
    }

    /// Every source, or a region's, by id.
    func sources(regionID: Int? = nil) async throws -> [(AlertSource, AlertSourceStatus)] {
        try await database.read { connection in
            try connection.query(
                "SELECT \(raw: Self.columns) FROM alert_sources WHERE (\(regionID == nil) = 1 OR region_id = \(regionID ?? 0)) ORDER BY id"
            ).map(Self.source)
        }
    }

    /// Sources whose next poll is due.
    func due(now: EpochSeconds) async throws -> [(AlertSource, AlertSourceStatus)] {
        try await database.read { connection in
            try connection.query("SELECT \(raw: Self.columns) FROM alert_sources WHERE next_poll_at <= \(now) ORDER BY next_poll_at, id").map(
                Self.source)
        }
    }

    // MARK: Polls

    /// What the store needs to know of one alert after a poll's decisions.
    struct Decided: Sendable {
        var alert: MirroredAlert
        var outcome: AlertSourceRules.Outcome
    }

    /// The alerts a source has had, by entity id.
    func states(sourceID: Int64) async throws -> [String: SourceAlertState] {
        try await database.read { connection in
            var states: [String: SourceAlertState] = [:]
            for row in try connection.query("SELECT * FROM source_alerts WHERE source_id = \(sourceID)") {
                let state = try Self.state(row)
                states[state.entityID] = state
            }
            return states
        }
    }

    /// Records a fetched feed in one transaction: each alert written (new or
    /// changed ones through `AlertStore`), alerts that left the source
    /// withdrawn, each decision kept, and the source's status.
    func applyPoll(
        _ source: AlertSource, agencyID: String, decided: [Decided], problems: [String], held: String?,
        validators: (etag: String?, lastModified: String?), now: EpochSeconds, nextPollAt: EpochSeconds
    ) async throws {
        try await database.write { connection in
            var states: [String: SourceAlertState] = [:]
            for row in try connection.query("SELECT * FROM source_alerts WHERE source_id = \(source.id)") {
                let state = try Self.state(row)
                states[state.entityID] = state
            }
            for item in decided {
                let previous = states.removeValue(forKey: item.alert.entityID)
                var alertID = previous?.alertID
                if previous == nil || previous?.contentHash != item.alert.contentHash || previous?.present == false {
                    alertID = try AlertStore.saveMirrored(
                        connection, Self.serviceAlert(item.alert, source: source, agencyID: agencyID, hidden: previous?.hidden ?? false, now: now),
                        translations: item.alert.translations,
                        message: AlertSourceMapping.encoded(id: item.alert.entityID, item.alert.feedAlert), existingID: previous?.alertID, now: now)
                }
                var state =
                    previous
                    ?? SourceAlertState(
                        sourceID: source.id, entityID: item.alert.entityID, alertID: 0, contentHash: "", materialHash: "", decision: .skipped,
                        reason: nil, notBefore: nil, pushedAt: nil, sendID: nil, present: true, changedAt: now, firstSeenAt: now)
                state.alertID = alertID ?? 0
                if state.contentHash != item.alert.contentHash { state.changedAt = now }
                state.contentHash = item.alert.contentHash
                state.materialHash = item.alert.materialHash
                state.present = true
                switch item.outcome {
                case .baseline: (state.decision, state.reason) = (.baseline, "present at the first poll")
                case .unchanged: break
                case .skip(let reason): (state.decision, state.reason) = (.skipped, reason)
                case .review(let reason): (state.decision, state.reason) = (.review, reason)
                case .deferred(let until, let reason): (state.decision, state.reason, state.notBefore) = (.deferred, reason, until)
                case .push: (state.decision, state.reason) = (.due, nil)
                }
                try Self.save(connection, state)
            }
            // What is left was not in this fetch: it left the source.
            let gone = states.values.filter(\.present)
            try AlertStore.withdrawMirrored(connection, ids: gone.map(\.alertID), regionID: source.regionID, now: now)
            for var state in gone {
                state.present = false
                if [.review, .deferred, .due].contains(state.decision) {
                    (state.decision, state.reason) = (.skipped, "left the source before it was pushed")
                }
                try Self.save(connection, state)
            }
            _ = try AlertStore.forgetWithdrawnMirrored(connection, sourceID: source.id, withdrawnBefore: now.adding(seconds: -7 * 86_400))
            try connection.execute(
                "DELETE FROM source_alerts WHERE source_id = \(source.id) AND present = 0 AND changed_at < \(now.adding(seconds: -7 * 86_400))")
            try connection.execute(
                """
                UPDATE alert_sources SET last_poll_at = \(now), state = \(held == nil ? "ok" : "held"), last_success_at = \(now),
                    failing_since = NULL, last_error = NULL, problems = \(problems.prefix(20).joined(separator: "\n")), etag = \(validators.etag),
                    last_modified = \(validators.lastModified), failures = 0, next_poll_at = \(nextPollAt), baselined = 1,
                    alert_count = \(Int64(decided.count)), polls = polls + 1, held_reason = \(held)
                WHERE id = \(source.id)
                """)
        }
    }

    /// A poll answered 304: nothing changed.
    func recordNotModified(sourceID: Int64, now: EpochSeconds, nextPollAt: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE alert_sources SET last_poll_at = \(now), state = 'not modified', last_success_at = \(now), failing_since = NULL,
                    last_error = NULL, failures = 0, next_poll_at = \(nextPollAt), polls = polls + 1, not_modified = not_modified + 1
                WHERE id = \(sourceID)
                """)
        }
    }

    /// A poll failed: the source's alerts stay as they were.
    func recordFailure(sourceID: Int64, error: String, now: EpochSeconds, nextPollAt: EpochSeconds) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE alert_sources SET last_poll_at = \(now), state = 'failing', failing_since = COALESCE(failing_since, \(now)),
                    last_error = \(String(error.prefix(500))), failures = failures + 1, next_poll_at = \(nextPollAt), polls = polls + 1,
                    failed_polls = failed_polls + 1
                WHERE id = \(sourceID)
                """)
        }
    }

    // MARK: Decisions

    /// Deferred alerts whose quiet hours are over become due; returns every
    /// due alert of the source (pushes to start).
    func duePushes(sourceID: Int64, now: EpochSeconds) async throws -> [SourceAlertState] {
        try await database.write { connection in
            try connection.execute(
                """
                UPDATE source_alerts SET decision = 'due' WHERE source_id = \(sourceID) AND decision = 'deferred' AND present = 1
                    AND not_before <= \(now)
                """)
            return try connection.query("SELECT * FROM source_alerts WHERE source_id = \(sourceID) AND decision = 'due' AND present = 1").map(
                Self.state)
        }
    }

    /// A due alert's send started.
    func markPushed(sourceID: Int64, entityID: String, sendID: Int64, now: EpochSeconds) async throws {
        _ = try await database.write { connection in
            let changed = try connection.execute(
                """
                UPDATE source_alerts SET decision = 'pushed', reason = NULL, send_id = \(sendID), pushed_at = \(now)
                WHERE source_id = \(sourceID) AND entity_id = \(entityID) AND decision = 'due'
                """)
            if changed > 0 { try connection.execute("UPDATE alert_sources SET pushes = pushes + 1 WHERE id = \(sourceID)") }
        }
    }

    /// A due alert whose send could not start (its alert was deleted, say).
    func markNotPushed(sourceID: Int64, entityID: String, reason: String) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE source_alerts SET decision = 'skipped', reason = \(reason)
                WHERE source_id = \(sourceID) AND entity_id = \(entityID) AND decision = 'due'
                """)
        }
    }

    /// An editor's answer to an alert waiting for review: true when it was
    /// waiting (a second click, a refresh or a replay finds it decided).
    func decideReview(sourceID: Int64, entityID: String, approve: Bool) async throws -> Bool {
        try await database.write { connection in
            try connection.execute(
                """
                UPDATE source_alerts SET decision = \(approve ? "due" : "dismissed"), reason = \(approve ? nil : "dismissed by an editor")
                WHERE source_id = \(sourceID) AND entity_id = \(entityID) AND decision = 'review' AND present = 1
                """) > 0
        }
    }

    /// Alerts waiting for review (of one source, or of a region's sources),
    /// with their headers.
    func reviews(sourceID: Int64? = nil, regionID: Int? = nil) async throws -> [(state: SourceAlertState, header: String)] {
        try await database.read { connection in
            let states = try connection.query(
                """
                SELECT * FROM source_alerts WHERE decision = 'review' AND present = 1
                    AND (\(sourceID == nil) = 1 OR source_id = \(sourceID ?? 0))
                    AND (\(regionID == nil) = 1 OR source_id IN (SELECT id FROM alert_sources WHERE region_id = \(regionID ?? 0)))
                ORDER BY source_id, changed_at, entity_id
                """
            ).map(Self.state)
            let headers = try AlertStore.headers(connection, alertIDs: states.map(\.alertID))
            return states.map { ($0, headers[$0.alertID] ?? "") }
        }
    }

    /// Pushes started for alerts of this source, and of every source of its
    /// region, since `since` (the flood caps).
    func pushes(sourceID: Int64, regionID: Int, since: EpochSeconds) async throws -> (source: Int, region: Int) {
        try await database.read { connection in
            let row = try connection.queryOne(
                """
                SELECT COALESCE(SUM(CASE WHEN source_id = \(sourceID) THEN 1 ELSE 0 END), 0) AS own, COUNT(*) AS region
                FROM source_alerts WHERE pushed_at >= \(since) AND source_id IN (SELECT id FROM alert_sources WHERE region_id = \(regionID))
                """)
            return (try row?.count("own") ?? 0, try row?.count("region") ?? 0)
        }
    }

    /// How many alerts of a region's sources wait for review, and since
    /// when the oldest has waited.
    func reviewSummary(regionID: Int) async throws -> (count: Int, oldest: EpochSeconds?) {
        try await database.read { connection in
            let row = try connection.queryOne(
                """
                SELECT COUNT(*) AS waiting, MIN(changed_at) AS oldest FROM source_alerts WHERE decision = 'review' AND present = 1
                    AND source_id IN (SELECT id FROM alert_sources WHERE region_id = \(regionID))
                """)
            return (try row?.count("waiting") ?? 0, try row?.optionalSeconds("oldest"))
        }
    }

    /// What the source store knows of a mirrored alert.
    func state(alertID: Int64) async throws -> SourceAlertState? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM source_alerts WHERE alert_id = \(alertID)").map(Self.state)
        }
    }

    /// Keeps a mirrored alert out of the feed while its source lists it
    /// (an editor's "Dismiss from the feed"), or lets it back in. False when
    /// nothing changed (already so, or no such alert).
    func setHidden(sourceID: Int64, entityID: String, hidden: Bool, now: EpochSeconds) async throws -> Bool {
        try await database.write { connection in
            guard
                let row = try connection.queryOne(
                    "SELECT s.alert_id, a.mode, a.region_id FROM source_alerts s JOIN alert_sources a ON a.id = s.source_id WHERE s.source_id = \(sourceID) AND s.entity_id = \(entityID) AND s.hidden <> \(hidden)"
                )
            else { return false }
            try connection.execute("UPDATE source_alerts SET hidden = \(hidden) WHERE source_id = \(sourceID) AND entity_id = \(entityID)")
            try AlertStore.setMirroredAlertInFeed(
                connection, alertID: try row.int("alert_id"), inFeed: !hidden && (try row.string("mode")) == AlertSource.Mode.mirror.rawValue,
                regionID: try row.count("region_id"), now: now)
            return true
        }
    }

    // MARK: Export and import (inside RegionExchange's transaction)

    /// A region's sources with what each alert of theirs became.
    static func exportable(_ connection: any SQLConnection, regionID: Int) throws -> [(source: AlertSource, alerts: [SourceAlertState])] {
        try connection.query("SELECT \(raw: columns) FROM alert_sources WHERE region_id = \(regionID) ORDER BY id").map(source).map { source, _ in
            (source, try connection.query("SELECT * FROM source_alerts WHERE source_id = \(source.id) ORDER BY entity_id").map(state))
        }
    }

    /// The region a source id belongs to, if the id is taken.
    static func region(ofSource id: Int64, _ connection: any SQLConnection) throws -> Int? {
        try connection.queryOne("SELECT region_id FROM alert_sources WHERE id = \(id)")?.count("region_id")
    }

    /// Adds a source as it was exported, its id kept (its alerts name it),
    /// polled again at once, and what its alerts became.
    static func insertImported(_ connection: any SQLConnection, source: AlertSource, alerts: [SourceAlertState]) throws {
        let fields = fields(source)
        try connection.execute(
            "INSERT INTO alert_sources (\(fields.columns), id, baselined) VALUES (\(fields.values), \(source.id), \(!alerts.isEmpty))")
        for state in alerts { try save(connection, state) }
    }

    /// After sources were written with ids of their own, new ones continue after them.
    static func advanceIdentities(_ connection: any SQLConnection) throws { try connection.advanceIdentity(table: "alert_sources") }

    // MARK: Rows

    static func save(_ connection: any SQLConnection, _ state: SourceAlertState) throws {
        try connection.execute(
            """
            INSERT INTO source_alerts (source_id, entity_id, alert_id, content_hash, material_hash, decision, reason, not_before, pushed_at,
                send_id, present, changed_at, first_seen_at, hidden)
            VALUES (\(state.sourceID), \(state.entityID), \(state.alertID), \(state.contentHash), \(state.materialHash),
                \(state.decision.rawValue), \(state.reason), \(state.notBefore), \(state.pushedAt), \(state.sendID), \(state.present),
                \(state.changedAt), \(state.firstSeenAt), \(state.hidden))
            ON CONFLICT (source_id, entity_id) DO UPDATE SET alert_id = excluded.alert_id, content_hash = excluded.content_hash,
                material_hash = excluded.material_hash, decision = excluded.decision, reason = excluded.reason,
                not_before = excluded.not_before, pushed_at = excluded.pushed_at, send_id = excluded.send_id, present = excluded.present,
                changed_at = excluded.changed_at, first_seen_at = excluded.first_seen_at, hidden = excluded.hidden
            """)
    }

    static func state(_ row: Row) throws -> SourceAlertState {
        SourceAlertState(
            sourceID: try row.int("source_id"), entityID: try row.string("entity_id"), alertID: try row.int("alert_id"),
            contentHash: try row.string("content_hash"), materialHash: try row.string("material_hash"),
            decision: SourceAlertState.Decision(rawValue: try row.string("decision")) ?? .skipped, reason: try row.optionalString("reason"),
            notBefore: try row.optionalSeconds("not_before"), pushedAt: try row.optionalSeconds("pushed_at"), sendID: try row.optionalInt("send_id"),
            present: try row.bool("present"), changedAt: try row.seconds("changed_at"),
            firstSeenAt: try row.optionalSeconds("first_seen_at") ?? row.seconds("changed_at"), hidden: try row.bool("hidden"))
    }

    /// The settings columns, for an insert and an update alike.
    static func fields(_ source: AlertSource) -> SQLFields {
        var fields = SQLFields()
        fields.set("region_id", Int64(source.regionID))
        fields.set("url", source.url)
        fields.set("mode", source.mode.rawValue)
        fields.set("interval_seconds", Int64(source.intervalSeconds))
        fields.set("push", source.push.rawValue)
        fields.set("min_severity", source.minSeverity.name)
        fields.set("effects", source.effects.map(\.name).joined(separator: ","))
        fields.set("scope", source.scope.rawValue)
        fields.set("quiet_start", source.quietHours.map { Int64($0.start) })
        fields.set("quiet_end", source.quietHours.map { Int64($0.end) })
        fields.set("audience", source.audience.rawValue)
        fields.set("flood_threshold", Int64(source.floodThreshold))
        fields.set("push_corrections", source.pushCorrections)
        fields.set("pushes_per_hour", Int64(source.pushesPerHour))
        fields.set("headers", source.headers.map(\.stored).joined(separator: "\n"))
        fields.set("allow_link_local", source.allowLinkLocal)
        fields.set("allow_private", source.allowPrivate)
        fields.set("max_bytes", Int64(source.maxBytes))
        fields.set("created_at", source.createdAt)
        fields.set("updated_at", source.updatedAt)
        return fields
    }

    static func source(_ row: Row) throws -> (AlertSource, AlertSourceStatus) {
        let quiet = try row.optionalInt("quiet_start").flatMap { start in
            try row.optionalInt("quiet_end").map { QuietHours(start: Int(start), end: Int($0)) }
        }
        let source = AlertSource(
            id: try row.int("id"), regionID: try row.count("region_id"), url: try row.string("url"),
            mode: AlertSource.Mode(rawValue: try row.string("mode")) ?? .mirror, intervalSeconds: try row.count("interval_seconds"),
            push: AlertSource.PushMode(rawValue: try row.string("push")) ?? .review,
            minSeverity: SeverityLevel(name: try row.string("min_severity")) ?? .warning,
            effects: AlertSourceRules.parseEffects(try row.string("effects")) ?? [],
            scope: AlertSource.Scope(rawValue: try row.string("scope")) ?? .route, quietHours: quiet,
            audience: AlertSend.Audience(rawValue: try row.string("audience")) ?? .all, floodThreshold: try row.count("flood_threshold"),
            pushCorrections: try row.bool("push_corrections"), pushesPerHour: try row.count("pushes_per_hour"),
            headers: AlertSourceRules.storedHeaders(try row.string("headers")),
            allowLinkLocal: try row.bool("allow_link_local"), allowPrivate: try row.bool("allow_private"), maxBytes: try row.count("max_bytes"),
            createdAt: try row.seconds("created_at"),
            updatedAt: try row.seconds("updated_at"))
        let status = AlertSourceStatus(
            lastPollAt: try row.optionalSeconds("last_poll_at"), state: try row.optionalString("state"),
            lastSuccessAt: try row.optionalSeconds("last_success_at"), failingSince: try row.optionalSeconds("failing_since"),
            lastError: try row.optionalString("last_error"),
            problems: (try row.string("problems")).split(separator: "\n").map(String.init), etag: try row.optionalString("etag"),
            lastModified: try row.optionalString("last_modified"), failures: try row.count("failures"), nextPollAt: try row.seconds("next_poll_at"),
            baselined: try row.bool("baselined"), alertCount: try row.count("alert_count"), polls: try row.count("polls"),
            notModified: try row.count("not_modified"), failedPolls: try row.count("failed_polls"), pushes: try row.count("pushes"),
            heldReason: try row.optionalString("held_reason"))
        return (source, status)
    }

    /// The stored alert for a source's alert: published (in the feed only
    /// for a mirror), with the region's agency.
    static func serviceAlert(_ alert: MirroredAlert, source: AlertSource, agencyID: String, hidden: Bool = false, now: EpochSeconds) -> ServiceAlert {
        ServiceAlert(
            id: 0, regionID: source.regionID, agencyID: agencyID, header: alert.header, description: alert.description, url: alert.url,
            cause: alert.cause, effect: alert.effect, severity: alert.severity,
            startsAt: alert.startsAt, endsAt: alert.endsAt, published: true, test: false,
            sourceVersion: 1, createdAt: now, updatedAt: now, impactStartsAt: alert.impactStartsAt, impactEndsAt: alert.impactEndsAt,
            withdrawnAt: nil, sourceID: source.id, sourceEntity: alert.entityID, inFeed: source.mode == .mirror && !hidden)
    }
}
