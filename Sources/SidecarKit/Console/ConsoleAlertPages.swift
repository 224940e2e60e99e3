import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Alerts: the list, the authoring form, an alert's page, publishing and translations.
extension ConsoleRoutes {
    // MARK: Alerts

    typealias AlertState = AlertVisibility

    /// The end riders get: the alert's, the feed's 8-hour default, or none
    /// for a mirrored alert its source gave no end, said so.
    static func shownUntil(_ alert: ServiceAlert, _ zone: ZoneInfo) -> String {
        guard alert.endsAt == nil else { return RegionTime.display(alert.endsAt, zone) }
        guard let end = AlertFeedRules.effectiveEnd(alert) else { return "its source lists it (no end given: open-ended)" }
        return RegionTime.display(end, zone) + " (no end set: 8 hours from the start)"
    }

    /// Which app hides or only lists a published alert, and why (the apps'
    /// own rules, `AlertAppVisibility`); nothing when both show it in full.
    static func appFindings(_ alert: ServiceAlert, view: AlertFeedView, now: Int64) -> HTML {
        let findings = view.appFindings(alert, now: now)
        guard !findings.isEmpty else { return .empty }
        return tag(
            "div", [.class("apps")],
            [
                tag("h2", [], ["What the apps do with it"]),
                tag("ul", [], findings.map { tag("li", [], [tag("strong", [], [$0.app.rawValue]), " \($0.text)."]) }),
            ])
    }

    /// When riders see the alert, in words that agree with its state: a
    /// draft or withdrawn alert is seen by nobody, an ended one was seen.
    static func shownSentence(_ alert: ServiceAlert, _ zone: ZoneInfo, now: Int64) -> String {
        let period = "from \(RegionTime.display(alert.startsAt, zone)) until \(shownUntil(alert, zone))"
        if !alert.published {
            return alert.withdrawnAt != nil
                ? "Withdrawn: riders no longer see it (published, it is shown \(period))."
                : "A draft: riders see nothing until it is published; then it is shown \(period)."
        }
        if let end = AlertFeedRules.effectiveEnd(alert), end.value <= now { return "Ended: riders saw it \(period)." }
        if alert.startsAt.value > now { return "Riders will see it \(period)." }
        return "Riders see it \(period)."
    }

    static func badges(_ alert: ServiceAlert, view: AlertFeedView) -> HTML {
        let state = view.visibility(alert)
        return .join([
            tag("span", [.class("badge \(state.rawValue)")], [state.rawValue]),
            alert.test ? HTML.join([" ", tag("span", [.class("badge test")], ["test"])]) : HTML.empty,
        ])
    }

