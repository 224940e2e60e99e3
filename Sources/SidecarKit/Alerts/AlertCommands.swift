import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Push

/// Service alerts: `alert create|list|show|edit|publish|unpublish|delete|translate|send`.
enum AlertCommands {
    static let all: [OperatorCommand] = [
        OperatorCommand(
            name: "alert create", id: nil, access: .writes, summary: "Create a draft alert (publish it with 'sidecar alert publish ID')",
            options: [OperatorCommands.region] + authoring(creating: true), notes: alertNotes,
            run: { c in
                let regionID = try c.region()
                if c.options["region_wide"].flatMap(BooleanParameter.read) != true {
                    let stored = try await RegionSettingsStore(database: c.alerts.database).all()[regionID]?.agencyID
                    try await c.checkAgency(c.options["agency_id"]?.presence ?? stored, regionID: regionID)
                }
                let saved = try await c.administration.create(regionID: regionID, fields: c.options)
                saved.warnings.forEach { c.errors("warning: " + $0) }
                c.output("created alert \(saved.alert.id) (draft; publish with: sidecar alert publish \(saved.alert.id))")
                return 0
            }),
        OperatorCommand(
            name: "alert list", id: nil, access: .reads, summary: "List a region's alerts with their state and times in the region's zone",
            options: [OperatorCommands.region],
            run: { c in
                let regionID = try c.region()
                _ = try c.administration.region(regionID)
                let zone = await c.zone(regionID: regionID)
                let view = try await AlertFeedView.read(c.alerts, regionID: regionID, now: c.now)
                for alert in try await c.alerts.alerts(regionID: regionID) {
                    let state = view.visibility(alert).rawValue
                    let until = AlertFeedRules.effectiveEnd(alert).map { RegionTime.iso8601($0, zone) } ?? "while its source lists it"
                    c.output(
                        "\(alert.id)\t\(state)\(alert.test ? " test" : "")\t\(RegionTime.iso8601(alert.startsAt, zone))"
                            + "\tuntil \(until)\t\(alert.header)")
                }
                return 0
            }),
        OperatorCommand(
            name: "alert show", id: "ID", access: .reads, summary: "Show an alert, its translations and its sends", options: [],
            run: { c in
                let id = try c.id()
                let alert = try await c.administration.alert(id: id)
                c.output(
                    describe(
                        alert, translations: try await c.alerts.translations(alertID: id), sends: try await c.alerts.sends.list(alertID: id),
                        zone: await c.zone(regionID: alert.regionID),
                        view: try await AlertFeedView.read(c.alerts, regionID: alert.regionID, now: c.now), now: c.now))
                // Its publish-time checks (the scope is asked of OneBusAway by `alert check`).
                if alert.sourceID == nil {
                    for finding in try await c.administration.publishChecks(alert, askingOneBusAway: false) {
                        let level = alert.acknowledgedChecks.contains(finding.code) ? "acknowledged" : finding.level.rawValue
                        c.output("  check:       \(level) \(finding.code): \(finding.message)")
                    }
                }
                return 0
            }),
        OperatorCommand(
            name: "alert edit", id: "ID", access: .changes, summary: "Change an alert's fields (only those given)",
            options: authoring(creating: false), notes: alertNotes,
            run: { c in
                if let agency = c.options["agency_id"]?.presence {
                    try await c.checkAgency(agency, regionID: try await c.administration.alert(id: try c.id()).regionID)
                }
                let saved = try await c.administration.edit(id: try c.id(), fields: c.options)
                saved.warnings.forEach { c.errors("warning: " + $0) }
                c.output("updated alert \(saved.alert.id)")
                return 0
            }),
        OperatorCommand(
            name: "alert publish", id: "ID", access: .changes,
            summary: "Publish an alert (it appears in the feed) after the publish-time checks: an error refuses it, warnings are printed",
            options: [acknowledgeOption], notes: checkNotes, run: setPublished),
        OperatorCommand(
            name: "alert unpublish", id: "ID", access: .changes, summary: "Withdraw an alert from the feed", options: [], run: setPublished),
        OperatorCommand(
            name: "alert check", id: "ID", access: .changes,
            summary: "The publish-time checks of an alert as it stands (its scope asked of OneBusAway); --acknowledge silences warnings",
            options: [acknowledgeOption], notes: checkNotes,
            run: { c in
                let id = try c.id()
                var alert = try await c.administration.alert(id: id)
                if let codes = c.options["acknowledge"] {
                    alert = try await c.administration.acknowledge(id: id, codes: acknowledgedCodes(codes))
                }
                let findings = try await c.administration.publishChecks(alert, askingOneBusAway: true)
                if findings.isEmpty { c.output("alert \(id): nothing found") }
                for finding in findings {
                    let level = alert.acknowledgedChecks.contains(finding.code) ? "acknowledged" : finding.level.rawValue
                    c.output("\(level)\t\(finding.code)\t\(finding.message)")
                }
                return 0
            }),
        OperatorCommand(
            name: "alert delete", id: "ID", access: .changes, summary: "Delete an alert", options: [],
            run: { c in
                let id = try c.id()
                try await c.administration.delete(id: id)
                c.output("deleted alert \(id)")
                return 0
            }),
        OperatorCommand(
            name: "alert translate", id: "ID", access: .changes,
            summary: "Add or replace the translation of an alert into one language",
            options: [
                OperatorOption(
                    "language", "TAG", required: true,
                    "A language of --locales, as a tag (es, es-MX, zh-TW): stored as registrations normalise it"),
                OperatorOption("header", "TEXT", required: true, "The translated headline"),
                OperatorOption("description", "TEXT", "The translated body (required when the English has one)"),
            ],
            run: { c in
                let translation = try await c.administration.translate(
                    id: try c.id(), language: c.options["language"] ?? "",
                    header: c.options["header"], description: c.options["description"])
                c.output("saved the \(translation.language) translation of alert \(try c.id())")
                return 0
            }),
        OperatorCommand(
            name: "alert send", id: "ID", access: .changes,
            summary: "Push a published alert to the region's registrations, resuming an unfinished send",
            options: [OperatorOption("audience", "all|test", "Everyone (default) or only test devices; a draft goes to test devices only")],
            notes: "Needs a push transport: the push flags below, as 'sidecar serve' takes them.",
            run: { c in
                guard let transport = try Sidecar.pushTransport(c.configuration, http: c.http, logger: c.logger) else {
                    throw AdministrationError.invalid(["no push transport: pass --gorush-url URL (or --push-transport log)"])
                }
                guard let audience = AlertSend.Audience(rawValue: c.options["audience"] ?? "all") else {
                    throw AdministrationError.invalid(["--audience must be all or test"])
                }
                let (send, alert) = try await c.administration.startSend(id: try c.id(), audience: audience)
                let total = try await c.alerts.sends.audienceCount(regionID: alert.regionID, audience: audience)
                if send.cursor > 0 { c.output("resuming send \(send.id) after \(send.targeted) registrations") }
                let pace = try await RegionSettingsStore(database: c.alerts.database).sendPace(for: alert)
                if let pace, let last = AlertSendPacing.lastDevice(audience: total - send.targeted, pace: pace, now: c.now) {
                    c.errors(
                        "paced at \(pace) pushes a minute (region \(alert.regionID)): the last device gets it about \(RegionTime.iso8601(last, await c.zone(regionID: alert.regionID)))"
                    )
                }
                let sender = AlertSender(
                    store: c.alerts, transport: transport, clock: c.clock, logger: Logger(level: .error), retry: c.configuration.sendRetry,
                    pacePerMinute: pace)
                let finished = try await sender.run(send, alert: alert, translations: try await c.alerts.translations(alertID: alert.id)) {
                    progress in
                    c.errors(progressBar(progress, total: total))
                }
                c.output("send \(finished.id) \(finished.status): \(counts(finished))")
                if finished.status == "failed" {
                    let untried = try await c.alerts.sends.audienceCount(regionID: alert.regionID, audience: audience, after: finished.cursor)
                    c.errors(
                        "sidecar: error: \(finished.pending + untried) pushes were not delivered (\(finished.lastError ?? "the provider kept failing")); "
                            + "run 'sidecar alert send \(alert.id)\(audience == .test ? " --audience test" : "")' again to retry only those")
                    return 1
                }
                // Dead tokens are pruned, as every send prunes some; pushes the
                // provider refused are a failure to report.
                if finished.failed > finished.pruned {
                    c.errors(
                        "sidecar: error: \(finished.failed - finished.pruned) pushes were refused (\(finished.lastError ?? "the provider refused them")); "
                            + "sending again would not change that")
                    return 1
                }
                return 0
            }),
    ]
    static let time = "TIME"
    static let timeNote = """
        Times are ISO 8601 with a UTC offset, e.g. 2026-12-01T08:00:00-08:00, from 2000 to 2100.
        """

