import Core
import FoundationEssentials
import HTTPServer
import Push
import Synchronization

/// The admin HTTP API under `/admin/api/`, for the same operations as the
/// CLI. Every request needs `Authorization: Bearer <key>` with a key from
/// `sidecar apikey create`.
struct AdminRoutes: Sendable {
    let administration: AlertAdministration
    let keys: ApiKeyStore
    let store: AlertStore
    let sends: AlertSendRunner
    let clock: any WallClock
    let logger: Logger
    /// Whether this server resumes sends whose runner stopped.
    let resumesSends: Bool

    /// A handler that knows which key called it.
    typealias KeyHandler = @Sendable (Request, ApiKeyStore.Record) async -> Response

    /// What a key must carry to call a route.
    enum Scope: String { case any, push }

    /// A route under `/admin/api` that needs a valid key (with the push
    /// scope when `scope` says so); other features declare theirs with it.
    func route(_ method: String, _ path: String, _ scope: Scope = .any, _ handler: @escaping KeyHandler) -> Route {
        Route(method, "/admin/api" + path, errorStyle: .messages, access: .apiKey(scope.rawValue)) { request in
            await authenticate(request) { request, key in
                if scope == .push, let refusal = await pushScopeRefusal(request, key) { return refusal }
                return await handler(request, key)
            }
        }
    }

    /// Every route with the scope its key needs, declared here.
    var routes: [Route] {
        [
            route("GET", "/regions") { _, key in await regions(key) },
            route("PUT", "/regions/:id") { request, key in await setRegion(request, key) },
            route("GET", "/regions/:id/alerts") { request, key in await listAlerts(request, key) },
            route("POST", "/regions/:id/alerts") { request, key in await createAlert(request, key) },
            route("GET", "/alerts/:id") { request, key in await showAlert(request, key) },
            route("PATCH", "/alerts/:id") { request, key in await editAlert(request, key) },
            route("PUT", "/alerts/:id") { request, key in await editAlert(request, key) },
            route("DELETE", "/alerts/:id") { request, key in await deleteAlert(request, key) },
            route("POST", "/alerts/:id/publish") { request, key in await publish(request, key, true) },
            route("POST", "/alerts/:id/unpublish") { request, key in await publish(request, key, false) },
            route("PUT", "/alerts/:id/translations/:language") { request, key in await translate(request, key) },
            route("POST", "/alerts/:id/sends", .push) { request, key in await send(request, key) },
            route("GET", "/alerts/:id/sends") { request, key in await listSends(request, key) },
        ]
    }

    /// A key without the push scope is refused a send, and the refusal audited.
    func pushScopeRefusal(_ request: Request, _ key: ApiKeyStore.Record) async -> Response? {
        guard key.canPush else {
            await administration(for: key).record(
                "refused.alert.send", region: nil,
                target: request.pathParameters["id"].map { "alert \($0)" }, detail: "the key has no push scope")
            return ErrorStyle.messages.response(
                status: 403, error: "Forbidden",
                messages: ["This API key may not start sends; create one with --push"])
        }
        return nil
    }

    func authenticate(_ request: Request, _ next: KeyHandler) async -> Response {
        let header = request.header("authorization") ?? ""
        let presented = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)).trimmingWhitespace() : ""
        let valid = presented.isEmpty ? nil : try? await keys.verify(presented, now: clock.now().epochMillis / 1000)
        guard let valid else {
            return ErrorStyle.messages.response(status: 401, error: "Unauthorized", messages: ["Send Authorization: Bearer <api key>"])
                .adding(header: "WWW-Authenticate", "Bearer")
        }
        return await next(request, valid)
    }

    /// The operations as this key: its changes are audited under its name.
    func administration(for key: ApiKeyStore.Record) -> AlertAdministration {
        administration.acting(as: "apikey:\(key.name)#\(key.id)")
    }

    /// A region the key may not act on is answered like one that does not exist.
    func regionID(_ request: Request, _ key: ApiKeyStore.Record) throws(AdministrationError) -> Int {
        guard let id = request.pathParameters["id"].flatMap({ Int($0) }), key.allows(region: id) else { throw .notFound("No such region") }
        return id
    }

    /// The alert the path names, if the key may act on its region.
    func scopedAlert(_ request: Request, _ key: ApiKeyStore.Record) async throws -> ServiceAlert {
        guard let id = id(request) else { throw AlertStoreError.notFound }
        let alert = try await administration.alert(id: id)
        guard key.allows(region: alert.regionID) else { throw AdministrationError.notFound("No alert \(id)") }
        return alert
    }

    static let authoringFields = [
        "header", "description", "url", "cause", "effect", "severity", "start", "end", "impact_start", "impact_end", "test",
        "agency_id",
    ]

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
            if case .notFound = error { return ErrorStyle.messages.response(status: 404, error: "Not Found", messages: error.messages) }
            return ErrorStyle.messages.response(status: 422, error: "Invalid", messages: error.messages)
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

    func regions(_ key: ApiKeyStore.Record) async -> Response {
        do {
            let list = try await administration.regionList().filter { key.allows(region: $0.region.id) }
            return .json(200, JSONValue.array(list.map { AdminJSON.region($0.region, $0.settings) }))
        } catch { return failure(error) }
    }

    func setRegion(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let id = try regionID(request, key)
            let settings = try await administration(for: key).setRegion(
                id: id, agencyID: request.parameters["agency_id"],
                timezone: request.parameters["timezone"])
            return .json(200, AdminJSON.region(try administration.region(id), settings))
        } catch { return failure(error) }
    }

    func listAlerts(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try regionID(request, key)
            _ = try administration.region(regionID)
            return .json(200, JSONValue.array(try await store.alerts(regionID: regionID).map { AdminJSON.alert($0) }))
        } catch { return failure(error) }
    }

    func createAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await administration(for: key).create(
                regionID: try regionID(request, key), fields: Self.fields(request, Self.authoringFields))
            return .json(201, AdminJSON.alert(alert))
        } catch { return failure(error) }
    }

    func showAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return .json(
                200,
                AdminJSON.alert(
                    alert, translations: try await store.translations(alertID: alert.id),
                    sends: try await store.sends(alertID: alert.id)))
        } catch { return failure(error) }
    }

    func editAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return .json(
                200, AdminJSON.alert(try await administration(for: key).edit(id: alert.id, fields: Self.fields(request, Self.authoringFields))))
        } catch { return failure(error) }
    }

    func deleteAlert(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            try await administration(for: key).delete(id: try await scopedAlert(request, key).id)
            return .empty(204)
        } catch { return failure(error) }
    }

    func publish(_ request: Request, _ key: ApiKeyStore.Record, _ published: Bool) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return .json(200, AdminJSON.alert(try await administration(for: key).setPublished(id: alert.id, published)))
        } catch { return failure(error) }
    }

    func translate(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            let translation = try await administration(for: key).translate(
                id: alert.id, language: request.pathParameters["language"] ?? "",
                header: request.parameters["header"],
                description: request.parameters["description"])
            return .json(200, AdminJSON.translation(translation, current: translation.sourceVersion))
        } catch { return failure(error) }
    }

    /// Starts (or resumes) a send in the background; 202 with its state
    /// (the route admits only a key with the push scope).
    func send(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        guard sends.transport != nil else {
            return failure(AdministrationError.invalid(["No push transport is configured (--gorush-url or --push-transport)"]))
        }
        guard let audience = AlertSend.Audience(rawValue: request.parameters["audience"]?.presence ?? "all") else {
            return failure(AdministrationError.invalid(["audience must be all or test"]))
        }
        do {
            let alert = try await scopedAlert(request, key)
            let (send, _) = try await administration(for: key).startSend(id: alert.id, audience: audience)
            sends.launch(send)
            return .json(202, AdminJSON.send(send))
        } catch { return failure(error) }
    }

    func listSends(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let alert = try await scopedAlert(request, key)
            return .json(200, JSONValue.array(try await store.sends(alertID: alert.id).map(AdminJSON.send)))
        } catch { return failure(error) }
    }
}

