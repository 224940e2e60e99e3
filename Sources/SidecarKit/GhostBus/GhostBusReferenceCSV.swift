import Core
import FoundationEssentials

/// A region's ghost-bus reports as the Go reference's CSV lays them out
/// (30 columns, one row per report, by id). What it derives from its own
/// snapshot is read from Sidecar's (OneBusAway's trip details): the
/// vehicle's last position and the trip's phase; the headsign, the stop's
/// name and the vehicle's distance from the stop, which OneBusAway's trip
/// details do not carry, are blank. Cells are spreadsheet-safe (`CSV`), quoted
/// only where needed as the reference's.
enum GhostBusReferenceCSV {
    static let columns = [
        "public_identifier", "reported_at_utc", "reported_at_local", "service_date", "route_id", "route_short_name", "headsign", "trip_id",
        "trip_report_count", "stop_id", "stop_name", "stop_sequence", "vehicle_id", "predicted", "wait_duration_minutes", "comment",
        "scheduled_arrival_utc", "predicted_arrival_utc", "schedule_deviation_minutes", "prediction_last_updated_utc",
        "prediction_staleness_minutes", "user_latitude", "user_longitude", "snapshot_status", "snapshot_captured_at_utc", "vehicle_last_lat",
        "vehicle_last_lon", "vehicle_distance_from_stop_m", "snapshot_trip_phase", "snapshot_json",
    ]

    /// Rows read per query: memory stays flat however many reports there are.
    static let page = 1000

    /// The vehicle's last known position, else its position, and the trip's phase, from a snapshot.
    static func vehicle(_ snapshot: String?) -> (latitude: Double?, longitude: Double?, phase: String?) {
        guard let snapshot, case .object(let entry)? = try? JSONValue(parsing: snapshot.utf8),
            case .object(let status)? = entry["status"]
        else { return (nil, nil, nil) }
        func number(_ value: JSONValue?) -> Double? {
            switch value {
            case .double(let number)?: number
            case .integer(let number)?: Double(number)
            default: nil
            }
        }
        var position: (Double?, Double?) = (nil, nil)
        for key in ["lastKnownLocation", "position"] {
            if case .object(let point)? = status[key], let lat = number(point["lat"]), let lon = number(point["lon"]) {
                position = (lat, lon)
                break
            }
        }
        let phase: String? = if case .string(let text)? = status["phase"], !text.isEmpty { text } else { nil }
        return (position.0, position.1, phase)
    }

    static func row(_ stored: GhostBusStore.Stored, tripCount: Int, zone: ZoneInfo, now: EpochMillis) -> String {
        let report = stored.report
        func utc(_ millis: EpochMillis?) -> CSV.Value { .text(millis.map { RegionTime.iso8601($0.seconds, .utc) }) }
        let staleness: Int64? = {
            guard let scheduled = report.scheduledArrivalAt, let updated = report.predictionLastUpdatedAt else { return nil }
            return Int64((Double(scheduled.value - updated.value) / 60_000).rounded())
        }()
        let vehicle = vehicle(stored.tripSnapshot)
        let values: [CSV.Value] = [
            .text(stored.publicID), utc(stored.createdAt), .text(RegionTime.iso8601(stored.createdAt.seconds, zone)),
            .text(String(RegionTime.iso8601(report.serviceDate.seconds, zone).prefix(10))), .text(report.routeIdentifier),
            .text(stored.routeShortName), .text(nil), .text(report.tripIdentifier), .integer(Int64(tripCount)), .text(report.stopIdentifier),
            .text(nil), .integer(report.stopSequence), .text(report.vehicleIdentifier), .boolean(report.predicted),
            .integer(report.waitDurationMinutes), .text(report.comment), utc(report.scheduledArrivalAt), utc(report.predictedArrivalAt),
            .integer(report.scheduleDeviationMinutes), utc(report.predictionLastUpdatedAt), .integer(staleness), .number(report.userLatitude),
            .number(report.userLongitude), .text(GhostBusReferenceRoutes.snapshotStatus(stored, now: now)), utc(stored.snapshotCapturedAt),
            .number(vehicle.latitude), .number(vehicle.longitude), .number(nil), .text(vehicle.phase), .text(stored.tripSnapshot),
        ]
        return CSV.row(values, quoting: .whereNeeded) + "\n"
    }

    /// The whole download, handed to `write` a page at a time.
    static func write(
        regionID: Int, from: EpochMillis?, store: GhostBusStore, zone: ZoneInfo, now: EpochMillis, _ write: (String) async throws -> Void
    ) async throws {
        try await write(CSV.line(columns, quoting: .whereNeeded) + "\n")
        let counts = try await store.tripReportCounts(regionID: regionID, from: from)
        var after: Int64 = 0
        while true {
            let batch = try await store.reports(regionID: regionID, filter: GhostBusStore.Filter(from: from), after: after, limit: page)
            guard let last = batch.last else { return }
            after = last.id
            try await write(
                batch.map { entry in
                    let key = "\(entry.report.report.tripIdentifier)|\(entry.report.report.serviceDate.value)"
                    return row(entry.report, tripCount: counts[key] ?? 1, zone: zone, now: now)
                }.joined())
        }
    }
}
