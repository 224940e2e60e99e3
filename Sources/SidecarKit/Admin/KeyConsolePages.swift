import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Admin API keys: list, create, revoke. A new key is shown once, on the
/// page the creation redirects to (it travels there in a short-lived
/// cookie, never stored by the server), so a refresh repeats nothing; the
/// creation form's token is single-use, so a double click makes one key.
struct KeyConsolePages: ConsolePages {
    let console: ConsoleRoutes
    var keys: ApiKeyStore { console.keys }

    var routes: [Route] {
        [
            userPage("GET", "/admin/keys", .manageKeys) { request, session in await keyList(request, session) },
            userPage("POST", "/admin/keys", .manageKeys) { request, session in await createKey(request, session) },
            userPage("GET", "/admin/keys/:key/revoke", .manageKeys) { request, session in await confirmRevokeKey(request, session) },
            userPage("POST", "/admin/keys/:key/revoke", .manageKeys) { request, session in await revokeKey(request, session) },
        ]
    }

    static let newKeyCookie = "sidecar_new_key"

    func keyList(
        _ request: Request, _ session: ConsoleStore.Session, values: [String: String] = [:], problems: [String] = [],
        status: Int = 200
    ) async -> Response {
        let list: [ApiKeyStore.Record]
        let token: String
        do {
            // A user sees only keys within their own regions.
            list = try await keys.list().filter { ConsoleRules.mayManageKey(keyRegions: $0.regions, allowed: session.user.regions) }
            token = try await formTokens.issue(purpose: "apikey:\(session.idHash)", now: now)
        } catch { return unavailable(error) }
        let visible = visibleRegions(session.user)
        var content: [any HTMLContent] = []
        let shown =
            request.method == "GET"
            ? request.cookie(Self.newKeyCookie).flatMap { value -> (String, String)? in
                let parts = value.split(separator: ".", maxSplits: 1)
                guard parts.count == 2, let id = Int64(parts[0]), list.contains(where: { $0.id == id }) else { return nil }
                return (String(parts[1]), list.first { $0.id == id }?.name ?? "")
            } : nil
        if let (key, name) = shown {
            content.append(
                tag(
                    "div", [.class("notice"), Attribute("role", "status")],
                    [
                        tag("p", [], ["Created API key “", name, "”. Copy it now: it is not shown again."]),
                        tag("p", [], [tag("code", [.id("new-key")], [key])]),
                    ]))
        }
        content.append(tag("p", [.class("hint")], ["Times in UTC."]))
        content.append(
            ConsoleLayout.table(
                caption: "API keys for the admin API", headers: ["Key", "Name", "Scope", "Created", "Last used", "State", ""],
                rows: list.map { record in
                    [
                        record.prefix + "…", record.name, record.scopeDescription, RegionTime.display(record.createdAt, .utc) + " UTC",
                        record.lastUsedAt.map { RegionTime.display($0, .utc) + " UTC" } ?? "never",
                        record.revokedAt == nil ? "active" : "revoked",
                        record.revokedAt == nil
                            ? tag("a", [.href("/admin/keys/\(record.id)/revoke"), .class("button secondary")], ["Revoke…"])
                            : HTML.empty,
                    ] as [any HTMLContent]
                }, empty: "No API keys yet."))
        content.append(tag("h2", [], ["Create a key"]))
        content.append(ConsoleLayout.problems(problems))
        content.append(
            ConsoleLayout.form(
                "/admin/keys", session,
                [
                    tag("input", [Attribute("type", "hidden"), Attribute("name", "key_token"), Attribute("value", token)]),
                    ConsoleLayout.field(
                        "Name", name: "name", value: values["name"], required: true, hint: "Who or what uses it, e.g. “CAD integration”.",
                        maxLength: FieldLimits.name),
                    tag(
                        "fieldset", [],
                        [
                            tag("legend", [], ["Regions it may act on (at least one)"])
                        ]
                            + visible.map {
                                ConsoleLayout.checkbox("\($0.id) · \($0.name)", name: "region_\($0.id)", checked: values["region_\($0.id)"] == "true")
                            }),
                    ConsoleLayout.checkbox("May start sends (push scope)", name: "push", checked: values["push"] == "true"),
                    ConsoleLayout.checkbox(
                        "May add, edit, poll and remove alert sources (sources scope; every key may read them)", name: "sources",
                        checked: values["sources"] == "true"),
                    tag("button", [Attribute("type", "submit"), Attribute("data-once", "true")], ["Create key"]),
                ]))
        var keyContext = await context(session, region: nil, .keys)
        keyContext.region = nil
        var response = ConsoleLayout.respond(status, ConsoleLayout.page("API keys", keyContext, notice: Self.notice(request), content))
        if shown != nil {
            response = response.adding(header: "Set-Cookie", cookie(Self.newKeyCookie, "", path: "/admin/keys", maxAge: 0, sameSite: "Strict"))
        }
        return response
    }