/// JSON shapes of the admin API (and `--json` CLI output).
enum AdminJSON {
    static func time(_ instant: EpochSeconds?) -> JSONValue {
        guard let instant else { return .null }
        return .string(Date(timeIntervalSince1970: Double(instant.value)).formatted(.iso8601))
    }

    static func time(_ seconds: Int64?) -> JSONValue { time(seconds.map { EpochSeconds($0) }) }

    static func region(_ region: Region, _ settings: RegionSettings?) -> JSONValue {
        .object([
            "id": .integer(Int64(region.id)), "name": .string(region.name),
            "agency_id": settings?.agencyID.map(JSONValue.string) ?? .null, "timezone": settings?.timezone.map(JSONValue.string) ?? .null,
        ])
    }

    static func alert(_ alert: ServiceAlert, translations: [AlertTranslation]? = nil, sends: [AlertSend]? = nil) -> JSONValue {
        var fields: [String: JSONValue] = [
            "id": .integer(alert.id), "region_id": .integer(Int64(alert.regionID)), "agency_id": .string(alert.agencyID),
            "header": .string(alert.header), "description": .string(alert.description), "url": alert.url.map(JSONValue.string) ?? .null,
            "cause": .string(alert.cause.name), "effect": .string(alert.effect.name), "severity": .string(alert.severity.name),
            "start": time(alert.startsAt), "end": time(alert.endsAt), "published": .bool(alert.published), "test": .bool(alert.test),
            "impact_start": time(alert.impactStartsAt), "impact_end": time(alert.impactEndsAt),
            "shown_until": time(AlertFeedRules.effectiveEnd(alert)),
            "source_version": .integer(Int64(alert.sourceVersion)), "updated_at": time(alert.updatedAt),
        ]
        if let translations { fields["translations"] = .array(translations.map { translation($0, current: alert.sourceVersion) }) }
        if let sends { fields["sends"] = .array(sends.map(send)) }
        return .object(fields)
    }

    static func translation(_ translation: AlertTranslation, current: Int) -> JSONValue {
        .object([
            "language": .string(translation.language), "header": .string(translation.header),
            "description": .string(translation.description), "stale": .bool(translation.sourceVersion != current),
        ])
    }

    static func send(_ send: AlertSend) -> JSONValue {
        .object([
            "id": .integer(send.id), "audience": .string(send.audience.rawValue), "status": .string(send.status),
            "targeted": .integer(Int64(send.targeted)), "delivered": .integer(Int64(send.delivered)),
            "failed": .integer(Int64(send.failed)), "pruned": .integer(Int64(send.pruned)), "pending": .integer(Int64(send.pending)),
            "last_error": send.lastError.map(JSONValue.string) ?? .null, "audience_size": .integer(Int64(send.audienceSize)),
            "started_at": time(send.startedAt), "finished_at": time(send.finishedAt),
        ])
    }
}

extension AdminRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            administration: context.administration, keys: context.stores.apiKeys, store: context.stores.alerts, sends: context.alertSends,
            clock: context.clock, logger: context.logger, resumesSends: context.configuration.runsSendResumer)
    }

    /// Resumes sends whose runner died or stopped.
    var jobs: [BackgroundJob] { resumesSends ? [BackgroundJob(name: "alert send resumer", run: sends.run)] : [] }
}
