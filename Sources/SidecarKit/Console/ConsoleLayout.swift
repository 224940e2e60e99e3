import HTML
import HTTPServer

/// The console's page chrome and the components every page shares, built
/// with the escaping `HTML` builder only.
enum ConsoleLayout {
    /// Headers on every console answer: no framing, no sniffing, no caching
    /// of pages that show riders' data, scripts and styles from this site only.
    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    static func respond(_ status: Int, _ page: HTML) -> Response { HTMLResponse.page(status, page, headers: securityHeaders) }

    /// Where the signed-in user is, for the navigation.
    struct Context: Sendable {
        var session: ConsoleStore.Session
        /// The regions this user may see.
        var regions: [Region]
        var region: Region?
        var section: Section
        /// Source pushes of the region waiting for an editor, and since when the oldest waits.
        var reviewsWaiting = 0
        var oldestReviewSince: EpochSeconds? = nil
        var now: EpochSeconds = 0
        /// Devices registered in each region (the region picker says how
        /// many each would reach); nil when not counted.
        var deviceCounts: [Int: Int]? = nil

        /// "Puget Sound (41 devices)", or the name alone when not counted.
        func pickerLabel(_ region: Region) -> String {
            guard let count = deviceCounts.map({ $0[region.id] ?? 0 }) else { return region.name }
            return "\(region.name) (\(count) device\(count == 1 ? "" : "s"))"
        }

        /// "3 pushes wait for review (oldest 2 h)", or nil when none wait.
        var reviewSummary: String? {
            guard reviewsWaiting > 0 else { return nil }
            let age = oldestReviewSince.map { " (oldest " + ConsoleLayout.age(seconds: now.seconds(since: $0)) + ")" } ?? ""
            return "\(reviewsWaiting) push\(reviewsWaiting == 1 ? "" : "es") wait\(reviewsWaiting == 1 ? "s" : "") for review\(age)"
        }
    }

    /// A duration as people say it: "45 s", "12 min", "3 h", "2 days".
    static func age(seconds: Int64) -> String {
        let seconds = max(seconds, 0)
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min" }
        if seconds < 2 * 86_400 { return "\(seconds / 3600) h" }
        return "\(seconds / 86_400) days"
    }

    enum Section: String, Sendable { case dashboard, alerts, sources, surveys, ghostBus, keys, audit, regions }

    static func head(_ title: String) -> [any HTMLContent] {
        [
            tag("meta", [Attribute("charset", "utf-8")]),
            tag("meta", [Attribute("name", "viewport"), Attribute("content", "width=device-width, initial-scale=1")]),
            tag("title", [], [title + " · Sidecar console"]),
            tag("link", [Attribute("rel", "stylesheet"), .href("/admin/static/console.css")]),
            tag("script", [Attribute("src", "/admin/static/console.js"), Attribute("defer", nil)]),
        ]
    }

    /// A page for a signed-in user.
    static func page(_ title: String, _ context: Context, notice: String? = nil, _ content: [any HTMLContent]) -> HTML {
        let user = context.session.user
        var links: [(Section, String, String)] = []
        if let region = context.region {
            links = [
                (.dashboard, "Dashboard", "/admin/regions/\(region.id)"), (.alerts, "Alerts", "/admin/regions/\(region.id)/alerts"),
                (
                    .sources, "Alert sources" + (context.reviewsWaiting > 0 ? " (\(context.reviewsWaiting) to review)" : ""),
                    "/admin/regions/\(region.id)/sources"
                ),
                (.surveys, "Surveys", "/admin/regions/\(region.id)/surveys"),
                (.ghostBus, "Ghost-bus reports", "/admin/regions/\(region.id)/ghost-bus"),
            ]
        }
        if ConsoleRules.may(user.role, .manageKeys) { links.append((.keys, "API keys", "/admin/keys")) }
        links.append((.audit, "Audit log", "/admin/audit"))
        let navigation = tag(
            "nav", [Attribute("aria-label", "Sections")],
            [
                tag(
                    "ul", [],
                    links.map { section, label, href in
                        tag(
                            "li", [],
                            [
                                tag(
                                    "a",
                                    [
                                        .href(href),
                                        section == context.section ? Attribute("aria-current", "page") : nil,
                                    ], [label])
                            ])
                    })
            ])
        let regionSwitcher: HTML =
            context.regions.count > 1
            ? tag(
                "details", [.class("regions")],
                [
                    tag("summary", [], [context.region.map { "Region: \($0.name)" } ?? "Choose a region"]),
                    tag(
                        "ul", [],
                        context.regions.map { region in
                            tag(
                                "li", [],
                                [
                                    tag(
                                        "a",
                                        [
                                            .href("/admin/regions/\(region.id)"),
                                            region.id == context.region?.id ? Attribute("aria-current", "true") : nil,
                                        ], ["\(region.id) · \(context.pickerLabel(region))"])
                                ])
                        }),
                ])
            : context.region.map { tag("span", [.class("region-name")], [$0.name]) } ?? .empty
        // Every page of a region shows its times in the region's zone: its
        // settings (the zone, the agency id) are one click away.
        let settingsLink: HTML =
            context.region.flatMap { region in
                ConsoleRules.may(user.role, .manageRegion)
                    ? tag("a", [.href("/admin/regions/\(region.id)/settings"), .class("region-settings")], ["Region settings"]) : nil
            } ?? .empty
        let header = tag(
            "header", [.class("top")],
            [
                tag("a", [.href("/admin"), .class("brand")], ["Sidecar console"]),
                regionSwitcher,
                settingsLink,
                tag(
                    "div", [.class("who")],
                    [
                        tag("span", [], [user.email]), " ", tag("span", [.class("badge")], [user.role.rawValue]),
                        tag(
                            "form", [Attribute("method", "post"), Attribute("action", "/admin/logout"), .class("inline")],
                            [
                                csrfField(context.session), tag("button", [Attribute("type", "submit"), .class("link")], ["Log out"]),
                            ]),
                    ]),
            ])
        return HTML.document(
            head: head(title),
            body: [
                tag("a", [.href("#main"), .class("skip")], ["Skip to content"]),
                header, navigation,
                tag(
                    "main", [.id("main")],
                    [
                        notice.map { tag("p", [.class("notice"), Attribute("role", "status")], [$0]) } ?? .empty,
                        tag("h1", [], [title]),
                    ] + content),
            ])
    }

