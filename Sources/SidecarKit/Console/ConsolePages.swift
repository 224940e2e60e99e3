import Core
import HTTPServer

/// A feature's console pages: a small struct in the feature's folder, built
/// from the console kit (`ConsoleRoutes`: sessions, CSRF, roles, limiters,
/// the layout) and registered as a feature of its own. Each page declares
/// its guard with the kit's builders, so the guards stay one table
/// (`RouteTableTests`), and reads the kit's helpers below as its own. The
/// kit is built once (`Sidecar.features`) and shared by every feature's
/// pages, so its limits (a user's writes, sign-ins) are one budget.
protocol ConsolePages: Feature {
    /// The console kit the pages are built with.
    var console: ConsoleRoutes { get }
}

extension ConsolePages {
    // MARK: Declaring a page's guard

    /// A page for a signed-in user allowed `action`.
    func userPage(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleStore.Session) async -> Response
    ) -> Route { console.userPage(method, path, action, handler) }

    /// A page of the region in `:region`, for a user allowed `action` there.
    func regionPage(
        _ method: String, _ path: String, _ action: ConsoleAction,
        _ handler: @escaping @Sendable (Request, ConsoleLayout.Context) async -> Response
    ) -> Route { console.regionPage(method, path, action, handler) }

    /// A page with the kit's body cap and error pages, guarded by `access`.
    func route(_ method: String, _ path: String, _ access: Access, _ handler: @escaping Handler) -> Route {
        console.route(method, path, access, handler)
    }

    /// Runs `handler` for a signed-in user allowed `action` (a POST must
    /// carry the session's CSRF token).
    func signedIn(
        _ request: Request, _ action: ConsoleAction, _ handler: (Request, ConsoleStore.Session) async -> Response
    ) async -> Response { await console.signedIn(request, action, handler) }

    /// Runs `handler` with the object the path's `parameter` names, found by
    /// `find`, for a user allowed `action` in the object's region; a missing
    /// object, a malformed id and one of a region the user may not see are
    /// the same 404.
    func withObject<Object: Sendable>(
        _ request: Request, _ action: ConsoleAction, parameter: String, section: ConsoleLayout.Section,
        find: (Int64) async throws -> Object?, regionOf: (Object) -> Int,
        _ handler: (Request, ConsoleLayout.Context, Object) async -> Response
    ) async -> Response {
        await signedIn(request, action) { request, session in
            guard let id = request.pathParameters[parameter].flatMap({ Int64($0) }) else { return notFound() }
            do {
                guard let object = try await find(id), ConsoleRules.mayAccess(region: regionOf(object), allowed: session.user.regions),
                    let region = regions.region(id: regionOf(object))
                else { return notFound() }
                return await handler(request, await regionContext(session, region: region, section), object)
            } catch { return unavailable(error) }
        }
    }

    // MARK: The kit's helpers

    var now: EpochSeconds { console.now }
    var regions: RegionDirectory { console.regions }
    var logger: Logger { console.logger }
    var audit: AuditLog { console.audit }

    var formTokens: FormTokens { console.formTokens }

    /// The regions this user may see, for pickers and filters.
    func visibleRegions(_ user: ConsoleStore.User) -> [Region] { console.visibleRegions(user) }

    /// The layout's context for a page of `region` (nil: a page of no region).
    func context(_ session: ConsoleStore.Session, region: Region?, _ section: ConsoleLayout.Section) async -> ConsoleLayout.Context {
        await console.context(session, region: region, section)
    }

    func cookie(_ name: String, _ value: String, path: String, maxAge: Int? = nil, sameSite: String = "Lax") -> String {
        console.cookie(name, value, path: path, maxAge: maxAge, sameSite: sameSite)
    }

    func regionContext(_ session: ConsoleStore.Session, region: Region, _ section: ConsoleLayout.Section) async -> ConsoleLayout.Context {
        await console.regionContext(session, region: region, section)
    }

    func notFound() -> Response { console.notFound() }
    func unavailable(_ error: any Error) -> Response { console.unavailable(error) }
    func zone(regionID: Int) async -> ZoneInfo { await console.zone(regionID: regionID) }
    func zoneHint(_ zone: ZoneInfo) -> String { console.zoneHint(zone) }
    func timesHint(_ zone: ZoneInfo) -> String { console.timesHint(zone) }

    /// Fixed texts for `?done=` (never text from the URL itself).
    static func notice(_ request: Request) -> String? { ConsoleRoutes.notice(request) }
}
