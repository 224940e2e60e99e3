import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Alerts: the list and an alert's page (the form and the actions have files of their own).
extension AlertConsolePages {
    // MARK: Alerts

    typealias AlertState = AlertVisibility

    /// When riders see the alert, in words that agree with its state: a
    /// draft or withdrawn alert is seen by nobody, an ended one was seen.
    static func shownSentence(_ alert: ServiceAlert, _ zone: ZoneInfo, now: EpochSeconds) -> String {
        let period = "from \(RegionTime.display(alert.startsAt, zone)) until \(AlertWords.shownUntil(alert, zone))"
        if !alert.published {
            return alert.withdrawnAt != nil
                ? "Withdrawn: riders no longer see it (published, it is shown \(period))."
                : "A draft: riders see nothing until it is published; then it is shown \(period)."
        }
        if AlertFeedRules.hasEnded(alert, now: now) { return "Ended: riders saw it \(period)." }
        if alert.startsAt > now { return "Riders will see it \(period)." }
        return "Riders see it \(period)."
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
        content.append(DashboardConsolePages.reviewsWaiting(context))
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
                            tag("a", [.href("/admin/alerts/\(alert.id)")], [alert.header]), AlertWords.humanize(alert.effect.name),
                            RegionTime.display(alert.startsAt, zone), AlertWords.shownUntil(alert, zone),
                            state == .notInFeed
                                ? HTML.text(view.exclusion(alert)?.explanation ?? "")
                                : HTML.join([
                                    AlertWords.badges(alert, view: view),
                                    alert.sourceID.map { _ in HTML.join([" ", tag("span", [.class("badge source")], ["from a source"])]) } ?? .empty,
                                ]),
                        ] as [any HTMLContent]
                    }, empty: "None."))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): alerts", listContext, notice: Self.notice(request), content))
    }

    /// The alert: its fields, translations side by side, previews, publishing and sending.
    func alertPage(
        _ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert, translationProblems: [String] = [],
        status: Int = 200
    ) async -> Response {
        if alert.sourceID != nil {
            return await MirroredAlertConsolePages(console: console, services: services).mirroredAlertPage(request, context, alert)
        }
        let zone = await zone(regionID: alert.regionID)
        let translations: [AlertTranslation]
        let sendList: [AlertSend]
        let groups: [(locale: String?, count: Int)]
        let testCount: Int, allCount: Int
        let view: AlertFeedView
        do {
            view = try await AlertFeedView.read(alerts, regionID: alert.regionID, now: now)
            translations = try await alerts.translations(alertID: alert.id)
            sendList = try await alerts.sends.list(alertID: alert.id)
            groups = try await ConsoleStats.languageGroups(database: database, regionID: alert.regionID)
            testCount = try await alerts.sends.audienceCount(regionID: alert.regionID, audience: .test)
            allCount = try await alerts.sends.audienceCount(regionID: alert.regionID, audience: .all)
        } catch { return unavailable(error) }
        let session = context.session
        let role = session.user.role
        var content: [any HTMLContent] = [
            tag("p", [], [AlertWords.badges(alert, view: view)]),
            tag(
                "p", [.class("shown")],
                [
                    Self.shownSentence(alert, zone, now: now) + " ",
                    tag("span", [.class("hint")], [zoneHint(zone)]),
                ]),
            AlertWords.appFindings(alert, view: view, now: now),
        ]
        if ConsoleRules.may(role, .author), let findings = try? await administration(session).publishChecks(alert, askingOneBusAway: false) {
            content.append(Self.checksSection(alert, findings, session: session))
        }
        if !alert.scope.isEmpty {
            content.append(
                tag("p", [.class("scope")], ["About: \(AlertScope.describe(alert)). ", tag("span", [.class("hint")], [AlertScope.appsNote])]))
        }

        // Publishing: while a request to publish waits for a second person,
        // the page says so where the button was (asking again would only
        // point at the same request).
        let approvalRequests = try? await administration(session).approvals.list(alertID: alert.id)
        let publishWaiting = approvalRequests?.first { $0.action == .publish && ApprovalRules.isOpen($0, now: now) }
        if ConsoleRules.may(role, .author) {
            let publish: any HTMLContent =
                if alert.published {
                    tag("a", [.href("/admin/alerts/\(alert.id)/unpublish"), .class("button secondary")], ["Unpublish…"])
                } else if let publishWaiting {
                    tag(
                        "a", [.href("#approvals"), .class("button secondary")],
                        ["Publishing waits for approval (request \(publishWaiting.id))"])
                } else {
                    ConsoleLayout.postButton("Publish", "/admin/alerts/\(alert.id)/publish", session, style: "primary")
                }
            content.append(
                tag(
                    "div", [.class("actions")],
                    [
                        publish,
                        Self.deletable(alert, sent: !sendList.isEmpty)
                            ? tag("a", [.href("/admin/alerts/\(alert.id)/delete"), .class("button secondary")], ["Delete draft…"]) : HTML.empty,
                        alert.published && alert.startsAt <= now && !AlertFeedRules.hasEnded(alert, now: now)
                            ? ConsoleLayout.postButton("End now", "/admin/alerts/\(alert.id)/end", session, style: "secondary") : HTML.empty,
                    ]))
        }

        // Fields.
        content.append(tag("h2", [], ["Alert"]))
        if ConsoleRules.may(role, .author) {
            content.append(
                AlertFormConsolePages(console: console, services: services).alertFields(
                    session, action: "/admin/alerts/\(alert.id)", alert: alert, values: [:], zone: zone))
        } else {
            content.append(
                tag(
                    "dl", [],
                    [
                        tag("dt", [], ["Header"]), tag("dd", [], [alert.header]), tag("dt", [], ["Description"]), tag("dd", [], [alert.description]),
                        tag("dt", [], ["Cause / effect / severity"]),
                        tag("dd", [], ["\(alert.cause.name) / \(alert.effect.name) / \(alert.severity.name)"]),
                        tag("dt", [], ["Shown"]),
                        tag("dd", [], ["\(RegionTime.display(alert.startsAt, zone)) to \(AlertWords.shownUntil(alert, zone))"]),
                        tag("dt", [], ["Service affected"]),
                        tag(
                            "dd", [],
                            [
                                alert.impactStartsAt.map { "\(RegionTime.display($0, zone)) to \(RegionTime.display(alert.impactEndsAt, zone))" }
                                    ?? "The whole shown period"
                            ]),
                        tag("dt", [], ["Where"]), tag("dd", [], [AlertScope.describe(alert)]),
                    ]))
        }

        // What waits for a second person.
        if let requests = approvalRequests {
            content.append(ApprovalConsolePages(console: console, services: services).section(session, alert: alert, requests: requests, zone: zone))
        }

        // Sends scheduled for later.
        if let scheduled = try? await administration(session).schedules.list(alertID: alert.id) {
            content.append(
                AlertScheduleConsolePages(console: console, services: services).section(session, alert: alert, schedules: scheduled, zone: zone))
        }

        // Translations, side by side with the English.
        content.append(
            AlertTranslationConsolePages(console: console, services: services).translationSection(
                request, session, alert: alert, translations: translations, groups: groups, problems: translationProblems))

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
                            "\(AlertWords.humanize(alert.effect.name)) · \(AlertWords.humanize(alert.severity.name)) · from \(RegionTime.display(alert.startsAt, zone))"
                                + " to \(AlertWords.shownUntil(alert, zone))"
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
                        ? button("Send to everyone (\(AlertSendConsolePages.grouped(allCount)))…", .all, "secondary")
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
            remaining[send.id] = (try? await alerts.sends.audienceCount(regionID: alert.regionID, audience: send.audience, after: send.cursor)) ?? 0
        }
        content.append(sendPages.sendsTable(alert: alert, sendList, remaining: remaining, session: session, zone: zone))
        return ConsoleLayout.respond(status, ConsoleLayout.page("Alert \(alert.id): \(alert.header)", context, notice: Self.notice(request), content))
    }

    /// "Before publishing": what the publish-time checks find, errors first;
    /// the warnings not yet acknowledged with one button for all of them.
    static func checksSection(_ alert: ServiceAlert, _ findings: [AlertCheckFinding], session: ConsoleStore.Session) -> HTML {
        guard !findings.isEmpty else { return .empty }
        let errors = findings.filter { $0.level == .error }
        let open = findings.filter { $0.level == .warning && !alert.acknowledgedChecks.contains($0.code) }
        let read = findings.filter { $0.level == .warning && alert.acknowledgedChecks.contains($0.code) }
        var items: [any HTMLContent] = errors.map { tag("li", [.class("error")], [tag("strong", [], ["Refuses publishing: "]), $0.message]) }
        items += open.map { tag("li", [], [$0.message, " ", tag("code", [], [$0.code])]) }
        items += read.map { tag("li", [.class("hint")], ["Acknowledged: ", $0.message]) }
        return tag(
            "div", [.class("checks")],
            [
                tag("h2", [], [alert.published ? "Checks" : "Before publishing"]),
                tag("ul", [], items),
                open.isEmpty
                    ? HTML.empty
                    : ConsoleLayout.postButton(
                        "Acknowledge these warnings", "/admin/alerts/\(alert.id)/acknowledge", session,
                        hidden: [("codes", open.map(\.code).joined(separator: " "))]),
            ])
    }
}
