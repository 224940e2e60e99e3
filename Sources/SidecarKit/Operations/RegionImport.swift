import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import Push

/// `sidecar import`: a `sidecar-export/1` document into its region, all or
/// nothing, through the stores that own each kind. A row already there
/// (same id, public id, or region and token) is left alone and counted as
/// present, so importing a later export adds only what is new.
enum RegionImport {
    typealias Document = RegionExchange.Document
    typealias Failure = RegionExchange.Failure
    typealias Alert = RegionExchange.Alert
    typealias Summary = RegionExchange.Summary
    typealias Translation = RegionExchange.Translation
    typealias Study = RegionExchange.Study
    typealias Survey = RegionExchange.Survey
    typealias Question = RegionExchange.Question
    typealias Response = RegionExchange.Response
    typealias Registration = RegionExchange.Registration
    typealias GhostBusReport = RegionExchange.GhostBusReport
    typealias MirrorLink = RegionExchange.MirrorLink
    typealias Source = RegionExchange.Source

    /// Rolls a dry run back once it has counted.
    struct DryRunFinished: Error { let summary: Summary }

    /// Imports in one transaction: all of it, or (on any conflict) none.
    static func importDocument(_ document: Document, database: any Database, dryRun: Bool, nowSeconds: EpochSeconds) async throws -> Summary {
        do {
            return try await database.write { connection in
                let summary = try write(document, connection: connection, nowSeconds: nowSeconds)
                if dryRun { throw DryRunFinished(summary: summary) }
                return summary
            }
        } catch let finished as DryRunFinished {
            return finished.summary
        }
    }

    static func write(_ document: Document, connection: any SQLConnection, nowSeconds: EpochSeconds) throws -> Summary {
        var summary = Summary()
        try writeSources(document, connection, into: &summary)
        try writeAlerts(document, connection, nowSeconds: nowSeconds, into: &summary)
        try writeStudies(document, connection, into: &summary)
        for response in document.responses {
            if try SurveyStore.responseExists(connection, publicID: response.publicID) {
                summary.surveyResponses.present += 1
                continue
            }
            guard let surveyRegion = try SurveyStore.owner(connection, of: .surveyRegion, id: response.surveyID),
                surveyRegion == Int64(document.regionID)
            else {
                throw Failure(
                    "survey response \(response.publicID) answers survey \(response.surveyID), which is not a survey of region \(document.regionID)")
            }
            try SurveyStore.insertImported(connection, response: stored(response))
            summary.surveyResponses.added += 1
        }
        for registration in document.registrations {
            let added = try PushRegistrationStore.insertIfAbsent(connection, stored(registration, regionID: document.regionID))
            if added { summary.pushRegistrations.added += 1 } else { summary.pushRegistrations.present += 1 }
        }
        for report in document.reports {
            let added = try GhostBusStore.insertIfAbsent(connection, stored(report, regionID: document.regionID))
            if added { summary.ghostBusReports.added += 1 } else { summary.ghostBusReports.present += 1 }
        }
        // Ids were written as given: new rows must continue after them.
        try AlertStore.advanceIdentities(connection)
        try SurveyStore.advanceIdentities(connection)
        return summary
    }

    static func writeAlerts(_ document: Document, _ connection: any SQLConnection, nowSeconds: EpochSeconds, into summary: inout Summary) throws {
        for alert in document.alerts {
            if let existing = try AlertStore.region(ofAlert: alert.id, connection) {
                guard existing == document.regionID else {
                    throw Failure("alert \(alert.id) already exists in region \(existing); ids must stay as the apps know them")
                }
                summary.alerts.present += 1
                summary.translations.present += alert.translations.count
                continue
            }
            // Made from the text the alert has now: current; otherwise stale (withheld from the feed).
            let translations = alert.translations.map { translation in
                AlertTranslation(
                    language: translation.language, header: translation.header, description: translation.description,
                    sourceVersion: translation.sourceHeader == alert.header && translation.sourceDescription == alert.description ? 1 : 0,
                    sourceHeader: translation.sourceHeader, sourceDescription: translation.sourceDescription)
            }
            try AlertStore.insertImported(
                connection, alert: stored(alert, regionID: document.regionID), translations: translations, message: alert.mirror?.message)
            summary.alerts.added += 1
            summary.translations.added += translations.count
        }
        if summary.alerts.added > 0 { try AlertStore.bumpFeed(connection, regionID: document.regionID, now: nowSeconds) }
        // A region moving in has no agency id here yet: its alerts name it
        // (new alerts and the feed need one; `region set` can change it).
        if let agencyID = document.alerts.first(where: { !$0.agencyID.isEmpty })?.agencyID {
            try RegionSettingsStore.adoptAgency(connection, regionID: document.regionID, agencyID: agencyID)
        }
    }

