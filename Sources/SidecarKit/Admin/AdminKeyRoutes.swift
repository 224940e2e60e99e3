import Core
import HTTPServer

/// Key management and the audit log in the admin API. Keys are managed by a
/// service principal (the keys it made) or by a key made with `--admin`
/// (keys within its regions, never granting more than it has); principals
/// by an `--admin` key of every region. A secret is shown once, in the
/// answer that creates it, so these creations take no `Idempotency-Key`.
struct AdminKeyRoutes: Sendable {
    let admin: AdminAPI
    let keys: ApiKeyStore
    let audit: AuditLog
    let regions: RegionDirectory
    let clock: any WallClock

    var routes: [Route] {
        let page = AdminConventions.paging
        return [
            admin.route("GET", "/keys", on: .none, .keys, accepts: page) { request, key in await listKeys(request, key) },
            admin.route(
                "POST", "/keys", on: .none, .keys,
                accepts: ["name": .text, "regions": .list, "push": .boolean, "admin": .boolean, "sources": .boolean]
            ) {
                request, key in await createKey(request, key)
            },
            admin.route("DELETE", "/keys/:key", on: .key, .keys) { request, key in await revokeKey(request, key) },
            admin.route("GET", "/principals", on: .none, .principals, accepts: page) { request, key in await listPrincipals(request, key) },
            admin.route("POST", "/principals", on: .none, .principals, accepts: ["name": .text]) { request, key in await createPrincipal(request, key)
            },
            admin.route("DELETE", "/principals/:principal", on: .principal, .principals, accepts: ["revoke_keys": .boolean]) { request, key in
                await revokePrincipal(request, key)
            },
            admin.route("GET", "/audit", on: .none, accepts: page) { request, key in await auditEntries(request, key) },
        ]
    }

    var now: EpochSeconds { clock.nowSeconds }

    static func actor(_ key: ApiKeyStore.Record) -> String { "apikey:\(key.name)#\(key.id)" }

    /// A key or principal as the API shows it: never its secret or hash.
    static func json(_ record: ApiKeyStore.Record, secret: String? = nil) -> JSONValue {
        var fields: [String: JSONValue] = [
            "id": .integer(record.id), "name": .string(record.name), "prefix": .string(record.prefix),
            "kind": .string(record.isPrincipal ? "principal" : "key"),
            "regions": record.isPrincipal ? .null : record.regions.map { .array($0.sorted().map { .integer(Int64($0)) }) } ?? .string("all"),
            "push": .bool(record.canPush), "admin": .bool(record.isAdmin), "sources": .bool(record.canManageSources),
            "principal_id": record.principalID.map(JSONValue.integer) ?? .null,
            "created_at": AdminJSON.time(record.createdAt), "last_used_at": AdminJSON.time(record.lastUsedAt),
            "revoked_at": AdminJSON.time(record.revokedAt),
        ]
        if let secret { fields["key"] = .string(secret) }
        return .object(fields)
    }

    /// The records of a kind the caller may see, a page at a time (keys are
    /// filtered by what the caller manages, so pages are filled in a loop).
    func visible(principals: Bool, page: AdminConventions.Page, _ allowed: (ApiKeyStore.Record) -> Bool) async throws -> (
        [ApiKeyStore.Record], Int64?
    ) {
        var found: [ApiKeyStore.Record] = []
        var after = page.after
        while found.count <= page.limit {
            let batch = try await keys.list(principals: principals, after: after, limit: 500)
            found += batch.filter(allowed)
            guard let last = batch.last, batch.count == 500 else { break }
            after = last.id
        }
        return page.window(found) { $0.id }
    }