    /// The authoring fields of `alert create` and `alert edit`.
    static func authoring(creating: Bool) -> [OperatorOption] {
        [
            OperatorOption("header", "TEXT", required: creating, "The English headline riders see (at most \(FieldLimits.alertHeader) characters)"),
            OperatorOption("start", time, required: creating, "When riders start seeing the alert"),
            OperatorOption("description", "TEXT", "The English body"),
            OperatorOption("url", "URL", "A page with more information"),
            OperatorOption("cause", "CAUSE", "GTFS-realtime cause (default UNKNOWN_CAUSE)"),
            OperatorOption("effect", "EFFECT", "GTFS-realtime effect (default UNKNOWN_EFFECT)"),
            OperatorOption("severity", "LEVEL", "INFO, WARNING (default) or SEVERE"),
            OperatorOption("end", "TIME|none", "When riders stop seeing it; without one the feed ends it 8 hours after the start"),
            OperatorOption("impact-start", time, "When service is affected from, if not the whole shown period"),
            OperatorOption("impact-end", "TIME|none", "When service is affected until"),
            OperatorOption("test", "true|false", "A test alert goes only to test devices"),
            OperatorOption("agency-id", "ID", "The OneBusAway agency id (default: the region's, see 'sidecar region set')"),
            OperatorOption(
                "region-wide", "true|false", "For every agency of the region (an empty agency id, which both apps show region-wide)"),
            OperatorOption(
                "scope", "PLACES",
                "The routes, stops and trips it is about, ';' between places (empty: the whole agency): "
                    + "'route=1_44; stop=1_75403; trip=1_604318 date=2026-12-01; route_type=bus'"),
            OperatorOption(
                "scope-check", "true|false", "Check the scope's ids against the region's OneBusAway server (default true; unknown ids are refused)"),
            OperatorCommands.agencyCheck,
        ]
    }

