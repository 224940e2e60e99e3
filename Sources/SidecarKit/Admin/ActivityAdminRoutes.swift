import Core
import HTTPServer

/// What riders have set up, read-only, for a region the key may see:
/// alarms and Live Activities (counts and lists) and push registrations
/// (counts by platform, locale and environment). Never a push token, a
/// `user_push_id` or an alarm's or activity's own token: those are the
/// riders' capabilities, not the agency's data.
struct ActivityAdminRoutes: Sendable {
    let admin: AdminAPI
    let alarms: AlarmStore
    let liveActivities: LiveActivityStore
    let registrations: PushRegistrationStore

    var routes: [Route] {
        let page = AdminConventions.paging
        return [
            admin.route("GET", "/regions/:region/alarms", on: .region, accepts: page) { request, key in await listAlarms(request, key) },
            admin.route("GET", "/regions/:region/live-activities", on: .region, accepts: page) { request, key in await listActivities(request, key) },
            admin.route("GET", "/regions/:region/activity", on: .region) { request, key in await counts(request, key) },
        ]
    }

    static func alarm(_ alarm: Alarm) -> JSONValue {
        .object([
            "id": .integer(alarm.id), "region_id": .integer(Int64(alarm.regionID)), "api_version": .integer(Int64(alarm.apiVersion.rawValue)),
            "platform": .string(alarm.operatingSystem.rawValue), "stop_id": alarm.stopID.map(JSONValue.string) ?? .null,
            "trip_id": alarm.tripID.map(JSONValue.string) ?? .null,
            "service_date": AdminJSON.time(alarm.serviceDate?.seconds),
            "vehicle_id": alarm.vehicleID.map(JSONValue.string) ?? .null,
            "stop_sequence": alarm.stopSequence.map { .integer(Int64($0)) } ?? .null, "seconds_before": .integer(Int64(alarm.secondsBefore)),
            "next_check_at": AdminJSON.time(alarm.nextCheckAt.seconds),
        ])
    }

    static func activity(_ activity: LiveActivity) -> JSONValue {
        .object([
            "id": .integer(activity.id), "region_id": .integer(Int64(activity.regionID)), "stop_id": .string(activity.stopID),
            "route_short_name": .string(activity.routeShortName), "trip_headsign": .string(activity.tripHeadsign),
            "environment": .string(activity.apnsSandbox ? "sandbox" : "production"), "expires_at": AdminJSON.time(activity.expiresAt),
            "last_pushed_at": AdminJSON.time(activity.lastPushedAt?.seconds),
        ])
    }

    func listAlarms(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "alarms:\(regionID)")
            let rows = try await alarms.alarms(regionID: regionID, after: page.after, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: Self.alarm)
        } catch { return admin.failure(error) }
    }

    func listActivities(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "live-activities:\(regionID)")
            let rows = try await liveActivities.activities(regionID: regionID, after: page.after, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: Self.activity)
        } catch { return admin.failure(error) }
    }

    /// Counts: alarms, Live Activities, and registrations by platform,
    /// locale (as the phones report it; none is `null`) and APNs environment.
    func counts(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            var platforms: [String: Int] = [:], environments: [String: Int] = [:], locales: [String: Int] = [:]
            var unknownLocale = 0, tests = 0, total = 0
            for row in try await registrations.breakdown(regionID: regionID) {
                total += row.count
                platforms[row.platform, default: 0] += row.count
                if row.platform == "ios" { environments[row.sandbox ? "sandbox" : "production", default: 0] += row.count }
                if let locale = row.locale { locales[locale, default: 0] += row.count } else { unknownLocale += row.count }
                if row.test { tests += row.count }
            }
            var byLocale = locales.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map {
                JSONValue.object(["locale": .string($0.key), "count": .integer(Int64($0.value))])
            }
            if unknownLocale > 0 { byLocale.append(.object(["locale": .null, "count": .integer(Int64(unknownLocale))])) }
            func counts(_ values: [String: Int]) -> JSONValue { .object(values.mapValues { .integer(Int64($0)) }) }
            return .json(
                200,
                JSONValue.object([
                    "region_id": .integer(Int64(regionID)),
                    "alarms": .integer(Int64(try await alarms.count(regionID: regionID))),
                    "live_activities": .integer(Int64(try await liveActivities.count(regionID: regionID))),
                    "push_registrations": .object([
                        "total": .integer(Int64(total)), "test_devices": .integer(Int64(tests)), "by_platform": counts(platforms),
                        "by_environment": counts(environments), "by_locale": .array(byLocale),
                    ]),
                ]))
        } catch { return admin.failure(error) }
    }
}

extension ActivityAdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            admin: AdminAPI(context), alarms: context.stores.alarms, liveActivities: context.stores.liveActivities,
            registrations: context.stores.pushRegistrations)
    }
}
