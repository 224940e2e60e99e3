import Core
import FoundationEssentials
import GTFSRealtime

/// JSON shapes of the admin API (and `--json` CLI output).
enum AdminJSON {
    static func time(_ instant: EpochSeconds?) -> JSONValue {
        guard let instant else { return .null }
        return .string(Date(timeIntervalSince1970: Double(instant.value)).formatted(.iso8601))
    }

    static func time(_ seconds: Int64?) -> JSONValue { time(seconds.map { EpochSeconds($0) }) }

    static func region(_ region: Region, _ settings: RegionSettings?) -> JSONValue {
        .object([
            "id": .integer(Int64(region.id)), "name": .string(region.name),
            "agency_id": settings?.agencyID.map(JSONValue.string) ?? .null, "timezone": settings?.timezone.map(JSONValue.string) ?? .null,
            "push_pace_per_minute": .integer(Int64(settings?.pushPacePerMinute ?? 0)),
            "requires_approval": .bool(settings?.requiresApproval ?? false),
        ])
    }

    static func alert(
        _ alert: ServiceAlert, translations: [AlertTranslation]? = nil, sends: [AlertSend]? = nil, warnings: [String] = []
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "id": .integer(alert.id), "region_id": .integer(Int64(alert.regionID)), "agency_id": .string(alert.agencyID),
            "region_wide": .bool(alert.agencyID.isEmpty),
            "header": .string(alert.header), "description": .string(alert.description), "url": alert.url.map(JSONValue.string) ?? .null,
            "cause": .string(alert.cause.name), "effect": .string(alert.effect.name), "severity": .string(alert.severity.name),
            "start": time(alert.startsAt), "end": time(alert.endsAt), "published": .bool(alert.published), "test": .bool(alert.test),
            "impact_start": time(alert.impactStartsAt), "impact_end": time(alert.impactEndsAt),
            "shown_until": time(AlertFeedRules.effectiveEnd(alert)),
            "source_id": alert.sourceID.map(JSONValue.integer) ?? .null, "source_entity": alert.sourceEntity.map(JSONValue.string) ?? .null,
            "source_version": .integer(Int64(alert.sourceVersion)), "updated_at": time(alert.updatedAt),
            "scope": .string(AlertScope.text(alert.scope)),
            "informed_entities": .array(AlertScope.feedSelectors(alert).map(informedEntity)),
        ]
        if !warnings.isEmpty { fields["warnings"] = .array(warnings.map(JSONValue.string)) }
        if let translations { fields["translations"] = .array(translations.map { translation($0, current: alert.sourceVersion) }) }
        if let sends { fields["sends"] = .array(sends.map(send)) }
        return .object(fields)
    }

    /// Publish-time checks: `{"checks": [{code, level, message, acknowledged}]}`.
    static func checks(_ findings: [AlertCheckFinding], acknowledged: Set<String>) -> JSONValue {
        .object([
            "checks": .array(
                findings.map { finding in
                    .object([
                        "code": .string(finding.code), "level": .string(finding.level.rawValue), "message": .string(finding.message),
                        "acknowledged": .bool(acknowledged.contains(finding.code)),
                    ])
                })
        ])
    }

    /// An informed entity as the feed carries it, in GTFS-realtime's member names.
    static func informedEntity(_ selector: EntitySelector) -> JSONValue {
        var members: [String: JSONValue] = [:]
        if let agency = selector.agencyID { members["agency_id"] = .string(agency) }
        if let route = selector.routeID { members["route_id"] = .string(route) }
        if let stop = selector.stopID { members["stop_id"] = .string(stop) }
        if let type = selector.routeType { members["route_type"] = .integer(Int64(type)) }
        if let trip = selector.trip {
            var tripMembers: [String: JSONValue] = [:]
            if let id = trip.tripID { tripMembers["trip_id"] = .string(id) }
            if let date = trip.startDate { tripMembers["start_date"] = .string(date) }
            members["trip"] = .object(tripMembers)
        }
        return .object(members)
    }

    static func translation(_ translation: AlertTranslation, current: Int) -> JSONValue {
        .object([
            "language": .string(translation.language), "header": .string(translation.header),
            "description": .string(translation.description), "stale": .bool(translation.sourceVersion != current),
        ])
    }

    static func approval(_ request: ApprovalRequest, now: EpochSeconds) -> JSONValue {
        .object([
            "id": .integer(request.id), "alert_id": .integer(request.alertID), "action": .string(request.action.rawValue),
            "status": .string(request.status == .pending && !ApprovalRules.isOpen(request, now: now) ? "lapsed" : request.status.rawValue),
            "requested_by": .string(request.requestedBy), "requested_at": time(request.requestedAt), "expires_at": time(request.expiresAt),
            "decided_by": request.decidedBy.map(JSONValue.string) ?? .null, "decided_at": time(request.decidedAt),
        ])
    }

    static func schedule(_ schedule: AlertSchedule) -> JSONValue {
        .object([
            "id": .integer(schedule.id), "alert_id": .integer(schedule.alertID), "audience": .string(schedule.audience.rawValue),
            "at": .string(schedule.atStart ? "start" : Timestamp.format(schedule.runAt)), "run_at": time(schedule.runAt),
            "if_changed": .string(schedule.ifChanged.rawValue), "status": .string(schedule.status.rawValue),
            "send_id": schedule.sendID.map(JSONValue.integer) ?? .null, "reason": schedule.reason.map(JSONValue.string) ?? .null,
            "created_at": time(schedule.createdAt), "updated_at": time(schedule.updatedAt),
        ])
    }

    static func send(_ send: AlertSend) -> JSONValue {
        .object([
            "id": .integer(send.id), "audience": .string(send.audience.rawValue), "status": .string(send.shownStatus),
            "targeted": .integer(Int64(send.targeted)), "delivered": .integer(Int64(send.delivered)),
            "failed": .integer(Int64(send.failed)), "pruned": .integer(Int64(send.pruned)), "pending": .integer(Int64(send.pending)),
            "last_error": send.lastError.map(JSONValue.string) ?? .null, "audience_size": .integer(Int64(send.audienceSize)),
            "started_at": time(send.startedAt), "finished_at": time(send.finishedAt), "stalled_since": time(send.stalledSince),
            "messages": send.messages.map { messages in
                .object(messages.mapValues { .object(["title": .string($0.title), "body": .string($0.body)]) })
            } ?? .null,
        ])
    }
}