    func alertList(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        var listContext = context
        listContext.section = .alerts
        let zone = await zone(regionID: region.id)
        let all: [ServiceAlert]
        let view: AlertFeedView
        do {
            all = try await alerts.alerts(regionID: region.id)
            view = try await AlertFeedView.read(alerts, regionID: region.id, now: now)
        } catch { return unavailable(error) }
        var content: [any HTMLContent] = []
        if ConsoleRules.may(context.session.user.role, .author) {
            content.append(
                tag("p", [.class("actions")], [tag("a", [.href("/admin/regions/\(region.id)/alerts/new"), .class("button")], ["New alert"])]))
        }
        content.append(tag("p", [.class("hint")], [timesHint(zone)]))
        content.append(Self.reviewsWaiting(context))
        for state in AlertState.allCases {
            // The feed's own order for what is in it; newest start first for the rest.
            let order = Dictionary(view.published.entries.enumerated().map { ($1.alert.id, $0) }, uniquingKeysWith: { first, _ in first })
            let rows = all.filter { view.visibility($0) == state }.sorted {
                (order[$0.id] ?? Int.max, -$0.startsAt.value, -$0.id) < (order[$1.id] ?? Int.max, -$1.startsAt.value, -$1.id)
            }
            content.append(tag("h2", [], ["\(state.heading) (\(rows.count))"]))
            content.append(
                ConsoleLayout.table(
                    caption: state.heading, headers: ["Alert", "Effect", "Starts", "Shown until", state == .notInFeed ? "Why" : ""],
                    rows: rows.map { alert in
                        [
                            tag("a", [.href("/admin/alerts/\(alert.id)")], [alert.header]), Self.humanize(alert.effect.name),
                            RegionTime.display(alert.startsAt, zone), Self.shownUntil(alert, zone),
                            state == .notInFeed
                                ? HTML.text(view.exclusion(alert)?.explanation ?? "")
                                : HTML.join([
                                    Self.badges(alert, view: view),
                                    alert.sourceID.map { _ in HTML.join([" ", tag("span", [.class("badge source")], ["from a source"])]) } ?? .empty,
                                ]),
                        ] as [any HTMLContent]
                    }, empty: "None."))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): alerts", listContext, notice: Self.notice(request), content))
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
                            "Cause", name: "cause", options: Cause.allCases.map { ($0.name, Self.humanize($0.name)) },
                            selected: value("cause", alert?.cause.name ?? Cause.unknownCause.name), error: errors["cause"]),
                        ConsoleLayout.select(
                            "Effect", name: "effect", options: Effect.allCases.map { ($0.name, Self.humanize($0.name)) },
                            selected: value("effect", alert?.effect.name ?? Effect.unknownEffect.name), error: errors["effect"]),
                        ConsoleLayout.select(
                            "Severity", name: "severity", options: SeverityLevel.allCases.map { ($0.name, Self.humanize($0.name)) },
                            selected: value("severity", alert?.severity.name ?? SeverityLevel.warning.name),
                            hint: "The Android app shows only Warning and Severe alerts: Info and Unknown severity are hidden there.",
                            error: errors["severity"]),
                    ]),
                tag(
                    "div", [.class("columns")],
                    [
                        ConsoleLayout.field(
                            "Starts", name: "start", value: value("start", RegionTime.inputValue(alert?.startsAt ?? EpochSeconds(now), zone)),
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
            "test": alert.test ? "true" : "false",
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

    /// `UNKNOWN_CAUSE` → `Unknown cause`.
    static func humanize(_ name: String) -> String {
        let words = name.lowercased().split(separator: "_").joined(separator: " ")
        return words.prefix(1).uppercased() + words.dropFirst()
    }

    /// The authoring fields of a submitted form, with times converted from
    /// the region's zone to the instants `AlertAdministration` reads.
    func authoringFields(_ request: Request, zone: ZoneInfo, editing: Bool) -> (
        fields: [String: String], values: [String: String], problems: [String]
    ) {
        var values: [String: String] = [:]
        for name in [
            "header", "description", "url", "cause", "effect", "severity", "start", "end", "impact_start", "impact_end", "test", "region_wide",
        ] {
            if let value = request.parameters[name] { values[name] = value }
        }
        values["test"] = values["test"] == "true" ? "true" : "false"
        values["region_wide"] = values["region_wide"] == "true" ? "true" : "false"
        var fields = values
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
            let alert = try await administration(context.session).create(regionID: region.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=created")
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
            _ = try await administration(context.session).edit(id: alert.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=saved")
        } catch let error as AdministrationError {
            return alertForm(context, alert: alert, values: values, problems: error.messages, zone: zone, status: 422)
        } catch { return unavailable(error) }
    }

    /// Only a draft that was never published and never sent may be
    /// deleted: anything riders may have seen stays, withdrawn, on record.
    static func deletable(_ alert: ServiceAlert, sent: Bool) -> Bool { !alert.published && alert.withdrawnAt == nil && !sent }

    func confirmDeleteDraft(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) -> Response {
        guard !alert.published && alert.withdrawnAt == nil else { return .seeOther("/admin/alerts/\(alert.id)") }
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Delete draft \(alert.id)?", context,
                [
                    tag(
                        "p", [],
                        [
                            "“", alert.header, "” and its translations are deleted. Riders never saw it: it was never published.",
                            alert.test ? " It is a test alert." : "",
                        ]),
                    ConsoleLayout.form(
                        "/admin/alerts/\(alert.id)/delete", context.session,
                        [
                            ConsoleLayout.confirmActions("Delete the draft", cancel: "/admin/alerts/\(alert.id)")
                        ]),
                ]))
    }

    func deleteDraft(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        do {
            let sent = !(try await alerts.sends(alertID: alert.id)).isEmpty
            guard Self.deletable(alert, sent: sent) else {
                return ConsoleLayout.errorPage(
                    409, "Not deleted", "Only a draft that was never published or sent can be deleted; unpublish a live alert instead.")
            }
            try await administration(context.session).delete(id: alert.id)
            return .seeOther("/admin/regions/\(alert.regionID)/alerts?done=draft-deleted")
        } catch AdministrationError.notFound {
            return .seeOther("/admin/regions/\(alert.regionID)/alerts?done=draft-deleted")
        } catch { return unavailable(error) }
    }

    func confirmUnpublish(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) -> Response {
        guard alert.published else { return .seeOther("/admin/alerts/\(alert.id)") }
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Unpublish alert \(alert.id)?", context,
                [
                    tag(
                        "p", [],
                        [
                            "“", alert.header, "” leaves the feed at once: riders' apps stop showing it. Notifications already delivered stay on ",
                            "their phones. You can publish it again later.",
                        ]),
                    ConsoleLayout.form(
                        "/admin/alerts/\(alert.id)/unpublish", context.session,
                        [
                            ConsoleLayout.confirmActions("Unpublish", cancel: "/admin/alerts/\(alert.id)")
                        ]),
                ]))
    }

    func setPublished(_ context: ConsoleLayout.Context, _ alert: ServiceAlert, _ published: Bool) async -> Response {
        do {
            _ = try await administration(context.session).setPublished(id: alert.id, published)
            return .seeOther("/admin/alerts/\(alert.id)?done=\(published ? "published" : "unpublished")")
        } catch { return unavailable(error) }
    }

    /// "End now": the alert's end becomes this second (a second after its
    /// start when it began this very second, since an end must follow the
    /// start), so it leaves the feed at once; an impact period past the new
    /// end is cut to it. An alert already over is left alone, so a refresh or
    /// a second click changes nothing.
    func endNow(_ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        if AlertFeedRules.effectiveEnd(alert).map({ $0.value <= now }) ?? false {
            return .seeOther("/admin/alerts/\(alert.id)?done=ended")
        }
        let end = max(now, alert.startsAt.value + 1)
        var fields = ["end": Timestamp.format(EpochSeconds(end))]
        if let impactEnd = alert.impactEndsAt, impactEnd.value > end {
            if let impactStart = alert.impactStartsAt, impactStart.value < end {
                fields["impact_end"] = Timestamp.format(EpochSeconds(end))
            } else {
                fields["impact_start"] = "none"
                fields["impact_end"] = "none"
            }
        }
        do {
            _ = try await administration(context.session).edit(id: alert.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=ended")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not ended", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }

    /// The alert: its fields, translations side by side, previews, publishing and sending.
    func alertPage(
        _ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert, translationProblems: [String] = [],
        status: Int = 200
    ) async -> Response {
        if alert.sourceID != nil { return await mirroredAlertPage(request, context, alert) }
        let zone = await zone(regionID: alert.regionID)
        let translations: [AlertTranslation]
        let sendList: [AlertSend]
        let groups: [(locale: String?, count: Int)]
        let testCount: Int, allCount: Int
        let view: AlertFeedView
        do {
            view = try await AlertFeedView.read(alerts, regionID: alert.regionID, now: now)
            translations = try await alerts.translations(alertID: alert.id)
            sendList = try await alerts.sends(alertID: alert.id)
            groups = try await ConsoleStats.languageGroups(database: database, regionID: alert.regionID)
            testCount = try await alerts.audienceCount(regionID: alert.regionID, audience: .test)
            allCount = try await alerts.audienceCount(regionID: alert.regionID, audience: .all)
        } catch { return unavailable(error) }
        let session = context.session
        let role = session.user.role
        var content: [any HTMLContent] = [
            tag("p", [], [Self.badges(alert, view: view)]),
            tag(
                "p", [.class("shown")],
                [
                    Self.shownSentence(alert, zone, now: now) + " ",
                    tag("span", [.class("hint")], [zoneHint(zone)]),
                ]),
            Self.appFindings(alert, view: view, now: now),
        ]

        // Publishing.
        if ConsoleRules.may(role, .author) {
            content.append(
                tag(
                    "div", [.class("actions")],
                    [
                        alert.published
                            ? tag("a", [.href("/admin/alerts/\(alert.id)/unpublish"), .class("button secondary")], ["Unpublish…"])
                            : ConsoleLayout.postButton("Publish", "/admin/alerts/\(alert.id)/publish", session, style: "primary"),
                        Self.deletable(alert, sent: !sendList.isEmpty)
                            ? tag("a", [.href("/admin/alerts/\(alert.id)/delete"), .class("button secondary")], ["Delete draft…"]) : HTML.empty,
                        alert.published && alert.startsAt.value <= now && !(AlertFeedRules.effectiveEnd(alert).map { $0.value <= now } ?? false)
                            ? ConsoleLayout.postButton("End now", "/admin/alerts/\(alert.id)/end", session, style: "secondary") : HTML.empty,
                    ]))
        }

        // Fields.
        content.append(tag("h2", [], ["Alert"]))
        if ConsoleRules.may(role, .author) {
            content.append(alertFields(session, action: "/admin/alerts/\(alert.id)", alert: alert, values: [:], zone: zone))
        } else {
            content.append(
                tag(
                    "dl", [],
                    [
                        tag("dt", [], ["Header"]), tag("dd", [], [alert.header]), tag("dt", [], ["Description"]), tag("dd", [], [alert.description]),
                        tag("dt", [], ["Cause / effect / severity"]),
                        tag("dd", [], ["\(alert.cause.name) / \(alert.effect.name) / \(alert.severity.name)"]),
                        tag("dt", [], ["Shown"]), tag("dd", [], ["\(RegionTime.display(alert.startsAt, zone)) to \(Self.shownUntil(alert, zone))"]),
                        tag("dt", [], ["Service affected"]),
                        tag(
                            "dd", [],
                            [
                                alert.impactStartsAt.map { "\(RegionTime.display($0, zone)) to \(RegionTime.display(alert.impactEndsAt, zone))" }
                                    ?? "The whole shown period"
                            ]),
                    ]))
        }

        // Translations, side by side with the English.
        content.append(translationSection(request, session, alert: alert, translations: translations, groups: groups, problems: translationProblems))

        // Previews.
        content.append(tag("h2", [], ["Preview"]))
        content.append(tag("p", [.class("hint")], ["What each language group of this region's devices will get, cut as a lock screen shows it."]))
        var previewGroups = groups
        if !previewGroups.contains(where: { $0.locale == nil }) { previewGroups.insert((nil, 0), at: 0) }
        let fresh = AlertFeedRules.fresh(translations, for: alert)
        content.append(
            tag(
                "div", [.class("grid")],
                previewGroups.map { group in
                    let copy = AlertPushRules.copy(for: alert, translations: translations, locale: group.locale)
                    let translated = group.locale.map { locale in fresh.contains { $0.language.lowercased() == locale.lowercased() } } ?? true
                    return tag(
                        "section", [.class("preview")],
                        [
                            tag(
                                "p", [.class("meta")],
                                [
                                    "\(group.locale ?? "English (default)") · \(group.count) device\(group.count == 1 ? "" : "s")"
                                        + (translated ? "" : " · no translation: gets the English")
                                ]),
                            tag("p", [.class("title")], [copy.title]), tag("p", [.class("body")], [copy.body]),
                        ])
                }))
        content.append(tag("h3", [], ["In the alerts feed"]))
        content.append(
            tag(
                "section", [.class("preview")],
                [
                    tag(
                        "p", [.class("meta")],
                        [
                            "\(Self.humanize(alert.effect.name)) · \(Self.humanize(alert.severity.name)) · from \(RegionTime.display(alert.startsAt, zone))"
                                + " to \(Self.shownUntil(alert, zone))"
                        ]),
                    tag("p", [.class("title")], [alert.header]), tag("p", [.class("body")], [alert.description]),
                    alert.url.map { tag("p", [], [tag("a", [.href($0), Attribute("rel", "noopener noreferrer")], [$0])]) } ?? .empty,
                ]))

        // Sending: test devices any time (a draft too); everyone once published.
        content.append(tag("h2", [.id("sends")], ["Send"]))
        let running = sendList.contains { $0.status == "running" }
        if ConsoleRules.may(role, .sendToTestDevices) {
            func button(_ label: String, _ audience: AlertSend.Audience, _ style: String) -> HTML {
                running
                    // The script turns it back into the link once the send ends.
                    ? tag(
                        "button",
                        [
                            Attribute("type", "button"), .class(style), Attribute("disabled", nil),
                            Attribute("data-enable-href", "/admin/alerts/\(alert.id)/send?audience=\(audience.rawValue)"),
                        ], [label])
                    : tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=\(audience.rawValue)"), .class("button \(style)")], [label])
            }
            var buttons: [any HTMLContent] = [button("Send to test devices (\(testCount))", .test, "secondary")]
            if ConsoleRules.may(role, .sendToEveryone) && !alert.test {
                // Not the filled primary button: pushing every rider is the
                // action to take deliberately, never the obvious next click.
                buttons.append(
                    alert.published
                        ? button("Send to everyone (\(Self.grouped(allCount)))…", .all, "secondary")
                        : tag("span", [.class("hint")], ["A draft cannot go to everyone: publish it first (the button above)."]))
            } else if !alert.test {
                buttons.append(tag("span", [.class("hint")], ["Sending to everyone needs an admin: ask one to send it once you have tested it."]))
            }
            if running {
                buttons.append(tag("span", [.class("hint"), Attribute("data-running-hint", "true")], ["A send is running: wait for it to finish."]))
            }
            content.append(tag("div", [.class("actions")], buttons))
        }
        var remaining: [Int64: Int] = [:]
        for send in sendList where send.status == "failed" {
            remaining[send.id] = (try? await alerts.audienceCount(regionID: alert.regionID, audience: send.audience, after: send.cursor)) ?? 0
        }
        content.append(sendsTable(alert: alert, sendList, remaining: remaining, session: session, zone: zone))
        return ConsoleLayout.respond(status, ConsoleLayout.page("Alert \(alert.id): \(alert.header)", context, notice: Self.notice(request), content))
    }
}
