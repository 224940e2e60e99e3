import Core
import HTTPClient
import OBA

/// The iOS app drops an alert whose agency its OneBusAway server does not
/// list in `agencies-with-coverage` (OneBusAway/onebusaway-ios
/// `AgencyAlert.swift:76-83`), silently. These rules say whether an agency
/// id is one the region's server covers, so `region set`, `alert create`,
/// `source add` and `doctor` can refuse or warn before riders miss an alert.
enum AgencyCoverageRules {
    enum Verdict: Equatable, Sendable {
        /// The server lists it.
        case covered
        /// The empty id of a region-wide alert, which iOS shows without a match.
        case regionWide
        /// The server answered and does not list it.
        case unknown(agencyID: String, covered: [AgencyCoverage])
        /// The server could not say (unreachable, no list, no server).
        case unverified(reason: String)
    }

    static func verdict(_ agencyID: String, lookup: Result<[AgencyCoverage], OBAError>) -> Verdict {
        if agencyID.isEmpty { return .regionWide }
        switch lookup {
        case .failure(.notFound): return .unverified(reason: "the OneBusAway server has no agencies-with-coverage")
        // The reason is not repeated: a client error can carry the request's
        // URL, and with it the OneBusAway API key.
        case .failure(.transient): return .unverified(reason: "the OneBusAway server could not be asked (unreachable, or it refused the request)")
        case .success(let agencies) where agencies.isEmpty: return .unverified(reason: "the OneBusAway server lists no agencies")
        case .success(let agencies):
            return agencies.contains { $0.id == agencyID } ? .covered : .unknown(agencyID: agencyID, covered: agencies)
        }
    }

    /// `1 (Metro Transit), 40 (Sound Transit)`.
    static func list(_ agencies: [AgencyCoverage]) -> String {
        agencies.prefix(20).map { $0.name.isEmpty ? $0.id : "\($0.id) (\($0.name))" }.joined(separator: ", ") + (agencies.count > 20 ? ", ..." : "")
    }

    /// What an operator is told; nil when all is well.
    static func message(_ verdict: Verdict, region: Region) -> String? {
        switch verdict {
        case .covered, .regionWide: return nil
        case .unknown(let agencyID, let covered):
            return
                "agency id \(agencyID) is not one region \(region.id)'s OneBusAway server covers, so the iOS app would drop its alerts; it lists: \(list(covered))"
        case .unverified(let reason):
            return "agency ids of region \(region.id) not checked: \(reason); the iOS app drops alerts of an agency its server does not list"
        }
    }
}

/// Looks up the agencies a region's OneBusAway server covers, cached for
/// ten minutes per region, each lookup bounded by the client's timeout.
struct AgencyCoverageLookup: Sendable {
    let oba: OBAGateway
    let cache: TimedCache<Int, [AgencyCoverage]>

    init(oba: OBAGateway, now: @escaping @Sendable () -> Double) {
        self.oba = oba
        cache = TimedCache(lifetimeSeconds: 600, maxEntries: 1000, now: now)
    }

    func agencies(_ region: Region) async -> Result<[AgencyCoverage], OBAError> {
        if let cached = cache.value(region.id) { return .success(cached) }
        guard region.obaBaseURL?.presence != nil else { return .failure(.transient("the region has no obaBaseUrl")) }
        do {
            let agencies = try await oba.agenciesWithCoverage(region: region)
            cache.store(agencies, for: region.id)
            return .success(agencies)
        } catch {
            return .failure(error)
        }
    }

    func verdict(_ agencyID: String, region: Region) async -> AgencyCoverageRules.Verdict {
        if agencyID.isEmpty { return .regionWide }
        return AgencyCoverageRules.verdict(agencyID, lookup: await agencies(region))
    }
}
