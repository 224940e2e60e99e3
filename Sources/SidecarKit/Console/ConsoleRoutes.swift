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
    let keys: ApiKeyStore
    let audit: AuditLog
    let regions: RegionDirectory
    /// Each region's time zone, in which every page shows times.
    let settings: RegionSettingsStore
    let clock: any WallClock
    let logger: Logger
    /// Cookies carry `Secure` when the public URL is https.
    let secureCookies: Bool
    /// Sign-in attempts per client address; failures per account, and per
    /// account and address (the sources an account's lock applies to).
    let clientLogins: FixedWindowRateLimiter
    let accountLogins: FixedWindowRateLimiter
    let failingSources: FixedWindowRateLimiter
    /// Tokens of the sign-in form and of single-use forms (a send, a key),
    /// signed with a server secret.
    let formTokens: FormTokens
    /// Changes per signed-in user: a stolen session cannot flood the database.
    let userWrites: FixedWindowRateLimiter
    /// The alert sources' review queue, whose size every region page's
    /// navigation shows.
    let sourceStore: AlertSourceStore
    /// Devices registered in each region, for the region picker: counted at
    /// most once a minute, whoever opens pages (one grouped count over
    /// every registration is too much to run on each page view).
    let deviceCounts: TimedCache<Int, [Int: Int]>
    let pushRegistrations: PushRegistrationStore
    var zoneDirectory = ZoneInfo.defaultDirectory

    static let sessionCookie = "sidecar_session"
    static let loginCookie = "sidecar_login"

    var now: EpochSeconds { clock.nowSeconds }

    /// Every page, each declaring who may open it (`openPage`, or a
    /// signed-in user allowed an action: `userPage`, `regionPage`,
    /// `alertRoute`); each feature's own pages (`ConsolePages`) declare
    /// theirs with the same builders, so `RouteTableTests` reads one table.
    var routes: [Route] {
        ConsoleAssets.routes() + [
            openPage("GET", "/admin") { request in await home(request) },
            openPage("GET", "/admin/login") { request in await loginPage(request) },
            openPage("POST", "/admin/login") { request in await login(request) },
            userPage("POST", "/admin/logout", .read) { _, session in await logout(session) },
        ]
    }

    // MARK: Declaring a page's guard

    func route(_ method: String, _ path: String, _ access: Access, _ handler: @escaping Handler) -> Route {
        Route(method, path, bodyLimit: 256 * 1024, errorStyle: ConsoleLayout.errorStyle, access: access, handler: handler)
    }

    /// A page anyone may open (signing in; the home page sends strangers there).
    func openPage(_ method: String, _ path: String, _ handler: @escaping Handler) -> Route { route(method, path, .open, handler) }

    /// A page for a signed-in user allowed `action`.
    func userPage(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleStore.Session) async -> Response
    ) -> Route {
        route(method, path, .session("\(action)")) { request in await signedIn(request, action, handler) }
    }

    /// A page of the region in `:region`, for a user allowed `action` there.
    func regionPage(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleLayout.Context) async -> Response
    ) -> Route {
        route(method, path, .session("\(action)")) { request in await inRegion(request, action, handler) }
    }

    // MARK: Sessions, CSRF, roles, regions

    /// Runs `handler` for a signed-in user allowed `action`; a POST must
    /// carry the session's CSRF token.
    func signedIn(
        _ request: Request, _ action: ConsoleAction,
        _ handler: (Request, ConsoleStore.Session) async -> Response
    ) async -> Response {
        let session: ConsoleStore.Session?
        do { session = try await store.session(cookies: request.cookies(Self.sessionCookie), now: now) } catch {
            return unavailable(error)
        }
        guard let session else {
            guard request.method == "GET" else { return sessionEnded(request) }
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
        await audit.record(
            actor: "user:" + session.user.email, action: "console.refused", regionID: nil,
            target: "\(request.method) \(request.routePattern)", detail: reason, now: now)
    }

    /// A form posted after its session ended changes nothing. The page says
    /// so and leads back through the sign-in to the page the form was on;
    /// the console's script keeps what was typed in this browser and fills
    /// it in again there.
    func sessionEnded(_ request: Request) -> Response {
        let origin =
            request.header("referer").flatMap { referer -> String? in
                guard let path = referer.range(of: "/admin").map({ String(referer[$0.lowerBound...]) }) else { return nil }
                return Self.safeNext(path) == path ? path : nil
            } ?? "/admin"
        return ConsoleLayout.respond(
            403,
            ConsoleLayout.bare(
                "Your session has ended",
                [
                    tag("p", [], ["Nothing was changed. What you typed is kept in this browser and filled in again once you sign in."]),
                    tag(
                        "p", [Attribute("data-session-ended", "true")],
                        [
                            tag("a", [.href("/admin/login?next=" + Self.percentEncoded(origin)), .class("button")], ["Sign in again"])
                        ]),
                ]))
    }

    /// The regions a user may see, in the directory's order.
    func visibleRegions(_ user: ConsoleStore.User) -> [Region] {
        regions.all.filter { ConsoleRules.mayAccess(region: $0.id, allowed: user.regions) }
    }

    func context(_ session: ConsoleStore.Session, region: Region?, _ section: ConsoleLayout.Section) async -> ConsoleLayout.Context {
        let regions = visibleRegions(session.user)
        return ConsoleLayout.Context(
            session: session, regions: regions, region: region, section: section, deviceCounts: regions.count > 1 ? await deviceCountsByRegion() : nil
        )
    }

    /// Devices by region, from the last minute's count; nil when the
    /// database cannot say (the picker then shows names alone).
    func deviceCountsByRegion() async -> [Int: Int]? {
        if let counts = deviceCounts.value(0) { return counts }
        guard let counts = try? await pushRegistrations.countsByRegion() else { return nil }
        deviceCounts.store(counts, for: 0)
        return counts
    }

    /// A region page's context, with the source pushes waiting for review
    /// (the navigation shows how many, and the oldest's age).
    func regionContext(_ session: ConsoleStore.Session, region: Region, _ section: ConsoleLayout.Section) async -> ConsoleLayout.Context {
        var context = await context(session, region: region, section)
        if let waiting = try? await sourceStore.reviewSummary(regionID: region.id) {
            context.reviewsWaiting = waiting.count
            context.oldestReviewSince = waiting.oldest
            context.now = now
        }
        return context
    }

    /// A region page: the region must exist and be one the user may see (else 404).
    func inRegion(
        _ request: Request, _ action: ConsoleAction,
        _ handler: @escaping (Request, ConsoleLayout.Context) async -> Response
    ) async -> Response {
        await signedIn(request, action) { request, session in
            guard let id = request.pathParameters["region"].flatMap({ Int($0) }), let region = regions.region(id: id),
                ConsoleRules.mayAccess(region: id, allowed: session.user.regions)
            else { return notFound() }
            return await handler(request, await regionContext(session, region: region, .dashboard))
        }
    }

    func notFound() -> Response { ConsoleLayout.errorPage(404, "Not found", "There is no such page, or it belongs to a region you cannot see.") }

    func unavailable(_ error: any Error) -> Response {
        logger.error("console request failed", [("error", "\(error)")])
        return ConsoleLayout.errorPage(503, "Unavailable", "The database could not be reached. Nothing was changed; try again shortly.")
    }

    func zone(regionID: Int) async -> ZoneInfo {
        let name = (try? await settings.all()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0, directory: zoneDirectory) } ?? .utc
    }

    /// What every date field says beside it: the zone it is read in, its
    /// offset, and the time it is there now.
    func zoneHint(_ zone: ZoneInfo) -> String {
        "In \(zone.identifier == "UTC" ? "UTC (this region has no time zone set)" : zone.identifier) (\(RegionTime.offsetLabel(zone, at: now))); "
            + "it is now \(RegionTime.display(now, zone)) there."
    }

    /// "Times are in America/Los_Angeles (UTC−08:00); it is now ... there."
    func timesHint(_ zone: ZoneInfo) -> String { "Times are in" + zoneHint(zone).dropFirst(2) }

    func cookie(_ name: String, _ value: String, path: String, maxAge: Int? = nil, sameSite: String = "Lax") -> String {
        "\(name)=\(value); Path=\(path); HttpOnly; SameSite=\(sameSite)" + (maxAge.map { "; Max-Age=\($0)" } ?? "")
            + (secureCookies ? "; Secure" : "")
    }

    static func percentEncoded(_ text: String) -> String { PercentEncoding.encode(text, keeping: "/") }

    /// Where to go after login: a console path only (never another site).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/admin"), !next.hasPrefix("//"), !next.contains("\\"), !next.contains("://"),
            next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }), !next.hasPrefix("/admin/login")
        else { return "/admin" }
        return next
    }

    /// Fixed texts for `?done=` (never text from the URL itself).
    static let notices: [String: String] = [
        "created": "Alert created as a draft.", "saved": "Changes saved.", "published": "Published: the alert is in the feed.",
        "published-with-warnings": "Published: the alert is in the feed. The checks below still have warnings; read them.",
        "acknowledged": "Warnings acknowledged: they are not said again for this alert.",
        "scheduled": "Send scheduled: it goes at its time (below), unless it is cancelled first.",
        "schedule-cancelled": "Scheduled send cancelled: it will not go.",
        "approval-requested":
            "This region asks a second person to approve that: your request waits below until another editor approves it (it lapses in a day).",
        "approved": "Approved: done as it was asked.", "rejected": "Rejected: nothing was done.",
        "unpublished": "Withdrawn: riders no longer see the alert in the feed (pushes already delivered stay on their phones).",
        "ended": "Ended: its end is now, so the apps no longer show it (pushes already delivered stay on their phones).",
        "translated": "Translation saved.",
        "created-unchecked":
            "Alert created as a draft. Its places (Where) were not checked: the region's OneBusAway server could not be asked. Save it again later to check them.",
        "saved-unchecked":
            "Changes saved. The places (Where) were not checked: the region's OneBusAway server could not be asked. Save again later to check them.",
        "sending": "Sending started. Progress updates below.", "revoked": "API key revoked: requests with it are now refused with 401.",
        "logged-out": "You are signed out.",
        "survey-saved": "Survey saved.", "region-saved": "Region settings saved.", "translation-deleted": "Translation deleted.",
        "draft-deleted": "Draft deleted.",
        "translated-unread": "Translation saved. No registered device in this region reads this language yet.",
        "send-repeated": "That confirmation was already used: the send it started is below. Nothing was sent twice.",
        "send-running": "A send of this alert is running: wait for it to finish before starting another.",
        "source-added": "Source added: a running server polls it now.", "source-removed": "Source removed with the alerts it brought.",
        "source-approved": "Approved: the push has started.", "source-dismissed": "Dismissed: it will not be pushed.",
        "source-decided": "That alert was already decided (or has left its source): nothing was pushed twice.",
        "dismissed-from-feed": "Dismissed from the feed: riders' apps stop showing it while its source lists it.",
        "back-in-feed": "Back in the feed.", "source-saved": "Source saved: a running server polls it again now.",
        "key-created": "API key created.", "key-repeated": "That form was already used: the key it created is in the list. No second key was made.",
    ]

    static func notice(_ request: Request) -> String? { request.parameters["done"].flatMap { notices[$0] } }

}

