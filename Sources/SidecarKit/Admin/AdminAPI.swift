import Core
import FoundationEssentials
import HTTPServer
import Push
import Synchronization

/// The admin HTTP API's kit, under `/admin/api/`: every feature declares
/// its admin routes with `route`, which authenticates the caller
/// (`Authorization: Bearer <key>`, a key from `sidecar apikey create` or a
/// service principal's), checks the scope the route needs, refuses fields
/// it does not take, resolves the object it names and honours
/// `Idempotency-Key`, all before the feature's handler runs.
struct AdminAPI: Sendable {
    let administration: AlertAdministration
    let keys: ApiKeyStore
    let objects: AdminObjectRegions
    let idempotency: IdempotencyStore
    /// The key the list cursors are signed with.
    let cursorKey: StoredSecret
    /// Requests per minute per key (and failed sign-ins per client address).
    let limiter: FixedWindowRateLimiter
    let clock: any WallClock
    let logger: Logger

    /// A handler that knows which key called it.
    typealias KeyHandler = @Sendable (Request, ApiKeyStore.Record) async -> Response

    /// What a credential must carry to call a route.
    enum Scope: String {
        /// Any key, within its regions.
        case any
        /// A key with the push scope (starting a send).
        case push
        /// A key made with `--sources` or `--admin` (adding, editing,
        /// polling and removing alert sources).
        case sources
        /// A service principal or a key made with `--admin`.
        case keys
        /// An `--admin` key of every region.
        case principals
    }

    /// A route under `/admin/api` acting on `object` (named by the path
    /// parameter of that name) that needs a credential with `scope`; it takes
    /// the fields in `accepts` (anything else is a 422 naming it) and, when
    /// `idempotent`, honours `Idempotency-Key`. The object is resolved and
    /// checked against the key's regions before `handler` runs.
    func route(
        _ method: String, _ path: String, on object: AdminObject, _ scope: Scope = .any, accepts: [String: AdminField] = [:],
        idempotent: Bool = false, _ handler: @escaping KeyHandler
    ) -> Route {
        precondition(
            object.parameter.map { path.split(separator: "/").contains(Substring(":" + $0)) } ?? true,
            "\(method) \(path) acts on \(object) but its path has no :\(object.rawValue)")
        return Route(method, "/admin/api" + path, errorStyle: .messages, access: .apiKey(scope.rawValue, object: object.rawValue)) { request in
            await authenticate(request) { request, key in
                if let refusal = await scopeRefusal(scope, object, request, key) { return refusal }
                let problems = AdminConventions.fieldProblems(request.parameters, accepts: accepts)
                guard problems.isEmpty else { return ErrorStyle.messages.response(status: 422, error: "Invalid", messages: problems) }
                let resolved: (any Sendable)?
                switch await resolve(object, request, key) {
                case .refused(let refusal): return refusal
                case .found(let found): resolved = found
                }
                return await AdminResolved.$object.withValue(resolved) {
                    guard idempotent else { return await handler(request, key) }
                    return await self.idempotent(request, key, handler)
                }
            }
        }
    }

    /// What resolving a route's object came to.
    enum Resolution {
        /// The object (nil for a region, a credential or nothing), for the handler.
        case found((any Sendable)?)
        case refused(Response)
    }

    /// Finds the path's object: 404 unless it exists and is of a region the
    /// key may act on (a region it may not is answered as one that does not
    /// exist, on every route alike).
    func resolve(_ object: AdminObject, _ request: Request, _ key: ApiKeyStore.Record) async -> Resolution {
        guard let parameter = object.parameter else { return .found(nil) }
        let text = request.pathParameters[parameter] ?? ""
        let notFound = Resolution.refused(failure(AdministrationError.notFound("No such \(object.noun)")))
        switch object {
        case .region:
            guard let id = Int(text), key.allows(region: id), (try? administration.region(id)) != nil else { return notFound }
            return .found(nil)
        case .alert, .survey, .source:
            guard let id = Int64(text) else { return notFound }
            do {
                guard let found = try await objects.find(object, id: id), key.allows(region: found.region) else { return notFound }
                return .found(found.object)
            } catch { return .refused(failure(error)) }
        case .key, .principal:
            return Int64(text) == nil ? notFound : .found(nil)
        case .none:
            return .found(nil)
        }
    }

