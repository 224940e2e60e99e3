import Core
import Crypto
import HTTPServer
import OBA

/// `POST /api/v2/regions/{id}/ghost_bus_reports` (spec §8).
struct GhostBusRoutes: Sendable {
    static let summary = "Unable to save report"

    let store: GhostBusStore
    let regions: RegionDirectory
    let oba: OBAGateway
    let clock: any WallClock
    let logger: Logger
    /// 10 per hour per TCP peer.
    let peerLimiter: FixedWindowRateLimiter
    /// 20 per day per `user_identifier`.
    let userLimiter: FixedWindowRateLimiter
    /// OneBusAway lookups per client (`--upstream-lookup-limit`): each
    /// snapshot attempt is one, counted against the reporter's address.
    let lookups: FixedWindowRateLimiter
    /// Snapshot captures run as the server's background work, so a stop
    /// waits for them before the database closes.
    let work: BackgroundWork
    /// Seconds between snapshot attempts (tests shorten nothing: the clock is manual).
    var snapshotRetrySeconds: Double = 10

    var routes: [Route] {
        // Its own throttles: the body cap first, a message of its own, and
        // the per-rider limit counted only once a report validated.
        [
            Route(
                "POST", "/api/v2/regions/:region/ghost_bus_reports", errorStyle: .messages, access: .throttled(peerLimiter.name),
                prechecks: [{ request in capAndThrottle(request) }],
                middleware: [{ request, next in await sharedThrottles(request, next) }], handler: create)
        ]
    }

    /// The throttles again when their counts are shared between instances.
    func sharedThrottles(_ request: Request, _ next: Handler) async -> Response {
        guard peerLimiter.shared != nil else { return await next(request) }
        let limited = ErrorStyle.messages.response(status: 429, error: "Rate limit exceeded", messages: ["Too many reports; try again later"])
        if case .limited(let retryAfter) = await peerLimiter.check(request.clientKey) {
            return limited.adding(header: "Retry-After", String(retryAfter))
        }
        return await next(request)
    }

    /// The per-user throttle, counted only for a report that validated, and
    /// under a fixed-size digest of its identifier: refused requests never
    /// leave anything behind, whatever identifier they carried.
    func userThrottle(_ report: GhostBusReport) async -> Response? {
        let key = Base64URL.encode(SHA256.digest(Array(report.userIdentifier.utf8)))
        let decision = userLimiter.shared == nil ? userLimiter.hit(key) : await userLimiter.check(key)
        guard case .limited(let retryAfter) = decision else { return nil }
        return ErrorStyle.messages.response(status: 429, error: "Rate limit exceeded", messages: ["Too many reports; try again later"])
            .adding(header: "Retry-After", String(retryAfter))
    }

    /// The body cap and both throttles, on the server's thread.
    func capAndThrottle(_ request: Request) -> Response? {
        // Report bodies are small: a JSON body over the cap is refused unread.
        if GhostBusRules.jsonBodyTooLarge(request) {
            return ErrorStyle.messages.response(status: 403, error: "Forbidden", messages: ["Report bodies are limited to 8 KB"])
        }
        guard peerLimiter.shared == nil else { return nil }
        let limited = ErrorStyle.messages.response(status: 429, error: "Rate limit exceeded", messages: ["Too many reports; try again later"])
        if case .limited(let retryAfter) = peerLimiter.hit(request.clientKey) {
            return limited.adding(header: "Retry-After", String(retryAfter))
        }
        return nil
    }

    func create(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        let log = ("region", String(region.id))
        let report: GhostBusReport
        switch GhostBusRules.parse(request.parameters) {
        case .failure(let failure):
            return ErrorStyle.messages.response(status: 422, error: Self.summary, messages: failure.messages).logging(log.0, log.1)
        case .success(let value):
            report = value
        }
        if let limited = await userThrottle(report) { return limited.logging(log.0, log.1) }
        do {
            switch try await store.insert(report, regionID: region.id, now: clock.nowMillis) {
            case .duplicate:
                return ErrorStyle.messages.response(status: 422, error: "already_reported", messages: ["User identifier has already been taken"])
                    .logging(log.0, log.1)
            case .duplicateRace:
                return ErrorStyle.messages.response(status: 422, error: "already_reported", messages: ["User has already reported this trip"])
                    .logging(log.0, log.1)
            case .created(let publicID):
                let enrich = self
                // After the 201: the rider never waits on the OBA server.
                let client = request.clientKey
                work.run { await enrich.captureSnapshot(publicID: publicID, report: report, region: region, client: client) }
                return Response.json(201, ["id": publicID]).logging(log.0, log.1)
            }
        } catch {
            logger.error("ghost bus report write failed", [log, ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: Self.summary).logging(log.0, log.1)
        }
    }

    /// Captures the trip's real-time status, up to 3 attempts, each a
    /// lookup counted against the reporting client's budget: beyond it the
    /// report stays stored without its snapshot, and the OneBusAway server
    /// is not asked.
    func captureSnapshot(publicID: String, report: GhostBusReport, region: Region, client: String) async {
        var snapshot: String?
        var shortName: String?
        var attempts = 0
        while attempts < 3 && snapshot == nil && !work.stop.isStopping {
            if case .limited = await lookups.check(client) {
                logger.debug("ghost-bus report stored without a trip snapshot: the client's lookup budget is spent", [("region", String(region.id))])
                break
            }
            attempts += 1
            do {
                let response = try await oba.tripDetails(region: region, tripID: report.tripIdentifier, serviceDate: report.serviceDate)
                snapshot = String(decoding: response.entry.encoded(), as: UTF8.self)
                shortName = report.routeIdentifier.flatMap { response.references?.route(id: $0)?.shortName }
            } catch .notFound {
                break
            } catch {
                if attempts < 3 { try? await clock.sleep(seconds: snapshotRetrySeconds * Double(attempts)) }
            }
        }
        try? await store.recordSnapshot(
            publicID: publicID, snapshot: snapshot, attempts: attempts, nowMillis: clock.nowMillis,
            routeShortName: shortName)
    }
}

extension GhostBusRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            store: context.stores.ghostBus, regions: context.regions, oba: context.oba, clock: context.clock, logger: context.logger,
            peerLimiter: context.limits.ghostBusPeers, userLimiter: context.limits.ghostBusUsers, lookups: context.limits.upstreamLookups,
            work: context.work)
    }
}
