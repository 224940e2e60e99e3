import Crypto
import Core
import Database

/// Storage of ghost-bus reports (table `ghost_bus_reports`).
public struct GhostBusStore: Sendable {
    let database: any Database

    public init(database: any Database) { self.database = database }

    public enum InsertOutcome: Equatable, Sendable {
        case created(publicID: String)
        /// Caught by the check before inserting.
        case duplicate
        /// Caught by the unique index (a concurrent identical report won).
        case duplicateRace
    }

    /// Inserts unless this user already reported this trip on this service
    /// date in this region.
    /// - Parameter checkFirst: false skips the check, leaving the unique
    ///   index to catch a duplicate (how a race between two writers ends).
    public func insert(_ report: GhostBusReport, regionID: Int, now: Int64, checkFirst: Bool = true) async throws -> InsertOutcome {
        let publicID = SecureToken.hex(bytes: 10)
        do {
            return try await database.write { connection in
                if checkFirst, try connection.queryOne("""
                    SELECT 1 AS found FROM ghost_bus_reports
                    WHERE region_id = \(Int64(regionID)) AND user_identifier = \(report.userIdentifier) AND trip_identifier = \(report.tripIdentifier) AND service_date = \(report.serviceDate)
                    """) != nil {
                    return .duplicate
                }
                try connection.execute("""
                    INSERT INTO ghost_bus_reports (public_id, region_id, user_identifier, trip_identifier, service_date, route_identifier,
                        stop_identifier, vehicle_identifier, stop_sequence, predicted, schedule_deviation_minutes, wait_duration_minutes,
                        comment, user_latitude, user_longitude, scheduled_arrival_at, predicted_arrival_at, prediction_last_updated_at, created_at)
                    VALUES (\(publicID), \(Int64(regionID)), \(report.userIdentifier), \(report.tripIdentifier), \(report.serviceDate), \(report.routeIdentifier), \(report.stopIdentifier), \(report.vehicleIdentifier), \(report.stopSequence), \(report.predicted.map(SQLValue.init) ?? SQLValue.null), \(report.scheduleDeviationMinutes), \(report.waitDurationMinutes), \(report.comment), \(report.userLatitude), \(report.userLongitude), \(report.scheduledArrivalAt), \(report.predictedArrivalAt), \(report.predictionLastUpdatedAt), \(now))
                    """)
                return .created(publicID: publicID)
            }
        } catch DatabaseError.constraintViolation(let message) where !message.contains("public_id") {
            // The dedupe key's unique index caught a concurrent duplicate
            // (the public id is random, so that is the only other cause).
            return .duplicateRace
        }
    }

    /// Stores the trip's real-time status captured after the report, and
    /// the route's short name it names (the console filters by either).
    public func recordSnapshot(publicID: String, snapshot: String?, attempts: Int, nowMillis: Int64, routeShortName: String? = nil) async throws {
        _ = try await database.write { connection in
            try connection.execute("""
                UPDATE ghost_bus_reports SET trip_snapshot = \(snapshot), snapshot_attempts = \(Int64(attempts)), snapshot_captured_at = \(snapshot == nil ? SQLValue.null : .integer(nowMillis)),
                    route_short_name = COALESCE(\(routeShortName), route_short_name) WHERE public_id = \(publicID)
                """)
        }
    }

    /// Reports of a region, newest first: `route` matches the route's id or
    /// its short name (`44`), `trip` the trip's id, `serviceDay` the instant
    /// of the local midnight that names a service day.
    public func reports(regionID: Int, route: String?, trip: String?, serviceDay: Int64?, limit: Int) async throws -> [Row] {
        try await database.read { connection in
            try connection.query("""
                SELECT * FROM ghost_bus_reports WHERE region_id = \(Int64(regionID))
                    AND (\(route ?? "") = '' OR route_identifier = \(route ?? "") OR LOWER(route_short_name) = LOWER(\(route ?? "")))
                    AND (\(trip ?? "") = '' OR trip_identifier = \(trip ?? ""))
                    AND (\(serviceDay.map { $0 * 1000 } ?? -1) < 0 OR (service_date >= \(serviceDay.map { $0 * 1000 } ?? -1) AND service_date < \(serviceDay.map { ($0 + 86_400) * 1000 } ?? -1)))
                ORDER BY id DESC LIMIT \(Int64(limit))
                """)
        }
    }