    static let acknowledgeOption = OperatorOption(
        "acknowledge", "CODES", "Warnings read and accepted, by code (commas between): not said again for this alert")

    static let checkNotes = """
        Errors (refuse a publish): end_before_start, ended (the shown period is over).
        Warnings: started_long_ago, header_long (over 48 characters), description_long (over 256), cause_unknown,
        effect_unknown, translation_missing:LANG (a language 5% and 5 of the region's devices read), scope_unknown:KIND/ID,
        scope_unchecked, near_duplicate:ALERT (an alert riders see now says nearly the same).
        """

    static func acknowledgedCodes(_ text: String) -> [String] { text.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init) }

    /// `alert publish` (with its checks) and `alert unpublish`.
    static func setPublished(_ c: CommandRun) async throws -> Int32 {
        let publishing = c.invocation.command == "alert publish"
        if publishing, let codes = c.options["acknowledge"] {
            _ = try await c.administration.acknowledge(id: try c.id(), codes: acknowledgedCodes(codes))
        }
        let saved = try await c.administration.setPublished(id: try c.id(), publishing)
        for warning in saved.warnings { c.errors("warning: " + warning) }
        if !saved.warnings.isEmpty {
            c.errors("(read them, then silence them with: sidecar alert check \(saved.id) --acknowledge CODES)")
        }
        c.output("alert \(saved.id) is \(saved.published ? "published" : "unpublished")")
        return 0
    }

    static let alertNotes = """
        \(timeNote)
        Causes: \(Cause.allCases.map(\.name).joined(separator: " "))
        Effects: \(Effect.allCases.map(\.name).joined(separator: " "))
        Severities: \(SeverityLevel.allCases.map(\.name).joined(separator: " "))
        """

    /// An alert as `alert show` prints it, times in the region's zone.
    static func describe(
        _ alert: ServiceAlert, translations: [AlertTranslation], sends: [AlertSend], zone: ZoneInfo, view: AlertFeedView, now: EpochSeconds
    ) -> String {
        func time(_ instant: EpochSeconds) -> String { RegionTime.iso8601(instant, zone) }
        let why = view.exclusion(alert).flatMap { $0 == .ended ? nil : " (\($0.explanation))" } ?? ""
        var lines = [
            "alert \(alert.id) (region \(alert.regionID), \(alert.agencyID.isEmpty ? "region-wide: every agency" : "agency \(alert.agencyID)")); times in \(zone.identifier)",
            "  state:       \(view.visibility(alert).rawValue)\(alert.test ? ", test" : "")\(alert.published ? why : "")",
            "  header:      \(alert.header)",
            "  description: \(alert.description)",
            "  url:         \(alert.url ?? "-")",
            "  cause:       \(alert.cause.name)   effect: \(alert.effect.name)   severity: \(alert.severity.name)",
            "  start:       \(time(alert.startsAt))",
            "  end:         \(alert.endsAt.map(time) ?? AlertFeedRules.effectiveEnd(alert).map { "none set: riders see it until \(time($0)) (start + 8 h)" } ?? "none: open-ended while its source lists it")",
            "  where:       \(AlertScope.describe(alert))\(alert.scope.isEmpty ? "" : " (scope: \(AlertScope.text(alert.scope)))")",
            "  affected:    \(alert.impactStartsAt.map { "\(time($0)) to \(alert.impactEndsAt.map(time) ?? "-")" } ?? "the whole shown period")",
        ]
        for finding in view.appFindings(alert, now: now) { lines.append("  apps:        \(finding.line)") }
        for translation in translations {
            let stale = translation.sourceVersion != alert.sourceVersion ? " [stale: made from an earlier English text, withheld]" : ""
            lines.append("  translation \(translation.language)\(stale): \(translation.header)")
        }
        for send in sends {
            lines.append(
                "  send \(send.id) to \(send.audience.rawValue): \(send.shownStatus), \(counts(send))"
                    + (send.status == "failed" ? " (\(send.lastError ?? "provider failing"))" : "")
                    + (send.stalledSince.map {
                        " (since \(time($0)): \(send.lastError ?? "no answer"); it goes on when the transport answers)"
                    } ?? ""))
        }
        return lines.joined(separator: "\n")
    }

    static func counts(_ send: AlertSend) -> String {
        "targeted \(send.targeted), delivered \(send.delivered), failed \(send.failed), pruned \(send.pruned), pending \(send.pending)"
    }

    static func progressBar(_ send: AlertSend, total: Int) -> String {
        let width = 30
        let fraction = total > 0 ? min(Double(send.targeted) / Double(total), 1) : 1
        let filled = Int(fraction * Double(width))
        return
            "[\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(Int(fraction * 100))% \(send.targeted)/\(total) delivered \(send.delivered) failed \(send.failed)"
    }
}
