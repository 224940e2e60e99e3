import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// The alert form: a new alert, and editing an authored one (with field
/// errors in the form's words and edit conflicts merged field by field).
/// An alert's page shows the same fields (`alertFields`).
struct AlertFormConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/alerts/new", .author) { _, context in
                alertForm(context, alert: nil, values: [:], problems: [], zone: await zone(regionID: context.region?.id ?? 0))
            },
            regionPage("POST", "/admin/regions/:region/alerts", .author) { request, context in await createAlert(request, context) },
            authoredAlertRoute("POST", "/admin/alerts/:alert", .author) { request, context, alert in await editAlert(request, context, alert) },
        ]
    }

    /// The authoring form; `values` holds what was submitted when it is shown again.
    func alertForm(
        _ context: ConsoleLayout.Context, alert: ServiceAlert?, values: [String: String], problems: [String], zone: ZoneInfo = .utc,
        status: Int = 200, heading: String? = nil
    ) -> Response {
        guard let region = context.region else { return notFound() }
        var formContext = context
        formContext.section = .alerts
        let action = alert.map { "/admin/alerts/\($0.id)" } ?? "/admin/regions/\(region.id)/alerts"
        // Each problem in the form's words, on its field and in the summary.
        let placed = ConsoleFieldErrors.alert(problems)
        let content: [any HTMLContent] = [
            ConsoleLayout.problems(placed.map(\.text), heading: heading),
            alertFields(context.session, action: action, alert: alert, values: values, zone: zone, errors: ConsoleFieldErrors.byField(placed)),
        ]
        return ConsoleLayout.respond(status, ConsoleLayout.page(alert == nil ? "New alert" : "Edit alert \(alert!.id)", formContext, content))
    }

    func alertFields(
        _ session: ConsoleStore.Session, action: String, alert: ServiceAlert?, values: [String: String], zone: ZoneInfo,
        errors: [String: String] = [:]
    ) -> HTML {
        func value(_ name: String, _ current: String?) -> String { values[name] ?? current ?? "" }
        let zoneHint = zoneHint(zone)
        return ConsoleLayout.form(
            action, session,
            [
                ConsoleLayout.field(
                    "Header", name: "header", value: value("header", alert?.header), required: true,
                    hint: "Pushed as the title: the first 48 characters show on a lock screen.",
                    maxLength: FieldLimits.alertHeader, error: errors["header"]),
                ConsoleLayout.textArea(
                    "Description", name: "description", value: value("description", alert?.description), rows: 5,
                    hint: "Pushed as the body: the first 120 characters show on a lock screen.", maxLength: FieldLimits.alertDescription,
                    error: errors["description"]),
                ConsoleLayout.field(
                    "More information (URL)", name: "url", value: value("url", alert?.url), type: "url", maxLength: FieldLimits.url,
                    error: errors["url"]),
                tag(
                    "div", [.class("columns")],
                    [
                        ConsoleLayout.select(
                            "Cause", name: "cause", options: Cause.allCases.map { ($0.name, AlertWords.humanize($0.name)) },
                            selected: value("cause", alert?.cause.name ?? Cause.unknownCause.name), error: errors["cause"]),
                        ConsoleLayout.select(
                            "Effect", name: "effect", options: Effect.allCases.map { ($0.name, AlertWords.humanize($0.name)) },
                            selected: value("effect", alert?.effect.name ?? Effect.unknownEffect.name), error: errors["effect"]),
                        ConsoleLayout.select(
                            "Severity", name: "severity", options: SeverityLevel.allCases.map { ($0.name, AlertWords.humanize($0.name)) },
                            selected: value("severity", alert?.severity.name ?? SeverityLevel.warning.name),
                            hint: "The Android app shows only Warning and Severe alerts: Info and Unknown severity are hidden there.",
                            error: errors["severity"]),
                    ]),
                tag(
                    "div", [.class("columns")],
                    [
                        ConsoleLayout.field(
                            "Starts", name: "start", value: value("start", RegionTime.inputValue(alert?.startsAt ?? now, zone)),
                            type: "datetime-local", required: true, hint: zoneHint, error: errors["start"]),
                        ConsoleLayout.field(
                            "Ends", name: "end", value: value("end", RegionTime.inputValue(alert?.endsAt, zone)), type: "datetime-local",
                            hint: "Leave empty and riders see the alert for 8 hours from its start (the feed's rule). " + zoneHint,
                            error: errors["end"]),
                    ]),
                tag(
                    "p", [.class("hint")],
                    [
                        "Starts and Ends say when riders are shown the alert. Service affected says when the disruption itself happens "
                            + "(optional): for a weekend closure announced on Wednesday, show it from Wednesday and mark Saturday to Sunday "
                            + "as affected. It must lie within the shown period."
                    ]),
                tag(
                    "div", [.class("columns")],
                    [
                        ConsoleLayout.field(
                            "Service affected from", name: "impact_start",
                            value: value("impact_start", RegionTime.inputValue(alert?.impactStartsAt, zone)), type: "datetime-local",
                            hint: zoneHint, error: errors["impact_start"]),
                        ConsoleLayout.field(
                            "Service affected until", name: "impact_end",
                            value: value("impact_end", RegionTime.inputValue(alert?.impactEndsAt, zone)), type: "datetime-local",
                            hint: "Leave both empty when the whole shown period is affected. " + zoneHint, error: errors["impact_end"]),
                    ]),
                ConsoleLayout.checkbox(
                    "For every agency of the region", name: "region_wide",
                    checked: values.isEmpty ? (alert?.agencyID.isEmpty ?? false) : values["region_wide"] == "true",
                    hint:
                        "A region-wide alert has no agency of its own: both apps show it to every rider of the region. Unchecked, it is filed under the region's agency."
                ),
                ConsoleLayout.textArea(
                    "Where", name: "scope", value: value("scope", alert.map { AlertScope.text($0.scope) }), rows: 3,
                    hint:
                        "Leave empty for the whole agency. Otherwise one place a line (or ; between places), in OneBusAway's ids: route=1_44, stop=1_75403, "
                        + "route=1_44 stop=1_75403 (that stop on that route), trip=1_604318 date=2026-12-01, route_type=bus. "
                        + "Each id is checked against the region's OneBusAway server. " + AlertScope.appsNote,
                    maxLength: AlertScope.maxTextLength, error: errors["scope"]),
                ConsoleLayout.checkbox(
                    "Save without checking the places against OneBusAway (a route or stop it does not list yet)", name: "scope_unchecked",
                    checked: values["scope_unchecked"] == "true"),
                ConsoleLayout.checkbox(
                    "Test alert (only test devices see it in the feed and get it pushed)", name: "test",
                    checked: values.isEmpty ? (alert?.test ?? false) : values["test"] == "true"),
                tag("div", [.class("actions")], [tag("button", [Attribute("type", "submit")], [alert == nil ? "Create draft" : "Save changes"])]),
            ] + ConsoleEditVersion.input(values: values, current: alert.map(ConsoleEditVersion.version(of:)))
                + baseFields(alert: alert, values: values, zone: zone))
    }

    /// An alert's fields as the form shows them (the strings a submission carries).
    func formValues(_ alert: ServiceAlert, zone: ZoneInfo) -> [String: String] {
        [
            "header": alert.header, "description": alert.description, "url": alert.url ?? "", "cause": alert.cause.name,
            "effect": alert.effect.name, "severity": alert.severity.name, "start": RegionTime.inputValue(alert.startsAt, zone),
            "end": RegionTime.inputValue(alert.endsAt, zone), "impact_start": RegionTime.inputValue(alert.impactStartsAt, zone),
            "impact_end": RegionTime.inputValue(alert.impactEndsAt, zone), "region_wide": alert.agencyID.isEmpty ? "true" : "false",
            "scope": AlertScope.text(alert.scope), "test": alert.test ? "true" : "false",
        ]
    }

    /// The values the edit form was opened with, carried along so a save
    /// that meets someone else's change can say, field by field, what they
    /// changed (`ConsoleEditConflict`). Kept across a form shown again.
    func baseFields(alert: ServiceAlert?, values: [String: String], zone: ZoneInfo) -> [any HTMLContent] {
        guard let alert else { return [] }
        let current = formValues(alert, zone: zone)
        return ConsoleEditConflict.alertFields.map { field in
            let name = ConsoleEditConflict.baseName(field.name)
            return tag(
                "input", [Attribute("type", "hidden"), Attribute("name", name), Attribute("value", values[name] ?? current[field.name] ?? "")])
        }
    }

    /// The authoring fields of a submitted form, with times converted from
    /// the region's zone to the instants `AlertAdministration` reads.
    func authoringFields(_ request: Request, zone: ZoneInfo, editing: Bool) -> (
        fields: [String: String], values: [String: String], problems: [String]
    ) {
        var values: [String: String] = [:]
        for name in [
            "header", "description", "url", "cause", "effect", "severity", "start", "end", "impact_start", "impact_end", "test", "region_wide",
            "scope", "scope_unchecked",
        ] {
            if let value = request.parameters[name] { values[name] = value }
        }
        values["scope_unchecked"] = values["scope_unchecked"] == "true" ? "true" : nil
        values["test"] = values["test"] == "true" ? "true" : "false"
        values["region_wide"] = values["region_wide"] == "true" ? "true" : "false"
        var fields = values
        fields["scope_unchecked"] = nil
        if values["scope_unchecked"] == "true" { fields["scope_check"] = "false" }
        var problems: [String] = []
        if let url = fields["url"], url.trimmingWhitespace().isEmpty { fields["url"] = editing ? "" : nil }
        let labels = ["start": "Starts", "end": "Ends", "impact_start": "Service affected from", "impact_end": "Service affected until"]
        for name in ["start", "end", "impact_start", "impact_end"] {
            guard let text = values[name]?.trimmingWhitespace() else { continue }
            if text.isEmpty {
                fields[name] = name == "start" ? nil : (editing ? "none" : nil)
            } else if let instant = RegionTime.parse(text, zone) {
                fields[name] = Timestamp.format(instant)
            } else {
                problems.append("\(labels[name] ?? name) must be a date and time such as 2026-12-01T08:00")
                fields[name] = nil
            }
        }
        return (fields, values, problems)
    }

    func createAlert(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        let zone = await zone(regionID: region.id)
        let (fields, values, problems) = authoringFields(request, zone: zone, editing: false)
        guard problems.isEmpty else { return alertForm(context, alert: nil, values: values, problems: problems, zone: zone, status: 422) }
        do {
            let saved = try await administration(context.session).create(regionID: region.id, fields: fields)
            return .seeOther("/admin/alerts/\(saved.alert.id)?done=created" + (saved.warnings.isEmpty ? "" : "-unchecked"))
        } catch let error as AdministrationError {
            return alertForm(context, alert: nil, values: values, problems: error.messages, zone: zone, status: 422)
        } catch { return unavailable(error) }
    }

    func editAlert(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let zone = await zone(regionID: alert.regionID)
        var (fields, values, problems) = authoringFields(request, zone: zone, editing: true)
        for field in ConsoleEditConflict.alertFields {
            let name = ConsoleEditConflict.baseName(field.name)
            if let base = request.parameters[name] { values[name] = base }
        }
        let current = ConsoleEditVersion.version(of: alert)
        values[ConsoleEditVersion.field] = request.parameters[ConsoleEditVersion.field]
        if ConsoleEditVersion.isStale(request, current: current) {
            // Shown again at the current version, their changes merged in
            // field by field: saving once more keeps theirs where this
            // editor left a field alone and puts this editor's where not.
            var base: [String: String] = [:]
            for field in ConsoleEditConflict.alertFields {
                base[field.name] = request.parameters[ConsoleEditConflict.baseName(field.name)]
            }
            let theirs = formValues(alert, zone: zone)
            let merged = ConsoleEditConflict.merge(mine: values, base: base, theirs: theirs)
            values = merged.values
            values[ConsoleEditVersion.field] = current
            for field in ConsoleEditConflict.alertFields { values[ConsoleEditConflict.baseName(field.name)] = theirs[field.name] }
            return alertForm(
                context, alert: alert, values: values,
                problems: [ConsoleEditConflict.problem] + merged.changes, zone: zone, status: 412,
                heading: ConsoleEditVersion.heading)
        }
        guard problems.isEmpty else { return alertForm(context, alert: alert, values: values, problems: problems, zone: zone, status: 422) }
        do {
            let saved = try await administration(context.session).edit(id: alert.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=saved" + (saved.warnings.isEmpty ? "" : "-unchecked"))
        } catch let error as AdministrationError {
            return alertForm(context, alert: alert, values: values, problems: error.messages, zone: zone, status: 422)
        } catch { return unavailable(error) }
    }
}

extension AlertFormConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
