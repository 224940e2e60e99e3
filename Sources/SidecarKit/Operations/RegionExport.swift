import Core
import Crypto
import Database
import FoundationEssentials

/// `sidecar export`: one region as a `sidecar-export/1` document, read in
/// one snapshot from the stores that own each kind.
enum RegionExport {
    static let format = RegionExchange.format
    static func export(regionID: Int, database: any Database, nowMillis: EpochMillis) async throws -> JSONValue {
        try await database.read { connection in
            let messages = try AlertStore.mirroredMessages(connection, regionID: regionID)
            let alerts = try AlertStore.alertsWithTranslations(connection, regionID: regionID).map { document($0, message: messages[$0.alert.id]) }
            let sources = try sourcesDocument(connection, regionID: regionID)
            let studies = try SurveyStore.studiesWithSurveys(connection, regionID: regionID).map(document)
            let responses = try SurveyStore.responses(connection, regionID: regionID).map(document)
            let registrations = try PushRegistrationStore.all(connection, regionID: regionID).map(document)
            let reports = try GhostBusStore.all(connection, regionID: regionID).map(document)
            var object: [String: JSONValue] = [
                "format": .string(format), "exported_at": .string(Timestamp.format(millis: nowMillis.value)), "region_id": .integer(Int64(regionID)),
                "alerts": .array(alerts), "studies": .array(studies), "survey_responses": .array(responses),
                "push_registrations": .array(registrations), "ghost_bus_reports": .array(reports),
            ]
            // A Sidecar extension, only when there are sources.
            if case .array(let list) = sources, !list.isEmpty { object["alert_sources"] = sources }
            return .object(object)
        }
    }

    static func time(_ instant: EpochSeconds?) -> JSONValue { instant.map { .string(Timestamp.format($0)) } ?? .null }
    static func time(millis: EpochMillis?) -> JSONValue { millis.map { .string(Timestamp.format(millis: $0.value)) } ?? .null }
    static func text(_ value: String?) -> JSONValue { .string(value ?? "") }
    static func integer(_ value: Int64?) -> JSONValue { value.map(JSONValue.integer) ?? .null }
    static func number(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }

    static func document(_ entry: (alert: ServiceAlert, translations: [AlertTranslation]), message: [UInt8]? = nil) -> JSONValue {
        let alert = entry.alert
        let translations = entry.translations.map { translation -> JSONValue in
            // A translation made before its source text was kept was made
            // from the current text when it is current.
            let current = translation.sourceVersion == alert.sourceVersion
            return .object([
                "language": .string(translation.language), "header_text": .string(translation.header),
                "description_text": .string(translation.description),
                "source_header_text": text(translation.sourceHeader ?? (current ? alert.header : nil)),
                "source_description_text": text(translation.sourceDescription ?? (current ? alert.description : nil)),
            ])
        }
        var object: [String: JSONValue] = [
            "id": .integer(alert.id), "agency_id": .string(alert.agencyID), "header_text": .string(alert.header),
            "description_text": .string(alert.description), "url": text(alert.url), "cause": .string(alert.cause.name),
            "effect": .string(alert.effect.name), "severity": .string(alert.severity.name), "start_time": time(alert.startsAt),
            "end_time": time(alert.endsAt), "published": .bool(alert.published), "is_test": .bool(alert.test),
            "created_at": time(alert.createdAt), "updated_at": time(alert.updatedAt), "translations": .array(translations),
        ]
        // Optional members (a Sidecar extension): only when set, so
        // documents without an impact period stay as OBACloud writes them.
        if let start = alert.impactStartsAt, let end = alert.impactEndsAt {
            object["impact_start_time"] = time(start)
            object["impact_end_time"] = time(end)
        }
        if !alert.scope.isEmpty { object["scope"] = .string(AlertScope.text(alert.scope)) }
        object.merge(mirrorMembers(alert, message: message)) { _, new in new }
        return .object(object)
    }

