import Core
import FoundationEssentials
import HTTPServer

/// The Go reference sidecar's admin contract, served beside `/admin/api`
/// under `/api/admin/v1/regions/{regionId}/…`, so OBACloud's client and
/// every agency script written for the reference drive Sidecar unchanged.
/// Each feature declares its routes here with `route`; their handlers call
/// the same administration code as `/admin/api`, the CLI and the console,
/// and only read and write the reference's shapes. The kit applies the
/// reference's guards in its order: the cross-site check (403), the caller
/// (a bearer key when an `Authorization` header is present, else the
/// `sidecar_session` cookie of a console account signed in through
/// `POST /api/admin/v1/session`: 401, or 429 after 60 failed keys a minute
/// from one address), who may call the route (403 `forbidden`), then the
/// region (404 `region not found`, the same for a malformed, unknown or
/// someone else's region).
struct ReferenceAdminAPI: Sendable {
    static let prefix = "/api/admin/v1"
    /// The largest JSON body, as the reference's `maxAdminBody`.
    static let maxBody = 64 * 1024

    let administration: AlertAdministration
    let keys: ApiKeyStore
    /// The console's accounts and sessions: a signed-in account is the
    /// reference's operator, within its role and regions.
    let console: ConsoleStore
    /// Failed bearer attempts per client address: only failures count, so a
    /// client shut out for guessing still gets in with a valid key.
    let failedBearers: FixedWindowRateLimiter
    /// Requests a minute per key, the admin API's own budget.
    let perKey: FixedWindowRateLimiter
    let clock: any WallClock
    let logger: Logger

    /// Who may call a route, named as the reference names its allow-lists.
    /// The reference's operator is a signed-in console account, which acts
    /// within its role and regions (a viewer reads, an editor authors, an
    /// admin also sends to everyone, manages keys and sets up regions); an
    /// admin key of every region stands for an operator too.
    enum Allowed: String, Sendable {
        case operatorOnly, operatorOrKey, operatorOrPushKey, operatorOrService
        /// A signed-in person only (the session's own `GET`): no key.
        case signedIn

        /// Whether `caller` may call a route of this list with `method`;
        /// `personAction` is what a person's role must allow where the
        /// method alone does not say (setting up a region).
        func admits(_ caller: ReferenceCaller, method: String, personAction: ConsoleAction? = nil) -> Bool {
            switch caller {
            case .key(let key):
                switch self {
                case .operatorOnly: return key.managesPrincipals
                case .operatorOrKey: return !key.isPrincipal
                case .operatorOrPushKey: return !key.isPrincipal && key.canPush
                case .operatorOrService: return key.managesKeys
                case .signedIn: return false
                }
            case .person(let user):
                let action: ConsoleAction
                switch self {
                case .operatorOnly, .signedIn: action = .read
                case .operatorOrKey: action = personAction ?? (method == "GET" || method == "HEAD" ? .read : .author)
                case .operatorOrPushKey: action = .sendToEveryone
                case .operatorOrService: action = .manageKeys
                }
                return ConsoleRules.may(user.role, action)
            }
        }
    }

    /// How the path's `{regionId}` is checked.
    enum RegionRule: Sendable {
        /// No region in the path.
        case none
        /// A region the key may act on.
        case region
        /// Any region of the directory, for a principal or an admin key (key management).
        case keyAdmin
    }

    /// A request that passed the guards: its caller and the path's region (-1 when none).
    struct Call: Sendable {
        let request: Request
        let caller: ReferenceCaller
        let regionID: Int

        /// The body as JSON: nil for an empty body, else an object or a refusal.
        func body(emptyAllowed: Bool = false) throws(ReferenceFailure) -> [String: JSONValue] {
            if request.body.count > ReferenceAdminAPI.maxBody { throw .badRequest("request body too large") }
            if request.body.isEmpty {
                if emptyAllowed { return [:] }
                throw .badRequest("invalid JSON body: EOF")
            }
            let value: JSONValue
            do { value = try JSONValue(parsing: request.body) } catch {
                throw .badRequest("invalid JSON body: the body is not valid JSON")
            }
            guard case .object(let members) = value else { throw .badRequest("invalid JSON body: the body must be a JSON object") }
            return members
        }

        /// The path's integer id in `parameter`, as the reference parses it;
        /// a refusal names it as the reference's path does (`id`, `pushId`, `keyId`).
        func pathID(_ parameter: String, named name: String? = nil) throws(ReferenceFailure) -> Int64 {
            let raw = request.pathParameters[parameter] ?? ""
            guard let id = Int64(raw), raw.first != "+" else {
                throw .badRequest("invalid \(name ?? parameter) \"\(raw)\": must be an integer")
            }
            return id
        }
    }

