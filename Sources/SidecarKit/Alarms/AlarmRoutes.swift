import Crypto
import Database
import HTTPServer
import OBA

/// `POST /api/v{1,2}/regions/{id}/alarms` and `DELETE .../alarms/{token}` (spec §5.1, §5.2, §5.5).
struct AlarmRoutes: Sendable {
    static let summary = "Unable to register alarm"

    let store: AlarmStore
    let pushRegistrations: PushRegistrationStore
    let regions: RegionDirectory
    let oba: OBAGateway
    let clock: any WallClock
    let logger: Logger
    /// `--public-url`, without a trailing slash.
    let publicURL: PublicBaseURL
    let limits: RiderLimits
    let checker: AlarmChecker
    /// `--no-alarm-checker` style switches (tests drive cycles by hand).
    let runsChecker: Bool

    var routes: [Route] {
        // One budget for both versions and both methods.
        AlarmAPIVersion.allCases.flatMap { version in
            [
                Route("POST", "/api/v\(version.rawValue)/regions/:region/alarms", errorStyle: .messages, throttle: limits.alarms) { request in
                    await create(request, version: version)
                },
                Route(
                    "DELETE", "/api/v\(version.rawValue)/regions/:region/alarms/:token", errorStyle: .messages, throttle: limits.alarms,
                    parsesParameters: false
                ) { request in
                    await delete(request)
                },
            ]
        }
    }

    func url(_ alarm: (version: AlarmAPIVersion, regionID: Int, token: String)) -> String {
        "\(publicURL.url)/api/v\(alarm.version.rawValue)/regions/\(alarm.regionID)/alarms/\(alarm.token)"
    }

    func create(_ request: Request, version: AlarmAPIVersion) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        let log = ("region", String(region.id))
        var alarm: AlarmRequest
        switch AlarmRequest.parse(request.parameters, version: version) {
        case .failure(let failure):
            return ErrorStyle.messages.response(status: 422, error: Self.summary, messages: failure.messages).logging(log.0, log.1)
        case .success(let value):
            alarm = value
        }
        if version == .v1, let missing = AlarmRules.missingTripIdentity(alarm) {
            // Nothing to look up: say what is missing rather than blame the
            // OneBusAway server, which is not asked.
            return ErrorStyle.messages.response(status: 422, error: Self.summary, messages: missing).logging(log.0, log.1)
        }
        do {
            // §5.1: v1 re-POSTs of the same alarm return the existing URL unchanged.
            if version == .v1, let existing = try await findV1(alarm, region: region) {
                return Response.json(201, ["url": url((.v1, region.id, existing.token))]).logging(log.0, log.1)
            }
            // The lookup below costs the agency's OneBusAway server a request.
            if case .limited(let retryAfter) = await limits.upstreamLookups.check(request.clientKey) {
                return RiderLimits.tooMany(.messages, retryAfter: retryAfter, what: "lookups").logging(log.0, log.1)
            }
            let composed = await composeMessage(alarm, region: region)
            // The push names the visit's stop sequence, which the iOS app's
            // decoder requires: take it from the arrival when not sent.
            if alarm.stopSequence == nil { alarm.stopSequence = composed.stopSequence }
            if version == .v1, composed.estimate == nil, composed.failure != nil {
                return ErrorStyle.messages.response(
                    status: 502, error: Self.summary,
                    messages: ["The arrival could not be looked up on the OneBusAway server"]
                )
                .logging(log.0, log.1)
            }
            let now = clock.nowMillis
            var token = SecureToken.urlSafe()
            for attempt in 1...3 {
                do {
                    try await store.insert(
                        AlarmStore.NewAlarm(
                            token: token, regionID: region.id, apiVersion: version, request: alarm,
                            message: composed.message, departureEstimate: composed.estimate, nowMillis: now),
                        maxPerDevice: limits.maxAlarmsPerDevice)
                    break
                } catch AlarmStoreError.tooManyPending(let limit) {
                    return ErrorStyle.messages.response(
                        status: 422, error: Self.summary,
                        messages: ["This device already has \(limit) alarms waiting"]
                    ).logging(log.0, log.1)
                } catch AlarmStoreError.duplicate where attempt < 3 {
                    // A concurrent identical v1 POST won: answer with its URL.
                    if version == .v1, let existing = try await findV1(alarm, region: region) {
                        return Response.json(201, ["url": url((.v1, region.id, existing.token))]).logging(log.0, log.1)
                    }
                    token = SecureToken.urlSafe()
                }
            }
            if version == .v2, await limits.pushRegistrations.check(request.clientKey) == .allowed {
                // §5.2 side effect: the device joins the alert audience and its
                // retention clock restarts (no locale, no apns_sandbox). It
                // draws on the push-registration budget, so alarms cannot be
                // used to register devices faster than that route allows; over
                // budget, the alarm is still created.
                do {
                    try await pushRegistrations.touch(
                        regionID: region.id, token: alarm.userPushID,
                        operatingSystem: alarm.operatingSystem, now: clock.now())
                } catch {
                    logger.error("push registration refresh after alarm creation failed", [log, ("error", "\(error)")])
                }
            }
            return Response.json(201, ["url": url((version, region.id, token))]).logging(log.0, log.1)
        } catch {
            logger.error("alarm creation failed", [log, ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: Self.summary).logging(log.0, log.1)
        }
    }

