import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Issue 15: the admin console at `/admin`, for agency staff in a browser.
/// Server-rendered pages; the same `AlertAdministration` as the CLI and the
/// admin API, so all three validate and audit alike.
struct ConsoleRoutes: Sendable {
    let store: ConsoleStore
    let administration: AlertAdministration
    let alerts: AlertStore
    let sends: AlertSendRunner
    let surveys: SurveyStore
    let ghostBus: GhostBusStore
    let keys: ApiKeyStore
    let audit: AuditLog
    let regions: RegionDirectory
    let database: any Database
    let clock: any WallClock
    let logger: Logger
    /// Cookies carry `Secure` when the public URL is https.
    let secureCookies: Bool
    /// Sign-in attempts per client address; failures per account, and per
    /// account and address (the sources an account's lock applies to).
    let clientLogins: FixedWindowRateLimiter
    let accountLogins: FixedWindowRateLimiter
    let failingSources: FixedWindowRateLimiter
    /// The sign-in form's tokens, signed with a server secret.
    let loginTokens: LoginTokens
    /// Changes per signed-in user: a stolen session cannot flood the database.
    let userWrites: FixedWindowRateLimiter
    var zoneDirectory = ZoneInfo.defaultDirectory

    static let sessionCookie = "sidecar_session"
    static let loginCookie = "sidecar_login"

    var now: Int64 { clock.now().epochMillis / 1000 }

    var routes: [Route] {
        func page(_ method: String, _ path: String, _ handler: @escaping Handler) -> Route {
            Route(method, path, bodyLimit: 256 * 1024, errorStyle: ConsoleLayout.errorStyle, handler: handler)
        }
        return ConsoleAssets.routes() + [
            page("GET", "/admin") { request in await home(request) },
            page("GET", "/admin/login") { request in await loginPage(request) },
            page("POST", "/admin/login") { request in await login(request) },
            page("POST", "/admin/logout") { request in await signedIn(request, .read) { _, session in await logout(session) } },
            page("GET", "/admin/regions/:region") { request in await inRegion(request, .read) { request, context in await dashboard(context) } },
            page("GET", "/admin/regions/:region/alerts") { request in
                await inRegion(request, .read) { request, context in await alertList(request, context) }
            },
            page("GET", "/admin/regions/:region/alerts/new") { request in
                await inRegion(request, .author) { _, context in alertForm(context, alert: nil, values: [:], problems: []) }
            },
            page("POST", "/admin/regions/:region/alerts") { request in
                await inRegion(request, .author) { request, context in await createAlert(request, context) }
            },
            page("GET", "/admin/alerts/:id") { request in await withAlert(request, .read) { request, context, alert in await alertPage(request, context, alert) } },
            page("POST", "/admin/alerts/:id") { request in await withAlert(request, .author) { request, context, alert in await editAlert(request, context, alert) } },
            page("POST", "/admin/alerts/:id/publish") { request in
                await withAlert(request, .author) { _, context, alert in await setPublished(context, alert, true) }
            },
            page("POST", "/admin/alerts/:id/unpublish") { request in
                await withAlert(request, .author) { _, context, alert in await setPublished(context, alert, false) }
            },
            page("POST", "/admin/alerts/:id/translations") { request in
                await withAlert(request, .author) { request, context, alert in await translate(request, context, alert) }
            },
            page("GET", "/admin/alerts/:id/send") { request in
                await withAlert(request, .sendToTestDevices) { request, context, alert in await confirmSend(request, context, alert) }
            },
            page("POST", "/admin/alerts/:id/sends") { request in
                await withAlert(request, .sendToTestDevices) { request, context, alert in await startSend(request, context, alert) }
            },
            page("GET", "/admin/alerts/:id/sends.json") { request in
                await withAlert(request, .read) { _, _, alert in await sendsJSON(alert) }
            },
            page("GET", "/admin/keys") { request in await signedIn(request, .manageKeys) { _, session in await keyList(session, created: nil, problems: []) } },
            page("POST", "/admin/keys") { request in await signedIn(request, .manageKeys) { request, session in await createKey(request, session) } },
            page("POST", "/admin/keys/:id/revoke") { request in
                await signedIn(request, .manageKeys) { request, session in await revokeKey(request, session) }
            },
            page("GET", "/admin/audit") { request in await signedIn(request, .read) { request, session in await auditPage(request, session) } },
        ] + surveyRoutes(page) + ghostBusRoutes(page)
    }

    // MARK: Sessions, CSRF, roles, regions

    /// Runs `handler` for a signed-in user allowed `action`; a POST must
    /// carry the session's CSRF token.
    func signedIn(_ request: Request, _ action: ConsoleAction,
                  _ handler: (Request, ConsoleStore.Session) async -> Response) async -> Response {
        let session: ConsoleStore.Session?
        do { session = try await request.cookie(Self.sessionCookie).asyncFlatMap { try await store.session(cookie: $0, now: now) } } catch {
            return unavailable(error)
        }
        guard let session else {
            guard request.method == "GET" else {
                return ConsoleLayout.errorPage(403, "Signed out", "Your session has ended; sign in again and repeat the change.")
            }
            return .seeOther("/admin/login?next=" + Self.percentEncoded(request.rawPath))
        }
        if request.method == "POST" {
            guard let presented = request.parameters["csrf"], SecureCompare.equal(presented, session.csrfToken) else {
                await refused(request, session, "the form's token did not match the session")
                return ConsoleLayout.errorPage(403, "This form has expired", "Nothing was changed. Reload the page and try again.")
            }
            if case .limited(let retryAfter) = await userWrites.check("user:\(session.user.id)") {
                return ConsoleLayout.errorPage(429, "Too many changes", "Nothing was changed. Wait \(retryAfter) seconds and try again.")
                    .adding(header: "Retry-After", String(retryAfter))
            }
        }
        guard ConsoleRules.may(session.user.role, action) else {
            if request.method == "POST" { await refused(request, session, "role \(session.user.role.rawValue) may not") }
            return ConsoleLayout.errorPage(403, "Not allowed", "Your role (\(session.user.role.rawValue)) cannot do this. Ask an administrator.")
        }
        return await handler(request, session)
    }

