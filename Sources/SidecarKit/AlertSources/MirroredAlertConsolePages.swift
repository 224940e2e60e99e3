import Core
import GTFSRealtime
import HTML
import HTTPServer

/// An alert mirrored from an alert source, in the console: where it comes
/// from, what riders get of it, and only what an editor can do with it
/// here (dismiss it from the feed, push it, change the source's rules).
/// Its text changes at the agency's feed, so the page offers no editing
/// and no publishing, and the authoring routes refuse it in these words.
struct MirroredAlertConsolePages: AlertPages {
    let console: ConsoleRoutes
    let services: FeatureContext

    var routes: [Route] {
        [alertRoute("POST", "/admin/alerts/:alert/feed", .author) { request, context, alert in await setInFeed(request, context, alert) }]
    }

    /// What an authoring page answers for a mirrored alert.
    static func mirroredRefusal(_ alert: ServiceAlert) -> Response {
        ConsoleLayout.errorPage(
            409, "This alert comes from an alert source",
            "Its text, times and translations change when the agency's feed changes, so they cannot be edited here. "
                + "On the alert's page you can dismiss it from the feed or push it; the source's page changes how its alerts push.")
    }

    func mirroredAlertPage(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let zone = await zone(regionID: alert.regionID)
        let role = context.session.user.role
        let source: AlertSource?
        let state: SourceAlertState?
        let view: AlertFeedView
        let translations: [AlertTranslation]
        let sendList: [AlertSend]
        let message: GTFSRealtime.Alert?
        do {
            source = try await alert.sourceID.asyncFlatMap { try await sources.store.source(id: $0)?.0 }
            state = try await sources.store.state(alertID: alert.id)
            view = try await AlertFeedView.read(alerts, regionID: alert.regionID, now: now)
            translations = try await alerts.translations(alertID: alert.id)
            sendList = try await alerts.sends.list(alertID: alert.id)
            message = try await alerts.mirroredMessage(alertID: alert.id).flatMap(AlertSourceMapping.decoded)
        } catch { return unavailable(error) }
        let sourceLink = "/admin/regions/\(alert.regionID)/sources#source-\(alert.sourceID ?? 0)"
        var content: [any HTMLContent] = [
            tag("p", [], [AlertWords.badges(alert, view: view), " ", tag("span", [.class("badge source")], ["from a source"])]),
            tag(
                "p", [],
                [
                    "Mirrored from ", tag("a", [.href(sourceLink)], ["source \(alert.sourceID ?? 0)"]),
                    source.map { HTML.join([" (", tag("code", [], [$0.url]), ")"]) } ?? .empty,
                    ", where its id is ", tag("code", [], [alert.sourceEntity ?? ""]),
                    ". It changes when the agency's feed changes, and leaves the feed when the feed drops it.",
                ]),
        ]
        if alert.published, let exclusion = view.exclusion(alert), exclusion != .ended {
            content.append(tag("p", [.class("problems")], ["Not in the feed riders download: \(exclusion.explanation)."]))
        }
        content.append(AlertWords.appFindings(alert, view: view, now: now))
        content.append(tag("h2", [], ["What riders get"]))
        var facts: [(String, String)] = [
            ("Shown", "\(RegionTime.display(alert.startsAt, zone)) until \(AlertWords.shownUntil(alert, zone))"),
            (
                "Cause / effect / severity",
                "\(AlertWords.humanize(alert.cause.name)) / \(AlertWords.humanize(alert.effect.name)) / \(AlertWords.humanize(alert.severity.name))"
            ),
            ("Link", alert.url ?? "none"),
            ("About", Self.scopeDescription(message?.informedEntities ?? [])),
        ]
        if let state { facts.append(("First seen", RegionTime.display(state.firstSeenAt, zone))) }
        content.append(tag("dl", [.class("facts")], SourceConsolePages.facts(facts)))
        content.append(tag("p", [.class("hint")], [timesHint(zone)]))
        content.append(
            ConsoleLayout.table(
                caption: "The alert's text in each language the source gives", headers: ["Language", "Header", "Description"],
                rows: [["English (and phones without their language)", alert.header, alert.description] as [any HTMLContent]]
                    + translations.map { [AlertWords.languageName($0.language), $0.header, $0.description] as [any HTMLContent] }))

        // Pushes: what the source's rules decided, and what an editor may do.
        content.append(tag("h2", [.id("sends")], ["Pushes"]))
        content.append(tag("p", [], [Self.pushState(state, zone: zone)]))
        var actions: [any HTMLContent] = []
        if let state, state.decision == .review, let source, ConsoleRules.may(role, .author) {
            actions.append(
                tag(
                    "a",
                    [
                        .href("/admin/alerts/\(alert.id)/send?audience=\(source.audience.rawValue)&review=\(PercentEncoding.encode(state.entityID))"),
                        .class("button"),
                    ], ["Approve and push…"]))
        } else if ConsoleRules.may(role, .sendToTestDevices) && !sendList.contains(where: { $0.status == "running" }) {
            actions.append(
                tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=test"), .class("button secondary")], ["Push to test devices…"]))
            if ConsoleRules.may(role, .sendToEveryone) && alert.published {
                actions.append(tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=all"), .class("button secondary")], ["Push to everyone…"]))
            }
        }
        if let state, ConsoleRules.may(role, .author), source?.mode == .mirror, alert.published {
            actions.append(
                ConsoleLayout.postButton(
                    state.hidden ? "Show it in the feed again" : "Dismiss from the feed", "/admin/alerts/\(alert.id)/feed", context.session,
                    style: state.hidden ? "secondary" : "danger", hidden: [(name: "hidden", value: state.hidden ? "false" : "true")]))
        }
        if ConsoleRules.may(role, .manageRegion), let sourceID = alert.sourceID {
            actions.append(
                tag(
                    "a", [.href("/admin/regions/\(alert.regionID)/sources/edit?source=\(sourceID)"), .class("button secondary")],
                    ["Change the source's rules…"]))
        }
        if !actions.isEmpty { content.append(tag("div", [.class("actions")], actions)) }
        if !ConsoleRules.may(role, .sendToEveryone) && ConsoleRules.may(role, .sendToTestDevices) {
            content.append(tag("p", [.class("hint")], ["Pushing to everyone needs an admin; approving a push the source holds for review does not."]))
        }
        var remaining: [Int64: Int] = [:]
        for send in sendList where send.status == "failed" {
            remaining[send.id] = (try? await alerts.sends.audienceCount(regionID: alert.regionID, audience: send.audience, after: send.cursor)) ?? 0
        }
        content.append(sendPages.sendsTable(alert: alert, sendList, remaining: remaining, session: context.session, zone: zone))
        return ConsoleLayout.respond(200, ConsoleLayout.page("Alert \(alert.id): \(alert.header)", context, notice: Self.notice(request), content))
    }

    /// Dismisses a mirrored alert from the feed, or shows it again; a
    /// repeated click finds it already so and says nothing changed.
    func setInFeed(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        guard let sourceID = alert.sourceID, let entity = alert.sourceEntity else { return Self.mirroredRefusal(alert) }
        let hidden = request.parameters["hidden"] == "true"
        do {
            _ = try await sourceAdministration(context.session).setHidden(id: sourceID, entityID: entity, hidden: hidden)
            return .seeOther("/admin/alerts/\(alert.id)?done=" + (hidden ? "dismissed-from-feed" : "back-in-feed"))
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(404, "Not changed", error.messages.joined(separator: " "))
        } catch { return unavailable(error) }
    }

    /// What the source's rules decided for the alert's push, in words.
    static func pushState(_ state: SourceAlertState?, zone: ZoneInfo) -> String {
        guard let state else { return "The source has not decided anything for it yet." }
        switch state.decision {
        case .baseline: return "Not pushed: it was already in the source's feed when the source was added."
        case .skipped: return "Not pushed: \(state.reason ?? "the source's rules said not to")."
        case .review: return "Waiting for review: \(state.reason ?? "an editor decides whether it pushes")."
        case .due: return "Its push is starting."
        case .deferred:
            return "Waiting until \(RegionTime.display(state.notBefore, zone)): \(state.reason ?? "quiet hours")."
        case .pushed: return "Pushed \(RegionTime.display(state.pushedAt, zone)) (send \(state.sendID.map(String.init) ?? "-"))."
        case .dismissed: return "Not pushed: an editor dismissed its review."
        }
    }

    /// What a mirrored alert is about, as the agency's selectors say.
    static func scopeDescription(_ selectors: [EntitySelector]) -> String {
        let routes = Set(selectors.compactMap(\.routeID)), stops = Set(selectors.compactMap(\.stopID))
        let trips = Set(selectors.compactMap { $0.trip?.tripID })
        var parts: [String] = []
        if !routes.isEmpty { parts.append("route\(routes.count == 1 ? "" : "s") " + routes.sorted().prefix(10).joined(separator: ", ")) }
        if !stops.isEmpty { parts.append("stop\(stops.count == 1 ? "" : "s") " + stops.sorted().prefix(10).joined(separator: ", ")) }
        if !trips.isEmpty { parts.append("trip\(trips.count == 1 ? "" : "s") " + trips.sorted().prefix(10).joined(separator: ", ")) }
        guard !parts.isEmpty else { return "The whole agency" }
        return parts.joined(separator: "; ") + " (both apps show it as agency-wide: they read only the agency)"
    }
}

extension MirroredAlertConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, services: context) }
}
