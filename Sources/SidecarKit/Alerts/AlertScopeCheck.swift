import Core
import HTTPServer
import OBA

/// Asks the region's OneBusAway server whether it knows the routes, stops
/// and trips an authored alert's scope names: an id it does not know is a
/// mistake the feed would carry to every OneBusAway server and trip planner
/// reading it, unmatched.
protocol AlertScopeChecker: Sendable {
    /// What the server says of one id.
    func check(_ lookup: AlertScope.Lookup, region: Region, client: String) async -> AlertScopeVerdict
}

enum AlertScopeVerdict: Equatable, Sendable {
    case known
    case unknown
    /// The server could not say (unreachable, no server, the budget spent).
    case unchecked(String)
}

/// The checker of a running server or a command: the region's OneBusAway
/// server through the gateway, each lookup counted against the caller's
/// share of `--upstream-lookup-limit` when a limiter is given.
struct OBAScopeChecker: AlertScopeChecker {
    let oba: OBAGateway
    let lookups: FixedWindowRateLimiter?
    /// An editor's save waits at most this long for one lookup.
    var timeoutSeconds = AlertScopeCheckRules.lookupTimeoutSeconds

    func check(_ lookup: AlertScope.Lookup, region: Region, client: String) async -> AlertScopeVerdict {
        guard region.obaBaseURL?.presence != nil || oba.localBaseURLs.url(for: region.id) != nil else {
            return .unchecked("region \(region.id) has no OneBusAway server (obaBaseUrl)")
        }
        if let lookups, case .limited = await lookups.check(client) {
            return .unchecked("this account's budget of OneBusAway lookups is spent for the minute (--upstream-lookup-limit)")
        }
        do {
            try await oba.entity(region: region, method: lookup.kind.rawValue, id: lookup.id, timeoutSeconds: timeoutSeconds)
            return .known
        } catch .notFound {
            return .unknown
        } catch {
            // The reason is not repeated: a client error can carry the
            // request's URL, and with it the OneBusAway API key.
            return .unchecked("region \(region.id)'s OneBusAway server could not be asked")
        }
    }
}

/// What a scope's check means for a save: unknown ids refuse it, ids that
/// could not be checked are saved with a warning. Pure.
enum AlertScopeCheckRules {
    /// The most lookups in flight for one save.
    static let concurrency = 4
    /// How long one lookup may take. After the first that could not be
    /// made, the rest of the save's ids are not asked: a save waits about
    /// this long at worst, whatever the server does.
    static let lookupTimeoutSeconds = 3

    static func outcome(_ results: [(AlertScope.Lookup, AlertScopeVerdict)], regionID: Int) -> (refusals: [String], warnings: [String]) {
        var refusals: [String] = []
        var unchecked: [String] = []
        var reasons: [String] = []
        for (lookup, verdict) in results {
            switch verdict {
            case .known: continue
            case .unknown:
                refusals.append(
                    "Scope: region \(regionID)'s OneBusAway server does not know \(lookup.kind.rawValue) \(lookup.id) "
                        + "(check the id as OneBusAway writes it, agency first; if it is right and the server does not list it yet, save it unchecked: --scope-check false, \"scope_check\": false, or the form's box)"
                )
            case .unchecked(let reason):
                unchecked.append("\(lookup.kind.rawValue) \(lookup.id)")
                if !reasons.contains(reason) { reasons.append(reason) }
            }
        }
        let warnings =
            unchecked.isEmpty
            ? [] : ["Scope not checked against OneBusAway for \(unchecked.prefix(10).joined(separator: ", ")): \(reasons.joined(separator: "; "))"]
        return (refusals, warnings)
    }
}
