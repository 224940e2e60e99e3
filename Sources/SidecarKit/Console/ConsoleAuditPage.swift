import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// The audit log.
extension ConsoleRoutes {
    // MARK: Audit log

    func auditPage(_ request: Request, _ session: ConsoleStore.Session) async -> Response {
        let before = request.parameters["before"].flatMap { Int64($0) }
        let entries: [AuditLog.Entry]
        do { entries = try await audit.entries(regions: session.user.regions, before: before, limit: 100) } catch { return unavailable(error) }
        var content: [any HTMLContent] = [
            tag("p", [.class("hint")], ["Every change made through this console, the admin API and the command line, newest first. Times in UTC."]),
            ConsoleLayout.table(
                caption: "Audit log", headers: ["When (UTC)", "Who", "What", "Region", "Target", "Detail"],
                rows: entries.map { entry in
                    [
                        RegionTime.display(seconds: entry.at, .utc), entry.actor, entry.action, entry.regionID.map(String.init) ?? "—",
                        entry.target ?? "", entry.detail ?? "",
                    ]
                        as [any HTMLContent]
                }, empty: "Nothing recorded yet."),
        ]
        if entries.count == 100, let last = entries.last {
            content.append(tag("p", [], [tag("a", [.href("/admin/audit?before=\(last.id)")], ["Older entries"])]))
        }
        return ConsoleLayout.respond(200, ConsoleLayout.page("Audit log", context(session, region: nil, .audit), content))
    }
}
