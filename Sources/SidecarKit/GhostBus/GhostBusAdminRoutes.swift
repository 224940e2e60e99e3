import Core
import HTTPServer

/// Ghost-bus reports in the admin API: a paged list and a streamed CSV of
/// a region's reports, filtered by route, trip and when they were made.
struct GhostBusAdminRoutes: Sendable {
    let admin: AdminAPI
    let store: GhostBusStore
    let zone: @Sendable (Int) async -> ZoneInfo

    static let filters: [String: AdminField] = ["route": .text, "trip": .text, "from": .text, "to": .text]

    var routes: [Route] {
        [
            admin.route(
                "GET", "/regions/:region/ghost-bus-reports", on: .region, accepts: AdminConventions.paging.merging(Self.filters) { first, _ in first }
            ) {
                request, key in await list(request, key)
            },
            admin.route("GET", "/regions/:region/ghost-bus-reports.csv", on: .region, accepts: Self.filters) { request, key in
                await export(request, key)
            },
        ]
    }

    func filter(_ request: Request) throws(AdministrationError) -> GhostBusStore.Filter {
        let range = try AdminConventions.timeRange(request)
        return GhostBusStore.Filter(
            route: request.parameters["route"]?.presence, trip: request.parameters["trip"]?.presence,
            from: range.from?.millis, to: range.to?.millis.adding(millis: 999))
    }

    static func json(_ stored: GhostBusStore.Stored) -> JSONValue {
        let report = stored.report
        func millis(_ value: EpochMillis?) -> JSONValue { AdminJSON.time(value?.seconds) }
        return .object([
            "id": .string(stored.publicID), "region_id": .integer(Int64(stored.regionID)), "created_at": millis(stored.createdAt),
            "user_identifier": .string(report.userIdentifier), "trip_identifier": .string(report.tripIdentifier),
            "service_date": millis(report.serviceDate), "route_identifier": report.routeIdentifier.map(JSONValue.string) ?? .null,
            "route_short_name": stored.routeShortName.map(JSONValue.string) ?? .null,
            "stop_identifier": report.stopIdentifier.map(JSONValue.string) ?? .null,
            "vehicle_identifier": report.vehicleIdentifier.map(JSONValue.string) ?? .null,
            "stop_sequence": report.stopSequence.map(JSONValue.integer) ?? .null, "predicted": report.predicted.map(JSONValue.bool) ?? .null,
            "schedule_deviation_minutes": report.scheduleDeviationMinutes.map(JSONValue.integer) ?? .null,
            "wait_duration_minutes": .integer(report.waitDurationMinutes), "comment": report.comment.map(JSONValue.string) ?? .null,
            "user_latitude": report.userLatitude.map(JSONValue.double) ?? .null,
            "user_longitude": report.userLongitude.map(JSONValue.double) ?? .null,
            "scheduled_arrival_at": millis(report.scheduledArrivalAt), "predicted_arrival_at": millis(report.predictedArrivalAt),
            "prediction_last_updated_at": millis(report.predictionLastUpdatedAt),
            "trip_snapshot_captured": .bool(stored.tripSnapshot != nil),
        ])
    }

    func list(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let filter = try filter(request)
            let page = try await admin.page(request, list: "ghost-bus:\(regionID)")
            let rows = try await store.reports(regionID: regionID, filter: filter, after: page.after, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: { Self.json($0.report) })
        } catch { return admin.failure(error) }
    }

    /// Streamed a page of rows at a time, as the console's download is.
    func export(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let filter = try filter(request)
            let zone = await zone(regionID)
            let store = store
            return CSVDownload.response(filename: "ghost-bus-region-\(regionID).csv") { write in
                try await store.exportCSV(regionID: regionID, zone: zone, filter: filter, write: write)
            }
        } catch { return admin.failure(error) }
    }
}

extension GhostBusAdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(admin: AdminAPI(context), store: context.stores.ghostBus, zone: { [context] in await context.zone(regionID: $0) })
    }
}
