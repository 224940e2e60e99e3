import Core
import Crypto
import Database
import GTFSRealtime

/// Alert sources in a `sidecar-export/1` document (a Sidecar extension,
/// `alert_sources`, absent from OBACloud's documents): each source's
/// settings without its secrets (the names of the headers it needs are
/// listed, to be given again), what each of its alerts became, and on each
/// mirrored alert its link to its source, entity id and stored message, so
/// a withdrawal at the agency still removes it after a move.
extension RegionExchange {
    struct MirrorLink {
        var sourceID: Int64, entityID: String, message: [UInt8], inFeed: Bool, withdrawnAt: EpochMillis?
    }

    struct Source {
        var settings: AlertSource
        /// Header names the source sent; their secrets must be given again.
        var headerNames: [String]
        var alerts: [SourceAlertState]
    }

    // MARK: Export

    static func sourcesDocument(_ connection: any SQLConnection, regionID: Int) throws -> JSONValue {
        .array(
            try AlertSourceStore.exportable(connection, regionID: regionID).map { source, alerts in
                let settings = source
                var object: [String: JSONValue] = [
                    "id": .integer(settings.id), "url": .string(settings.url), "mode": .string(settings.mode.rawValue),
                    "interval_seconds": .integer(Int64(settings.intervalSeconds)), "push": .string(settings.push.rawValue),
                    "min_severity": .string(settings.minSeverity.name), "effects": .string(settings.effects.map(\.name).joined(separator: ",")),
                    "scope": .string(settings.scope.rawValue), "quiet_hours": settings.quietHours.map { .string($0.text) } ?? .null,
                    "audience": .string(settings.audience.rawValue), "flood_threshold": .integer(Int64(settings.floodThreshold)),
                    "push_corrections": .bool(settings.pushCorrections), "pushes_per_hour": .integer(Int64(settings.pushesPerHour)),
                    "allow_private": .bool(settings.allowPrivate), "allow_link_local": .bool(settings.allowLinkLocal),
                    "max_bytes": .integer(Int64(settings.maxBytes)), "needs_headers": .array(settings.headers.map { .string($0.name) }),
                    "created_at": time(settings.createdAt),
                ]
                object["alerts"] = .array(
                    alerts.map { state in
                        .object([
                            "entity_id": .string(state.entityID), "alert_id": .integer(state.alertID), "content_hash": .string(state.contentHash),
                            "material_hash": .string(state.materialHash), "decision": .string(state.decision.rawValue),
                            "reason": state.reason.map(JSONValue.string) ?? .null, "pushed_at": time(state.pushedAt),
                            "present": .bool(state.present), "changed_at": time(state.changedAt),
                            "first_seen_at": time(state.firstSeenAt), "hidden": .bool(state.hidden),
                        ])
                    })
                return .object(object)
            })
    }

    /// A mirrored alert's members beyond an authored one's.
    static func mirrorMembers(_ alert: ServiceAlert, message: [UInt8]?) -> [String: JSONValue] {
        guard let sourceID = alert.sourceID, let entity = alert.sourceEntity else { return [:] }
        return [
            "source_id": .integer(sourceID), "source_entity": .string(entity), "source_alert": .string(Base64URL.encode(message ?? [])),
            "in_feed": .bool(alert.inFeed), "withdrawn_at": time(alert.withdrawnAt),
        ]
    }

    // MARK: Reading

    static let mirrorKeys: Set<String> = ["source_id", "source_entity", "source_alert", "in_feed", "withdrawn_at"]

    static func mirrorLink(_ reader: Reader) throws(Failure) -> MirrorLink? {
        guard let sourceID = try reader.optionalInteger("source_id") else { return nil }
        let entity = try reader.required("source_entity")
        guard let bytes = Base64URL.decode(try reader.string("source_alert")), AlertSourceMapping.decoded(bytes) != nil else {
            throw Failure("\(reader.place("source_alert")) is not a stored GTFS-realtime alert")
        }
        return MirrorLink(
            sourceID: sourceID, entityID: entity, message: bytes, inFeed: try reader.optionalBool("in_feed") ?? true,
            withdrawnAt: try reader.optionalTime("withdrawn_at"))
    }