    static func writeStudies(_ document: Document, _ connection: any SQLConnection, into summary: inout Summary) throws {
        let region = Int64(document.regionID)
        for study in document.studies {
            if let existing = try SurveyStore.owner(connection, of: .studyRegion, id: study.id) {
                guard existing == region else { throw Failure("study \(study.id) already exists in region \(existing)") }
                summary.studies.present += 1
            } else {
                try SurveyStore.insertImported(
                    connection,
                    study: SidecarKit.Study(
                        id: study.id, regionID: document.regionID, name: study.name,
                        description: study.description.isEmpty ? nil : study.description,
                        createdAt: study.created.seconds, updatedAt: study.updated.seconds))
                summary.studies.added += 1
            }
            for survey in study.surveys {
                if let existing = try SurveyStore.owner(connection, of: .surveyStudy, id: survey.id) {
                    guard existing == study.id else { throw Failure("survey \(survey.id) already exists in study \(existing)") }
                    summary.surveys.present += 1
                } else {
                    try SurveyStore.insertImported(connection, survey: stored(survey, studyID: study.id, regionID: document.regionID))
                    summary.surveys.added += 1
                }
                for question in survey.questions {
                    if let existing = try SurveyStore.owner(connection, of: .questionSurvey, id: question.id) {
                        guard existing == survey.id else { throw Failure("question \(question.id) already exists in survey \(existing)") }
                        summary.questions.present += 1
                        continue
                    }
                    guard case .object(let content) = question.content else { continue }
                    try SurveyStore.insertImported(
                        connection,
                        question: SurveyQuestion(
                            id: question.id, position: Int(question.position),
                            required: question.required, content: content),
                        surveyID: survey.id)
                    summary.questions.added += 1
                }
            }
        }
    }

    // MARK: The document's kinds as the stores keep them

    static func stored(_ alert: Alert, regionID: Int) -> ServiceAlert {
        var stored = ServiceAlert(
            id: alert.id, regionID: regionID, agencyID: alert.agencyID, header: alert.header, description: alert.description,
            url: alert.url.isEmpty ? nil : alert.url, cause: Cause(name: alert.cause) ?? .unknownCause,
            effect: Effect(name: alert.effect) ?? .unknownEffect, severity: SeverityLevel(name: alert.severity) ?? .unknownSeverity,
            startsAt: alert.start.seconds, endsAt: alert.end.map(\.seconds), published: alert.published, test: alert.test,
            sourceVersion: 1, createdAt: alert.created.seconds, updatedAt: alert.updated.seconds)
        stored.impactStartsAt = alert.impactStart.map(\.seconds)
        stored.impactEndsAt = alert.impactEnd.map(\.seconds)
        stored.scope = alert.scope
        if let mirror = alert.mirror {
            stored.sourceID = mirror.sourceID
            stored.sourceEntity = mirror.entityID
            stored.inFeed = mirror.inFeed
            stored.withdrawnAt = mirror.withdrawnAt.map(\.seconds)
        }
        return stored
    }

    static func stored(_ survey: Survey, studyID: Int64, regionID: Int) -> SidecarKit.Survey {
        SidecarKit.Survey(
            id: survey.id, regionID: regionID, studyID: studyID, name: survey.name, available: survey.available,
            startDate: survey.start.map(\.seconds), endDate: survey.end.map(\.seconds), showOnMap: survey.showOnMap,
            showOnStops: survey.showOnStops, alwaysVisible: survey.alwaysVisible, allowsMultipleResponses: survey.allowsMultipleResponses,
            visibleStopList: survey.visibleStops, visibleRouteList: survey.visibleRoutes, requireStopIDInResponse: false,
            questions: [], createdAt: survey.created.seconds, updatedAt: survey.updated.seconds)
    }

    static func stored(_ response: Response) -> SurveyStore.StoredResponse {
        var answers: [[String: JSONValue]] = []
        if case .array(let items) = response.answers {
            answers = items.compactMap { if case .object(let answer) = $0 { answer } else { nil } }
        }
        return SurveyStore.StoredResponse(
            publicID: response.publicID, surveyID: response.surveyID, userIdentifier: response.user, answers: answers,
            stopIdentifier: response.stop.isEmpty ? nil : response.stop, stopLatitude: response.latitude,
            stopLongitude: response.longitude, createdAt: response.created.seconds, updatedAt: response.updated.seconds)
    }

    static func stored(_ registration: Registration, regionID: Int) -> PushRegistration {
        let locale = registration.locale.isEmpty ? nil : registration.locale
        return PushRegistration(
            regionID: regionID, token: registration.token, operatingSystem: registration.operatingSystem, locale: locale,
            rawLocale: locale, apnsSandbox: registration.sandbox && registration.operatingSystem == .ios,
            testDevice: registration.testDevice, description: registration.description.isEmpty ? nil : registration.description,
            createdAt: Date(epochMillis: registration.created.value), lastSeenAt: Date(epochMillis: registration.lastSeen.value))
    }

    static func stored(_ report: GhostBusReport, regionID: Int) -> GhostBusStore.Stored {
        func text(_ value: String) -> String? { value.isEmpty ? nil : value }
        let rider = SidecarKit.GhostBusReport(
            userIdentifier: report.user, tripIdentifier: report.trip, serviceDate: report.serviceDate, routeIdentifier: text(report.route),
            stopIdentifier: text(report.stop), vehicleIdentifier: text(report.vehicle), stopSequence: report.stopSequence,
            predicted: report.predicted,
            scheduleDeviationMinutes: report.deviation, waitDurationMinutes: report.wait, comment: text(report.comment),
            userLatitude: report.latitude,
            userLongitude: report.longitude, scheduledArrivalAt: report.scheduled, predictedArrivalAt: report.predictedArrival,
            predictionLastUpdatedAt: report.predictionUpdated)
        return GhostBusStore.Stored(
            publicID: report.publicID, regionID: regionID, report: rider, routeShortName: nil,
            tripSnapshot: report.snapshot.map(RegionExchange.encoded),
            snapshotAttempts: report.status == "pending" ? 0 : report.status == "captured" ? 1 : 3,
            snapshotCapturedAt: report.capturedAt, createdAt: report.created)
    }

    // MARK: Alert sources

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
