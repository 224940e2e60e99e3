import Core
import HTTPServer

/// Region keys in the Go reference's admin contract
/// (`/regions/{regionId}/api_keys`): a service principal (or an admin key)
/// mints `obask_<region>_…` keys with an optional `push` scope, lists the
/// region's keys and revokes them. The same `ApiKeyStore` as
/// `/admin/api/keys`, `sidecar apikey` and the console's key page.
struct ReferenceKeyRoutes: Sendable {
    let api: ReferenceAdminAPI
    let audit: AuditLog

    var routes: [Route] {
        [
            api.route("POST", "/regions/:regionId/api_keys", .operatorOrService, region: .keyAdmin) { call in await mint(call) },
            api.route("GET", "/regions/:regionId/api_keys", .operatorOrService, region: .keyAdmin) { call in await list(call) },
            api.route("DELETE", "/regions/:regionId/api_keys/:keyId", .operatorOrService, region: .keyAdmin) { call in await revoke(call) },
        ]
    }

    /// A key's maker or revoker as the reference writes it, `{"kind", "id"}`:
    /// `cli` (id 0), `principal` or `operator` (an admin key or a console user).
    static func actor(_ tag: String) -> ReferenceJSON {
        let parts = tag.split(separator: ":", maxSplits: 1)
        let kind = parts.first.map(String.init) ?? "cli"
        let id = parts.count > 1 ? Int64(parts[1]) ?? 0 : 0
        switch kind {
        case "principal": return .object([("kind", .string("principal")), ("id", .integer(id))])
        case "cli": return .object([("kind", .string("cli")), ("id", .integer(0))])
        default: return .object([("kind", .string("operator")), ("id", .integer(id))])
        }
    }

    static func json(_ record: ApiKeyStore.Record) -> ReferenceJSON {
        .object([
            ("id", .integer(record.id)), ("name", .string(record.name)), ("scopes", .array(record.canPush ? [.string("push")] : [])),
            ("created_by", actor(record.createdBy)), ("created_at", .time(record.createdAt)), ("last_used_at", .time(record.lastUsedAt)),
            ("revoked_at", .time(record.revokedAt)), ("revoked_by", record.revokedBy.map(actor) ?? .null),
        ])
    }

    /// The name as the reference keeps it: ASCII control characters removed,
    /// then spaces trimmed; 1 to 100 bytes.
    static func name(_ raw: String) -> String? {
        let name = String(String.UnicodeScalarView(raw.unicodeScalars.filter { !($0.value < 0x20 || $0.value == 0x7F) })).trimmingWhitespace()
        return (1...100).contains(name.utf8.count) ? name : nil
    }

    /// The scope names: `push` is the only one; blank or any other is refused, duplicates collapse.
    static func scopes(_ value: JSONValue?) throws(ReferenceFailure) -> Bool {
        switch value {
        case nil, .null?: return false
        case .array(let names)?:
            var push = false
            for name in names {
                guard case .string(let text) = name else { throw .badRequest("invalid JSON body: scopes must be an array of strings") }
                guard text.trimmingWhitespace() == "push" else { throw .badRequest("unknown scope \"\(text)\"") }
                push = true
            }
            return push
        default: throw .badRequest("invalid JSON body: scopes must be an array of strings")
        }
    }

    func mint(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let body = try call.body()
            guard case .string(let rawName)? = body["name"] ?? .string("") else {
                throw ReferenceFailure.badRequest("invalid JSON body: name must be a string")
            }
            guard let name = Self.name(rawName) else { throw ReferenceFailure.status(422, "name must be 1-100 bytes after trimming") }
            let push = try Self.scopes(body["scopes"])
            guard call.caller.mayGrant(region: call.regionID, push: push) else { return ReferenceAdminAPI.error(403, "forbidden") }
            let now = api.clock.nowSeconds
            let (secret, record) = try await api.keys.create(
                name: name, regions: [call.regionID], canPush: push, madeBy: call.caller.mintingPrincipalID, actor: call.caller.actorTag,
                now: now)
            await audit.record(
                actor: call.caller.actorTag, action: "apikey.create", regionID: call.regionID, target: "API key \(record.id)",
                detail: "\(name); \(record.scopeDescription)", now: now)
            let answer = ReferenceJSON.object([
                ("id", .integer(record.id)), ("name", .string(name)), ("scopes", .array(push ? [.string("push")] : [])), ("key", .string(secret)),
                ("created_by", Self.actor(record.createdBy)), ("created_at", .time(record.createdAt)),
            ])
            return ReferenceAdminAPI.json(201, answer).adding(header: "Cache-Control", "no-store")
        } catch { return api.failure(error, notFound: "api key", invalidStatus: 422) }
    }

    /// The region's keys, live and revoked, newest first; never a key's text.
    func list(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let keys = try await api.keys.list().filter { $0.regions == [call.regionID] }.sorted { $0.id > $1.id }
            return ReferenceAdminAPI.json(200, .array(keys.map(Self.json)))
        } catch { return api.failure(error, notFound: "api key") }
    }

    /// Revokes a key of this region; revoking a revoked key changes nothing
    /// and answers the same 204.
    func revoke(_ call: ReferenceAdminAPI.Call) async -> Response {
        do {
            let id = try call.pathID("keyId")
            guard let found = try await api.keys.find(id: id), !found.isPrincipal, found.regions == [call.regionID] else {
                return ReferenceAdminAPI.error(404, "api key not found")
            }
            let now = api.clock.nowSeconds
            if found.revokedAt == nil, try await api.keys.revoke(id: id, actor: call.caller.actorTag, now: now) {
                await audit.record(actor: call.caller.actorTag, action: "apikey.revoke", regionID: call.regionID, target: "API key \(id)", now: now)
            }
            return .empty(204)
        } catch { return api.failure(error, notFound: "api key") }
    }
}

extension ReferenceKeyRoutes {
    init(_ api: ReferenceAdminAPI, _ context: FeatureContext) { self.init(api: api, audit: context.stores.audit) }
}

extension ReferenceKeyRoutes: Feature {}