    /// A change a signed-in user attempted and was refused, in the audit log
    /// (the route's pattern, never the submitted values).
    func refused(_ request: Request, _ session: ConsoleStore.Session, _ reason: String) async {
        await audit.record(actor: "user:" + session.user.email, action: "console.refused", regionID: nil,
                           target: "\(request.method) \(request.routePattern)", detail: reason, now: now)
    }

    /// The regions a user may see, in the directory's order.
    func visibleRegions(_ user: ConsoleStore.User) -> [Region] {
        regions.all.filter { ConsoleRules.mayAccess(region: $0.id, allowed: user.regions) }
    }

    func context(_ session: ConsoleStore.Session, region: Region?, _ section: ConsoleLayout.Section) -> ConsoleLayout.Context {
        ConsoleLayout.Context(session: session, regions: visibleRegions(session.user), region: region, section: section)
    }

    /// A region page: the region must exist and be one the user may see (else 404).
    func inRegion(_ request: Request, _ action: ConsoleAction,
                  _ handler: @escaping (Request, ConsoleLayout.Context) async -> Response) async -> Response {
        await signedIn(request, action) { request, session in
            guard let id = request.pathParameters["region"].flatMap({ Int($0) }), let region = regions.region(id: id),
                  ConsoleRules.mayAccess(region: id, allowed: session.user.regions) else { return notFound() }
            return await handler(request, context(session, region: region, .dashboard))
        }
    }

    /// An alert page: the alert must exist in a region the user may see (else 404).
    func withAlert(_ request: Request, _ action: ConsoleAction,
                   _ handler: @escaping (Request, ConsoleLayout.Context, ServiceAlert) async -> Response) async -> Response {
        await signedIn(request, action) { request, session in
            guard let id = request.pathParameters["id"].flatMap({ Int64($0) }) else { return notFound() }
            do {
                guard let alert = try await alerts.find(id: id), ConsoleRules.mayAccess(region: alert.regionID, allowed: session.user.regions),
                      let region = regions.region(id: alert.regionID) else { return notFound() }
                return await handler(request, context(session, region: region, .alerts), alert)
            } catch { return unavailable(error) }
        }
    }

    func notFound() -> Response { ConsoleLayout.errorPage(404, "Not found", "There is no such page, or it belongs to a region you cannot see.") }

    func unavailable(_ error: any Error) -> Response {
        logger.error("console request failed", [("error", "\(error)")])
        return ConsoleLayout.errorPage(503, "Unavailable", "The database could not be reached. Nothing was changed; try again shortly.")
    }

    /// The operations as this user: changes are audited under their email.
    func administration(_ session: ConsoleStore.Session) -> AlertAdministration { administration.acting(as: "user:" + session.user.email) }