    /// A page for someone not signed in (login, errors).
    static func bare(_ title: String, _ content: [any HTMLContent]) -> HTML {
        HTML.document(
            head: head(title),
            body: [
                tag("header", [.class("top")], [tag("a", [.href("/admin"), .class("brand")], ["Sidecar console"])]),
                tag("main", [.id("main"), .class("narrow")], [tag("h1", [], [title])] + content),
            ])
    }

    static func csrfField(_ session: ConsoleStore.Session) -> HTML {
        tag("input", [Attribute("type", "hidden"), Attribute("name", "csrf"), Attribute("value", session.csrfToken)])
    }

    /// A form posting to `action` with the session's CSRF token.
    static func form(_ action: String, _ session: ConsoleStore.Session, attributes: [Attribute] = [], _ content: [any HTMLContent]) -> HTML {
        tag("form", [Attribute("method", "post"), Attribute("action", action)] + attributes, [csrfField(session)] + content)
    }

    /// A confirmation page's actions: the action, said in full on a danger
    /// button pressed once, and a way back that changes nothing.
    static func confirmActions(_ label: String, cancel: String) -> HTML {
        tag(
            "div", [.class("actions")],
            [
                tag("button", [Attribute("type", "submit"), .class("danger"), Attribute("data-once", "true")], [label]),
                tag("a", [.href(cancel)], ["Cancel"]),
            ])
    }

    /// A button that posts (publish, revoke, log out).
    static func postButton(
        _ label: String, _ action: String, _ session: ConsoleStore.Session, style: String = "secondary",
        hidden: [(name: String, value: String)] = []
    ) -> HTML {
        form(
            action, session, attributes: [.class("inline")],
            hidden.map { field in tag("input", [Attribute("type", "hidden"), Attribute("name", field.name), Attribute("value", field.value)]) }
                + [tag("button", [Attribute("type", "submit"), .class(style)], [label])])
    }

    /// A field's problem, shown between its label and its control.
    static func fieldError(_ error: String?, id: String) -> HTML {
        error.map { tag("p", [.class("field-error"), .id(id + "-error")], [tag("span", [.class("visually-hidden")], ["Error: "]), $0]) }
            ?? .empty
    }

    /// `aria-invalid` and `aria-describedby` (the error first, then the hint).
    static func describedBy(id: String, hint: Bool, error: Bool) -> [Attribute?] {
        let ids = (error ? [id + "-error"] : []) + (hint ? [id + "-hint"] : [])
        return [
            ids.isEmpty ? nil : Attribute("aria-describedby", ids.joined(separator: " ")), error ? Attribute("aria-invalid", "true") : nil,
        ]
    }

    /// A labelled input. `hint` goes below, tied to the field for screen
    /// readers; `error` (what was wrong with what was submitted) above it.
    static func field(
        _ label: String, name: String, value: String?, type: String = "text", required: Bool = false, hint: String? = nil,
        maxLength: Int? = nil, extra: [Attribute] = [], id givenID: String? = nil, error: String? = nil
    ) -> HTML {
        let id = givenID ?? "field-" + name
        return tag(
            "div", [.class(error == nil ? "field" : "field invalid")],
            [
                tag("label", [Attribute("for", id)], [label, required ? tag("span", [.class("required")], [" (required)"]) : HTML.empty]),
                fieldError(error, id: id),
                tag(
                    "input",
                    [
                        Attribute("type", type), .id(id), Attribute("name", name), Attribute("value", value ?? ""),
                        .flag("required", required), maxLength.map { Attribute("maxlength", String($0)) },
                    ] + describedBy(id: id, hint: hint != nil, error: error != nil) + extra.map { Optional($0) }),
                hint.map { tag("p", [.class("hint"), .id(id + "-hint")], [$0]) } ?? .empty,
            ])
    }