    /// Refuses a credential the route's scope does not admit (403), and
    /// audits a refused send. A service principal manages keys and nothing else.
    func scopeRefusal(_ scope: Scope, _ object: AdminObject, _ request: Request, _ key: ApiKeyStore.Record) async -> Response? {
        let target = object.parameter.flatMap { parameter in request.pathParameters[parameter].map { "\(object.rawValue) \($0)" } }
        func forbidden(_ message: String) -> Response { ErrorStyle.messages.response(status: 403, error: "Forbidden", messages: [message]) }
        switch scope {
        case .any, .push:
            if key.isPrincipal { return forbidden("A service principal may only create, list and revoke keys (/admin/api/keys)") }
            guard scope == .push, !key.canPush else { return nil }
            await administration(for: key).record(
                "refused.alert.send", region: nil,
                target: target, detail: "the key has no push scope")
            return forbidden("This API key may not start sends; that needs a key with the push scope")
        case .sources:
            if key.managesSources { return nil }
            await administration(for: key).record(
                "refused.source.change", region: nil, target: target,
                detail: "the key has neither the sources nor the admin scope")
            return forbidden("This API key may only read alert sources; managing them needs a key with the sources or admin scope")
        case .keys:
            return key.managesKeys ? nil : forbidden("Managing keys needs a service principal or a key with the admin scope")
        case .principals:
            return key.managesPrincipals ? nil : forbidden("Managing service principals needs an admin key of every region")
        }
    }

    /// Runs a request that starts work once per `Idempotency-Key`: a retry
    /// with the same key and the same request gets the first answer back.
    func idempotent(_ request: Request, _ key: ApiKeyStore.Record, _ handler: KeyHandler) async -> Response {
        let idempotencyKey: String
        do {
            guard let presented = try AdminConventions.idempotencyKey(request) else { return await handler(request, key) }
            idempotencyKey = presented
        } catch { return failure(error) }
        let now = clock.nowSeconds
        do {
            switch try await idempotency.claim(
                caller: key.id, key: idempotencyKey, fingerprint: AdminConventions.fingerprint(request), now: now)
            {
            case .replay(let status, let body, let etag):
                let replayed = Response.bytes(status, contentType: "application/json; charset=utf-8", Array(body.utf8))
                    .adding(header: "Idempotent-Replayed", "true")
                return etag.map { replayed.adding(header: "ETag", $0) } ?? replayed
            case .running:
                return ErrorStyle.messages.response(
                    status: 409, error: "Conflict", messages: ["A request with this Idempotency-Key is still running; retry shortly"]
                ).adding(header: "Retry-After", "1")
            case .mismatch:
                return ErrorStyle.messages.response(
                    status: 422, error: "Invalid", messages: ["This Idempotency-Key was used for a different request; use a new key"])
            case .claimed:
                break
            }
        } catch { return failure(error) }
        let response = await handler(request, key)
        do {
            // Only a settled answer is kept: a refusal to retry (429, 5xx) is not.
            if response.status < 500 && response.status != 429 && response.status != 409 {
                try await idempotency.finish(
                    caller: key.id, key: idempotencyKey, status: response.status, body: String(decoding: response.body, as: UTF8.self),
                    etag: response.headers.first { $0.name == "ETag" }?.value)
            } else {
                try await idempotency.release(caller: key.id, key: idempotencyKey)
            }
        } catch {
            logger.error("could not keep an idempotent answer", [("error", "\(error)")])
        }
        return response
    }