extension Optional {
    /// `flatMap` for an async transform.
    func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

extension ConsoleRoutes: Feature {
    init(_ context: FeatureContext) {
        let logins = ConsoleRules.loginWindowSeconds
        let clock = context.clock
        self.init(
            store: context.stores.console, keys: context.stores.apiKeys, audit: context.stores.audit,
            regions: context.regions, settings: RegionSettingsStore(database: context.database), clock: context.clock, logger: context.logger,
            secureCookies: context.publicURL.url.hasPrefix("https://"),
            clientLogins: context.limiter("console_login_client", limit: ConsoleRules.attemptsPerClient, windowSeconds: logins),
            accountLogins: context.limiter(
                "console_login_account", limit: ConsoleRules.failuresPerAccount, windowSeconds: logins,
                keyForLogs: SHA256.fingerprint),
            failingSources: context.limiter("console_login_source", limit: Int(Int32.max), windowSeconds: logins, keyForLogs: SHA256.fingerprint),
            formTokens: FormTokens(store: context.stores.console),
            userWrites: context.limiter("console_writes", limit: context.configuration.consoleWriteLimit),
            sourceStore: context.stores.alertSources,
            deviceCounts: TimedCache(lifetimeSeconds: 60, maxEntries: 1, now: { clock.now().timeIntervalSince1970 }),
            pushRegistrations: context.stores.pushRegistrations)
    }
}