    func zone(regionID: Int) async -> ZoneInfo {
        let name = (try? await alerts.regionSettings()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0, directory: zoneDirectory) } ?? .utc
    }

    func cookie(_ name: String, _ value: String, path: String, maxAge: Int? = nil, sameSite: String = "Lax") -> String {
        "\(name)=\(value); Path=\(path); HttpOnly; SameSite=\(sameSite)" + (maxAge.map { "; Max-Age=\($0)" } ?? "") + (secureCookies ? "; Secure" : "")
    }

    static func percentEncoded(_ text: String) -> String { PercentEncoding.encode(text, keeping: "/") }

    /// Where to go after login: a console path only (never another site).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/admin"), !next.hasPrefix("//"), !next.contains("\\"), !next.contains("://"),
              next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }), !next.hasPrefix("/admin/login") else { return "/admin" }
        return next
    }

    /// Fixed texts for `?done=` (never text from the URL itself).
    static let notices: [String: String] = [
        "created": "Alert created as a draft.", "saved": "Changes saved.", "published": "Published: the alert is in the feed.",
        "unpublished": "Unpublished: the alert is no longer in the feed.", "translated": "Translation saved.",
        "sending": "Sending started. Progress updates below.", "revoked": "API key revoked.", "logged-out": "You are signed out.",
        "survey-saved": "Survey saved.",
    ]

    static func notice(_ request: Request) -> String? { request.parameters["done"].flatMap { notices[$0] } }

    // MARK: Login and logout

    func home(_ request: Request) async -> Response {
        await signedIn(request, .read) { _, session in
            let visible = visibleRegions(session.user)
            if visible.count == 1 { return .seeOther("/admin/regions/\(visible[0].id)") }
            let cards: [any HTMLContent] = visible.map { region in
                tag("li", [.class("card")], [tag("a", [.href("/admin/regions/\(region.id)")], ["\(region.name)"]), " ",
                                             tag("span", [.class("hint")], ["region \(region.id)"])])
            }
            return ConsoleLayout.respond(200, ConsoleLayout.page("Regions", context(session, region: nil, .regions), [
                visible.isEmpty ? tag("p", [], ["Your account has no regions that this server's directory lists."])
                    : tag("ul", [.class("grid"), Attribute("role", "list")], cards),
            ]))
        }
    }

    func loginPage(_ request: Request, problems: [String] = [], email: String = "", status: Int = 200) async -> Response {
        let token: String
        do { token = try await loginTokens.issue(now: now) } catch { return unavailable(error) }
        let next = Self.safeNext(request.parameters["next"])
        let page = ConsoleLayout.bare("Sign in", [
            Self.notice(request).map { tag("p", [.class("notice"), Attribute("role", "status")], [$0]) } ?? HTML.empty,
            ConsoleLayout.problems(problems),
            tag("form", [Attribute("method", "post"), Attribute("action", "/admin/login")], [
                tag("input", [Attribute("type", "hidden"), Attribute("name", "login_token"), Attribute("value", token)]),
                tag("input", [Attribute("type", "hidden"), Attribute("name", "next"), Attribute("value", next)]),
                ConsoleLayout.field("Email", name: "email", value: email, type: "email", required: true, maxLength: 254,
                                    extra: [Attribute("autocomplete", "username"), Attribute("autofocus", nil)]),
                ConsoleLayout.field("Password", name: "password", value: nil, type: "password", required: true, maxLength: 1024,
                                    extra: [Attribute("autocomplete", "current-password")]),
                tag("button", [Attribute("type", "submit")], ["Sign in"]),
            ]),
            tag("p", [.class("hint")], ["Accounts are created by the server's operator: sidecar user create."]),
        ])
        return ConsoleLayout.respond(status, page)
            .adding(header: "Set-Cookie", cookie(Self.loginCookie, token, path: "/admin/login", maxAge: 3600, sameSite: "Strict"))
    }

    /// Password checks run here: two at a time, eight waiting at most. scrypt
    /// takes 32 MiB and tens of milliseconds each, so a flood of sign-ins is
    /// refused beyond that (503) instead of taking the memory and the CPU
    /// every other request needs. One pool per process.
    static let passwordChecks = WorkerPool(name: "console-login", threads: 2, queueCapacity: 8)

    func login(_ request: Request) async -> Response {
        // The form must come from our own login page (login CSRF): the same
        // token in the cookie and the form, and one this server issued.
        guard let expected = request.cookie(Self.loginCookie), let presented = request.parameters["login_token"],
              SecureCompare.equal(presented, expected), await loginTokens.isValid(presented, now: now) else {
            return await loginPage(request, problems: ["The sign-in form expired. Please try again."], status: 403)
        }
        let rawEmail = request.parameters["email"] ?? ""
        let password = request.parameters["password"] ?? ""
        if case .limited(let retryAfter) = await clientLogins.check(request.clientKey) {
            return await loginPage(request, problems: ["Too many sign-in attempts from your address. Try again in \(retryAfter / 60 + 1) minutes."],
                                   email: rawEmail, status: 429).adding(header: "Retry-After", String(retryAfter))
        }
        guard let email = ConsoleRules.normalizedEmail(rawEmail), password.utf8.count <= ConsoleRules.maximumPasswordLength else {
            return await loginPage(request, problems: ["Wrong email or password."], email: rawEmail, status: 401)
        }
        // An account under attack stays open to its owner: once it has had
        // too many failures, only addresses that have been failing on it are
        // refused (before any hashing); a correct password from anywhere
        // else still signs in.
        let source = email + "|" + request.clientKey
        if await accountLogins.isExhausted(email), await failingSources.peek(source) > 0 {
            return await loginPage(request, problems: ["Too many failed sign-ins for this account from your address. Try again in 15 minutes."],
                                   email: rawEmail, status: 429).adding(header: "Retry-After", String(ConsoleRules.loginWindowSeconds))
        }
        do {
            let found = try await store.credentials(email: email)
            // Hash even for an unknown account so timing does not tell.
            guard let verified = await Self.passwordChecks.run({ PasswordHash.verify(password, against: found?.1 ?? Self.decoyHash) }) else {
                return await loginPage(request, problems: ["The server is busy checking other sign-ins. Try again in a few seconds."],
                                       email: rawEmail, status: 503).adding(header: "Retry-After", "2")
            }
            guard let (user, _) = found, verified else {
                _ = await accountLogins.check(email)
                _ = await failingSources.check(source)
                logger.info("console sign-in refused", [("client", request.clientAddress)])
                await audit.record(actor: "anonymous", action: "console.sign_in_failed", regionID: nil,
                                   target: found.map { "user \($0.0.id)" } ?? "no such account", detail: "client=\(request.clientAddress)", now: now)
                return await loginPage(request, problems: ["Wrong email or password."], email: rawEmail, status: 401)
            }
            let (cookieValue, _) = try await store.startSession(userID: user.id, now: now)
            logger.info("console sign-in", [("user", String(user.id))])
            return Response.seeOther(Self.safeNext(request.parameters["next"]))
                .adding(header: "Set-Cookie", cookie(Self.sessionCookie, cookieValue, path: "/admin"))
                .adding(header: "Set-Cookie", cookie(Self.loginCookie, "", path: "/admin/login", maxAge: 0, sameSite: "Strict"))
                .adding(header: "Cache-Control", "no-store")
        } catch { return unavailable(error) }
    }

    /// A hash of nothing anyone knows, verified when the account does not exist.
    static let decoyHash = (try? PasswordHash.hash(Base64URL.encode(SecureRandom.bytes(32)))) ?? ""

    func logout(_ session: ConsoleStore.Session) async -> Response {
        do { try await store.endSession(idHash: session.idHash) } catch { return unavailable(error) }
        return Response.seeOther("/admin/login?done=logged-out")
            .adding(header: "Set-Cookie", cookie(Self.sessionCookie, "", path: "/admin", maxAge: 0))
    }

    // MARK: Dashboard

    func dashboard(_ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        let zone = await zone(regionID: region.id)
        let stats: ConsoleStats
        do { stats = try await ConsoleStats.load(database: database, regionID: region.id, now: now, days: 30, utcOffset: zone.offset(at: now)) } catch {
            return unavailable(error)
        }
        let reach = stats.reach
        func card(_ title: String, _ figure: Int, _ rows: [(String, Int)] = []) -> HTML {
            tag("section", [.class("card")], [
                tag("h2", [], [title]), tag("p", [.class("figure")], [figure]),
                rows.isEmpty ? HTML.empty : tag("dl", [], rows.flatMap { [tag("dt", [], [$0.0]), tag("dd", [], [$0.1])] as [any HTMLContent] }),
            ])
        }
        let content: [any HTMLContent] = [
            tag("div", [.class("grid")], [
                card("Registered devices", reach.total, [("iOS", reach.ios), ("Android", reach.android), ("Test devices", reach.testDevices)]),
                card("APNs environment", reach.ios, [("Production", reach.apnsProduction), ("Sandbox", reach.apnsSandbox)]),
                card("Languages", reach.locales.count, reach.locales.map { ($0.locale ?? "English (default)", $0.count) }),
                card("Alarms waiting", stats.pendingAlarms),
                card("Live Activities", stats.liveActivities),
            ]),
            tag("h2", [], ["New registrations per day"]),
            ConsoleChart.dailyBars(stats.perDay, title: "New registrations"),
            tag("h2", [], ["Recent sends"]),
            ConsoleLayout.table(caption: "The last ten sends in this region", headers: ["Alert", "Audience", "Status", "Targeted", "Delivered", "Failed", "Pruned", "Started"],
                                rows: stats.recentSends.map { recent in
                                    [tag("a", [.href("/admin/alerts/\(recent.alertID)")], [recent.header]), recent.send.audience.rawValue, recent.send.status,
                                     recent.send.targeted, recent.send.delivered, recent.send.failed, recent.send.pruned,
                                     RegionTime.display(recent.send.startedAt, zone)] as [any HTMLContent]
                                }, empty: "No alert has been sent in this region yet."),
        ]
        var dashboardContext = context
        dashboardContext.section = .dashboard
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): dashboard", dashboardContext, content))
    }

    // MARK: Alerts

    enum AlertState: String, CaseIterable { case draft, upcoming, published, expired }

    static func state(of alert: ServiceAlert, now: Int64) -> AlertState {
        if !alert.published { return .draft }
        if let end = alert.endsAt, end <= now { return .expired }
        return alert.startsAt > now ? .upcoming : .published
    }

    static func badges(_ alert: ServiceAlert, now: Int64) -> HTML {
        let state = state(of: alert, now: now)
        return .join([tag("span", [.class("badge \(state.rawValue)")], [state.rawValue]),
                      alert.test ? HTML.join([" ", tag("span", [.class("badge test")], ["test"])]) : HTML.empty])
    }

    func alertList(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        var listContext = context
        listContext.section = .alerts
        let zone = await zone(regionID: region.id)
        let all: [ServiceAlert]
        do { all = try await alerts.alerts(regionID: region.id) } catch { return unavailable(error) }
        let now = now
        var content: [any HTMLContent] = []
        if ConsoleRules.may(context.session.user.role, .author) {
            content.append(tag("p", [.class("actions")], [tag("a", [.href("/admin/regions/\(region.id)/alerts/new"), .class("button")], ["New alert"])]))
        }
        content.append(tag("p", [.class("hint")], ["Times in \(zone.identifier) (\(RegionTime.offsetLabel(zone, at: now)))."]))
        for state in AlertState.allCases {
            let rows = all.filter { Self.state(of: $0, now: now) == state }.sorted { $0.startsAt > $1.startsAt }
            content.append(tag("h2", [], ["\(state.rawValue.capitalized) (\(rows.count))"]))
            content.append(ConsoleLayout.table(caption: "\(state.rawValue.capitalized) alerts", headers: ["Alert", "Effect", "Starts", "Ends", ""],
                                               rows: rows.map { alert in
                                                   [tag("a", [.href("/admin/alerts/\(alert.id)")], [alert.header]), alert.effect.name,
                                                    RegionTime.display(alert.startsAt, zone), RegionTime.display(alert.endsAt, zone),
                                                    Self.badges(alert, now: now)] as [any HTMLContent]
                                               }, empty: "None."))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): alerts", listContext, notice: Self.notice(request), content))
    }

    /// The authoring form; `values` holds what was submitted when it is shown again.
    func alertForm(_ context: ConsoleLayout.Context, alert: ServiceAlert?, values: [String: String], problems: [String], zone: ZoneInfo = .utc,
                   status: Int = 200) -> Response {
        guard let region = context.region else { return notFound() }
        var formContext = context
        formContext.section = .alerts
        let action = alert.map { "/admin/alerts/\($0.id)" } ?? "/admin/regions/\(region.id)/alerts"
        let content: [any HTMLContent] = [ConsoleLayout.problems(problems), alertFields(context.session, action: action, alert: alert, values: values, zone: zone)]
        return ConsoleLayout.respond(status, ConsoleLayout.page(alert == nil ? "New alert" : "Edit alert \(alert!.id)", formContext, content))
    }

    func alertFields(_ session: ConsoleStore.Session, action: String, alert: ServiceAlert?, values: [String: String], zone: ZoneInfo) -> HTML {
        func value(_ name: String, _ current: String?) -> String { values[name] ?? current ?? "" }
        let zoneHint = "In \(zone.identifier) (\(RegionTime.offsetLabel(zone, at: now)))."
        return ConsoleLayout.form(action, session, [
            ConsoleLayout.field("Header", name: "header", value: value("header", alert?.header), required: true, hint: "Pushed as the title: the first 48 characters show on a lock screen.",
                                maxLength: FieldLimits.alertHeader),
            ConsoleLayout.textArea("Description", name: "description", value: value("description", alert?.description), rows: 5,
                                   hint: "Pushed as the body: the first 120 characters show on a lock screen.", maxLength: FieldLimits.alertDescription),
            ConsoleLayout.field("More information (URL)", name: "url", value: value("url", alert?.url), type: "url", maxLength: FieldLimits.url),
            tag("div", [.class("columns")], [
                ConsoleLayout.select("Cause", name: "cause", options: Cause.allCases.map { ($0.name, Self.humanize($0.name)) },
                                     selected: value("cause", alert?.cause.name ?? Cause.unknownCause.name)),
                ConsoleLayout.select("Effect", name: "effect", options: Effect.allCases.map { ($0.name, Self.humanize($0.name)) },
                                     selected: value("effect", alert?.effect.name ?? Effect.unknownEffect.name)),
                ConsoleLayout.select("Severity", name: "severity", options: SeverityLevel.allCases.map { ($0.name, Self.humanize($0.name)) },
                                     selected: value("severity", alert?.severity.name ?? SeverityLevel.warning.name),
                                     hint: "The Android app shows only Warning and Severe alerts: Info and Unknown severity are hidden there."),
            ]),
            tag("div", [.class("columns")], [
                ConsoleLayout.field("Starts", name: "start", value: value("start", RegionTime.inputValue(alert?.startsAt ?? now, zone)),
                                    type: "datetime-local", required: true, hint: zoneHint),
                ConsoleLayout.field("Ends", name: "end", value: value("end", RegionTime.inputValue(alert?.endsAt, zone)), type: "datetime-local",
                                    hint: "Leave empty for no end. " + zoneHint),
            ]),
            tag("p", [.class("hint")], [
                "Starts and Ends say when riders are shown the alert. Service affected says when the disruption itself happens "
                    + "(optional): for a weekend closure announced on Wednesday, show it from Wednesday and mark Saturday to Sunday "
                    + "as affected. It must lie within the shown period.",
            ]),
            tag("div", [.class("columns")], [
                ConsoleLayout.field("Service affected from", name: "impact_start",
                                    value: value("impact_start", RegionTime.inputValue(alert?.impactStartsAt, zone)), type: "datetime-local",
                                    hint: zoneHint),
                ConsoleLayout.field("Service affected until", name: "impact_end",
                                    value: value("impact_end", RegionTime.inputValue(alert?.impactEndsAt, zone)), type: "datetime-local",
                                    hint: "Leave both empty when the whole shown period is affected. " + zoneHint),
            ]),
            ConsoleLayout.checkbox("Test alert (only test devices see it in the feed and get it pushed)", name: "test",
                                   checked: values.isEmpty ? (alert?.test ?? false) : values["test"] == "true"),
            tag("div", [.class("actions")], [tag("button", [Attribute("type", "submit")], [alert == nil ? "Create draft" : "Save changes"])]),
        ])
    }

    /// `UNKNOWN_CAUSE` → `Unknown cause`.
    static func humanize(_ name: String) -> String {
        let words = name.lowercased().split(separator: "_").joined(separator: " ")
        return words.prefix(1).uppercased() + words.dropFirst()
    }

    /// The authoring fields of a submitted form, with times converted from
    /// the region's zone to the instants `AlertAdministration` reads.
    func authoringFields(_ request: Request, zone: ZoneInfo, editing: Bool) -> (fields: [String: String], values: [String: String], problems: [String]) {
        var values: [String: String] = [:]
        for name in ["header", "description", "url", "cause", "effect", "severity", "start", "end", "impact_start", "impact_end", "test"] {
            if let value = request.parameters[name] { values[name] = value }
        }
        values["test"] = values["test"] == "true" ? "true" : "false"
        var fields = values
        var problems: [String] = []
        if let url = fields["url"], url.trimmingWhitespace().isEmpty { fields["url"] = editing ? "" : nil }
        let labels = ["start": "Starts", "end": "Ends", "impact_start": "Service affected from", "impact_end": "Service affected until"]
        for name in ["start", "end", "impact_start", "impact_end"] {
            guard let text = values[name]?.trimmingWhitespace() else { continue }
            if text.isEmpty {
                fields[name] = name == "start" ? nil : (editing ? "none" : nil)
            } else if let instant = RegionTime.parse(text, zone) {
                fields[name] = Timestamp.format(millis: instant * 1000)
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
        let (fields, values, problems) = authoringFields(request, zone: zone, editing: true)
        guard problems.isEmpty else { return alertForm(context, alert: alert, values: values, problems: problems, zone: zone, status: 422) }
        do {
            _ = try await administration(context.session).edit(id: alert.id, fields: fields)
            return .seeOther("/admin/alerts/\(alert.id)?done=saved")
        } catch let error as AdministrationError {
            return alertForm(context, alert: alert, values: values, problems: error.messages, zone: zone, status: 422)
        } catch { return unavailable(error) }
    }

    func setPublished(_ context: ConsoleLayout.Context, _ alert: ServiceAlert, _ published: Bool) async -> Response {
        do {
            _ = try await administration(context.session).setPublished(id: alert.id, published)
            return .seeOther("/admin/alerts/\(alert.id)?done=\(published ? "published" : "unpublished")")
        } catch { return unavailable(error) }
    }

    func translate(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        do {
            _ = try await administration(context.session).translate(id: alert.id, language: request.parameters["language"] ?? "",
                                                                    header: request.parameters["header"], description: request.parameters["description"])
            return .seeOther("/admin/alerts/\(alert.id)?done=translated#translations")
        } catch let error as AdministrationError {
            return await alertPage(request, context, alert, translationProblems: error.messages, status: 422)
        } catch { return unavailable(error) }
    }

    /// The alert: its fields, translations side by side, previews, publishing and sending.
    func alertPage(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert, translationProblems: [String] = [],
                   status: Int = 200) async -> Response {
        let zone = await zone(regionID: alert.regionID)
        let translations: [AlertTranslation]
        let sendList: [AlertSend]
        let groups: [(locale: String?, count: Int)]
        let testCount: Int, allCount: Int
        do {
            translations = try await alerts.translations(alertID: alert.id)
            sendList = try await alerts.sends(alertID: alert.id)
            groups = try await ConsoleStats.languageGroups(database: database, regionID: alert.regionID)
            testCount = try await alerts.audienceCount(regionID: alert.regionID, audience: .test)
            allCount = try await alerts.audienceCount(regionID: alert.regionID, audience: .all)
        } catch { return unavailable(error) }
        let session = context.session
        let role = session.user.role
        let now = now
        var content: [any HTMLContent] = [tag("p", [], [Self.badges(alert, now: now)])]

        // Publishing.
        if ConsoleRules.may(role, .author) {
            content.append(tag("div", [.class("actions")], [
                alert.published ? ConsoleLayout.postButton("Unpublish", "/admin/alerts/\(alert.id)/unpublish", session)
                    : ConsoleLayout.postButton("Publish", "/admin/alerts/\(alert.id)/publish", session, style: "primary"),
            ]))
        }

        // Fields.
        content.append(tag("h2", [], ["Alert"]))
        if ConsoleRules.may(role, .author) {
            content.append(alertFields(session, action: "/admin/alerts/\(alert.id)", alert: alert, values: [:], zone: zone))
        } else {
            content.append(tag("dl", [], [
                tag("dt", [], ["Header"]), tag("dd", [], [alert.header]), tag("dt", [], ["Description"]), tag("dd", [], [alert.description]),
                tag("dt", [], ["Cause / effect / severity"]), tag("dd", [], ["\(alert.cause.name) / \(alert.effect.name) / \(alert.severity.name)"]),
                tag("dt", [], ["Shown"]), tag("dd", [], ["\(RegionTime.display(alert.startsAt, zone)) to \(RegionTime.display(alert.endsAt, zone))"]),
                tag("dt", [], ["Service affected"]),
                tag("dd", [], [alert.impactStartsAt.map { "\(RegionTime.display($0, zone)) to \(RegionTime.display(alert.impactEndsAt, zone))" }
                                ?? "The whole shown period"]),
            ]))
        }

        // Translations, side by side with the English.
        content.append(tag("h2", [.id("translations")], ["Translations"]))
        content.append(ConsoleLayout.table(caption: "The English text and its translations", headers: ["Language", "Header", "Description", ""],
                                           rows: [["English (source)", alert.header, alert.description, ""] as [any HTMLContent]]
                                               + translations.map { translation in
                                                   let stale = translation.sourceVersion != alert.sourceVersion
                                                   return [translation.language, translation.header, translation.description,
                                                           stale ? tag("span", [.class("badge stale"), Attribute("title", "The English changed after this was translated; it is not pushed or served until updated")],
                                                                       ["stale: English changed"]) : HTML.empty] as [any HTMLContent]
                                               }))
        if ConsoleRules.may(role, .author) {
            content.append(ConsoleLayout.problems(translationProblems))
            content.append(ConsoleLayout.form("/admin/alerts/\(alert.id)/translations", session, [
                tag("h3", [], ["Add or update a translation"]),
                tag("div", [.class("columns")], [
                    ConsoleLayout.field("Language", name: "language", value: request.method == "POST" ? request.parameters["language"] : nil,
                                        required: true, hint: "A language tag such as es, zh-Hant or vi.", maxLength: 16,
                                        extra: [Attribute("list", "languages")]),
                    ConsoleLayout.field("Header", name: "header", value: request.method == "POST" ? request.parameters["header"] : nil, required: true,
                                        maxLength: FieldLimits.alertHeader),
                ]),
                ConsoleLayout.textArea("Description", name: "description", value: request.method == "POST" ? request.parameters["description"] : nil,
                                       rows: 3, maxLength: FieldLimits.alertDescription),
                tag("datalist", [.id("languages")], ["es", "zh-Hans", "zh-Hant", "vi", "ko", "tl", "ru", "so", "am", "ar", "fr", "ja"].map {
                    tag("option", [Attribute("value", $0)])
                }),
                tag("button", [Attribute("type", "submit")], ["Save translation"]),
            ]))
        }

        // Previews.
        content.append(tag("h2", [], ["Preview"]))
        content.append(tag("p", [.class("hint")], ["What each language group of this region's devices will get, cut as a lock screen shows it."]))
        var previewGroups = groups
        if !previewGroups.contains(where: { $0.locale == nil }) { previewGroups.insert((nil, 0), at: 0) }
        let fresh = AlertFeedRules.fresh(translations, for: alert)
        content.append(tag("div", [.class("grid")], previewGroups.map { group in
            let copy = AlertPushRules.copy(for: alert, translations: translations, locale: group.locale)
            let translated = group.locale.map { locale in fresh.contains { $0.language.lowercased() == locale.lowercased() } } ?? true
            return tag("section", [.class("preview")], [
                tag("p", [.class("meta")], ["\(group.locale ?? "English (default)") · \(group.count) device\(group.count == 1 ? "" : "s")"
                                             + (translated ? "" : " · no translation: gets the English")]),
                tag("p", [.class("title")], [copy.title]), tag("p", [.class("body")], [copy.body]),
            ])
        }))
        content.append(tag("h3", [], ["In the alerts feed"]))
        content.append(tag("section", [.class("preview")], [
            tag("p", [.class("meta")], ["\(Self.humanize(alert.effect.name)) · \(Self.humanize(alert.severity.name)) · from \(RegionTime.display(alert.startsAt, zone))"
                                         + (alert.endsAt.map { " to \(RegionTime.display($0, zone))" } ?? "")]),
            tag("p", [.class("title")], [alert.header]), tag("p", [.class("body")], [alert.description]),
            alert.url.map { tag("p", [], [tag("a", [.href($0), Attribute("rel", "noopener noreferrer")], [$0])]) } ?? .empty,
        ]))

        // Sending.
        content.append(tag("h2", [.id("sends")], ["Send"]))
        if !alert.published {
            content.append(tag("p", [], ["Publish the alert before sending it."]))
        } else if ConsoleRules.may(role, .sendToTestDevices) {
            var buttons: [any HTMLContent] = [tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=test"), .class("button secondary")],
                                                  ["Send to test devices (\(testCount))"])]
            if ConsoleRules.may(role, .sendToEveryone) && !alert.test {
                buttons.append(tag("a", [.href("/admin/alerts/\(alert.id)/send?audience=all"), .class("button")], ["Send to everyone (\(allCount))"]))
            }
            content.append(tag("div", [.class("actions")], buttons))
        }
        content.append(sendsTable(alert: alert, sendList, zone: zone))
        return ConsoleLayout.respond(status, ConsoleLayout.page("Alert \(alert.id): \(alert.header)", context, notice: Self.notice(request), content))
    }

    func sendsTable(alert: ServiceAlert, _ sendList: [AlertSend], zone: ZoneInfo) -> HTML {
        guard !sendList.isEmpty else { return tag("p", [.class("empty")], ["Not sent yet."]) }
        func cell(_ name: StaticString, _ value: any HTMLContent) -> HTML { tag("td", [Attribute("data-field", name.description)], [value]) }
        return tag("div", [.class("table-wrap"), Attribute("data-sends-url", "/admin/alerts/\(alert.id)/sends.json")], [
            tag("table", [.class("progress")], [
                tag("caption", [], ["Sends of this alert (updated live while one runs)"]),
                tag("thead", [], [tag("tr", [], ["Send", "Audience", "Status", "Targeted", "Delivered", "Failed", "Pruned", "Started"].map {
                    tag("th", [Attribute("scope", "col")], [$0])
                })]),
                tag("tbody", [], sendList.map { send in
                    tag("tr", [Attribute("data-send-id", String(send.id))], [
                        tag("td", [], [send.id]), tag("td", [], [send.audience.rawValue]), cell("status", send.status), cell("targeted", send.targeted),
                        cell("delivered", send.delivered), cell("failed", send.failed), cell("pruned", send.pruned),
                        tag("td", [], [RegionTime.display(send.startedAt, zone)]),
                    ])
                }),
            ]),
        ])
    }

    /// The audience a send form names, or the page refusing it.
    enum AudienceChoice { case chosen(AlertSend.Audience), refused(Response) }

    func audience(_ request: Request, _ session: ConsoleStore.Session) -> AudienceChoice {
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"] ?? "") else {
            return .refused(ConsoleLayout.errorPage(422, "Choose an audience", "Send to test devices or to everyone."))
        }
        if audience == .all && !ConsoleRules.may(session.user.role, .sendToEveryone) {
            return .refused(ConsoleLayout.errorPage(403, "Not allowed", "Only an administrator may send to everyone. Send to test devices instead."))
        }
        return .chosen(audience)
    }

    func confirmSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let audience: AlertSend.Audience
        switch self.audience(request, context.session) {
        case .chosen(let chosen): audience = chosen
        case .refused(let response): return response
        }
        let count: Int
        do { count = try await alerts.audienceCount(regionID: alert.regionID, audience: audience) } catch { return unavailable(error) }
        let who = audience == .test ? "\(count) test device\(count == 1 ? "" : "s")" : "everyone: \(count) device\(count == 1 ? "" : "s")"
        let content: [any HTMLContent] = [
            tag("p", [], ["This pushes “", alert.header, "” to ", tag("strong", [], [who]), " in \(context.region?.name ?? "this region"). It cannot be undone."]),
            alert.published ? HTML.empty : tag("p", [.class("problems")], ["The alert is not published; publish it first."]),
            ConsoleLayout.form("/admin/alerts/\(alert.id)/sends", context.session, [
                tag("input", [Attribute("type", "hidden"), Attribute("name", "audience"), Attribute("value", audience.rawValue)]),
                tag("div", [.class("actions")], [
                    tag("button", [Attribute("type", "submit"), .class(audience == .all ? "danger" : "primary")], ["Send to \(who)"]),
                    tag("a", [.href("/admin/alerts/\(alert.id)")], ["Cancel"]),
                ]),
            ]),
        ]
        return ConsoleLayout.respond(200, ConsoleLayout.page("Send alert \(alert.id)?", context, content))
    }

    func startSend(_ request: Request, _ context: ConsoleLayout.Context, _ alert: ServiceAlert) async -> Response {
        let audience: AlertSend.Audience
        switch self.audience(request, context.session) {
        case .chosen(let chosen): audience = chosen
        case .refused(let response): return response
        }
        guard sends.transport != nil else {
            return ConsoleLayout.errorPage(409, "No push transport", "This server has no push transport configured (--gorush-url or direct APNs/FCM).")
        }
        do {
            let (send, _) = try await administration(context.session).startSend(id: alert.id, audience: audience)
            sends.launch(send)
            return .seeOther("/admin/alerts/\(alert.id)?done=sending#sends")
        } catch let error as AdministrationError {
            return ConsoleLayout.errorPage(422, "Not sent", error.messages.joined(separator: " "))
        } catch AlertStoreError.busy {
            return ConsoleLayout.errorPage(409, "Already sending", "This send is running on another server; its progress shows on the alert's page.")
        } catch { return unavailable(error) }
    }

    func sendsJSON(_ alert: ServiceAlert) async -> Response {
        do {
            return Response.json(200, JSONValue.array(try await alerts.sends(alertID: alert.id).map(AdminJSON.send)))
                .adding(header: "Cache-Control", "no-store")
        } catch { return unavailable(error) }
    }

    // MARK: API keys

    func keyList(_ session: ConsoleStore.Session, created: (key: String, record: ApiKeyStore.Record)?, problems: [String], status: Int = 200) async -> Response {
        let list: [ApiKeyStore.Record]
        do {
            // A user sees only keys within their own regions.
            list = try await keys.list().filter { ConsoleRules.mayManageKey(keyRegions: $0.regions, allowed: session.user.regions) }
        } catch { return unavailable(error) }
        let visible = visibleRegions(session.user)
        var content: [any HTMLContent] = []
        if let created {
            content.append(tag("div", [.class("notice"), Attribute("role", "status")], [
                tag("p", [], ["Created API key “", created.record.name, "”. Copy it now: it is not shown again."]),
                tag("p", [], [tag("code", [.id("new-key")], [created.key])]),
            ]))
        }
        content.append(ConsoleLayout.table(caption: "API keys for the admin API", headers: ["Key", "Name", "Scope", "Created", "Last used", "State", ""],
                                           rows: list.map { record in
                                               [record.prefix + "…", record.name, record.scopeDescription, RegionTime.display(record.createdAt, .utc) + " UTC",
                                                record.lastUsedAt.map { RegionTime.display($0, .utc) + " UTC" } ?? "never",
                                                record.revokedAt == nil ? "active" : "revoked",
                                                record.revokedAt == nil ? ConsoleLayout.postButton("Revoke", "/admin/keys/\(record.id)/revoke", session, style: "danger")
                                                    : HTML.empty] as [any HTMLContent]
                                           }, empty: "No API keys yet."))
        content.append(tag("h2", [], ["Create a key"]))
        content.append(ConsoleLayout.problems(problems))
        content.append(ConsoleLayout.form("/admin/keys", session, [
            ConsoleLayout.field("Name", name: "name", value: nil, required: true, hint: "Who or what uses it, e.g. “CAD integration”.", maxLength: FieldLimits.name),
            tag("fieldset", [], [
                tag("legend", [], ["Regions (none checked: every region you can see)"]),
            ] + visible.map { ConsoleLayout.checkbox("\($0.id) · \($0.name)", name: "region_\($0.id)", checked: false) }),
            ConsoleLayout.checkbox("May start sends (push scope)", name: "push", checked: false),
            tag("button", [Attribute("type", "submit")], ["Create key"]),
        ]))
        var keyContext = context(session, region: nil, .keys)
        keyContext.region = nil
        return ConsoleLayout.respond(status, ConsoleLayout.page("API keys", keyContext, content))
    }

    func createKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let name = request.parameters["name"]?.trimmingWhitespace() ?? ""
        var problems = FieldLimits.check([("Name", name, FieldLimits.name)])
        if name.isEmpty { problems.append("Name can't be blank") }
        guard problems.isEmpty else { return await keyList(session, created: nil, problems: problems, status: 422) }
        var chosen = Set(visibleRegions(session.user).map(\.id).filter { request.parameters["region_\($0)"] == "true" })
        // A user limited to some regions cannot mint a key for every region.
        if chosen.isEmpty, let limited = session.user.regions { chosen = limited }
        let regions: Set<Int>? = chosen.isEmpty ? nil : chosen
        do {
            let created = try await keys.create(name: name, regions: regions, canPush: request.parameters["push"] == "true", now: now)
            await audit.record(actor: "user:" + session.user.email, action: "apikey.create", regionID: nil, target: "API key \(created.record.id)",
                               detail: "\(name); \(created.record.scopeDescription)", now: now)
            return await keyList(session, created: created, problems: [])
        } catch { return unavailable(error) }
    }

    func revokeKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        guard let id = request.pathParameters["id"].flatMap({ Int64($0) }) else { return notFound() }
        do {
            // Another region's key, or an all-regions key, is not this user's to see: 404, as if it did not exist.
            guard let record = try await keys.find(id: id), ConsoleRules.mayManageKey(keyRegions: record.regions, allowed: session.user.regions),
                  try await keys.revoke(id: id, now: now) else { return notFound() }
            await audit.record(actor: "user:" + session.user.email, action: "apikey.revoke", regionID: nil, target: "API key \(id)", now: now)
            return .seeOther("/admin/keys?done=revoked")
        } catch { return unavailable(error) }
    }

    // MARK: Audit log

    func auditPage(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let before = request.parameters["before"].flatMap { Int64($0) }
        let entries: [AuditLog.Entry]
        do { entries = try await audit.entries(regions: session.user.regions, before: before, limit: 100) } catch { return unavailable(error) }
        var content: [any HTMLContent] = [
            tag("p", [.class("hint")], ["Every change made through this console, the admin API and the command line, newest first. Times in UTC."]),
            ConsoleLayout.table(caption: "Audit log", headers: ["When (UTC)", "Who", "What", "Region", "Target", "Detail"], rows: entries.map { entry in
                [RegionTime.display(entry.at, .utc), entry.actor, entry.action, entry.regionID.map(String.init) ?? "—", entry.target ?? "", entry.detail ?? ""]
                    as [any HTMLContent]
            }, empty: "Nothing recorded yet."),
        ]
        if entries.count == 100, let last = entries.last {
            content.append(tag("p", [], [tag("a", [.href("/admin/audit?before=\(last.id)")], ["Older entries"])]))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("Audit log", context(session, region: nil, .audit), content))
    }
}

extension Optional {
    /// `flatMap` for an async transform.
    func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
