import Core
import Crypto
import Database
import FoundationEssentials
import GTFSRealtime
import HTML
import HTTPServer
import PlatformThreads

/// A region's dashboard.
struct DashboardConsolePages: ConsolePages {
    let console: ConsoleRoutes
    let database: any Database
    let alerts: AlertStore

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region", .read) { request, context in await dashboard(request, context) }
        ]
    }

    // MARK: Dashboard

    /// "3 pushes wait for review (oldest 2 h)", linked to the queue; nothing when none wait.
    static func reviewsWaiting(_ context: ConsoleLayout.Context) -> HTML {
        guard let summary = context.reviewSummary, let region = context.region else { return .empty }
        return tag(
            "p", [.class("notice"), Attribute("role", "status")],
            [summary + ": ", tag("a", [.href("/admin/regions/\(region.id)/sources")], ["review them"])])
    }

    func dashboard(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        let zone = await zone(regionID: region.id)
        let stats: ConsoleStats
        do {
            stats = try await ConsoleStats.load(database: database, regionID: region.id, now: now, days: 30, utcOffset: zone.offset(at: now.value))
        } catch {
            return unavailable(error)
        }
        let settings = (try? await RegionSettingsStore(database: alerts.database).all()[region.id]) ?? nil
        let reach = stats.reach
        func card(_ title: String, _ figure: Int, _ rows: [(String, Int)] = []) -> HTML {
            tag(
                "section", [.class("card")],
                [
                    tag("h2", [], [title]), tag("p", [.class("figure")], [figure]),
                    rows.isEmpty ? HTML.empty : tag("dl", [], rows.flatMap { [tag("dt", [], [$0.0]), tag("dd", [], [$0.1])] as [any HTMLContent] }),
                ])
        }
        let content: [any HTMLContent] = [
            RegionConsolePages.setupChecklist(settings, context), Self.reviewsWaiting(context),
            tag("p", [.class("hint")], [zoneHint(zone)]),
            tag(
                "div", [.class("grid")],
                [
                    card("Registered devices", reach.total, [("iOS", reach.ios), ("Android", reach.android), ("Test devices", reach.testDevices)]),
                    card(
                        "iOS devices by APNs environment", reach.ios,
                        [("Production (App Store, TestFlight)", reach.apnsProduction), ("Sandbox (Xcode builds)", reach.apnsSandbox)]),
                    card(
                        "Languages", reach.locales.count,
                        reach.locales.map { ($0.locale.map(AlertWords.localeName) ?? "No language sent (English)", $0.count) }),
                    card("Alarms waiting", stats.pendingAlarms),
                    card("Live Activities", stats.liveActivities),
                ]),
            tag("h2", [], ["New registrations per day"]),
            ConsoleChart.dailyBars(stats.perDay, title: "New registrations"),
            tag("h2", [], ["Recent sends"]),
            ConsoleLayout.table(
                caption: "The last ten sends in this region",
                headers: ["Alert", "Audience", "Status", "Targeted", "Delivered", "Failed", "Pruned", "Started"],
                rows: stats.recentSends.map { recent in
                    [
                        tag("a", [.href("/admin/alerts/\(recent.alertID)")], [recent.header]), recent.send.audience.rawValue, recent.send.status,
                        recent.send.targeted, recent.send.delivered, recent.send.failed, recent.send.pruned,
                        RegionTime.display(recent.send.startedAt, zone),
                    ] as [any HTMLContent]
                }, empty: "No alert has been sent in this region yet."),
        ]
        var dashboardContext = context
        dashboardContext.section = .dashboard
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): dashboard", dashboardContext, notice: Self.notice(request), content))
    }
}

extension DashboardConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) {
        self.init(console: console, database: context.database, alerts: context.stores.alerts)
    }
}
