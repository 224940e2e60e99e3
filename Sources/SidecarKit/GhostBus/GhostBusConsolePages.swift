import Core
import Database
import FoundationEssentials
import HTML
import HTTPServer

/// The console's ghost-bus pages: the chart, the filtered table and the
/// CSV export of a region's reports.
struct GhostBusConsolePages: ConsolePages {
    let console: ConsoleRoutes
    let ghostBus: GhostBusStore

    var routes: [Route] {
        [
            regionPage("GET", "/admin/regions/:region/ghost-bus", .read) { request, context in await ghostBusPage(request, context) },
            regionPage("GET", "/admin/regions/:region/ghost-bus.csv", .read) { _, context in
                guard let region = context.region else { return notFound() }
                let zone = await zone(regionID: region.id)
                let ghostBus = ghostBus
                return CSVDownload.response(filename: "ghost-bus-region-\(region.id).csv") { write in
                    try await ghostBus.exportCSV(regionID: region.id, zone: zone, naming: .names, write: write)
                }
            },
        ]
    }

    func ghostBusPage(_ request: Request, _ context: ConsoleLayout.Context) async -> Response {
        guard let region = context.region else { return notFound() }
        var pageContext = context
        pageContext.section = .ghostBus
        let zone = await zone(regionID: region.id)
        let route = request.parameters["route"]?.trimmingWhitespace().prefix(255).description ?? ""
        let trip = request.parameters["trip"]?.trimmingWhitespace().prefix(255).description ?? ""
        let dateText = request.parameters["date"]?.trimmingWhitespace() ?? ""
        var problems: [String] = []
        var serviceDate: EpochSeconds?
        if !dateText.isEmpty {
            // OneBusAway names a service day by the instant of its local midnight.
            if let local = RegionTime.parse(dateText + "T00:00", zone) {
                serviceDate = local
            } else {
                problems.append("Date must be a date such as 2026-11-30")
            }
        }
        let rows: [[any HTMLContent]]
        let perDay: [(day: Int64, count: Int)]
        do {
            rows = try await ghostBus.reports(regionID: region.id, route: route, trip: trip, serviceDay: serviceDate, limit: 500)
                .map { Self.reportRow($0, zone: zone) }
            let offset = Int64(zone.offset(at: now.value))
            perDay = try await ghostBus.dailyCounts(regionID: region.id, utcOffset: offset, today: (now.value + offset) / 86_400, days: 30)
        } catch { return unavailable(error) }
        let content: [any HTMLContent] = [
            ConsoleChart.dailyBars(perDay, title: "Ghost-bus reports"),
            tag(
                "form", [Attribute("method", "get"), Attribute("action", "/admin/regions/\(region.id)/ghost-bus"), .class("columns")],
                [
                    ConsoleLayout.field("Route", name: "route", value: route, hint: "Its short name (44) or its id (1_100275).", maxLength: 255),
                    ConsoleLayout.field("Trip", name: "trip", value: trip, maxLength: 255),
                    ConsoleLayout.field("Service date", name: "date", value: dateText, type: "date"),
                    tag(
                        "div", [.class("actions")],
                        [
                            tag("button", [Attribute("type", "submit")], ["Filter"]),
                            tag("a", [.href("/admin/regions/\(region.id)/ghost-bus")], ["Clear"]),
                            tag("a", [.href("/admin/regions/\(region.id)/ghost-bus.csv"), .class("button secondary")], ["Download all as CSV"]),
                        ]),
                ]),
            ConsoleLayout.problems(problems),
            tag("p", [.class("hint")], [timesHint(zone)]),
            ConsoleLayout.table(
                caption: "Reports, newest first (up to 500)", headers: ["Reported", "Route", "Trip", "Stop", "Vehicle", "Waited", "Comment"],
                rows: rows, empty: "No reports match."),
        ]
        return ConsoleLayout.respond(200, ConsoleLayout.page("\(region.name): ghost-bus reports", pageContext, content))
    }

    static func reportRow(_ stored: GhostBusStore.Stored, zone: ZoneInfo) -> [any HTMLContent] {
        let report = stored.report
        let reported = RegionTime.display(stored.createdAt.seconds, zone)
        let route = [stored.routeShortName, report.routeIdentifier].compactMap { $0 }.joined(separator: " · ")
        let cells: [String] = [
            reported, route.isEmpty ? "—" : route, report.tripIdentifier, report.stopIdentifier ?? "—",
            report.vehicleIdentifier ?? "—", "\(report.waitDurationMinutes) min", report.comment ?? "",
        ]
        return cells
    }
}

extension GhostBusConsolePages {
    init(_ console: ConsoleRoutes, _ context: FeatureContext) { self.init(console: console, ghostBus: context.stores.ghostBus) }
}
