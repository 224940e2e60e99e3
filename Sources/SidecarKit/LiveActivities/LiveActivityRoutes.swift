import Core
import HTTPServer
import Push

/// `POST /api/v2/regions/{id}/live_activities` and `DELETE .../{token}` (spec §6.1).
struct LiveActivityRoutes: Sendable {
    static let summary = "Unable to register live activity"

    let store: LiveActivityStore
    let regions: RegionDirectory
    let clock: any WallClock
    let logger: Logger
    let publicURL: PublicBaseURL
    let limits: RiderLimits
    let updater: LiveActivityUpdater
    let runsUpdater: Bool

    var routes: [Route] {
        [
            Route("POST", "/api/v2/regions/:region/live_activities", errorStyle: .messages, throttle: limits.liveActivities, handler: register),
            Route(
                "DELETE", "/api/v2/regions/:region/live_activities/:token", errorStyle: .messages, throttle: limits.liveActivities,
                parsesParameters: false, handler: unregister),
        ]
    }

    static func parse(_ parameters: Parameters) -> Result<LiveActivityStore.Registration, ValidationFailure> {
        var messages: [String] = []
        func required(_ name: String, _ label: String) -> String? {
            let value = parameters.identifier(name)?.presence
            if value == nil { messages.append("\(label) can't be blank") }
            return value
        }
        let activity = required("activity_id", "Activity")
        let push = required("push_token", "Push token")
        let stop = required("stop_id", "Stop")
        let route = required("route_short_name", "Route short name")
        let headsign = required("trip_headsign", "Trip headsign")
        messages += FieldLimits.check([
            ("Activity", activity, FieldLimits.identifier), ("Push token", push, FieldLimits.token), ("Stop", stop, FieldLimits.identifier),
            ("Route short name", route, FieldLimits.name), ("Trip headsign", headsign, FieldLimits.name),
            ("Trip", parameters.identifier("trip_id"), FieldLimits.identifier),
            ("Vehicle", parameters.identifier("vehicle_id"), FieldLimits.identifier),
        ])
        if push.map({ $0.count <= FieldLimits.token }) ?? false, let problem = PushToken.problem("Push token", push) { messages.append(problem) }
        guard messages.isEmpty, let activity, let push, let stop, let route, let headsign else { return .failure(ValidationFailure(messages)) }
        return .success(
            LiveActivityStore.Registration(
                activityID: activity, pushToken: push, stopID: stop, routeShortName: route, tripHeadsign: headsign,
                tripID: parameters.identifier("trip_id")?.presence, serviceDate: AlarmRequest.integer(parameters["service_date"]),
                vehicleID: parameters.identifier("vehicle_id")?.presence, stopSequence: AlarmRequest.integer(parameters["stop_sequence"]),
                // §2.7, re-read on every registration: a rotated token comes from the same build.
                apnsSandbox: ApnsSandbox.read(parameters["apns_sandbox"]) == .sandbox))
    }

    func register(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        let log = ("region", String(region.id))
        let registration: LiveActivityStore.Registration
        switch Self.parse(request.parameters) {
        case .failure(let failure):
            return ErrorStyle.messages.response(status: 422, error: Self.summary, messages: failure.messages).logging(log.0, log.1)
        case .success(let value):
            registration = value
        }
        for attempt in 1...2 {
            do {
                let token = try await store.register(
                    registration, regionID: region.id, nowSeconds: clock.nowSeconds,
                    maxPerPushToken: limits.maxLiveActivitiesPerPushToken)
                return Response.json(201, ["url": "\(publicURL.url)/api/v2/regions/\(region.id)/live_activities/\(token)"]).logging(log.0, log.1)
            } catch LiveActivityStoreError.tooManyForPushToken(let limit) {
                return ErrorStyle.messages.response(
                    status: 422, error: Self.summary,
                    messages: ["Push token already has \(limit) live activities"]
                ).logging(log.0, log.1)
            } catch  where attempt < 2 {
                // The concurrent first-registration race: retry once.
                continue
            } catch {
                logger.error("live activity registration failed", [log, ("error", "\(error)")])
                return Response.storageUnavailable(.messages, summary: Self.summary).logging(log.0, log.1)
            }
        }
        return Response.storageUnavailable(.messages, summary: Self.summary)
    }

    /// The client dismissed it: 204 or 404, and no end push.
    func unregister(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        do {
            let deleted = try await store.delete(regionID: region.id, token: request.pathParameters["token"] ?? "")
            return Response.empty(deleted ? 204 : 404).logging("region", String(region.id))
        } catch {
            logger.error("live activity delete failed", [("region", String(region.id)), ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: "Unable to end live activity")
        }
    }
}

extension LiveActivityRoutes: Feature {
    init(_ context: FeatureContext) {
        let clock = context.clock
        var onCycle: (@Sendable (LiveActivityUpdater.CycleReport, Double) -> Void)?
        if let metrics = context.metrics { onCycle = { report, seconds in metrics.observe(liveActivityCycle: report, seconds: seconds) } }
        self.init(
            store: context.stores.liveActivities, regions: context.regions, clock: context.clock, logger: context.logger,
            publicURL: context.publicURL, limits: context.limits,
            updater: LiveActivityUpdater(
                store: context.stores.liveActivities, regions: context.regions, oba: context.oba,
                transport: context.transport, clock: clock, logger: context.logger,
                intervalSeconds: context.configuration.liveActivityIntervalSeconds,
                stopCache: TimedCache(lifetimeSeconds: 55, now: { clock.now().timeIntervalSince1970 }), stop: context.stop,
                onCycle: onCycle),
            runsUpdater: context.configuration.runsLiveActivityUpdater)
    }

    /// The updater: every interval, each subscription's content state pushed.
    var jobs: [BackgroundJob] { runsUpdater ? [BackgroundJob(name: "live activity updater", run: updater.run)] : [] }
}
