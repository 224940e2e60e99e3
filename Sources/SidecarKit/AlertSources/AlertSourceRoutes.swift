import Core
import HTTPServer

/// Alert sources in the admin API, for keys scoped to the source's region.
/// Any such key reads them; adding, editing, polling and removing one needs
/// the sources or the admin scope (each source is a request this server
/// makes every interval, with the source's secrets). Secret headers and
/// link-local addresses are set only from the CLI on the server (a key must
/// not make the server read its files or reach its cloud's metadata
/// service); private addresses only by an admin key.
struct AlertSourceRoutes: Sendable {
    let admin: AdminAPI
    let administration: AlertSourceAdministration
    let store: AlertSourceStore

    /// The fields the API takes, as the CLI's flags with underscores.
    static let fields = [
        "url", "mode", "interval", "push", "min_severity", "effects", "scope", "quiet_hours", "audience", "flood_threshold", "push_corrections",
        "max_bytes", "pushes_per_hour", "allow_private",
    ]
    static let cliOnly = ["header_file", "header_env", "allow_link_local"]

    /// What the add and edit operations take (the CLI-only names too, to
    /// refuse them with a message that says where they can be set).
    static let accepted = Dictionary(uniqueKeysWithValues: (fields + cliOnly).map { ($0, AdminField.scalar) })

    var routes: [Route] {
        let page = AdminConventions.paging
        return [
            admin.route("GET", "/regions/:region/sources", on: .region, accepts: page) { request, key in await list(request, key) },
            admin.route("POST", "/regions/:region/sources", on: .region, .sources, accepts: Self.accepted, idempotent: true) { request, key in
                await add(request, key)
            },
            admin.route("GET", "/sources/:source", on: .source) { request, key in await show(request, key) },
            admin.route("PATCH", "/sources/:source", on: .source, .sources, accepts: Self.accepted) { request, key in await edit(request, key) },
            admin.route("DELETE", "/sources/:source", on: .source, .sources) { request, key in await remove(request, key) },
            admin.route("POST", "/sources/:source/poll", on: .source, .sources) { request, key in await poll(request, key) },
            admin.route("GET", "/sources/:source/reviews", on: .source, accepts: page) { request, key in await reviews(request, key) },
            admin.route("POST", "/sources/:source/reviews/:entity/approve", on: .source, .push) { request, key in
                await decide(request, key, approve: true)
            },
            admin.route("POST", "/sources/:source/reviews/:entity/dismiss", on: .source) { request, key in await decide(request, key, approve: false)
            },
            admin.route("POST", "/sources/:source/alerts/:entity/hide", on: .source) { request, key in await hide(request, key, true) },
            admin.route("POST", "/sources/:source/alerts/:entity/show", on: .source) { request, key in await hide(request, key, false) },
        ]
    }

    func acting(_ key: ApiKeyStore.Record) -> AlertSourceAdministration { administration.acting(as: "apikey:\(key.name)#\(key.id)") }

    /// The source the path names, if the key may act on its region.
    func scoped(_ request: Request, _ key: ApiKeyStore.Record) async throws -> (AlertSource, AlertSourceStatus) {
        guard let id = try? admin.id(request, .source),
            let found = try await AdminResolved.reuse(
                (AlertSource, AlertSourceStatus).self, matching: { $0.0.id == id }, else: { try await store.source(id: id) }),
            key.allows(region: found.0.regionID)
        else {
            throw AdministrationError.notFound("No such source")
        }
        return found
    }

    func settings(_ request: Request, _ key: ApiKeyStore.Record) throws(AdministrationError) -> [String: String] {
        let refused = Self.cliOnly.filter { request.parameters[$0] != nil }
        guard refused.isEmpty else {
            throw .invalid(["\(refused.joined(separator: ", ")) can only be set by an operator on the server itself"])
        }
        if request.parameters["allow_private"] != nil && !key.isAdmin {
            throw .forbidden("allow_private needs a key with the admin scope: it lets the server reach this network's own hosts")
        }
        return AdminAPI.fields(request, Self.fields)
    }

