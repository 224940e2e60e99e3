import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// Admin API keys: list, create, revoke.
extension ConsoleRoutes {
    // MARK: API keys

    func keyList(_ session: ConsoleStore.Session, created: (key: String, record: ApiKeyStore.Record)?, problems: [String], status: Int = 200) async -> Response {
        let list: [ApiKeyStore.Record]
        do {
            // A user sees only keys within their own regions.
            list = try await keys.list().filter { ConsoleRules.mayManageKey(keyRegions: $0.regions, allowed: session.user.regions) }
        } catch { return unavailable(error) }
        let visible = visibleRegions(session.user)
        var content: [any HTMLContent] = []
        if let created {
            content.append(tag("div", [.class("notice"), Attribute("role", "status")], [
                tag("p", [], ["Created API key “", created.record.name, "”. Copy it now: it is not shown again."]),
                tag("p", [], [tag("code", [.id("new-key")], [created.key])]),
            ]))
        }
        content.append(ConsoleLayout.table(caption: "API keys for the admin API", headers: ["Key", "Name", "Scope", "Created", "Last used", "State", ""],
                                           rows: list.map { record in
                                               [record.prefix + "…", record.name, record.scopeDescription, RegionTime.display(record.createdAt, .utc) + " UTC",
                                                record.lastUsedAt.map { RegionTime.display($0, .utc) + " UTC" } ?? "never",
                                                record.revokedAt == nil ? "active" : "revoked",
                                                record.revokedAt == nil ? ConsoleLayout.postButton("Revoke", "/admin/keys/\(record.id)/revoke", session, style: "danger")
                                                    : HTML.empty] as [any HTMLContent]
                                           }, empty: "No API keys yet."))
        content.append(tag("h2", [], ["Create a key"]))
        content.append(ConsoleLayout.problems(problems))
        content.append(ConsoleLayout.form("/admin/keys", session, [
            ConsoleLayout.field("Name", name: "name", value: nil, required: true, hint: "Who or what uses it, e.g. “CAD integration”.", maxLength: FieldLimits.name),
            tag("fieldset", [], [
                tag("legend", [], ["Regions (none checked: every region you can see)"]),
            ] + visible.map { ConsoleLayout.checkbox("\($0.id) · \($0.name)", name: "region_\($0.id)", checked: false) }),
            ConsoleLayout.checkbox("May start sends (push scope)", name: "push", checked: false),
            tag("button", [Attribute("type", "submit")], ["Create key"]),
        ]))
        var keyContext = context(session, region: nil, .keys)
        keyContext.region = nil
        return ConsoleLayout.respond(status, ConsoleLayout.page("API keys", keyContext, content))
    }

    func createKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let name = request.parameters["name"]?.trimmingWhitespace() ?? ""
        var problems = FieldLimits.check([("Name", name, FieldLimits.name)])
        if name.isEmpty { problems.append("Name can't be blank") }
        guard problems.isEmpty else { return await keyList(session, created: nil, problems: problems, status: 422) }
        var chosen = Set(visibleRegions(session.user).map(\.id).filter { request.parameters["region_\($0)"] == "true" })
        // A user limited to some regions cannot mint a key for every region.
        if chosen.isEmpty, let limited = session.user.regions { chosen = limited }
        let regions: Set<Int>? = chosen.isEmpty ? nil : chosen
        do {
            let created = try await keys.create(name: name, regions: regions, canPush: request.parameters["push"] == "true", now: now)
            await audit.record(actor: "user:" + session.user.email, action: "apikey.create", regionID: nil, target: "API key \(created.record.id)",
                               detail: "\(name); \(created.record.scopeDescription)", now: now)
            return await keyList(session, created: created, problems: [])
        } catch { return unavailable(error) }
    }

    func revokeKey(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        guard let id = request.pathParameters["id"].flatMap({ Int64($0) }) else { return notFound() }
        do {
            // Another region's key, or an all-regions key, is not this user's to see: 404, as if it did not exist.
            guard let record = try await keys.find(id: id), ConsoleRules.mayManageKey(keyRegions: record.regions, allowed: session.user.regions),
                  try await keys.revoke(id: id, now: now) else { return notFound() }
            await audit.record(actor: "user:" + session.user.email, action: "apikey.revoke", regionID: nil, target: "API key \(id)", now: now)
            return .seeOther("/admin/keys?done=revoked")
        } catch { return unavailable(error) }
    }
}