    func createKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let name = request.parameters["name"]?.trimmingWhitespace() ?? ""
        var values = [
            "name": name, "push": request.parameters["push"] == "true" ? "true" : "false",
            "sources": request.parameters["sources"] == "true" ? "true" : "false",
        ]
        let chosen = Set(visibleRegions(session.user).map(\.id).filter { request.parameters["region_\($0)"] == "true" })
        for id in chosen { values["region_\(id)"] = "true" }
        var problems = FieldLimits.check([("Name", name, FieldLimits.name)])
        if name.isEmpty { problems.append("Name can't be blank") }
        if chosen.isEmpty { problems.append("Choose the regions this key may act on (at least one)") }
        guard problems.isEmpty else { return await keyList(request, session, values: values, problems: problems, status: 422) }
        do {
            switch try await formTokens.spend(request.parameters["key_token"] ?? "", purpose: "apikey:\(session.idHash)", now: now) {
            case .invalid:
                return await keyList(
                    request, session, values: values, problems: ["The form expired; nothing was created. Create the key again."], status: 403)
            case .repeated:
                return .seeOther("/admin/keys?done=key-repeated")
            case .first:
                break
            }
            let created = try await keys.create(
                name: name, regions: chosen, canPush: request.parameters["push"] == "true",
                canManageSources: request.parameters["sources"] == "true", actor: "user:" + session.user.email, now: now)
            await audit.record(
                actor: "user:" + session.user.email, action: "apikey.create", regionID: nil, target: "API key \(created.record.id)",
                detail: "\(name); \(created.record.scopeDescription)", now: now)
            return Response.seeOther("/admin/keys?done=key-created")
                .adding(
                    header: "Set-Cookie",
                    cookie(
                        Self.newKeyCookie, "\(created.record.id).\(created.key)", path: "/admin/keys", maxAge: 300,
                        sameSite: "Strict")
                )
                .adding(header: "Cache-Control", "no-store")
        } catch { return unavailable(error) }
    }

    /// The key a user may manage, or nil (another region's, or none).
    func manageableKey(_ request: Request, _ session: ConsoleStore.Session) async throws -> ApiKeyStore.Record? {
        guard let id = request.pathParameters["key"].flatMap({ Int64($0) }), let record = try await keys.find(id: id),
            ConsoleRules.mayManageKey(keyRegions: record.regions, allowed: session.user.regions)
        else { return nil }
        return record
    }

    func confirmRevokeKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let record: ApiKeyStore.Record
        do {
            guard let found = try await manageableKey(request, session) else { return notFound() }
            record = found
        } catch { return unavailable(error) }
        guard record.revokedAt == nil else { return .seeOther("/admin/keys") }
        var keyContext = await context(session, region: nil, .keys)
        keyContext.region = nil
        return ConsoleLayout.respond(
            200,
            ConsoleLayout.page(
                "Revoke API key “\(record.name)”?", keyContext,
                [
                    tag(
                        "p", [],
                        [
                            "Every request made with ", tag("code", [], [record.prefix + "…"]), " (", record.scopeDescription,
                            ") will be refused with 401 from now on. This cannot be undone: a new key has to be created and given out.",
                        ]),
                    ConsoleLayout.form(
                        "/admin/keys/\(record.id)/revoke", session,
                        [
                            ConsoleLayout.confirmActions("Revoke this key", cancel: "/admin/keys")
                        ]),
                ]))
    }

    func revokeKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        do {
            // Another region's key, or an all-regions key, is not this user's to see: 404, as if it did not exist.
            guard let record = try await manageableKey(request, session) else { return notFound() }
            if try await keys.revoke(id: record.id, actor: "user:" + session.user.email, now: now) {
                await audit.record(
                    actor: "user:" + session.user.email, action: "apikey.revoke", regionID: nil, target: "API key \(record.id)", now: now)
            }
            return .seeOther("/admin/keys?done=revoked")
        } catch { return unavailable(error) }
    }
}

extension KeyConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console) }
}
