import Core
import FoundationEssentials
import HTTPServer

/// The Go reference's operator session, `/api/admin/v1/session`: a console
/// account signs in with its email as `username` and its password, and the
/// `sidecar_session` cookie it gets (path `/`, HttpOnly, SameSite=Lax)
/// authenticates every `/api/admin/v1` route as that account, within its role
/// and regions. It is a console session like any other: the same accounts,
/// the same limits on failed sign-ins, the same store, the same lifetime
/// (idle and absolute), and it signs the browser in to `/admin` too.
struct SessionReferenceRoutes: Sendable {
    let console: ConsoleRoutes
    let api: ReferenceAdminAPI

    static let path = ReferenceAdminAPI.prefix + "/session"
    /// Credentials are small: the reference's `maxAuthBody`.
    static let maxBody = 8 * 1024

    var routes: [Route] {
        [
            // No caller to require yet: the cross-site guard and the sign-in
            // limits protect it, as the console's own form.
            Route("POST", Self.path, bodyLimit: 1 << 20, errorStyle: .simple, access: .open, parsesParameters: false) { request in
                await signIn(request)
            },
            // Idempotent, outside the caller check: it only ends the session
            // whose cookie it is given, and a client tidying up after a 401
            // gets a 204 it can act on.
            Route("DELETE", Self.path, bodyLimit: 1 << 20, errorStyle: .simple, access: .open, parsesParameters: false) { request in
                await signOut(request)
            },
            api.route("GET", "/session", .signedIn, region: .none) { call in whoami(call) },
        ]
    }

    /// `{"username", "password"}` (other members ignored) to `200
    /// {"username"}` and the cookie. Every wrong email or password is the
    /// same `401 invalid credentials`; an address or account shut out for
    /// failing is `429`, a server busy checking passwords `503`.
    func signIn(_ request: Request) async -> Response {
        if let refusal = api.crossSiteRefusal(request) { return refusal }
        let username: String, password: String
        do throws(ReferenceFailure) {
            (username, password) = try Self.credentials(request.body)
        } catch { return error.response }
        do {
            switch try await console.checkSignIn(email: username, password: password, request) {
            case .refused: return ReferenceAdminAPI.error(401, "invalid credentials")
            case .clientLocked, .accountLocked:
                return ReferenceAdminAPI.error(429, "too many failed sign-ins; try again later")
                    .adding(header: "Retry-After", String(ConsoleRules.loginWindowSeconds))
            case .busy:
                return ReferenceAdminAPI.error(503, "the server is busy checking other sign-ins; try again in a few seconds")
                    .adding(header: "Retry-After", "2")
            case .verified(let user):
                let (cookie, _) = try await console.store.startSession(userID: user.id, now: console.now)
                api.logger.info("admin API sign-in", [("user", String(user.id))])
                return ReferenceAdminAPI.json(200, .object([("username", .string(user.email))]))
                    .adding(
                        header: "Set-Cookie",
                        console.cookie(ConsoleRoutes.sessionCookie, cookie, path: "/", maxAge: Int(ConsoleRules.absoluteSeconds))
                    )
                    .adding(header: "Cache-Control", "no-store")
            }
        } catch {
            api.logger.error("admin API sign-in failed", [("error", "\(error)")])
            return ReferenceAdminAPI.error(500, "internal error")
        }
    }

    /// The body's credentials: a JSON object of at most 8 KB whose
    /// `username` and `password` are strings (absent reads as empty, which
    /// no account has).
    static func credentials(_ body: [UInt8]) throws(ReferenceFailure) -> (username: String, password: String) {
        guard body.count <= maxBody else { throw .badRequest("request body too large") }
        guard !body.isEmpty else { throw .badRequest("invalid JSON body: EOF") }
        guard let value = try? JSONValue(parsing: body) else {
            throw .badRequest("invalid JSON body: the body is not valid JSON")
        }
        guard case .object(let members) = value else { throw .badRequest("invalid JSON body: the body must be a JSON object") }
        func text(_ name: String) throws(ReferenceFailure) -> String {
            switch members[name] {
            case nil, .null?: return ""
            case .string(let text)?: return text
            default: throw .badRequest("invalid JSON body: \(name) must be a string")
            }
        }
        return (try text("username"), try text("password"))
    }

    /// Ends the session the cookie names (each one sent) and clears the
    /// cookie: `204` with or without a live session. If the session could
    /// not be ended it is still live, so the answer is a 500 and the cookie
    /// stays, the only handle the caller has on it.
    func signOut(_ request: Request) async -> Response {
        if let refusal = api.crossSiteRefusal(request) { return refusal }
        do {
            for cookie in request.cookies(ConsoleRoutes.sessionCookie).prefix(4) {
                try await console.store.endSession(idHash: ConsoleStore.hash(cookie))
            }
        } catch {
            api.logger.error("admin API sign-out failed", [("error", "\(error)")])
            return ReferenceAdminAPI.error(500, "internal error")
        }
        return Response.empty(204).adding(header: "Set-Cookie", console.cookie(ConsoleRoutes.sessionCookie, "", path: "/", maxAge: 0))
    }

    /// Who the session is: `{"username"}`, the account's email.
    func whoami(_ call: ReferenceAdminAPI.Call) -> Response {
        guard case .person(let user) = call.caller else { return ReferenceAdminAPI.error(403, "forbidden") }
        return ReferenceAdminAPI.json(200, .object([("username", .string(user.email))]))
    }
}

extension SessionReferenceRoutes: Feature {}
