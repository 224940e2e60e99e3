import Core
import Crypto
import Database

/// Storage of ghost-bus reports (table `ghost_bus_reports`).
struct GhostBusStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    enum InsertOutcome: Equatable, Sendable {
        case created(publicID: String)
        /// Caught by the check before inserting.
        case duplicate
        /// Caught by the unique index (a concurrent identical report won).
        case duplicateRace
    }

    /// A report as stored: what the rider sent, and what was captured after.
    struct Stored: Sendable, Equatable {
        var publicID: String
        var regionID: Int
        var report: GhostBusReport
        /// The route's short name, from the captured trip's references.
        var routeShortName: String?
        /// The trip's real-time status captured after the report (JSON).
        var tripSnapshot: String?
        var snapshotAttempts: Int
        /// Epoch milliseconds.
        var snapshotCapturedAt: EpochMillis?
        /// Epoch milliseconds.
        var createdAt: EpochMillis
    }

    /// Inserts unless this user already reported this trip on this service
    /// date in this region.
    /// - Parameter checkFirst: false skips the check, leaving the unique
    ///   index to catch a duplicate (how a race between two writers ends).
    func insert(_ report: GhostBusReport, regionID: Int, now: EpochMillis, checkFirst: Bool = true) async throws -> InsertOutcome {
        let stored = Stored(publicID: SecureToken.hex(bytes: 10), regionID: regionID, report: report, snapshotAttempts: 0, createdAt: now)
        do {
            return try await database.write { connection in
                if checkFirst,
                    try connection.queryOne(
                        """
                        SELECT 1 AS found FROM ghost_bus_reports
                        WHERE region_id = \(regionID) AND user_identifier = \(report.userIdentifier) AND trip_identifier = \(report.tripIdentifier)
                            AND service_date = \(report.serviceDate)
                        """) != nil
                {
                    return .duplicate
                }
                let fields = Self.fields(stored)
                try connection.execute("INSERT INTO ghost_bus_reports (\(fields.columns)) VALUES (\(fields.values))")
                return .created(publicID: stored.publicID)
            }
        } catch DatabaseError.constraintViolation(let message) where !message.contains("public_id") {
            // The dedupe key's unique index caught a concurrent duplicate
            // (the public id is random, so that is the only other cause).
            return .duplicateRace
        }
    }

    /// Stores the trip's real-time status captured after the report, and
    /// the route's short name it names (the console filters by either).
    func recordSnapshot(publicID: String, snapshot: String?, attempts: Int, nowMillis: EpochMillis, routeShortName: String? = nil) async throws {
        let capturedAt: EpochMillis? = snapshot == nil ? nil : nowMillis
        _ = try await database.write { connection in
            try connection.execute(
                """
                UPDATE ghost_bus_reports SET trip_snapshot = \(snapshot), snapshot_attempts = \(attempts), snapshot_captured_at = \(capturedAt),
                    route_short_name = COALESCE(\(routeShortName), route_short_name)
                WHERE public_id = \(publicID)
                """)
        }
    }

    /// Reports of a region, newest first: `route` matches the route's id or
    /// its short name (`44`), `trip` the trip's id, `serviceDay` the instant
    /// of the local midnight that names a service day.
    func reports(regionID: Int, route: String?, trip: String?, serviceDay: EpochSeconds?, limit: Int) async throws -> [Stored] {
        let route = route ?? "", trip = trip ?? ""
        let from = serviceDay.map { $0.millis.value } ?? -1, until = serviceDay.map { $0.adding(seconds: 86_400).millis.value } ?? -1
        return try await database.read { connection in
            try connection.query(
                """
                SELECT * FROM ghost_bus_reports WHERE region_id = \(regionID)
                    AND (\(route) = '' OR route_identifier = \(route) OR LOWER(route_short_name) = LOWER(\(route)))
                    AND (\(trip) = '' OR trip_identifier = \(trip))
                    AND (\(from) < 0 OR (service_date >= \(from) AND service_date < \(until)))
                ORDER BY id DESC LIMIT \(limit)
                """
            ).map(Self.stored)
        }
    }

    /// Reports per local day (days since the epoch in the region's zone)
    /// for the `days` days ending `today`.
    func dailyCounts(regionID: Int, utcOffset: Int64, today: Int64, days: Int64) async throws -> [(day: Int64, count: Int)] {
        let since = EpochSeconds((today - days + 1) * 86_400 - utcOffset).millis
        let rows = try await database.read { connection in
            try connection.query(
                """
                SELECT (created_at / 1000 + \(utcOffset)) / 86400 AS day, COUNT(*) AS n FROM ghost_bus_reports
                WHERE region_id = \(regionID) AND created_at >= \(since) GROUP BY 1
                """)
        }
        var byDay: [Int64: Int] = [:]
        for row in rows { byDay[try row.int("day")] = try row.count("n") }
        return (today - days + 1...today).map { (day: $0, count: byDay[$0] ?? 0) }
    }

    func report(publicID: String) async throws -> Stored? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM ghost_bus_reports WHERE public_id = \(publicID)").map(Self.stored)
        }
    }

    /// A report by its public id, with its row id.
    func identifiedReport(publicID: String) async throws -> (id: Int64, report: Stored)? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM ghost_bus_reports WHERE public_id = \(publicID)").map { (try $0.int("id"), try Self.stored($0)) }
        }
    }

    /// How many of a region's reports (made at or after `from`) name each
    /// trip on each service day, keyed `trip|service date (ms)`.
    func tripReportCounts(regionID: Int, from: EpochMillis?) async throws -> [String: Int] {
        let from = from ?? EpochMillis(.min)
        return try await database.read { connection in
            var counts: [String: Int] = [:]
            for row in try connection.query(
                """
                SELECT trip_identifier, service_date, COUNT(*) AS n FROM ghost_bus_reports WHERE region_id = \(regionID) AND created_at >= \(from)
                GROUP BY trip_identifier, service_date
                """)
            {
                counts["\(try row.string("trip_identifier"))|\(try row.int("service_date"))"] = try row.count("n")
            }
            return counts
        }
    }

    /// The filters of a list or an export: `route` matches the route's id
    /// or its short name, `trip` the trip's id; `from` and `to` bound when
    /// the report was made (epoch milliseconds, inclusive).
    struct Filter: Sendable, Equatable {
        var route: String? = nil
        var trip: String? = nil
        var from: EpochMillis? = nil
        var to: EpochMillis? = nil
    }

    /// A page of a region's reports in id order after `after`.
    func reports(regionID: Int, filter: Filter, after: Int64, limit: Int) async throws -> [(id: Int64, report: Stored)] {
        let route = filter.route ?? "", trip = filter.trip ?? ""
        let from = filter.from ?? EpochMillis(.min), to = filter.to ?? EpochMillis(.max)
        return try await database.read { connection in
            try connection.query(
                """
                SELECT * FROM ghost_bus_reports WHERE region_id = \(regionID) AND id > \(after)
                    AND (\(route) = '' OR route_identifier = \(route) OR LOWER(route_short_name) = LOWER(\(route)))
                    AND (\(trip) = '' OR trip_identifier = \(trip))
                    AND created_at >= \(from) AND created_at <= \(to)
                ORDER BY id LIMIT \(Int64(limit))
                """
            ).map { (try $0.int("id"), try Self.stored($0)) }
        }
    }

    static let exportColumns: [CSV.Column] = [
        .init("public_id", "Report"), .init("created_at", "Received", time: true), .init("user_identifier", "Rider (anonymous id)"),
        .init("trip_identifier", "Trip"), .init("service_date", "Service date", time: true), .init("route_identifier", "Route id"),
        .init("route_short_name", "Route"), .init("stop_identifier", "Stop"), .init("vehicle_identifier", "Vehicle"),
        .init("stop_sequence", "Stop sequence"), .init("predicted", "Real-time prediction"),
        .init("schedule_deviation_minutes", "Minutes off schedule"), .init("wait_duration_minutes", "Minutes waited"),
        .init("comment", "Comment"), .init("user_latitude", "Rider latitude"), .init("user_longitude", "Rider longitude"),
        .init("scheduled_arrival_at", "Scheduled arrival", time: true), .init("predicted_arrival_at", "Predicted arrival", time: true),
        .init("prediction_last_updated_at", "Prediction updated", time: true), .init("trip_snapshot", "Trip snapshot"),
    ]

    /// Rows read per query while exporting: memory stays flat however many
    /// reports a region has.
    static let exportPage = 1000

    /// The region's reports as CSV (spreadsheet-safe), oldest first, handed
    /// to `write` a page at a time: times in ISO 8601 in the region's zone,
    /// coordinates and counts as numbers; the header row named as `naming` says.
    func exportCSV(
        regionID: Int, zone: ZoneInfo, filter: Filter = Filter(), naming: CSV.HeaderNaming = .codes, write: (String) async throws -> Void
    ) async throws {
        // Riders send these: any Int64 must export without a trap.
        func seconds(_ millis: EpochMillis?) -> EpochSeconds? { millis?.seconds }
        try await write(CSV.header(Self.exportColumns, naming, zone: zone) + "\n")
        var after: Int64 = 0
        while true {
            let page = try await reports(regionID: regionID, filter: filter, after: after, limit: Self.exportPage)
            guard let last = page.last else { return }
            after = last.id
            var chunk = ""
            for (_, stored) in page {
                let report = stored.report
                chunk +=
                    CSV.row([
                        .text(stored.publicID), .instant(seconds(stored.createdAt), zone), .text(report.userIdentifier),
                        .text(report.tripIdentifier), .instant(seconds(report.serviceDate), zone), .text(report.routeIdentifier),
                        .text(stored.routeShortName), .text(report.stopIdentifier), .text(report.vehicleIdentifier),
                        .integer(report.stopSequence), .boolean(report.predicted), .integer(report.scheduleDeviationMinutes),
                        .integer(report.waitDurationMinutes), .text(report.comment), .number(report.userLatitude),
                        .number(report.userLongitude), .instant(seconds(report.scheduledArrivalAt), zone),
                        .instant(seconds(report.predictedArrivalAt), zone), .instant(seconds(report.predictionLastUpdatedAt), zone),
                        .text(stored.tripSnapshot),
                    ]) + "\n"
            }
            try await write(chunk)
        }
    }

    /// The whole export in memory (tests and small regions).
    func exportCSV(regionID: Int, zone: ZoneInfo) async throws -> String {
        var text = ""
        try await exportCSV(regionID: regionID, zone: zone) { text += $0 }
        return text
    }

    // MARK: For an export and an import

    /// Every report of a region, oldest first.
    static func all(_ connection: any SQLConnection, regionID: Int) throws -> [Stored] {
        try connection.query("SELECT * FROM ghost_bus_reports WHERE region_id = \(regionID) ORDER BY id").map(stored)
    }

    /// Stores a report as it was (an import) unless its public id or its
    /// dedupe key is taken; true when it was added.
    static func insertIfAbsent(_ connection: any SQLConnection, _ stored: Stored) throws -> Bool {
        let fields = fields(stored)
        return try connection.execute("INSERT INTO ghost_bus_reports (\(fields.columns)) VALUES (\(fields.values)) ON CONFLICT DO NOTHING") > 0
    }

    // MARK: Rows

    static func fields(_ stored: Stored) -> SQLFields {
        let report = stored.report
        var fields = SQLFields()
        fields.set("public_id", stored.publicID)
        fields.set("region_id", stored.regionID)
        fields.set("user_identifier", report.userIdentifier)
        fields.set("trip_identifier", report.tripIdentifier)
        fields.set("service_date", report.serviceDate)
        fields.set("route_identifier", report.routeIdentifier)
        fields.set("stop_identifier", report.stopIdentifier)
        fields.set("vehicle_identifier", report.vehicleIdentifier)
        fields.set("stop_sequence", report.stopSequence)
        fields.set("predicted", report.predicted)
        fields.set("schedule_deviation_minutes", report.scheduleDeviationMinutes)
        fields.set("wait_duration_minutes", report.waitDurationMinutes)
        fields.set("comment", report.comment)
        fields.set("user_latitude", report.userLatitude)
        fields.set("user_longitude", report.userLongitude)
        fields.set("scheduled_arrival_at", report.scheduledArrivalAt)
        fields.set("predicted_arrival_at", report.predictedArrivalAt)
        fields.set("prediction_last_updated_at", report.predictionLastUpdatedAt)
        fields.set("route_short_name", stored.routeShortName)
        fields.set("trip_snapshot", stored.tripSnapshot)
        fields.set("snapshot_attempts", stored.snapshotAttempts)
        fields.set("snapshot_captured_at", stored.snapshotCapturedAt)
        fields.set("created_at", stored.createdAt)
        return fields
    }

    static func stored(_ row: Row) throws -> Stored {
        let report = GhostBusReport(
            userIdentifier: try row.string("user_identifier"), tripIdentifier: try row.string("trip_identifier"),
            serviceDate: try row.millis("service_date"),
            routeIdentifier: try row.optionalString("route_identifier"), stopIdentifier: try row.optionalString("stop_identifier"),
            vehicleIdentifier: try row.optionalString("vehicle_identifier"), stopSequence: try row.optionalInt("stop_sequence"),
            predicted: try row.optionalBool("predicted"), scheduleDeviationMinutes: try row.optionalInt("schedule_deviation_minutes"),
            waitDurationMinutes: try row.int("wait_duration_minutes"), comment: try row.optionalString("comment"),
            userLatitude: try row.optionalDouble("user_latitude"), userLongitude: try row.optionalDouble("user_longitude"),
            scheduledArrivalAt: try row.optionalMillis("scheduled_arrival_at"), predictedArrivalAt: try row.optionalMillis("predicted_arrival_at"),
            predictionLastUpdatedAt: try row.optionalMillis("prediction_last_updated_at"))
        return Stored(
            publicID: try row.string("public_id"), regionID: try row.count("region_id"), report: report,
            routeShortName: try row.optionalString("route_short_name"), tripSnapshot: try row.optionalString("trip_snapshot"),
            snapshotAttempts: try row.count("snapshot_attempts"), snapshotCapturedAt: try row.optionalMillis("snapshot_captured_at"),
            createdAt: try row.millis("created_at"))
    }

}

