import Database
import FoundationEssentials
import HTTPServer

/// `POST|DELETE /api/v2/regions/{regionId}/push_registrations` (spec §4).
struct PushRegistrationRoutes: Sendable {
    static let path = "/api/v2/regions/:region/push_registrations"
    static let summary = "Unable to register device"

    let store: PushRegistrationStore
    let regions: RegionDirectory
    let catalog: LocaleCatalog
    let clock: any WallClock
    let logger: Logger
    /// One bucket for both methods: the reference throttle matches the path
    /// alone, so opt-out DELETEs share the POST budget.
    let limiter: FixedWindowRateLimiter
    let pruner: PushRegistrationPruner

    var routes: [Route] {
        [
            Route("POST", Self.path, errorStyle: .messages, throttle: limiter, deferred: registerDeferred, handler: register),
            Route("DELETE", Self.path, errorStyle: .messages, throttle: limiter, handler: unregister),
        ]
    }

    /// A registration once everything that needs no storage is done: an
    /// answer already (unknown region, unusable fields), or the write to make.
    enum Registration {
        case answered(Response)
        case write(PushRegistrationRequest, Region)
    }

    func prepare(_ request: Request) -> Registration {
        guard let region = regions.resolve(request) else { return .answered(.regionNotFound) }
        switch PushRegistrationRequest.parse(request.parameters) {
        case .failure(let failure):
            return .answered(invalid(failure, region: region))
        case .success(let parsed):
            if parsed.apnsSandboxUnrecognized {
                let raw = String((request.parameters["apns_sandbox"] ?? "").prefix(32))
                logger.warning("unrecognized apns_sandbox value; routing to production", [("value", raw), ("region", String(region.id))])
            }
            return .write(parsed, region)
        }
    }

    /// The answer to a write: 204 once committed.
    func answer(_ error: (any Error)?, region: Region) -> Response {
        switch error {
        case nil: return Response.empty(204).logging("region", String(region.id))
        case let failure as ValidationFailure: return invalid(failure, region: region)
        case let error?:
            logger.error("push registration write failed", [("region", String(region.id)), ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: Self.summary).logging("region", String(region.id))
        }
    }

    /// Upsert keyed on (region, token); 204 once committed.
    func register(_ request: Request) async -> Response {
        switch prepare(request) {
        case .answered(let response): return response
        case .write(let parsed, let region):
            do {
                try await store.register(parsed, regionID: region.id, catalog: catalog, now: clock.now())
                return answer(nil, region: region)
            } catch { return answer(error, region: region) }
        }
    }

    /// `register` without a task, as the server calls it: the storage's
    /// writer answers the connection itself after the commit (SQLite's writer
    /// thread or a PostgreSQL worker).
    func registerDeferred(_ request: Request, _ respond: @escaping @Sendable (Response) -> Void) {
        switch prepare(request) {
        case .answered(let response): respond(response)
        case .write(let parsed, let region):
            store.submitRegister(parsed, regionID: region.id, catalog: catalog, now: clock.now()) { error in
                respond(answer(error, region: region))
            }
        }
    }

    /// Opt-out: 204 when a registration was deleted, 404 when there was none.
    func unregister(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        guard let token = request.parameters.identifier("token")?.presence else {
            return Response.empty(404).logging("region", String(region.id))
        }
        do {
            let deleted = try await store.delete(regionID: region.id, token: token)
            return Response.empty(deleted ? 204 : 404).logging("region", String(region.id))
        } catch {
            logger.error("push registration delete failed", [("region", String(region.id)), ("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: "Unable to unregister device").logging("region", String(region.id))
        }
    }

    private func invalid(_ failure: ValidationFailure, region: Region) -> Response {
        ErrorStyle.messages.response(status: 422, error: Self.summary, messages: failure.messages)
            .logging("region", String(region.id))
    }
}

extension PushRegistrationRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            store: context.stores.pushRegistrations, regions: context.regions, catalog: context.configuration.locales, clock: context.clock,
            logger: context.logger, limiter: context.limits.pushRegistrations,
            pruner: PushRegistrationPruner(
                store: context.stores.pushRegistrations, clock: context.clock, logger: context.logger, coordination: context.coordination,
                sharedCounters: context.coordination.map { _ in DatabaseWindowCounter(database: context.database) }, stop: context.stop))
    }

    /// The daily prune of registrations not seen for 180 days.
    var jobs: [BackgroundJob] { [BackgroundJob(name: "push registration pruner", run: pruner.run)] }
}
