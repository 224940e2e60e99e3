import Core
import HTTPServer

/// Alarms and registration counts in the Go reference's admin contract,
/// read-only: `GET /regions/{regionId}/alarms[/{id}]` and
/// `GET /regions/{regionId}/push_registrations/count`. Never a push token,
/// a `user_push_id` or an alarm's own token.
struct AlarmReferenceRoutes: Sendable {
    let api: ReferenceAdminAPI
    let alarms: AlarmStore
    let registrations: PushRegistrationStore

    /// The most alarms one list answers (the reference returns them all;
    /// past this the answer says `X-Sidecar-Truncated: true`).
    static let listLimit = 10_000

    var routes: [Route] {
        [
            api.route("GET", "/regions/:regionId/alarms", .operatorOrKey) { call in await list(call) },
            api.route("GET", "/regions/:regionId/alarms/:alarmId", .operatorOrKey) { call in await show(call) },
            api.route("GET", "/regions/:regionId/push_registrations/count", .operatorOrKey) { call in await count(call) },
        ]
    }

    static func json(_ alarm: Alarm) -> ReferenceJSON {
        .object([
            ("id", .integer(alarm.id)), ("api_version", .integer(alarm.apiVersion.rawValue)),
            ("operating_system", .string(alarm.operatingSystem.rawValue)), ("stop_id", .string(alarm.stopID ?? "")),
            ("trip_id", .string(alarm.tripID ?? "")), ("service_date", .integer(alarm.serviceDate?.value ?? 0)),
            ("vehicle_id", .string(alarm.vehicleID ?? "")), ("stop_sequence", alarm.stopSequence.map { .integer($0) } ?? .null),
            ("seconds_before", .integer(alarm.secondsBefore)), ("message", .string(alarm.message)),
            ("failure_count", .integer(alarm.failureCount)), ("created_at", .time(alarm.createdAt.seconds)),
        ])
    }

    /// `{"total", "ios", "android"}`, as the count and a push's audience write them.
    static func json(_ counts: PushRegistrationStore.PlatformCounts) -> ReferenceJSON {
        .object([("total", .integer(counts.total)), ("ios", .integer(counts.ios)), ("android", .integer(counts.android))])
    }

    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let rows = try await alarms.alarms(regionID: call.regionID, after: 0, limit: Self.listLimit + 1)
            return ReferenceAdminAPI.list(rows, limit: Self.listLimit) { $0.map(Self.json) }
        } catch { return api.failure(error, notFound: "alarm") }
    }

    func show(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let id = try call.pathID("alarmId", named: "id")
            guard id > 0, let alarm = try await alarms.alarms(regionID: call.regionID, after: id - 1, limit: 1).first, alarm.id == id else {
                return ReferenceAdminAPI.error(404, "alarm not found")
            }
            return ReferenceAdminAPI.json(200, Self.json(alarm))
        } catch { return api.failure(error, notFound: "alarm") }
    }

    /// `{"total","ios","android","test":{…}}`: every registration of the region, and those marked as test devices.
    func count(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let counts = try await registrations.platformCounts(regionID: call.regionID)
            let all = counts.all
            return ReferenceAdminAPI.json(
                200,
                .object([
                    ("total", .integer(all.total)), ("ios", .integer(all.ios)), ("android", .integer(all.android)), ("test", Self.json(counts.test)),
                ]))
        } catch { return api.failure(error, notFound: "region") }
    }
}

extension AlarmReferenceRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) {
        self.init(api: api, alarms: context.stores.alarms, registrations: context.stores.pushRegistrations)
    }
}

extension AlarmReferenceRoutes: Feature {}