    private func findV1(_ alarm: AlarmRequest, region: Region) async throws -> Alarm? {
        try await store.findV1(
            regionID: region.id, userPushID: alarm.userPushID, tripID: alarm.tripID,
            stopID: alarm.stopID, serviceDate: alarm.serviceDate)
    }

    /// §5.2: the message is composed now, from an arrival lookup.
    private func composeMessage(_ alarm: AlarmRequest, region: Region)
        async -> (message: String, estimate: EpochMillis?, failure: OBAError?, stopSequence: Int?)
    {
        guard let stopID = alarm.stopID, let tripID = alarm.tripID, let serviceDate = alarm.serviceDate else {
            return (AlarmRules.genericMessage(secondsBefore: alarm.secondsBefore), nil, .notFound, nil)
        }
        do {
            let response = try await oba.arrivalAndDeparture(
                region: region, stopID: stopID, tripID: tripID, serviceDate: serviceDate,
                vehicleID: alarm.vehicleID, stopSequence: alarm.stopSequence)
            return (
                AlarmRules.message(for: response.entry, references: response.references, secondsBefore: alarm.secondsBefore),
                response.entry.effectiveDepartureTime, nil, response.entry.stopSequence
            )
        } catch {
            logger.info("alarm arrival lookup failed at creation", [("region", String(region.id)), ("reason", "\(error)")])
            return (AlarmRules.genericMessage(secondsBefore: alarm.secondsBefore), nil, error, nil)
        }
    }

    /// §5.5: 204 only once the row is gone, 404 when unknown, 5xx on failure.
    func delete(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        let token = request.pathParameters["token"] ?? ""
        do {
            let deleted = try await store.delete(regionID: region.id, token: token)
            return Response.empty(deleted ? 204 : 404).logging("region", String(region.id))
        } catch {
            logger.error("alarm delete failed", [("region", String(region.id)), ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: "Unable to cancel alarm").logging("region", String(region.id))
        }
    }
}

extension AlarmRoutes: Feature {
    init(_ context: FeatureContext) {
        var onCycle: (@Sendable (AlarmChecker.CycleReport, Double) -> Void)?
        if let metrics = context.metrics { onCycle = { report, seconds in metrics.observe(alarmCycle: report, seconds: seconds) } }
        self.init(
            store: context.stores.alarms, pushRegistrations: context.stores.pushRegistrations, regions: context.regions, oba: context.oba,
            clock: context.clock, logger: context.logger, publicURL: context.publicURL, limits: context.limits,
            checker: AlarmChecker(
                store: context.stores.alarms, regions: context.regions, oba: context.oba, transport: context.transport,
                pushRegistrations: context.stores.pushRegistrations, clock: context.clock, logger: context.logger,
                intervalSeconds: context.configuration.alarmCheckIntervalSeconds, stop: context.stop,
                onCycle: onCycle),
            runsChecker: context.configuration.runsAlarmChecker)
    }

    /// The alarm checker: every interval, the due alarms against OneBusAway.
    var jobs: [BackgroundJob] { runsChecker ? [BackgroundJob(name: "alarm checker", run: checker.run)] : [] }
}