    func authenticate(_ request: Request, _ next: KeyHandler) async -> Response {
        let header = request.header("authorization") ?? ""
        let presented = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)).trimmingWhitespace() : ""
        let valid = presented.isEmpty ? nil : try? await keys.verify(presented, now: clock.nowSeconds)
        guard let valid else {
            // Guessing keys costs a budget per client address.
            if case .limited(let retryAfter) = await limiter.check("unauthenticated:" + request.clientKey) {
                return RiderLimits.tooMany(.messages, retryAfter: retryAfter, what: "failed sign-ins")
            }
            return ErrorStyle.messages.response(status: 401, error: "Unauthorized", messages: ["Send Authorization: Bearer <api key>"])
                .adding(header: "WWW-Authenticate", "Bearer")
        }
        if case .limited(let retryAfter) = await limiter.check("key:\(valid.id)") {
            return RiderLimits.tooMany(.messages, retryAfter: retryAfter)
        }
        return await next(request, valid)
    }

    /// The operations as this key: its changes are audited under its name.
    func administration(for key: ApiKeyStore.Record) -> AlertAdministration {
        administration.acting(as: "apikey:\(key.name)#\(key.id)")
    }

    /// A page of a list: `limit` and a signed `after` cursor of this list.
    func page(_ request: Request, list: String) async throws -> AdminConventions.Page {
        try AdminConventions.page(request, list: list, key: try await cursorKey.value())
    }

    /// The region the path's `:region` names (the kit checked it).
    func regionID(_ request: Request) throws(AdministrationError) -> Int {
        guard let id = request.pathParameters["region"].flatMap({ Int($0) }) else { throw .notFound("No such region") }
        return id
    }

    /// The id the path's parameter for `object` carries (the kit checked it).
    func id(_ request: Request, _ object: AdminObject) throws(AdministrationError) -> Int64 {
        guard let parameter = object.parameter, let id = request.pathParameters[parameter].flatMap({ Int64($0) }) else {
            throw .notFound("No such \(object.noun)")
        }
        return id
    }

    static func fields(_ request: Request, _ names: [String: AdminField]) -> [String: String] { fields(request, Array(names.keys)) }

    static func fields(_ request: Request, _ names: [String]) -> [String: String] {
        var fields: [String: String] = [:]
        for name in names {
            if let value = request.parameters[name] { fields[name] = value }
        }
        return fields
    }

    func failure(_ error: any Error) -> Response {
        switch error {
        case let error as AdministrationError:
            switch error {
            case .notFound: return ErrorStyle.messages.response(status: 404, error: "Not Found", messages: error.messages)
            case .forbidden: return ErrorStyle.messages.response(status: 403, error: "Forbidden", messages: error.messages)
            case .stale(let etag):
                return ErrorStyle.messages.response(status: 412, error: "Precondition Failed", messages: error.messages)
                    .adding(header: "ETag", etag)
            case .invalid: return ErrorStyle.messages.response(status: 422, error: "Invalid", messages: error.messages)
            case .approvalPending(let id, let message):
                // Accepted, not done: a key's request waits for a person.
                return .json(
                    202, JSONValue.object(["status": .string("approval pending"), "approval_request_id": .integer(id), "message": .string(message)]))
            }
        case AlertStoreError.notFound:
            return ErrorStyle.messages.response(status: 404, error: "Not Found", messages: ["No such alert"])
        case AlertStoreError.busy(let retryAfter):
            return ErrorStyle.messages.response(status: 409, error: "Busy", messages: ["This send is running elsewhere; retry in \(retryAfter) s"])
                .adding(header: "Retry-After", String(max(retryAfter, 1)))
        default:
            logger.error("admin request failed", [("error", "\(error)")])
            return Response.storageUnavailable(.messages, summary: "Unavailable")
        }
    }
}

extension AdminAPI {
    /// The kit as a feature builds it.
    init(_ context: FeatureContext) {
        self.init(
            administration: context.administration, keys: context.stores.apiKeys, objects: AdminObjectRegions(context.stores),
            idempotency: context.stores.idempotency, cursorKey: StoredSecret(store: context.stores.console, name: "admin-cursor"),
            limiter: context.adminAPILimiter,
            clock: context.clock, logger: context.logger)
    }
}
