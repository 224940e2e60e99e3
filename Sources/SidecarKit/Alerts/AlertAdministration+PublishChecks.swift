import Core

/// The publish-time checks of an alert (`AlertPublishChecks`) and the
/// warnings editors acknowledge.
extension AlertAdministration {
    /// What the publish-time checks find in an alert as it stands; its
    /// scope is asked of OneBusAway only when `askingOneBusAway` (a publish,
    /// `alert check`), never for a page view.
    func publishChecks(_ alert: ServiceAlert, askingOneBusAway: Bool) async throws -> [AlertCheckFinding] {
        let translations = try await store.translations(alertID: alert.id)
        let regionID = alert.regionID, test = alert.test
        let languages = try await store.database.read { connection in
            try PushRegistrationStore.languages(connection, regionID: regionID, testOnly: test, limit: 1000)
        }
        let view = try await AlertFeedView.read(store, regionID: alert.regionID, now: now)
        var scope: [(AlertScope.Lookup, AlertScopeVerdict)]?
        if askingOneBusAway, let scopeChecker, !alert.scope.isEmpty {
            let lookups = AlertScope.lookups(alert.scope)
            scope = Array(zip(lookups, await scopeVerdicts(lookups, checker: scopeChecker, region: try region(alert.regionID))))
        }
        return AlertPublishChecks.findings(
            AlertPublishChecks.Inputs(
                alert: alert, translations: translations, languages: languages,
                liveAlerts: view.selection(for: alert).entries.map(\.alert), now: now, scope: scope))
    }

    /// Marks warnings as read by an editor: they are not said again. Only
    /// codes the checks find now are taken.
    func acknowledge(id: Int64, codes: [String]) async throws -> ServiceAlert {
        var alert = try await authored(id: id)
        let wanted = Set(codes.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty })
        guard !wanted.isEmpty else { throw AdministrationError.invalid(["codes: name the warnings to acknowledge (alert check \(id) lists them)"]) }
        let asking = wanted.contains { $0.hasPrefix("scope_") }
        let warnings = Set(try await publishChecks(alert, askingOneBusAway: asking).filter { $0.level == .warning }.map(\.code))
        let unknown = wanted.subtracting(warnings)
        guard unknown.isEmpty else {
            throw AdministrationError.invalid([
                "no such warning on alert \(id) now: \(unknown.sorted().prefix(10).map { String($0.prefix(60)) }.joined(separator: ", ")); its warnings: \(warnings.isEmpty ? "none" : warnings.sorted().joined(separator: ", "))"
            ])
        }
        alert.acknowledgedChecks.formUnion(wanted)
        let saved = try await save(alert)
        await record("alert.acknowledge", region: saved.regionID, target: "alert \(id)", detail: wanted.sorted().joined(separator: " "))
        return saved
    }
}
