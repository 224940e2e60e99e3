import Core
import HTTPServer
import OBA

/// One search result (spec §10).
struct VehicleMatch: Codable, Sendable, Equatable {
    var id: String
    var name: String
    var vehicle_id: String
}

/// Spec §10 rules.
enum VehicleSearchRules {
    static let maxResults = 250

    /// The query as matched: trimmed and lower-cased; nil when shorter than
    /// 3 or longer than 64 characters (no upstream call then).
    static func normalizedQuery(_ raw: String?) -> String? {
        guard let trimmed = raw?.trimmingWhitespace(), (3...64).contains(trimmed.count) else { return nil }
        return trimmed.lowercased()
    }

    /// Substring match of the lower-cased query against the raw vehicle
    /// ids, as the reference does (an upper-case fleet id never matches).
    static func search(_ query: String, in fleet: [VehicleMatch]) -> [VehicleMatch] {
        Array(fleet.lazy.filter { $0.vehicle_id.contains(query) }.prefix(maxResults))
    }
}

/// `GET /api/v1/regions/{id}/vehicles?query=` (and `.json`).
struct VehicleRoutes: Sendable {
    let regions: RegionDirectory
    let oba: OBAGateway
    /// Per region, 30 minutes.
    let fleets: TimedCache<Int, [VehicleMatch]>
    /// Per (region, query), 5 minutes.
    let results: TimedCache<String, [VehicleMatch]>
    /// Loading a fleet costs the OneBusAway server a request per agency:
    /// each client may cause only so many.
    let lookups: FixedWindowRateLimiter
    let logger: Logger

    var routes: [Route] {
        [Route("GET", "/api/v1/regions/:region/vehicles", suffixes: [".json"], handler: search)]
    }

    func search(_ request: Request) async -> Response {
        guard let region = regions.resolve(request) else { return .regionNotFound }
        guard let query = VehicleSearchRules.normalizedQuery(request.parameters["query"]) else {
            return Response.json(200, [VehicleMatch]()).logging("region", String(region.id))
        }
        let key = "\(region.id)\u{0}\(query)"
        if let cached = results.value(key) { return Response.json(200, cached).logging("region", String(region.id)) }
        let fleet: [VehicleMatch]
        if let cached = fleets.value(region.id) {
            fleet = cached
        } else {
            if case .limited(let retryAfter) = await lookups.check(request.clientKey) {
                return RiderLimits.tooMany(.simple, retryAfter: retryAfter, what: "lookups").logging("region", String(region.id))
            }
            do {
                var loaded: [VehicleMatch] = []
                for agency in try await oba.agenciesWithCoverage(region: region) {
                    for vehicle in try await oba.vehicleIDs(region: region, agencyID: agency.id) {
                        loaded.append(VehicleMatch(id: agency.id, name: agency.name, vehicle_id: vehicle))
                    }
                }
                fleet = loaded
                fleets.store(fleet, for: region.id)
            } catch {
                // Not an empty list: that would read as "no such vehicle".
                logger.warning("vehicle fleet lookup failed", [("region", String(region.id)), ("reason", "\(error)")])
                return Response.json(502, ["error": "The region's OneBusAway server could not be reached"]).logging("region", String(region.id))
            }
        }
        let matches = VehicleSearchRules.search(query, in: fleet)
        results.store(matches, for: key)
        return Response.json(200, matches).logging("region", String(region.id))
    }
}

extension VehicleRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            regions: context.regions, oba: context.oba, fleets: TimedCache(lifetimeSeconds: 30 * 60, now: context.now),
            results: TimedCache(lifetimeSeconds: 5 * 60, now: context.now), lookups: context.limits.upstreamLookups, logger: context.logger)
    }
}
