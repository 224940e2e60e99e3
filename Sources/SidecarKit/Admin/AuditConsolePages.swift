import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// The audit log.
struct AuditConsolePages: ConsolePages {
    let console: ConsoleRoutes

    var routes: [Route] {
        [
            userPage("GET", "/admin/audit", .read) { request, session in await auditPage(request, session) }
        ]
    }

    // MARK: Audit log

    /// The audit log, newest first, narrowed by who, what, region and day
    /// (a GET form, so a filtered view is a link), a hundred entries a page.
    /// Times are in the chosen region's zone (named), else in UTC.
    func auditPage(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let before = request.parameters["before"].flatMap { Int64($0) }
        let visible = visibleRegions(session.user)
        let value = { (name: String) -> String in String((request.parameters[name] ?? "").trimmingWhitespace().prefix(100)) }
        let region = Int(value("region")).flatMap { id in visible.first { $0.id == id } }
        let zone = await region.asyncFlatMap { await self.zone(regionID: $0.id) } ?? .utc
        func day(_ text: String) -> EpochSeconds? { text.isEmpty ? nil : RegionTime.parse(text + "T00:00", zone) }
        var problems: [String] = []
        let from = day(value("from")), untilStart = day(value("until"))
        if !value("from").isEmpty && from == nil { problems.append("“From” must be a date such as 2026-12-01.") }
        if !value("until").isEmpty && untilStart == nil { problems.append("“Until” must be a date such as 2026-12-01.") }
        let until = untilStart.flatMap { _ in RegionTime.parse(value("until") + "T23:59:59", zone).map { $0.adding(seconds: 1) } }
        let filter = AuditLog.Filter(
            actor: value("who").presence, action: value("what").presence, regionID: region?.id, from: from, until: until)
        let entries: [AuditLog.Entry]
        let actions: [String]
        do {
            entries = try await audit.entries(regions: session.user.regions, before: before, limit: 100, filter: filter)
            actions = try await audit.actions()
        } catch { return unavailable(error) }
        let regionNames = Dictionary(visible.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        let zoneName = region == nil ? "UTC" : zone.identifier
        let filters = tag(
            "form", [Attribute("method", "get"), Attribute("action", "/admin/audit"), .class("filters")],
            [
                ConsoleLayout.field("Who", name: "who", value: value("who"), hint: "Part of the name: an email, cli:, apikey:", maxLength: 100),
                ConsoleLayout.select(
                    "What", name: "what", options: [("", "Every action")] + actions.map { ($0, $0) }, selected: value("what")),
                ConsoleLayout.select(
                    "Region", name: "region", options: [("", "Every region (times in UTC)")] + visible.map { (String($0.id), $0.name) },
                    selected: region.map { String($0.id) }),
                ConsoleLayout.field("From", name: "from", value: value("from"), type: "date"),
                ConsoleLayout.field("Until", name: "until", value: value("until"), type: "date", hint: "Whole days, in \(zoneName)."),
                tag(
                    "div", [.class("actions")],
                    [tag("button", [Attribute("type", "submit")], ["Show"]), tag("a", [.href("/admin/audit")], ["Clear"])]),
            ])
        var content: [any HTMLContent] = [
            tag(
                "p", [.class("hint")],
                ["Every change made through this console, the admin API and the command line, newest first. Times in \(zoneName)."]),
            ConsoleLayout.problems(problems),
            filters,
            ConsoleLayout.table(
                caption: "Audit log", headers: ["When (\(zoneName))", "Who", "What", "Region", "Target", "Detail"],
                rows: entries.map { entry in
                    [
                        RegionTime.display(entry.at, zone), entry.actor, entry.action,
                        entry.regionID.map { id in regionNames[id].map { "\($0) (\(id))" } ?? String(id) } ?? "—", entry.target ?? "",
                        entry.detail ?? "",
                    ]
                        as [any HTMLContent]
                }, empty: filter == AuditLog.Filter() ? "Nothing recorded yet." : "Nothing matches these filters."),
        ]
        if entries.count == 100, let last = entries.last {
            var query = ["who", "what", "region", "from", "until"].compactMap { name in
                value(name).presence.map { "\(name)=\(PercentEncoding.encode($0))" }
            }
            query.append("before=\(last.id)")
            content.append(tag("p", [], [tag("a", [.href("/admin/audit?" + query.joined(separator: "&"))], ["Older entries"])]))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("Audit log", await context(session, region: nil, .audit), content))
    }
}

extension AuditConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console) }
}