    typealias Handler = @Sendable (Call) async -> Response

    /// A route under `/api/admin/v1`: `path` is written with `:regionId`,
    /// `:pushId`, `:keyId` and `:lang` as the reference's are, and with what
    /// its `{id}` carries (`:alertId`, `:studyId`, ...) where it says `{id}`.
    func route(
        _ method: String, _ path: String, _ allowed: Allowed, region rule: RegionRule = .region, person personAction: ConsoleAction? = nil,
        _ handler: @escaping Handler
    ) -> Route {
        Route(
            // Read up to a megabyte, so a body over a route's own limit (64 KB,
            // a survey's 256 KB) gets the reference's 400, not the server's 413.
            method, Self.prefix + path, bodyLimit: 1 << 20, errorStyle: .simple,
            access: .apiKey("reference:" + allowed.rawValue, object: rule == .none ? "none" : "region"), parsesParameters: false
        ) { request in
            if let refusal = crossSiteRefusal(request) { return refusal }
            let caller: ReferenceCaller
            switch await authenticate(request) {
            case .refused(let refusal): return refusal
            case .accepted(let accepted): caller = accepted
            }
            if case .limited(let retryAfter) = await perKey.check(caller.limiterKey) {
                return Self.error(429, "too many requests").adding(header: "Retry-After", String(retryAfter))
            }
            guard allowed.admits(caller, method: request.method, personAction: personAction) else { return Self.error(403, "forbidden") }
            var regionID = -1
            if rule != .none {
                guard let id = regionScope(request.pathParameters["regionId"] ?? "", caller: caller, rule: rule) else {
                    return Self.error(404, "region not found")
                }
                regionID = id
            }
            return await handler(Call(request: request, caller: caller, regionID: regionID))
        }
    }

    /// The reference's cross-site guard, before authentication, on every
    /// method but GET and HEAD: a browser's `Sec-Fetch-Site` must say the
    /// same origin, else an `Origin` must name this host; a request with
    /// neither (curl, a server) passes.
    func crossSiteRefusal(_ request: Request) -> Response? {
        guard request.method != "GET" && request.method != "HEAD" else { return nil }
        if let site = request.header("sec-fetch-site") {
            return site == "same-origin" || site == "none" ? nil : Self.error(403, "cross-site request rejected")
        }
        if let origin = request.header("origin") {
            let host = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
            return host == request.header("host") ? nil : Self.error(403, "cross-site request rejected")
        }
        return nil
    }

    enum Authentication {
        case accepted(ReferenceCaller)
        case refused(Response)
    }

    /// The caller, found as the reference finds it: an `Authorization`
    /// header means a bearer key and nothing else (a browser's session never
    /// rescues a refused key); without one, the session cookie. No live
    /// session is `401 authentication required`.
    func authenticate(_ request: Request) async -> Authentication {
        let headers = request.headers.filter { $0.name.lowercased() == "authorization" }
        guard !headers.isEmpty else {
            do {
                guard let session = try await signedIn(request) else { return .refused(Self.error(401, "authentication required")) }
                return .accepted(.person(session.user))
            } catch {
                logger.error("admin session lookup failed", [("error", "\(error)")])
                return .refused(Self.error(500, "internal error"))
            }
        }
        return await bearer(request, headers)
    }

    /// The live console session among the request's `sidecar_session` cookies.
    func signedIn(_ request: Request) async throws -> ConsoleStore.Session? {
        try await console.session(cookies: request.cookies(ConsoleRoutes.sessionCookie), now: clock.nowSeconds)
    }

    /// The bearer key, read as the reference reads it: exactly one
    /// `Authorization` header of at most 135 bytes, `Bearer` (any case), one
    /// space, the key. Every failure is the same `401 invalid api key`
    /// (unknown, revoked, malformed and someone else's look alike) until an
    /// address has failed 60 times in a minute: then `429` with no body.
    func bearer(_ request: Request, _ headers: [(name: String, value: String)]) async -> Authentication {
        var presented: String?
        if headers.count == 1, headers[0].value.utf8.count <= "Bearer ".utf8.count + ApiKeyFormat.maxLength,
            let space = headers[0].value.firstIndex(of: " ")
        {
            let scheme = headers[0].value[..<space], credential = headers[0].value[headers[0].value.index(after: space)...]
            if scheme.lowercased() == "bearer", !credential.isEmpty, credential.first != " " { presented = String(credential) }
        }
        do {
            if let presented, let key = try await keys.verify(presented, now: clock.nowSeconds) { return .accepted(.key(key)) }
        } catch {
            logger.error("admin key lookup failed", [("error", "\(error)")])
            return .refused(Self.error(500, "internal error"))
        }
        if case .limited = await failedBearers.check("bearer-failure:" + request.clientKey) { return .refused(.empty(429)) }
        logger.warning("admin bearer refused", [("client", request.clientKey), ("length", String(presented?.utf8.count ?? 0))])
        return .refused(Self.error(401, "invalid api key"))
    }