    static func sources(_ top: Reader, regionID: Int) throws(Failure) -> [Source] {
        var sources: [Source] = []
        for (item, path) in try top.array("alert_sources") {
            let r = try Reader(
                item, at: path,
                keys: [
                    "id", "url", "mode", "interval_seconds", "push", "min_severity", "effects", "scope", "quiet_hours", "audience",
                    "flood_threshold", "push_corrections", "pushes_per_hour", "allow_private", "allow_link_local", "max_bytes", "needs_headers",
                    "created_at", "alerts",
                ])
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var fields: [String: String] = [
                "url": try r.required("url"), "mode": try r.string("mode"), "interval": String(try r.integer("interval_seconds")),
                "push": try r.string("push"), "min_severity": try r.string("min_severity"), "effects": try r.string("effects"),
                "scope": try r.string("scope"), "quiet_hours": try r.string("quiet_hours"), "audience": try r.string("audience"),
                "flood_threshold": String(try r.integer("flood_threshold")), "push_corrections": String(try r.bool("push_corrections")),
                "allow_private": String(try r.bool("allow_private")), "allow_link_local": String(try r.bool("allow_link_local")),
                "max_bytes": String(try r.integer("max_bytes")),
            ]
            if let perHour = try r.optionalInteger("pushes_per_hour") { fields["pushes_per_hour"] = String(perHour) }
            fields = fields.filter { !$0.value.isEmpty || $0.key == "quiet_hours" }
            let created = seconds(try r.optionalTime("created_at") ?? 0)
            var settings: AlertSource
            switch AlertSourceRules.settings(fields, regionID: regionID, base: nil, now: created, naming: .api) {
            case .success(let valid): settings = valid
            case .failure(let failure): throw Failure("\(path): \(failure.messages.joined(separator: "; "))")
            }
            settings.id = id
            var alerts: [SourceAlertState] = []
            for (item, path) in try r.array("alerts") {
                let a = try Reader(
                    item, at: path,
                    keys: [
                        "entity_id", "alert_id", "content_hash", "material_hash", "decision", "reason", "pushed_at", "present", "changed_at",
                        "first_seen_at", "hidden",
                    ])
                let changed = seconds(try a.time("changed_at"))
                alerts.append(
                    SourceAlertState(
                        sourceID: id, entityID: try a.required("entity_id"), alertID: try a.integer("alert_id"),
                        contentHash: try a.string("content_hash"), materialHash: try a.string("material_hash"),
                        decision: SourceAlertState.Decision(rawValue: try a.string("decision")) ?? .skipped,
                        reason: try a.string("reason").presence, notBefore: nil, pushedAt: try a.optionalTime("pushed_at").map(seconds),
                        sendID: nil, present: try a.bool("present"), changedAt: changed,
                        firstSeenAt: try a.optionalTime("first_seen_at").map(seconds) ?? changed, hidden: try a.bool("hidden")))
            }
            let names = try r.optionalStrings("needs_headers") ?? []
            sources.append(Source(settings: settings, headerNames: names, alerts: alerts))
        }
        return sources
    }

    // MARK: Import

    /// Writes the sources before their alerts (the alerts name them).
    static func writeSources(_ document: Document, _ connection: any SQLConnection, into summary: inout Summary) throws {
        for source in document.sources {
            if let existing = try AlertSourceStore.region(ofSource: source.settings.id, connection) {
                guard existing == document.regionID else {
                    throw Failure("alert source \(source.settings.id) already exists in region \(existing); its alerts name it by id")
                }
                summary.alertSources.present += 1
                continue
            }
            // Pending pushes are not carried over: the new home decides again.
            let states = source.alerts.map { state -> SourceAlertState in
                var state = state
                if [.due, .deferred].contains(state.decision) {
                    (state.decision, state.reason) = (.skipped, "moved by an import before it was pushed")
                }
                return state
            }
            try AlertSourceStore.insertImported(connection, source: source.settings, alerts: states)
            summary.alertSources.added += 1
            if !source.headerNames.isEmpty {
                summary.notes.append(
                    "source \(source.settings.id) sent the headers \(source.headerNames.joined(separator: ", ")), whose secrets are not exported; "
                        + "give them again: sidecar source edit \(source.settings.id) --header-file NAME:PATH")
            }
        }
        if summary.alertSources.added > 0 { try AlertSourceStore.advanceIdentities(connection) }
    }
}
