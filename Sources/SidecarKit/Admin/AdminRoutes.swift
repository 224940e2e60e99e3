import Core
import FoundationEssentials
import HTTPServer
import Push
import Synchronization

/// The admin HTTP API under `/admin/api/`, for the same operations as the
/// CLI and the console. Every request needs `Authorization: Bearer <key>`
/// with a key from `sidecar apikey create` (or a service principal's, for
/// the key-management operations only).
struct AdminRoutes: Sendable {
    let administration: AlertAdministration
    let keys: ApiKeyStore
    let store: AlertStore
    let sends: AlertSendRunner
    let idempotency: IdempotencyStore
    /// Requests per minute per key (and failed sign-ins per client address).
    let limiter: FixedWindowRateLimiter
    let clock: any WallClock
    let logger: Logger
    /// Whether this server resumes sends whose runner stopped.
    let resumesSends: Bool

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

    /// A route under `/admin/api` that needs a valid credential with the
    /// scope it names; it takes the fields in `accepts` (anything else is a
    /// 422 naming it) and, when `idempotent`, honours `Idempotency-Key`.
    /// Other features declare their admin routes with it.
    func route(
        _ method: String, _ path: String, _ scope: Scope = .any, accepts: [String: AdminField] = [:], idempotent: Bool = false,
        _ handler: @escaping KeyHandler
    ) -> Route {
        Route(method, "/admin/api" + path, errorStyle: .messages, access: .apiKey(scope.rawValue)) { request in
            await authenticate(request) { request, key in
                if let refusal = await scopeRefusal(scope, request, key) { return refusal }
                let problems = AdminConventions.fieldProblems(request.parameters, accepts: accepts)
                guard problems.isEmpty else { return ErrorStyle.messages.response(status: 422, error: "Invalid", messages: problems) }
                guard idempotent else { return await handler(request, key) }
                return await self.idempotent(request, key, handler)
            }
        }
    }

    /// Every route with the scope its key needs, declared here.
    var routes: [Route] {
        let page = AdminConventions.paging
        return [
            route("GET", "/regions", accepts: page) { request, key in await regions(request, key) },
            route("PUT", "/regions/:id", accepts: ["agency_id": .text, "timezone": .text]) { request, key in await setRegion(request, key) },
            route("GET", "/regions/:id/alerts", accepts: page) { request, key in await listAlerts(request, key) },
            route("POST", "/regions/:id/alerts", accepts: Self.authoringFields, idempotent: true) { request, key in
                await createAlert(request, key)
            },
            route("GET", "/alerts/:id") { request, key in await showAlert(request, key) },
            route("PATCH", "/alerts/:id", accepts: Self.authoringFields) { request, key in await editAlert(request, key) },
            route("PUT", "/alerts/:id", accepts: Self.authoringFields) { request, key in await editAlert(request, key) },
            route("DELETE", "/alerts/:id") { request, key in await deleteAlert(request, key) },
            route("POST", "/alerts/:id/publish") { request, key in await publish(request, key, true) },
            route("POST", "/alerts/:id/unpublish") { request, key in await publish(request, key, false) },
            route("PUT", "/alerts/:id/translations/:language", accepts: ["header": .text, "description": .text]) { request, key in
                await translate(request, key)
            },
            route("POST", "/alerts/:id/sends", .push, accepts: ["audience": .text, "messages": .object], idempotent: true) { request, key in
                await send(request, key)
            },
            route("GET", "/alerts/:id/sends", accepts: page) { request, key in await listSends(request, key) },
        ]
    }

    /// Refuses a credential the route's scope does not admit (403), and
    /// audits a refused send. A service principal manages keys and nothing else.
    func scopeRefusal(_ scope: Scope, _ request: Request, _ key: ApiKeyStore.Record) async -> Response? {
        func forbidden(_ message: String) -> Response { ErrorStyle.messages.response(status: 403, error: "Forbidden", messages: [message]) }
        switch scope {
        case .any, .push:
            if key.isPrincipal { return forbidden("A service principal may only create, list and revoke keys (/admin/api/keys)") }
            guard scope == .push, !key.canPush else { return nil }
            await administration(for: key).record(
                "refused.alert.send", region: nil,
                target: request.pathParameters["id"].map { "alert \($0)" }, detail: "the key has no push scope")
            return forbidden("This API key may not start sends; that needs a key with the push scope")
        case .sources:
            if key.managesSources { return nil }
            await administration(for: key).record(
                "refused.source.change", region: nil, target: request.pathParameters["id"].map { "source \($0)" },
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
        let now = clock.now().epochMillis / 1000
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
        let valid = presented.isEmpty ? nil : try? await keys.verify(presented, now: clock.now().epochMillis / 1000)
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

    /// A region the key may not act on is answered like one that does not
    /// exist, and one missing from the regions directory is 404 on every
    /// route alike (never an empty list on some and 404 on others).
    func regionID(_ request: Request, _ key: ApiKeyStore.Record) throws(AdministrationError) -> Int {
        guard let id = request.pathParameters["id"].flatMap({ Int($0) }), key.allows(region: id) else { throw .notFound("No such region") }
        _ = try administration.region(id)
        return id
    }

    /// The alert the path names, if the key may act on its region.
    func scopedAlert(_ request: Request, _ key: ApiKeyStore.Record) async throws -> ServiceAlert {
        guard let id = id(request) else { throw AlertStoreError.notFound }
        let alert = try await administration.alert(id: id)
        guard key.allows(region: alert.regionID) else { throw AdministrationError.notFound("No alert \(id)") }
        return alert
    }

    static let authoringFields: [String: AdminField] = [
        "header": .text, "description": .text, "url": .text, "cause": .text, "effect": .text, "severity": .text, "start": .text,
        "end": .text, "impact_start": .text, "impact_end": .text, "test": .boolean, "agency_id": .text, "region_wide": .boolean,
    ]

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

    func id(_ request: Request) -> Int64? { request.pathParameters["id"].flatMap { Int64($0) } }

    func regions(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let page = try AdminConventions.page(request, list: "regions")
            let list = try await administration.regionList().filter { key.allows(region: $0.region.id) }.sorted { $0.region.id < $1.region.id }
            return page.response(list, request: request, id: { Int64($0.region.id) }, json: { AdminJSON.region($0.region, $0.settings) })
        } catch { return failure(error) }
    }

    func setRegion(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let id = try regionID(request, key)
            let region = try administration.region(id)
            let current = try await administration.regionList().first { $0.region.id == id }?.settings
            try AdminConventions.checkIfMatch(request, current: AdminJSON.region(region, current))
            let settings = try await administration(for: key).setRegion(
                id: id, agencyID: request.parameters["agency_id"],
                timezone: request.parameters["timezone"])
            return AdminConventions.tagged(200, AdminJSON.region(region, settings))
        } catch { return failure(error) }
    }

    func listAlerts(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try regionID(request, key)
            _ = try administration.region(regionID)
            let page = try AdminConventions.page(request, list: "alerts:\(regionID)")
            let rows = try await store.alerts(regionID: regionID, after: page.after, limit: page.limit + 1)
            return page.response(rows, request: request, id: \.id, json: { AdminJSON.alert($0) })
        } catch { return failure(error) }
    }