    static func document(_ entry: (study: SidecarKit.Study, surveys: [SidecarKit.Survey])) -> JSONValue {
        let study = entry.study
        let surveys = entry.surveys.map { survey -> JSONValue in
            let questions = survey.questions.map { question -> JSONValue in
                .object([
                    "id": .integer(question.id), "position": .integer(Int64(question.position)), "required": .bool(question.required),
                    "content": .object(question.content),
                ])
            }
            return .object([
                "id": .integer(survey.id), "name": .string(survey.name), "available": .bool(survey.available),
                "start_time": time(survey.startDate), "end_time": time(survey.endDate),
                "show_on_map": .bool(survey.showOnMap), "show_on_stops": .bool(survey.showOnStops), "always_visible": .bool(survey.alwaysVisible),
                "allows_multiple_responses": .bool(survey.allowsMultipleResponses),
                "visible_stop_list": survey.visibleStopList.map { .array($0.map(JSONValue.string)) } ?? .null,
                "visible_route_list": survey.visibleRouteList.map { .array($0.map(JSONValue.string)) } ?? .null,
                "created_at": time(survey.createdAt), "updated_at": time(survey.updatedAt), "questions": .array(questions),
            ])
        }
        return .object([
            "id": .integer(study.id), "name": .string(study.name), "description": text(study.description),
            "created_at": time(study.createdAt), "updated_at": time(study.updatedAt ?? study.createdAt),
            "surveys": .array(surveys),
        ])
    }

    static func document(_ response: SurveyStore.StoredResponse) -> JSONValue {
        .object([
            "survey_id": .integer(response.surveyID), "public_id": .string(response.publicID),
            "user_identifier": .string(response.userIdentifier), "stop_identifier": text(response.stopIdentifier),
            "stop_latitude": number(response.stopLatitude), "stop_longitude": number(response.stopLongitude),
            "answers": .array(response.answers.map(JSONValue.object)),
            "created_at": time(response.createdAt), "updated_at": time(response.updatedAt),
        ])
    }

    static func document(_ registration: PushRegistration) -> JSONValue {
        .object([
            "token": .string(registration.token), "operating_system": .string(registration.operatingSystem.rawValue),
            "locale": text(registration.locale), "apns_sandbox": .bool(registration.apnsSandbox), "test_device": .bool(registration.testDevice),
            "description": text(registration.description), "last_seen_at": time(millis: registration.lastSeenAt.instantMillis),
            "created_at": time(millis: registration.createdAt.instantMillis),
        ])
    }

    static func document(_ stored: GhostBusStore.Stored) -> JSONValue {
        let report = stored.report
        let snapshot = RegionExchange.json(stored.tripSnapshot)
        let status = snapshot != nil ? "captured" : stored.snapshotAttempts > 0 ? "unavailable" : "pending"
        return .object([
            "public_id": .string(stored.publicID), "user_identifier": .string(report.userIdentifier),
            "trip_identifier": .string(report.tripIdentifier), "service_date_ms": .integer(report.serviceDate.value),
            "route_identifier": text(report.routeIdentifier), "stop_identifier": text(report.stopIdentifier),
            "vehicle_identifier": text(report.vehicleIdentifier), "stop_sequence": integer(report.stopSequence),
            "predicted": report.predicted.map(JSONValue.bool) ?? .null, "schedule_deviation_minutes": integer(report.scheduleDeviationMinutes),
            "wait_duration_minutes": .integer(report.waitDurationMinutes), "comment": text(report.comment),
            "user_latitude": number(report.userLatitude), "user_longitude": number(report.userLongitude),
            "scheduled_arrival_ms": integer(report.scheduledArrivalAt?.value), "predicted_arrival_ms": integer(report.predictedArrivalAt?.value),
            "prediction_last_updated_ms": integer(report.predictionLastUpdatedAt?.value), "snapshot_status": .string(status),
            "snapshot": snapshot ?? .null, "snapshot_captured_at": time(millis: stored.snapshotCapturedAt),
            "created_at": time(millis: stored.createdAt),
        ])
    }

    // MARK: Alert sources

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
}
