import Core

/// Managing alert sources, shared by the CLI (and any other front end) so
/// each validates and audits the same way.
struct AlertSourceAdministration: Sendable {
    let store: AlertSourceStore
    let alerts: AlertStore
    let regions: RegionDirectory
    let clock: any WallClock
    let poller: AlertSourcePoller
    var audit: AuditLog?
    var actor = "system"
    /// This server's own listener (host, port), which no source may poll.
    var listening: @Sendable () -> (host: String, port: Int?)

    var now: EpochSeconds { clock.nowSeconds }

    /// The same operations, audited under `actor`.
    func acting(as actor: String) -> AlertSourceAdministration {
        var copy = self
        copy.actor = actor
        return copy
    }

    func record(_ action: String, region: Int?, target: String, detail: String? = nil) async {
        await audit?.record(actor: actor, action: action, regionID: region, target: target, detail: detail, now: now)
    }

    /// Adds a source to a region whose agency id is set; messages name
    /// fields as `naming` says.
    func add(regionID: Int, fields: [String: String], naming: AlertSourceRules.FieldNaming = .commandLine) async throws -> AlertSource {
        guard regions.region(id: regionID) != nil else { throw AdministrationError.notFound("No region \(regionID) in the regions directory") }
        guard try await RegionSettingsStore(database: alerts.database).all()[regionID]?.agencyID?.presence != nil else {
            throw AdministrationError.invalid([
                "region \(regionID) has no agency id, which the apps match alerts on; set it first in the region's settings"
            ])
        }
        // Each source is a request every interval made by this server: a key
        // or an account must not be able to make it poll without bound.
        guard try await store.sources(regionID: regionID).count < AlertSourceRules.maximumSourcesPerRegion else {
            throw AdministrationError.invalid(["region \(regionID) has \(AlertSourceRules.maximumSourcesPerRegion) sources, the most it may have"])
        }
        let source = try validated(AlertSourceRules.settings(fields, regionID: regionID, base: nil, now: now, naming: naming, own: own))
        let created = try await store.create(source)
        await record("source.add", region: regionID, target: "source \(created.id)", detail: "url=\(created.url); mode=\(created.mode.rawValue)")
        return created
    }

    /// Changes a source's settings. A new URL drops the secret headers and
    /// the address allowances the old one had, unless `fields` sets them again.
    func edit(id: Int64, fields: [String: String], naming: AlertSourceRules.FieldNaming = .commandLine) async throws -> AlertSource {
        guard let (existing, _) = try await store.source(id: id) else { throw AdministrationError.notFound("No source \(id)") }
        let source = try validated(
            AlertSourceRules.settings(fields, regionID: existing.regionID, base: existing, now: now, naming: naming, own: own))
        try await store.update(source, now: now)
        poller.administration.cache?.invalidate(regionID: source.regionID)
        await record("source.edit", region: source.regionID, target: "source \(id)", detail: AlertAdministration.summary(fields))
        return source
    }

    func remove(id: Int64) async throws {
        guard let (source, _) = try await store.source(id: id) else { throw AdministrationError.notFound("No source \(id)") }
        _ = try await store.remove(id: id, now: now)
        poller.administration.cache?.invalidate(regionID: source.regionID)
        await record("source.remove", region: source.regionID, target: "source \(id)")
    }

    /// An editor's answer to an alert waiting for review; an approval
    /// starts its push at once. Returns what was done, line by line.
    func decide(id: Int64, entityID: String, approve: Bool) async throws -> [String] {
        guard let (source, _) = try await store.source(id: id) else { throw AdministrationError.notFound("No source \(id)") }
        guard try await store.decideReview(sourceID: id, entityID: entityID, approve: approve) else {
            throw AdministrationError.invalid(["\(entityID) of source \(id) is not waiting for review (already decided, or no longer at the source)"])
        }
        await record(
            approve ? "source.review.approve" : "source.review.dismiss", region: source.regionID, target: "source \(id)", detail: "entity=\(entityID)"
        )
        return approve ? await poller.startDuePushes(source) : []
    }

    /// Keeps one of a source's alerts out of the feed while the source lists
    /// it, or lets it back in; returns false when it already was so.
    func setHidden(id: Int64, entityID: String, hidden: Bool) async throws -> Bool {
        guard let (source, _) = try await store.source(id: id) else { throw AdministrationError.notFound("No source \(id)") }
        guard try await store.states(sourceID: id)[entityID] != nil else {
            throw AdministrationError.notFound("Source \(id) has no alert \(entityID)")
        }
        guard try await store.setHidden(sourceID: id, entityID: entityID, hidden: hidden, now: now) else { return false }
        poller.administration.cache?.invalidate(regionID: source.regionID)
        await record(
            hidden ? "source.alert.hide" : "source.alert.show", region: source.regionID, target: "source \(id)", detail: "entity=\(entityID)")
        return true
    }

    /// This server's listener, which no source may poll.
    var own: AlertSourceAddresses.OwnListener {
        let (host, port) = listening()
        return AlertSourceAddresses.OwnListener(host: host, port: port, localAddresses: AlertSourcePoller.localAddresses)
    }

    /// The settings, or their messages as a refusal.
    func validated(_ result: Result<AlertSource, ValidationFailure>) throws -> AlertSource {
        switch result {
        case .success(let valid): return valid
        case .failure(let failure): throw AdministrationError.invalid(failure.messages)
        }
    }
}