    func createAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await administration(for: key).create(
                regionID: try regionID(request, key), fields: Self.fields(request, Self.authoringFields))
            return AdminConventions.tagged(201, AdminJSON.alert(alert))
        } catch { return failure(error) }
    }

    /// An alert with its translations and sends, tagged with the digest of
    /// exactly that body (a strong ETag changes whenever any byte would).
    func showAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return AdminConventions.tagged(200, try await fullAlert(alert))
        } catch { return failure(error) }
    }

    /// The alert as `GET /admin/api/alerts/:alert` answers it.
    private func fullAlert(_ alert: ServiceAlert) async throws -> JSONValue {
        AdminJSON.alert(alert, translations: try await store.translations(alertID: alert.id), sends: try await store.sends(alertID: alert.id))
    }

    /// The alert the path names, checked against `If-Match`: the tag of
    /// the alert alone (from a create or an edit) or of the alert as read
    /// (with its translations and sends) passes while it is current.
    func currentAlert(_ request: Request, _ key: ApiKeyStore.Record) async throws -> ServiceAlert {
        let alert = try await scopedAlert(request, key)
        if request.header("if-match") != nil {
            try AdminConventions.checkIfMatch(request, current: [AdminJSON.alert(alert), try await fullAlert(alert)])
        }
        return alert
    }

    func editAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await currentAlert(request, key)
            let edited = try await administration(for: key).edit(id: alert.id, fields: Self.fields(request, Self.authoringFields))
            return AdminConventions.tagged(200, AdminJSON.alert(edited))
        } catch { return failure(error) }
    }

    func deleteAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            try await administration(for: key).delete(id: try await currentAlert(request, key).id)
            return .empty(204)
        } catch { return failure(error) }
    }

    func publish(_ request: Request, _ key: ApiKeyStore.Record, _ published: Bool) async -> Response {
        do {
            let alert = try await currentAlert(request, key)
            return AdminConventions.tagged(200, AdminJSON.alert(try await administration(for: key).setPublished(id: alert.id, published)))
        } catch { return failure(error) }
    }

    func translate(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            // If-Match names the alert's version: a translation of text that
            // changed since it was read is refused.
            let alert = try await currentAlert(request, key)
            let translation = try await administration(for: key).translate(
                id: alert.id, language: request.pathParameters["language"] ?? "",
                header: request.parameters["header"],
                description: request.parameters["description"])
            return .json(200, AdminJSON.translation(translation, current: translation.sourceVersion))
        } catch { return failure(error) }
    }

    /// Starts (or resumes) a send in the background; 202 with its state
    /// (the route admits only a key with the push scope). `messages` is the
    /// caller's push text by language instead of the alert's.
    func send(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        guard sends.transport != nil else {
            return failure(
                AdministrationError.invalid(["This server has no push transport configured (gorush, APNs and FCM, or a relay): its operator sets one"]
                ))
        }
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"]?.presence ?? "all") else {
            return failure(AdministrationError.invalid(["audience must be all or test"]))
        }
        do {
            let alert = try await scopedAlert(request, key)
            let messages = try administration.pushMessages(request.parameters.value("messages"))
            let (send, _) = try await administration(for: key).startSend(id: alert.id, audience: audience, messages: messages)
            sends.launch(send)
            return .json(202, AdminJSON.send(send))
        } catch { return failure(error) }
    }

    func listSends(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            let page = try AdminConventions.page(request, list: "sends:\(alert.id)")
            return page.response(try await store.sends(alertID: alert.id), request: request, id: \.id, json: AdminJSON.send)
        } catch { return failure(error) }
    }
}

extension AdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            administration: context.administration, keys: context.stores.apiKeys, store: context.stores.alerts, sends: context.alertSends,
            idempotency: context.stores.idempotency, limiter: context.adminAPILimiter,
            clock: context.clock, logger: context.logger, resumesSends: context.configuration.runsSendResumer)
    }

    /// Resumes sends whose runner died or stopped.
    var jobs: [BackgroundJob] { resumesSends ? [BackgroundJob(name: "alert send resumer", run: sends.run)] : [] }
}