extension GhostBusStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "GhostBusStore",
        [
            4: [
                .table(
                    "ghost_bus_reports", withID: true,
                    """
                    public_id TEXT NOT NULL UNIQUE,
                    region_id BIGINT NOT NULL,
                    user_identifier TEXT NOT NULL,
                    trip_identifier TEXT NOT NULL,
                    service_date BIGINT NOT NULL,
                    route_identifier TEXT,
                    stop_identifier TEXT,
                    vehicle_identifier TEXT,
                    stop_sequence BIGINT,
                    predicted BIGINT,
                    schedule_deviation_minutes BIGINT,
                    wait_duration_minutes BIGINT NOT NULL,
                    comment TEXT,
                    user_latitude DOUBLE PRECISION,
                    user_longitude DOUBLE PRECISION,
                    scheduled_arrival_at BIGINT,
                    predicted_arrival_at BIGINT,
                    prediction_last_updated_at BIGINT,
                    trip_snapshot TEXT,
                    snapshot_attempts BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL,
                    UNIQUE (region_id, user_identifier, trip_identifier, service_date)
                    """)
            ],
            13: [
                .same("ALTER TABLE ghost_bus_reports ADD COLUMN snapshot_captured_at BIGINT")
            ],
            21: [
                .same("ALTER TABLE ghost_bus_reports ADD COLUMN route_short_name TEXT")
            ],
            // Reports are paged and exported a region at a time in id order.
            23: [
                .same("CREATE INDEX ghost_bus_reports_region_id ON ghost_bus_reports (region_id, id)")
            ],
        ])
}