    static func textArea(
        _ label: String, name: String, value: String?, rows: Int = 4, required: Bool = false, hint: String? = nil,
        maxLength: Int? = nil, id givenID: String? = nil, error: String? = nil
    ) -> HTML {
        let id = givenID ?? "field-" + name
        return tag(
            "div", [.class(error == nil ? "field" : "field invalid")],
            [
                tag("label", [Attribute("for", id)], [label, required ? tag("span", [.class("required")], [" (required)"]) : HTML.empty]),
                fieldError(error, id: id),
                tag(
                    "textarea",
                    [
                        .id(id), Attribute("name", name), Attribute("rows", String(rows)), .flag("required", required),
                        maxLength.map { Attribute("maxlength", String($0)) },
                    ] + describedBy(id: id, hint: hint != nil, error: error != nil),
                    [value ?? ""]),
                hint.map { tag("p", [.class("hint"), .id(id + "-hint")], [$0]) } ?? .empty,
            ])
    }

    static func select(
        _ label: String, name: String, options: [(value: String, label: String)], selected: String?, hint: String? = nil,
        id givenID: String? = nil, error: String? = nil
    ) -> HTML {
        let id = givenID ?? "field-" + name
        let hintID = id + "-hint"
        return tag(
            "div", [.class(error == nil ? "field" : "field invalid")],
            [
                tag("label", [Attribute("for", id)], [label]),
                fieldError(error, id: id),
                tag(
                    "select", [.id(id), Attribute("name", name)] + describedBy(id: id, hint: hint != nil, error: error != nil),
                    options.map { option in
                        tag("option", [Attribute("value", option.value), .flag("selected", option.value == selected)], [option.label])
                    }),
                hint.map { tag("p", [.id(hintID), .class("hint")], [$0]) } ?? .empty,
            ])
    }

    static func checkbox(_ label: String, name: String, checked: Bool, hint: String? = nil, error: String? = nil) -> HTML {
        let id = "field-" + name
        return tag(
            "div", [.class(error == nil ? "field check" : "field check invalid")],
            [
                fieldError(error, id: id),
                tag(
                    "input",
                    [Attribute("type", "checkbox"), .id(id), Attribute("name", name), Attribute("value", "true"), .flag("checked", checked)]
                        + describedBy(id: id, hint: hint != nil, error: error != nil)),
                tag("label", [Attribute("for", id)], [label]),
                hint.map { tag("p", [.class("hint"), .id(id + "-hint")], [HTML.text($0)]) } ?? .empty,
            ])
    }

    /// Problems with what was submitted, announced to screen readers.
    /// `heading` replaces "Please correct this:" when nothing needs correcting
    /// (a save refused because someone else's change came first).
    static func problems(_ messages: [String], heading: String? = nil) -> HTML {
        guard !messages.isEmpty else { return .empty }
        return tag(
            "div", [.class("problems"), Attribute("role", "alert")],
            [
                tag("p", [], [heading ?? (messages.count == 1 ? "Please correct this:" : "Please correct these:")]),
                tag("ul", [], messages.map { tag("li", [], [$0]) }),
            ])
    }

    /// A table; on a phone each row becomes a stacked card whose cells are
    /// labelled by their column (the header row is hidden then).
    static func table(caption: String, headers: [String], rows: [[any HTMLContent]], empty: String = "Nothing yet.") -> HTML {
        guard !rows.isEmpty else { return tag("p", [.class("empty")], [empty]) }
        return tag(
            "div", [.class("table-wrap"), Attribute("tabindex", "0"), Attribute("role", "region"), Attribute("aria-label", caption)],
            [
                tag(
                    "table", [.class("stack")],
                    [
                        tag("caption", [], [caption]),
                        tag("thead", [], [tag("tr", [], headers.map { tag("th", [Attribute("scope", "col")], [$0]) })]),
                        tag(
                            "tbody", [],
                            rows.map { row in
                                tag(
                                    "tr", [],
                                    row.enumerated().map { index, cell in
                                        tag(
                                            "td", [index < headers.count && !headers[index].isEmpty ? Attribute("data-label", headers[index]) : nil],
                                            [cell])
                                    })
                            }),
                    ])
            ])
    }

    static func errorPage(_ status: Int, _ title: String, _ message: String) -> Response {
        respond(status, bare(title, [tag("p", [], [message]), tag("p", [], [tag("a", [.href("/admin")], ["Back to the console"])])]))
    }

    /// Malformed requests under /admin answered as a page, not JSON.
    static let errorStyle = ErrorStyle.custom { status, error, messages in
        errorPage(status, error, messages.first ?? "The request could not be read.")
    }
}
