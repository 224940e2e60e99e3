import Core
import Crypto
import Synchronization

/// An authored alert's scope checked against the region's OneBusAway
/// server when a save adds ids to it (`AlertScopeChecker`).
extension AlertAdministration {
    /// Asks the region's OneBusAway server about the ids a save adds to a
    /// scope (not those it had before, and none with `scope_check` false):
    /// ids it does not know refuse the save, ids it could not be asked
    /// about are warnings.
    func checkScope(_ alert: ServiceAlert, previous: [AlertSelector], region: Region, fields: [String: String]) async throws -> [String] {
        guard fields["scope"] != nil, fields["scope_check"].flatMap(BooleanParameter.read) != false, let scopeChecker else { return [] }
        let known = Set(AlertScope.lookups(previous))
        let lookups = AlertScope.lookups(alert.scope).filter { !known.contains($0) }
        guard !lookups.isEmpty else { return [] }
        let verdicts = await scopeVerdicts(lookups, checker: scopeChecker, region: region)
        let outcome = AlertScopeCheckRules.outcome(Array(zip(lookups, verdicts)), regionID: region.id)
        guard outcome.refusals.isEmpty else { throw AdministrationError.invalid(outcome.refusals) }
        return outcome.warnings
    }

    /// What OneBusAway says of each id: four at a time, and once one
    /// lookup could not be made the others are not tried.
    func scopeVerdicts(_ lookups: [AlertScope.Lookup], checker: any AlertScopeChecker, region: Region) async -> [AlertScopeVerdict] {
        // The limiter's key never shows who: an actor's name can be an email.
        let client = "editor:" + Hex.encode(SHA256.digest(Array(actor.utf8))).prefix(16)
        let gaveUp = Mutex<AlertScopeVerdict?>(nil)
        return await boundedMap(lookups, limit: AlertScopeCheckRules.concurrency) { lookup in
            if let verdict = gaveUp.withLock({ $0 }) { return verdict }
            let verdict = await checker.check(lookup, region: region, client: client)
            if case .unchecked = verdict { gaveUp.withLock { $0 = $0 ?? verdict } }
            return verdict
        }
    }
}
