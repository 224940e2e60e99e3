import Core
import FoundationEssentials
import HTTPServer

/// Ghost-bus reports in the Go reference's admin contract, read-only:
/// `GET /regions/{regionId}/ghost_bus_reports[?since=…]` and
/// `GET …/ghost_bus_reports/{publicId}`, in the reference's shape, from
/// the same store as `/admin/api` and the console.
struct GhostBusReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let store: GhostBusStore
    let zone: @Sendable (Int) async -> ZoneInfo

    /// The most reports one list answers (the reference returns them all).
    static let listLimit = 10_000
    /// How long a report without its trip snapshot is still being looked up.
    static let snapshotWindowMillis: Int64 = 60_000

    var routes: [Route] {
        [
            api.route("GET", "/regions/:regionId/ghost_bus_reports", .operatorOrKey) { call in await list(call) },
            api.route("GET", "/regions/:regionId/ghost_bus_reports.csv", .operatorOrKey) { call in await csv(call) },
            api.route("GET", "/regions/:regionId/ghost_bus_reports/:publicId", .operatorOrKey) { call in await show(call) },
        ]
    }

    /// `captured` with a trip snapshot; `pending` while it is still being
    /// looked up (a minute, at most three attempts); else `unavailable`.
    static func snapshotStatus(_ stored: GhostBusStore.Stored, now: EpochMillis) -> String {
        if stored.tripSnapshot != nil { return "captured" }
        return stored.snapshotAttempts < 3 && now.value - stored.createdAt.value < snapshotWindowMillis ? "pending" : "unavailable"
    }

    static func json(_ id: Int64, _ stored: GhostBusStore.Stored, now: EpochMillis) -> ReferenceJSON {
        let report = stored.report
        func millis(_ value: EpochMillis?) -> ReferenceJSON { value.map { .integer($0.value) } ?? .null }
        func number(_ value: Double?) -> ReferenceJSON { value.map { .value(.double($0)) } ?? .null }
        let snapshot = stored.tripSnapshot.flatMap { try? JSONValue(parsing: $0.utf8) }
        return .object([
            ("id", .integer(id)), ("region_id", .integer(stored.regionID)), ("public_identifier", .string(stored.publicID)),
            ("user_identifier", .string(report.userIdentifier)), ("trip_identifier", .string(report.tripIdentifier)),
            ("service_date", .integer(report.serviceDate.value)), ("route_identifier", .string(report.routeIdentifier ?? "")),
            ("stop_identifier", .string(report.stopIdentifier ?? "")), ("vehicle_identifier", .string(report.vehicleIdentifier ?? "")),
            ("stop_sequence", report.stopSequence.map { .integer($0) } ?? .null), ("predicted", report.predicted.map { .bool($0) } ?? .null),
            ("schedule_deviation_minutes", report.scheduleDeviationMinutes.map { .integer($0) } ?? .null),
            ("wait_duration_minutes", .integer(report.waitDurationMinutes)), ("comment", .string(report.comment ?? "")),
            ("user_latitude", number(report.userLatitude)), ("user_longitude", number(report.userLongitude)),
            ("scheduled_arrival_at", millis(report.scheduledArrivalAt)), ("predicted_arrival_at", millis(report.predictedArrivalAt)),
            ("prediction_last_updated_at", millis(report.predictionLastUpdatedAt)), ("snapshot_status", .string(snapshotStatus(stored, now: now))),
            ("snapshot_json", snapshot.map { .value($0) } ?? .null), ("snapshot_captured_at", .time(stored.snapshotCapturedAt?.seconds)),
            ("snapshot_attempts", .integer(stored.snapshotAttempts)), ("created_at", .time(stored.createdAt.seconds)),
        ])
    }

    /// The `since` query parameter: RFC 3339 with an offset, else 400.
    static func since(_ request: Request) throws(ReferenceFailure) -> EpochMillis? {
        let query = (try? Parameters.parseURLEncoded(Array(request.rawQuery.utf8), limit: 100)) ?? []
        guard let since = query.last(where: { $0.0 == "since" })?.1 else { return nil }
        guard let seconds = AlertInputRules.parseTime(since) else {
            throw .badRequest("since must be RFC 3339 with an explicit UTC offset: cannot parse \"\(since)\"")
        }
        return seconds.millis
    }

    /// Streamed a page of rows at a time, times local to the region's zone.
    func csv(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let from = try Self.since(call.request)
            let zone = await zone(call.regionID), store = store, now = api.clock.nowMillis, regionID = call.regionID
            return CSVDownload.response(filename: "ghost-bus-reports-\(regionID).csv") { write in
                try await GhostBusReferenceCSV.write(regionID: regionID, from: from, store: store, zone: zone, now: now, write)
            }
        } catch { return api.failure(error, notFound: "ghost bus report") }
    }

    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let filter = GhostBusStore.Filter(from: try Self.since(call.request))
            let rows = try await store.reports(regionID: call.regionID, filter: filter, after: 0, limit: Self.listLimit + 1)
            let now = api.clock.nowMillis
            return ReferenceAdminAPI.list(rows, limit: Self.listLimit) { $0.map { Self.json($0.id, $0.report, now: now) } }
        } catch { return api.failure(error, notFound: "ghost bus report") }
    }

    func show(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            guard let found = try await store.identifiedReport(publicID: call.request.pathParameters["publicId"] ?? ""),
                found.report.regionID == call.regionID
            else { return ReferenceAdminAPI.error(404, "ghost bus report not found") }
            return ReferenceAdminAPI.json(200, Self.json(found.id, found.report, now: api.clock.nowMillis))
        } catch { return api.failure(error, notFound: "ghost bus report") }
    }
}

extension GhostBusReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) {
        self.init(api: api, store: context.stores.ghostBus, zone: { [context] in await context.zone(regionID: $0) })
    }
}

extension GhostBusReferenceRoutes: Feature {}