    func listKeys(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let page = try await admin.page(request, list: "keys")
            let (shown, next) = try await visible(principals: false, page: page) { key.mayManage($0) }
            return AdminConventions.pageResponse(shown.map { Self.json($0) }, next: next, page: page, request: request)
        } catch { return admin.failure(error) }
    }

    /// `regions`: a list of region ids, or `["all"]`; required, so a key
    /// never gets every region by omission.
    func grantedRegions(_ request: Request) throws(AdministrationError) -> Set<Int>? {
        guard case .array(let items)? = request.parameters.value("regions"), !items.isEmpty else {
            throw .invalid(["regions is required: a list of region ids, or [\"all\"]"])
        }
        if items == [.string("all")] { return nil }
        var granted = Set<Int>()
        for item in items {
            guard case .integer(let id) = item, let region = Int(exactly: id), regions.region(id: region) != nil else {
                throw .invalid([
                    "regions must list ids of regions in the directory (got \(String(decoding: item.encoded().prefix(40), as: UTF8.self)))"
                ])
            }
            granted.insert(region)
        }
        return granted
    }

    static func name(_ request: Request) throws(AdministrationError) -> String {
        guard let name = request.parameters["name"]?.trimmingWhitespace(), !name.isEmpty else { throw .invalid(["name is required"]) }
        let tooLong = FieldLimits.check([("name", name, FieldLimits.name)])
        guard tooLong.isEmpty else { throw .invalid(tooLong) }
        return name
    }

    func createKey(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let name = try Self.name(request)
            let granted = try grantedRegions(request)
            let push = request.parameters["push"] == "true", isAdmin = request.parameters["admin"] == "true"
            let sources = request.parameters["sources"] == "true"
            guard key.mayGrant(regions: granted, push: push, admin: isAdmin, sources: sources) else {
                throw AdministrationError.forbidden(
                    key.isPrincipal
                        ? "A service principal makes keys of listed regions, never admin or sources keys"
                        : "A key can only grant regions, push and admin that it has itself")
            }
            let (secret, record) = try await keys.create(
                name: name, regions: granted, canPush: push, isAdmin: isAdmin, canManageSources: sources, madeBy: key.isPrincipal ? key.id : nil,
                actor: key.actorTag, now: now)
            await audit.record(
                actor: Self.actor(key), action: "apikey.create", regionID: granted?.count == 1 ? granted?.first : nil,
                target: "API key \(record.id)", detail: "\(name); \(record.scopeDescription)", now: now)
            return .json(201, Self.json(record, secret: secret)).adding(header: "Cache-Control", "no-store")
        } catch { return admin.failure(error) }
    }

    func revokeKey(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            // A key the caller may not manage is answered like one that does not exist.
            guard let id = try? admin.id(request, .key), let found = try await keys.find(id: id), !found.isPrincipal, found.revokedAt == nil,
                key.mayManage(found) || found.id == key.id
            else { throw AdministrationError.notFound("No such key") }
            guard try await keys.revoke(id: id, actor: key.actorTag, now: now) else { throw AdministrationError.notFound("No such key") }
            await audit.record(actor: Self.actor(key), action: "apikey.revoke", regionID: nil, target: "API key \(id)", now: now)
            return .empty(204)
        } catch { return admin.failure(error) }
    }

    func listPrincipals(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let page = try await admin.page(request, list: "principals")
            let (shown, next) = try await visible(principals: true, page: page) { _ in true }
            return AdminConventions.pageResponse(shown.map { Self.json($0) }, next: next, page: page, request: request)
        } catch { return admin.failure(error) }
    }

    func createPrincipal(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let name = try Self.name(request)
            let (secret, record) = try await keys.create(name: name, principal: true, actor: key.actorTag, now: now)
            await audit.record(
                actor: Self.actor(key), action: "principal.create", regionID: nil, target: "principal \(record.id)", detail: name, now: now)
            return .json(201, Self.json(record, secret: secret)).adding(header: "Cache-Control", "no-store")
        } catch { return admin.failure(error) }
    }

    func revokePrincipal(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let withKeys = request.parameters["revoke_keys"] == "true"
            guard let id = try? admin.id(request, .principal),
                let revoked = try await keys.revokePrincipal(id: id, withKeys: withKeys, actor: key.actorTag, now: now)?.count
            else {
                throw AdministrationError.notFound("No such service principal")
            }
            await audit.record(
                actor: Self.actor(key), action: "principal.revoke", regionID: nil, target: "principal \(id)",
                detail: withKeys ? "with its \(revoked) keys" : "its keys kept", now: now)
            return .json(200, JSONValue.object(["id": .integer(id), "revoked_keys": .integer(Int64(revoked))]))
        } catch { return admin.failure(error) }
    }

    /// The audit of the key's regions, newest first (a key of every region
    /// also sees changes that belong to no region).
    func auditEntries(_ request: Request, _ key: ApiKeyStore.Record) async -> Response {
        do {
            let page = try await admin.page(request, list: "audit")
            let rows = try await audit.entries(regions: key.regions, before: page.after < 0 ? nil : page.after, limit: page.limit + 1)
            let shown = Array(rows.prefix(page.limit))
            let next = rows.count > page.limit ? shown.last?.id : nil
            return AdminConventions.pageResponse(
                shown.map { entry in
                    JSONValue.object([
                        "id": .integer(entry.id), "at": AdminJSON.time(entry.at), "actor": .string(entry.actor), "action": .string(entry.action),
                        "region_id": entry.regionID.map { .integer(Int64($0)) } ?? .null, "target": entry.target.map(JSONValue.string) ?? .null,
                        "detail": entry.detail.map(JSONValue.string) ?? .null,
                    ])
                }, next: next, page: page, request: request)
        } catch { return admin.failure(error) }
    }
}

extension AdminKeyRoutes: Feature {
    init(_ context: FeatureContext) {
        self.init(
            admin: AdminAPI(context), keys: context.stores.apiKeys, audit: context.stores.audit, regions: context.regions,
            clock: context.clock)
    }
}