    func list(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let regionID = try admin.regionID(request)
            let page = try await admin.page(request, list: "sources:\(regionID)")
            let sources = try await store.sources(regionID: regionID).sorted { $0.0.id < $1.0.id }
            return page.response(sources, request: request, id: { $0.0.id }, json: { Self.json($0.0, $0.1) })
        } catch { return admin.failure(error) }
    }

    func add(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let source = try await acting(key).add(regionID: try admin.regionID(request), fields: try settings(request, key), naming: .api)
            return .json(201, Self.json(source, AlertSourceStatus())).adding(header: "ETag", Self.etag(source))
        } catch { return admin.failure(error) }
    }

    func show(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let (source, status) = try await scoped(request, key)
            return .json(200, Self.json(source, status)).adding(header: "ETag", Self.etag(source))
        } catch { return admin.failure(error) }
    }

    func edit(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            try AdminConventions.checkIfMatch(request, current: Self.json(source, AlertSourceStatus()))
            let edited = try await acting(key).edit(id: source.id, fields: try settings(request, key), naming: .api)
            return .json(200, Self.json(edited, try await store.source(id: source.id)?.1 ?? AlertSourceStatus()))
                .adding(header: "ETag", Self.etag(edited))
        } catch { return admin.failure(error) }
    }

    func remove(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            try AdminConventions.checkIfMatch(request, current: Self.json(source, AlertSourceStatus()))
            try await acting(key).remove(id: source.id)
            return .empty(204)
        } catch { return admin.failure(error) }
    }

    /// Polls now and answers with what changed (`lines`, as `sidecar source
    /// poll` prints them) and why it failed, if it did.
    func poll(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            let report = try await administration.poller.pollNow(sourceID: source.id, waitSeconds: 20)
            return .json(
                200,
                JSONValue.object(["lines": .array(report.lines.map(JSONValue.string)), "failure": report.failure.map(JSONValue.string) ?? .null]))
        } catch { return admin.failure(error) }
    }

    func reviews(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            let page = try await admin.page(request, list: "reviews:\(source.id)")
            let (shown, next) = page.window(try await store.reviews(sourceID: source.id).sorted { $0.0.alertID < $1.0.alertID }) { $0.0.alertID }
            return AdminConventions.pageResponse(
                shown.map { state, header in
                    JSONValue.object([
                        "entity_id": .string(state.entityID), "alert_id": .integer(state.alertID), "header": .string(header),
                        "reason": state.reason.map(JSONValue.string) ?? .null,
                    ])
                }, next: next, page: page, request: request)
        } catch { return admin.failure(error) }
    }

    /// Approving pushes at once (the route needs the push scope); a second
    /// answer to the same alert is refused (422), so a retry never pushes twice.
    func decide(_ request: Request, _ key: ApiKeyStore.Record, approve: Bool) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            let lines = try await acting(key).decide(id: source.id, entityID: request.pathParameters["entity"] ?? "", approve: approve)
            return .json(200, JSONValue.object(["lines": .array(lines.map(JSONValue.string))]))
        } catch { return admin.failure(error) }
    }

    /// Keeps one of the source's alerts out of the feed (or lets it back);
    /// answers whether anything changed.
    func hide(_ request: Request, _ key: ApiKeyStore.Record, _ hidden: Bool) async -> Response {
        do {
            let (source, _) = try await scoped(request, key)
            let changed = try await acting(key).setHidden(id: source.id, entityID: request.pathParameters["entity"] ?? "", hidden: hidden)
            return .json(200, JSONValue.object(["hidden": .bool(hidden), "changed": .bool(changed)]))
        } catch { return admin.failure(error) }
    }

    /// A source's version: its settings, not its polling status (a poll
    /// does not make an editor's copy stale).
    static func etag(_ source: AlertSource) -> String { AdminConventions.etag(json(source, AlertSourceStatus())) }

    static func json(_ source: AlertSource, _ status: AlertSourceStatus) -> JSONValue {
        .object([
            "id": .integer(source.id), "region_id": .integer(Int64(source.regionID)), "url": .string(source.url),
            "mode": .string(source.mode.rawValue), "interval_seconds": .integer(Int64(source.intervalSeconds)),
            "push": .string(source.push.rawValue), "min_severity": .string(source.minSeverity.name),
            "effects": .array(source.effects.map { .string($0.name) }), "scope": .string(source.scope.rawValue),
            "quiet_hours": source.quietHours.map { .string($0.text) } ?? .null, "audience": .string(source.audience.rawValue),
            "flood_threshold": .integer(Int64(source.floodThreshold)), "push_corrections": .bool(source.pushCorrections),
            "headers": .array(source.headers.map { .string($0.name) }), "allow_link_local": .bool(source.allowLinkLocal),
            "allow_private": .bool(source.allowPrivate), "pushes_per_hour": .integer(Int64(source.pushesPerHour)),
            "max_bytes": .integer(Int64(source.maxBytes)),
            "status": .object([
                "state": .string(SourceDescription.state(status)), "last_poll_at": AdminJSON.time(status.lastPollAt),
                "last_success_at": AdminJSON.time(status.lastSuccessAt), "failing_since": AdminJSON.time(status.failingSince),
                "next_poll_at": AdminJSON.time(status.nextPollAt > 0 ? status.nextPollAt : nil),
                "last_error": status.lastError.map(JSONValue.string) ?? .null, "problems": .array(status.problems.map(JSONValue.string)),
                "etag": status.etag.map(JSONValue.string) ?? .null, "alerts": .integer(Int64(status.alertCount)),
                "polls": .integer(Int64(status.polls)), "not_modified": .integer(Int64(status.notModified)),
                "failures": .integer(Int64(status.failedPolls)), "pushes": .integer(Int64(status.pushes)),
                "held": status.heldReason.map(JSONValue.string) ?? .null,
            ]),
        ])
    }
}