    /// The region a path segment names, when the caller may act on it: `0`
    /// or a decimal without a leading zero or sign, a region of the
    /// directory, and (for content) one of the caller's regions. nil answers
    /// 404 alike.
    func regionScope(_ segment: String, caller: ReferenceCaller, rule: RegionRule) -> Int? {
        guard let id = ApiKeyFormat.regionSegment(Substring(segment)), (try? administration.region(id)) != nil else { return nil }
        switch rule {
        case .none: return nil
        case .region: return caller.allows(region: id) ? id : nil
        case .keyAdmin:
            if case .key(let key) = caller, key.isPrincipal { return id }
            return caller.mayGrant(region: id, push: false) ? id : nil
        }
    }

    /// `{"error": message}`, the reference's only error shape.
    static func error(_ status: Int, _ message: String) -> Response {
        json(status, .object([("error", .value(.string(message)))]))
    }

    /// A body as the reference's encoder writes it: members in its order,
    /// compact, `<`, `>` and `&` escaped, a trailing newline.
    static func json(_ status: Int, _ value: ReferenceJSON) -> Response {
        .bytes(status, contentType: "application/json", value.encoded())
    }

    /// A whole list, as the reference answers one, of at most `limit` items
    /// read (one more tells whether there were more): past the limit the
    /// answer says `X-Sidecar-Truncated: true` rather than grow without bound.
    static func list<Item>(_ rows: [Item], limit: Int, _ json: ([Item]) -> [ReferenceJSON]) -> Response {
        let answer = Self.json(200, .array(json(Array(rows.prefix(limit)))))
        return rows.count > limit ? answer.adding(header: "X-Sidecar-Truncated", "true") : answer
    }

    /// The operations as this caller: its changes are audited under its name.
    func administration(for caller: ReferenceCaller) -> AlertAdministration {
        administration.acting(as: caller.actingName)
    }

    /// A failure of the administration code as the reference answers it:
    /// `invalid` is 400 (or 422 where the reference says so), `notFound`
    /// the route's own noun, anything unforeseen a 500 that leaks nothing.
    func failure(_ error: any Error, notFound noun: String, invalidStatus: Int = 400) -> Response {
        switch error {
        case let failure as ReferenceFailure: return failure.response
        case let error as AdministrationError:
            switch error {
            case .notFound: return Self.error(404, "\(noun) not found")
            case .forbidden: return Self.error(403, "forbidden")
            case .invalid, .stale: return Self.error(invalidStatus, error.messages.joined(separator: "; "))
            case .approvalPending(let id, let message):
                return Self.json(
                    202,
                    .object([
                        ("status", .value(.string("approval pending"))), ("approval_request_id", .value(.integer(id))),
                        ("message", .value(.string(message))),
                    ]))
            }
        case AlertStoreError.notFound: return Self.error(404, "\(noun) not found")
        case AlertStoreError.busy: return Self.error(409, "a push for this alert is already queued or sending")
        default:
            logger.error("reference admin request failed", [("error", "\(error)")])
            return Self.error(500, "internal error")
        }
    }
}

/// A refusal a reference handler throws with the reference's own status and words.
enum ReferenceFailure: Error {
    case badRequest(String)
    case status(Int, String)

    var response: Response {
        switch self {
        case .badRequest(let message): ReferenceAdminAPI.error(400, message)
        case .status(let status, let message): ReferenceAdminAPI.error(status, message)
        }
    }
}

extension ReferenceAdminAPI {
    /// The kit, built once: every feature's reference routes share its
    /// limit on failed bearer attempts.
    init(_ context: FeatureContext) {
        let clock = context.clock
        self.init(
            administration: context.administration, keys: context.stores.apiKeys, console: context.stores.console,
            failedBearers: FixedWindowRateLimiter(
                limit: 60, windowSeconds: 60, name: "admin_bearer_failures", logger: context.logger, maxKeys: 10_000,
                now: { clock.now().timeIntervalSince1970 }),
            perKey: context.adminAPILimiter, clock: context.clock, logger: context.logger)
    }
}
