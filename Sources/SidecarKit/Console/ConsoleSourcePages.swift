import Core
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer

/// Alert sources in the console: each source's settings and last poll, the
/// alerts waiting for review (approve pushes once; dismiss), adding one and
/// removing one. Secret headers and link-local addresses stay CLI-only.
extension ConsoleRoutes {
    var sourceRoutes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/sources", .read) { request, context in await sourcesPage(request, context) },
            regionPage("POST", "/admin/regions/:region/sources", .manageRegion) { request, context in await addSource(request, context) },
            regionPage("POST", "/admin/regions/:region/sources/review", .sendToTestDevices) { request, context in
                await decideReview(request, context)
            },
            regionPage("GET", "/admin/regions/:region/sources/remove", .manageRegion) { request, context in
                await confirmRemoveSource(request, context)
            },
            regionPage("POST", "/admin/regions/:region/sources/remove", .manageRegion) { request, context in await removeSource(request, context) },
        ]
    }

    func sourceAdministration(_ session: ConsoleStore.Session) -> AlertSourceAdministration {
        sources.acting(as: "user:" + session.user.email)
    }

    func sourcesPage(_ request: Request, _ context: ConsoleLayout.Context, values: [String: String] = [:], problems: [String] = [], status: Int = 200)
        async -> Response
    {
        guard let region = context.region else { return notFound() }
        var pageContext = context
        pageContext.section = .sources
        let zone = await zone(regionID: region.id)
        let user = context.session.user
        let list: [(AlertSource, AlertSourceStatus)]
        let waiting: [(state: SourceAlertState, header: String)]
        do {
            list = try await sources.store.sources(regionID: region.id)
            waiting = try await sources.store.reviews(regionID: region.id)
        } catch { return unavailable(error) }
        let byID = Dictionary(list.map { ($0.0.id, $0.0) }, uniquingKeysWith: { first, _ in first })
        let reviewRows: [[any HTMLContent]] = waiting.map { state, header in
            let source = byID[state.sourceID]
            let mayApprove = source.map { ConsoleRules.may(user.role, $0.audience == .all ? .sendToEveryone : .sendToTestDevices) } ?? false
            let hidden = [(name: "source", value: String(state.sourceID)), (name: "entity", value: state.entityID)]
            return [
                tag("a", [.href("/admin/alerts/\(state.alertID)")], [header]), "source \(state.sourceID)", state.reason ?? "",
                tag(
                    "div", [.class("actions")],
                    [
                        mayApprove
                            ? ConsoleLayout.postButton(
                                source?.audience == .test ? "Approve: push to test devices" : "Approve: push to everyone",
                                "/admin/regions/\(region.id)/sources/review", context.session, style: "primary",
                                hidden: hidden + [(name: "decision", value: "approve")])
                            : tag("span", [.class("hint")], ["An admin approves pushes to everyone"]),
                        ConsoleRules.may(user.role, .author)
                            ? ConsoleLayout.postButton(
                                "Dismiss", "/admin/regions/\(region.id)/sources/review", context.session,
                                hidden: hidden + [(name: "decision", value: "dismiss")]) : HTML.empty,
                    ]),
            ]
        }
        let cards: [any HTMLContent] = list.map { source, status in
            tag(
                "li", [.class("card")],
                [
                    tag("h3", [], ["Source \(source.id): ", tag("code", [], [source.url])]),
                    tag(
                        "dl", [.class("facts")],
                        Self.facts(
                            [
                                ("Status", SourceDescription.state(status)),
                                ("Last poll", RegionTime.display(seconds: status.lastPollAt, zone)),
                                ("Last success", RegionTime.display(seconds: status.lastSuccessAt, zone)),
                                ("Mode", source.mode == .mirror ? "mirror: in this region's feed" : "push-only: not in the feed"),
                                ("Pushes", Self.pushRule(source)),
                                ("Alerts", "\(status.alertCount) at the last poll; \(status.pushes) pushed"),
                                (
                                    "Polls",
                                    "\(status.polls), \(status.notModified) answered 304, \(status.failedPolls) failed, every \(source.intervalSeconds) s"
                                ),
                                ("ETag", status.etag ?? "—"),
                                ("Last error", status.lastError ?? "—"),
                            ] + (status.heldReason.map { [("Held", $0)] } ?? []) + status.problems.prefix(5).map { ("Problem", $0) })),
                    ConsoleRules.may(user.role, .manageRegion)
                        ? tag(
                            "a", [.href("/admin/regions/\(region.id)/sources/remove?source=\(source.id)"), .class("button secondary")], ["Remove…"])
                        : HTML.empty,
                ])
        }
        var content: [any HTMLContent] = [
            tag(
                "p", [],
                ["Alerts from the GTFS-realtime feeds this agency already publishes: mirrored into the feed, and pushed by each source's rules."]),
            tag("p", [.class("hint")], ["Times " + zoneHint(zone)]),
            ConsoleLayout.problems(problems),
            tag("h2", [], ["Waiting for review"]),
            ConsoleLayout.table(
                caption: "New or changed alerts a source holds until an editor decides", headers: ["Alert", "Source", "Why", ""],
                rows: reviewRows, empty: "Nothing is waiting."),
            tag("h2", [], ["Sources"]),
            list.isEmpty
                ? tag("p", [], ["No source yet."]) : tag("ul", [.class("grid"), Attribute("role", "list")], cards),
        ]
        if ConsoleRules.may(user.role, .manageRegion) { content.append(addSourceForm(region: region, context: context, values: values)) }
        return ConsoleLayout.respond(
            status, ConsoleLayout.page("\(region.name): alert sources", pageContext, notice: Self.notice(request), content))
    }

    static func facts(_ pairs: [(String, String)]) -> [any HTMLContent] {
        pairs.flatMap { label, value -> [any HTMLContent] in [tag("dt", [], [label]), tag("dd", [], [value])] }
    }

    static func pushRule(_ source: AlertSource) -> String {
        switch source.push {
        case .off: return "off"
        case .auto, .review:
            return (source.push == .auto ? "at once" : "after review") + " to \(source.audience == .all ? "everyone" : "test devices"); "
                + "\(source.minSeverity.name) or more; \(source.scope == .any ? "any scope" : source.scope == .route ? "agency- and route-wide" : "agency-wide")"
                + (source.effects.isEmpty ? "" : "; effects \(source.effects.map(\.name).joined(separator: ", "))")
                + (source.quietHours.map { "; quiet \($0.text)" } ?? "")
        }
    }

    func addSourceForm(region: Region, context: ConsoleLayout.Context, values: [String: String]) -> HTML {
        tag(
            "section", [],
            [
                tag("h2", [], ["Add a source"]),
                ConsoleLayout.form(
                    "/admin/regions/\(region.id)/sources", context.session,
                    [
                        ConsoleLayout.field(
                            "Feed URL", name: "url", value: values["url"], type: "url", required: true,
                            hint:
                                "A GTFS-realtime Alerts feed (http or https). Feeds that need a key: add them with 'sidecar source add --header-file' on the server.",
                            maxLength: FieldLimits.url),
                        ConsoleLayout.select(
                            "Mode", name: "mode", options: [("mirror", "Mirror: show its alerts in this region's feed"), ("push-only", "Push only")],
                            selected: values["mode"] ?? "mirror"),
                        ConsoleLayout.select(
                            "Pushes", name: "push",
                            options: [("review", "After an editor approves"), ("auto", "At once, by the rules"), ("off", "Never")],
                            selected: values["push"] ?? "review"),
                        ConsoleLayout.select(
                            "Least severity that pushes", name: "min_severity",
                            options: SeverityLevel.allCases.reversed().map { ($0.name, $0.name) }, selected: values["min_severity"] ?? "WARNING"),
                        ConsoleLayout.select(
                            "Scope that pushes", name: "scope",
                            options: [("route", "Agency- and route-wide"), ("agency", "Agency-wide only"), ("any", "Any, single stops too")],
                            selected: values["scope"] ?? "route"),
                        ConsoleLayout.select(
                            "Audience", name: "audience", options: [("all", "Everyone"), ("test", "Test devices only (a trial)")],
                            selected: values["audience"] ?? "all"),
                        ConsoleLayout.field(
                            "Quiet hours", name: "quiet_hours", value: values["quiet_hours"],
                            hint: "Such as 22:00-06:30, in the region's zone; empty for none.",
                            maxLength: 11),
                        ConsoleLayout.field(
                            "Poll every (seconds)", name: "interval", value: values["interval"] ?? "60", type: "number", maxLength: 5),
                        tag(
                            "div", [.class("actions")],
                            [tag("button", [Attribute("type", "submit"), Attribute("data-once", "true")], ["Add source"])]),
                    ]),
            ])
    }

    func addSource(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        var fields = AdminRoutes.fields(request, ["url", "mode", "push", "min_severity", "scope", "audience", "interval"])
        if let quiet = request.parameters["quiet_hours"]?.trimmingWhitespace(), !quiet.isEmpty { fields["quiet_hours"] = quiet }
        do {
            _ = try await sourceAdministration(context.session).add(regionID: region.id, fields: fields)
            return .seeOther("/admin/regions/\(region.id)/sources?done=source-added")
        } catch let error as AdministrationError {
            return await sourcesPage(request, context, values: fields, problems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }

    /// Approve (push once) or dismiss; a second click, a refresh or a
    /// replayed form finds the alert decided and says so.
    func decideReview(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region, let sourceID = request.parameters["source"].flatMap({ Int64($0) }),
            let entity = request.parameters["entity"], let decision = request.parameters["decision"], ["approve", "dismiss"].contains(decision)
        else { return notFound() }
        let back = "/admin/regions/\(region.id)/sources"
        do {
            guard let (source, _) = try await sources.store.source(id: sourceID), source.regionID == region.id else { return notFound() }
            let approve = decision == "approve"
            let needed: ConsoleAction = approve ? (source.audience == .all ? .sendToEveryone : .sendToTestDevices) : .author
            guard ConsoleRules.may(context.session.user.role, needed) else {
                return ConsoleLayout.errorPage(403, "Not allowed", "Your role cannot do this here.")
            }
            _ = try await sourceAdministration(context.session).decide(id: sourceID, entityID: entity, approve: approve)
            return .seeOther(back + "?done=" + (approve ? "source-approved" : "source-dismissed"))
        } catch is AdministrationError {
            return .seeOther(back + "?done=source-decided")
        } catch { return unavailable(error) }
    }

    func confirmRemoveSource(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region, let id = request.parameters["source"].flatMap({ Int64($0) }) else { return notFound() }
        do {
            guard let (source, status) = try await sources.store.source(id: id), source.regionID == region.id else { return notFound() }
            return ConsoleLayout.respond(
                200,
                ConsoleLayout.page(
                    "Remove source \(source.id)?", context,
                    [
                        tag(
                            "p", [],
                            [
                                "The \(status.alertCount) alerts it brought leave the feed at once and are deleted with their sends. ",
                                "Notifications already delivered stay on riders' phones. The feed at ", tag("code", [], [source.url]),
                                " is not polled again.",
                            ]),
                        ConsoleLayout.form(
                            "/admin/regions/\(region.id)/sources/remove", context.session,
                            [
                                tag("input", [Attribute("type", "hidden"), Attribute("name", "source"), Attribute("value", String(source.id))]),
                                tag(
                                    "div", [.class("actions")],
                                    [
                                        tag(
                                            "button", [Attribute("type", "submit"), .class("danger"), Attribute("data-once", "true")],
                                            ["Remove source"]),
                                        tag("a", [.href("/admin/regions/\(region.id)/sources")], ["Cancel"]),
                                    ]),
                            ]),
                    ]))
        } catch { return unavailable(error) }
    }

    func removeSource(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region, let id = request.parameters["source"].flatMap({ Int64($0) }) else { return notFound() }
        do {
            // Removed already (a double click or a refresh): the list says so.
            guard let (source, _) = try await sources.store.source(id: id), source.regionID == region.id else {
                return .seeOther("/admin/regions/\(region.id)/sources?done=source-removed")
            }
            try await sourceAdministration(context.session).remove(id: source.id)
            return .seeOther("/admin/regions/\(region.id)/sources?done=source-removed")
        } catch { return unavailable(error) }
    }
}