    /// Reports per local day (days since the epoch in the region's zone)
    /// for the `days` days ending `today`.
    public func dailyCounts(regionID: Int, utcOffset: Int64, today: Int64, days: Int64) async throws -> [(day: Int64, count: Int)] {
        let rows = try await database.read { connection in
            try connection.query("""
                SELECT (created_at / 1000 + \(utcOffset)) / 86400 AS day, COUNT(*) AS n FROM ghost_bus_reports WHERE region_id = \(Int64(regionID)) AND created_at >= \(((today - days + 1) * 86_400 - utcOffset) * 1000) GROUP BY 1
                """)
        }
        var byDay: [Int64: Int] = [:]
        for row in rows { byDay[try row.optionalInt("day") ?? 0] = Int(try row.int("n")) }
        return (today - days + 1...today).map { (day: $0, count: byDay[$0] ?? 0) }
    }

    public func report(publicID: String) async throws -> Row? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM ghost_bus_reports WHERE public_id = \(publicID)")
        }
    }

    static let exportColumns = ["public_id", "created_at", "user_identifier", "trip_identifier", "service_date", "route_identifier",
                                "route_short_name", "stop_identifier", "vehicle_identifier", "stop_sequence", "predicted",
                                "schedule_deviation_minutes", "wait_duration_minutes", "comment", "user_latitude", "user_longitude",
                                "scheduled_arrival_at", "predicted_arrival_at", "prediction_last_updated_at", "trip_snapshot"]

    /// The region's reports as CSV (spreadsheet-safe), oldest first: times
    /// in ISO 8601 in the region's zone, coordinates and counts as numbers.
    public func exportCSV(regionID: Int, zone: ZoneInfo) async throws -> String {
        let rows = try await database.read { connection in
            try connection.query("SELECT * FROM ghost_bus_reports WHERE region_id = \(Int64(regionID)) ORDER BY id")
        }
        func seconds(_ row: Row, _ column: String) throws -> Int64? { try row.optionalInt(column).map { $0 >= 0 ? $0 / 1000 : ($0 - 999) / 1000 } }
        var lines = [CSV.line(Self.exportColumns)]
        for row in rows {
            lines.append(CSV.row([
                .text(try row.optionalString("public_id")), .instant(try seconds(row, "created_at"), zone), .text(try row.optionalString("user_identifier")),
                .text(try row.optionalString("trip_identifier")), .instant(try seconds(row, "service_date"), zone), .text(try row.optionalString("route_identifier")),
                .text(try row.optionalString("route_short_name")), .text(try row.optionalString("stop_identifier")), .text(try row.optionalString("vehicle_identifier")),
                .integer(try row.optionalInt("stop_sequence")), .boolean(try row.optionalInt("predicted").map { $0 != 0 }), .integer(try row.optionalInt("schedule_deviation_minutes")),
                .integer(try row.optionalInt("wait_duration_minutes")), .text(try row.optionalString("comment")), .number(try row.optionalDouble("user_latitude")),
                .number(try row.optionalDouble("user_longitude")), .instant(try seconds(row, "scheduled_arrival_at"), zone),
                .instant(try seconds(row, "predicted_arrival_at"), zone), .instant(try seconds(row, "prediction_last_updated_at"), zone),
                .text(try row.optionalString("trip_snapshot")),
            ]))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static let migrations = [
        Migration(version: 4, name: "create ghost_bus_reports", sql: """
            CREATE TABLE ghost_bus_reports (
                id INTEGER PRIMARY KEY,
                public_id TEXT NOT NULL UNIQUE,
                region_id INTEGER NOT NULL,
                user_identifier TEXT NOT NULL,
                trip_identifier TEXT NOT NULL,
                service_date INTEGER NOT NULL,
                route_identifier TEXT,
                stop_identifier TEXT,
                vehicle_identifier TEXT,
                stop_sequence INTEGER,
                predicted INTEGER,
                schedule_deviation_minutes INTEGER,
                wait_duration_minutes INTEGER NOT NULL,
                comment TEXT,
                user_latitude REAL,
                user_longitude REAL,
                scheduled_arrival_at INTEGER,
                predicted_arrival_at INTEGER,
                prediction_last_updated_at INTEGER,
                trip_snapshot TEXT,
                snapshot_attempts INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL,
                UNIQUE (region_id, user_identifier, trip_identifier, service_date)
            );
            """),
        Migration(version: 21, name: "ghost-bus reports keep the route's short name", sql: """
            ALTER TABLE ghost_bus_reports ADD COLUMN route_short_name TEXT
            """),
    ]
}
