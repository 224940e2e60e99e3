import Core
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer

/// Alert sources in the console: each source's settings and last poll, the
/// alerts waiting for review (approve pushes once; dismiss), adding one and
/// removing one. Secret headers and link-local addresses stay CLI-only.
struct SourceConsolePages: ConsolePages {
    let console: ConsoleRoutes
    /// The sources' management (its review queue is also in every region
    /// page's navigation, which the kit reads from the store).
    let sources: AlertSourceAdministration

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/sources", .read) { request, context in await sourcesPage(request, context) },
            regionPage("POST", "/admin/regions/:region/sources", .manageRegion) { request, context in await addSource(request, context) },
            regionPage("POST", "/admin/regions/:region/sources/review", .author) { request, context in await decideReview(request, context) },
            regionPage("GET", "/admin/regions/:region/sources/edit", .manageRegion) { request, context in await editSourcePage(request, context) },
            regionPage("POST", "/admin/regions/:region/sources/edit", .manageRegion) { request, context in await saveSource(request, context) },
            regionPage("GET", "/admin/regions/:region/sources/remove", .manageRegion) { request, context in
                await confirmRemoveSource(request, context)
            },
            regionPage("POST", "/admin/regions/:region/sources/remove", .manageRegion) { request, context in await removeSource(request, context) },
        ]
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
        // Approving opens the same confirmation as any send (who gets it, in
        // which language); an editor may approve, as the source's
        // "After an editor approves" says.
        let reviewRows: [[any HTMLContent]] = waiting.map { state, header in
            let source = byID[state.sourceID]
            let hidden = [(name: "source", value: String(state.sourceID)), (name: "entity", value: state.entityID)]
            let audience = source?.audience ?? .all
            return [
                tag("a", [.href("/admin/alerts/\(state.alertID)")], [header]), "source \(state.sourceID)", state.reason ?? "",
                ConsoleLayout.age(seconds: now.seconds(since: state.changedAt)),
                tag(
                    "div", [.class("actions")],
                    ConsoleRules.may(user.role, .author)
                        ? [
                            tag(
                                "a",
                                [
                                    .href(
                                        "/admin/alerts/\(state.alertID)/send?audience=\(audience.rawValue)&review=\(PercentEncoding.encode(state.entityID))"
                                    ),
                                    .class("button"),
                                ], [audience == .test ? "Approve: push to test devices…" : "Approve: push to everyone…"]),
                            ConsoleLayout.postButton(
                                "Dismiss", "/admin/regions/\(region.id)/sources/review", context.session,
                                hidden: hidden + [(name: "decision", value: "dismiss")]),
                        ] : [tag("span", [.class("hint")], ["An editor or an admin decides"])]),
            ]
        }
        let cards: [any HTMLContent] = list.map { source, status in
            tag(
                "li", [.class("card"), .id("source-\(source.id)")],
                [
                    tag("h3", [], ["Source \(source.id): ", tag("code", [], [source.url])]),
                    tag(
                        "dl", [.class("facts")],
                        Self.facts(
                            [
                                ("Status", SourceDescription.state(status)),
                                ("Last poll", RegionTime.display(status.lastPollAt, zone)),
                                ("Last success", RegionTime.display(status.lastSuccessAt, zone)),
                                ("Mode", source.mode == .mirror ? "mirror: in this region's feed" : "push-only: not in the feed"),
                                ("Pushes", Self.pushRule(source)),
                                ("May reach", Self.reach(source)),
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
                            "div", [.class("actions")],
                            [
                                tag(
                                    "a", [.href("/admin/regions/\(region.id)/sources/edit?source=\(source.id)"), .class("button secondary")],
                                    ["Edit…"]),
                                tag(
                                    "a", [.href("/admin/regions/\(region.id)/sources/remove?source=\(source.id)"), .class("button secondary")],
                                    ["Remove…"]),
                            ])
                        : HTML.empty,
                ])
        }
        var content: [any HTMLContent] = [
            tag(
                "p", [],
                ["Alerts from the GTFS-realtime feeds this agency already publishes: mirrored into the feed, and pushed by each source's rules."]),
            tag("p", [.class("hint")], [timesHint(zone)]),
            ConsoleLayout.problems(ConsoleFieldErrors.source(problems).map(\.text)),
            tag("h2", [], ["Waiting for review"]),
            ConsoleLayout.table(
                caption: "New or changed alerts a source holds until an editor decides", headers: ["Alert", "Source", "Why", "Waiting", ""],
                rows: reviewRows, empty: "Nothing is waiting."),
            tag("h2", [], ["Sources"]),
            list.isEmpty
                ? tag("p", [], ["No source yet."]) : tag("ul", [.class("grid"), Attribute("role", "list")], cards),
        ]
        if ConsoleRules.may(user.role, .manageRegion) {
            content.append(
                addSourceForm(
                    region: region, context: context, values: values, errors: ConsoleFieldErrors.byField(ConsoleFieldErrors.source(problems))))
        }
        return ConsoleLayout.respond(
            status, ConsoleLayout.page("\(region.name): alert sources", pageContext, notice: Self.notice(request), content))
    }

    static func facts(_ pairs: [(String, String)]) -> [any HTMLContent] {
        pairs.flatMap { label, value -> [any HTMLContent] in [tag("dt", [], [label]), tag("dd", [], [value])] }
    }

    /// Where the source may connect, as allowed.
    static func reach(_ source: AlertSource) -> String {
        "the internet"
            + (source.allowPrivate ? "; loopback, private and CGNAT addresses (allowed for this on-premises feed)" : "")
            + (source.allowLinkLocal ? "; link-local and cloud metadata addresses (allowed)" : "")
    }

    static func pushRule(_ source: AlertSource) -> String {
        switch source.push {
        case .off: return "off"
        case .auto, .review:
            return (source.push == .auto ? "at once" : "after review") + " to \(source.audience == .all ? "everyone" : "test devices"); "
                + "\(source.minSeverity.name) or more; \(source.scope == .any ? "any scope" : source.scope == .route ? "agency- and route-wide" : "agency-wide")"
                + (source.effects.isEmpty ? "" : "; effects \(source.effects.map(\.name).joined(separator: ", "))")
                + (source.quietHours.map { "; quiet \($0.text)" } ?? "") + "; at most \(source.pushesPerHour) an hour"
        }
    }

    func addSourceForm(
        region: Region, context: ConsoleLayout.Context, values: [String: String], editing: AlertSource? = nil, errors: [String: String] = [:]
    ) -> HTML {
        let admin = ConsoleRules.may(context.session.user.role, .manageKeys)
        return tag(
            "section", [],
            [
                tag("h2", [], [editing.map { "Source \($0.id)" } ?? "Add a source"]),
                ConsoleLayout.form(
                    editing == nil ? "/admin/regions/\(region.id)/sources" : "/admin/regions/\(region.id)/sources/edit", context.session,
                    (editing.map { [tag("input", [Attribute("type", "hidden"), Attribute("name", "source"), Attribute("value", String($0.id))])] }
                        ?? []) + [
                            ConsoleLayout.field(
                                "Feed URL", name: "url", value: values["url"], type: "url", required: true,
                                hint:
                                    "A GTFS-realtime Alerts feed (http or https). A feed that needs a key is added by an operator on the server, where the key stays in a file.",
                                maxLength: FieldLimits.url, error: errors["url"]),
                            ConsoleLayout.select(
                                "Mode", name: "mode",
                                options: [("mirror", "Mirror: show its alerts in this region's feed"), ("push-only", "Push only")],
                                selected: values["mode"] ?? "mirror", error: errors["mode"]),
                            ConsoleLayout.select(
                                "Pushes", name: "push",
                                options: [("review", "After an editor approves"), ("auto", "At once, by the rules"), ("off", "Never")],
                                selected: values["push"] ?? "review", error: errors["push"]),
                            ConsoleLayout.select(
                                "Least severity that pushes", name: "min_severity",
                                options: SeverityLevel.allCases.reversed().map { ($0.name, $0.name) }, selected: values["min_severity"] ?? "WARNING",
                                error: errors["min_severity"]),
                            ConsoleLayout.select(
                                "Scope that pushes", name: "scope",
                                options: [("route", "Agency- and route-wide"), ("agency", "Agency-wide only"), ("any", "Any, single stops too")],
                                selected: values["scope"] ?? "route", error: errors["scope"]),
                            ConsoleLayout.select(
                                "Audience", name: "audience", options: [("all", "Everyone"), ("test", "Test devices only (a trial)")],
                                selected: values["audience"] ?? "all", error: errors["audience"]),
                            ConsoleLayout.field(
                                "Quiet hours", name: "quiet_hours", value: values["quiet_hours"],
                                hint: "Such as 22:00-06:30, in the region's zone; empty for none.",
                                maxLength: 11, error: errors["quiet_hours"]),
                            ConsoleLayout.field(
                                "Poll every (seconds)", name: "interval", value: values["interval"] ?? "60", type: "number", maxLength: 5,
                                error: errors["interval"]),
                            ConsoleLayout.field(
                                "Pushes an hour at most", name: "pushes_per_hour",
                                value: values["pushes_per_hour"] ?? "\(AlertSourceRules.defaultPushesPerHour)",
                                type: "number",
                                hint:
                                    "Beyond it, pushes wait for review. All of the region's sources together push a device at most \(AlertSourceRules.pushesPerDevicePerHour) times an hour.",
                                maxLength: 2, error: errors["pushes_per_hour"]),
                            admin
                                ? ConsoleLayout.checkbox(
                                    "Allow private addresses (an on-premises feed: loopback, 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10)",
                                    name: "allow_private", checked: values["allow_private"] == "true", error: errors["allow_private"])
                                : HTML.empty,
                            tag(
                                "div", [.class("actions")],
                                [
                                    tag(
                                        "button", [Attribute("type", "submit"), Attribute("data-once", "true")],
                                        [editing == nil ? "Add source" : "Save source"]),
                                    editing == nil ? HTML.empty : tag("a", [.href("/admin/regions/\(region.id)/sources")], ["Cancel"]),
                                ]),
                        ]),
            ])
    }

    /// The fields a source form submits, by the admin API's names.
    func sourceFields(_ request: Request, admin: Bool) -> [String: String] {
        var fields = AdminAPI.fields(request, ["url", "mode", "push", "min_severity", "scope", "audience", "interval", "pushes_per_hour"])
        fields["quiet_hours"] = request.parameters["quiet_hours"]?.trimmingWhitespace() ?? ""
        // A checkbox is absent when unticked: only an admin's form carries it.
        if admin { fields["allow_private"] = request.parameters["allow_private"] == "true" ? "true" : "false" }
        return fields
    }

    func editSourcePage(
        _ request: Request, _ context: ConsoleLayout.Context, values: [String: String]? = nil, problems: [String] = [], status: Int = 200
    )
        async -> Response
    {
        guard let region = context.region, let id = request.parameters["source"].flatMap({ Int64($0) }) else { return notFound() }
        let found: (AlertSource, AlertSourceStatus)?
        do { found = try await sources.store.source(id: id) } catch { return unavailable(error) }
        guard let (source, _) = found, source.regionID == region.id else { return notFound() }
        var pageContext = context
        pageContext.section = .sources
        let current: [String: String] = [
            "url": source.url, "mode": source.mode.rawValue, "push": source.push.rawValue, "min_severity": source.minSeverity.name,
            "scope": source.scope.rawValue, "audience": source.audience.rawValue, "quiet_hours": source.quietHours?.text ?? "",
            "interval": String(source.intervalSeconds), "pushes_per_hour": String(source.pushesPerHour),
            "allow_private": source.allowPrivate ? "true" : "false",
        ]
        let placed = ConsoleFieldErrors.source(problems)
        var content: [any HTMLContent] = [ConsoleLayout.problems(placed.map(\.text))]
        if !source.headers.isEmpty {
            content.append(
                tag(
                    "p", [.class("hint")],
                    ["It sends secret headers (\(source.headers.map(\.name).joined(separator: ", "))), set on the server. A new feed URL drops them."]
                ))
        }
        content.append(
            addSourceForm(
                region: region, context: pageContext, values: values ?? current, editing: source, errors: ConsoleFieldErrors.byField(placed)))
        return ConsoleLayout.respond(status, ConsoleLayout.page("Edit source \(source.id)", pageContext, content))
    }

    func saveSource(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region, let id = request.parameters["source"].flatMap({ Int64($0) }) else { return notFound() }
        let fields = sourceFields(request, admin: ConsoleRules.may(context.session.user.role, .manageKeys))
        do {
            guard let (source, _) = try await sources.store.source(id: id), source.regionID == region.id else { return notFound() }
            _ = try await sources.acting(as: "user:" + context.session.user.email).edit(id: id, fields: fields, naming: .console)
            return .seeOther("/admin/regions/\(region.id)/sources?done=source-saved#source-\(id)")
        } catch let error as AdministrationError {
            return await editSourcePage(request, context, values: fields, problems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }

    func addSource(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        let fields = sourceFields(request, admin: ConsoleRules.may(context.session.user.role, .manageKeys))
        do {
            _ = try await sources.acting(as: "user:" + context.session.user.email).add(regionID: region.id, fields: fields, naming: .console)
            return .seeOther("/admin/regions/\(region.id)/sources?done=source-added")
        } catch let error as AdministrationError {
            return await sourcesPage(request, context, values: fields, problems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }

    /// Dismiss a review (approving goes through the send confirmation); a
    /// second click, a refresh or a replayed form finds it decided and says so.
    func decideReview(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region, let sourceID = request.parameters["source"].flatMap({ Int64($0) }),
            let entity = request.parameters["entity"], request.parameters["decision"] == "dismiss"
        else { return notFound() }
        let back = "/admin/regions/\(region.id)/sources"
        do {
            guard let (source, _) = try await sources.store.source(id: sourceID), source.regionID == region.id else { return notFound() }
            _ = try await sources.acting(as: "user:" + context.session.user.email).decide(id: sourceID, entityID: entity, approve: false)
            return .seeOther(back + "?done=source-dismissed")
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
                                ConsoleLayout.confirmActions("Remove source", cancel: "/admin/regions/\(region.id)/sources"),
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
            try await sources.acting(as: "user:" + context.session.user.email).remove(id: source.id)
            return .seeOther("/admin/regions/\(region.id)/sources?done=source-removed")
        } catch { return unavailable(error) }
    }
}

extension SourceConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, sources: context.alertSources().administration) }
}
