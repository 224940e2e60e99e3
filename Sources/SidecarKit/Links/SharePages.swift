import Core
import HTML
import HTTPServer
import OBA
import QRCode

/// The public pages behind shared links, for someone without the app or on
/// a desktop: built with the escaping HTML builder, one stylesheet, no script.
enum SharePages {
    static let securityHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]

    static func respond(_ status: Int, _ page: HTML) -> Response { HTMLResponse.page(status, page, headers: securityHeaders) }

    static func notFound(_ message: String) -> Response { problem(404, message, "Check the link, or open OneBusAway to look the stop up.") }

    static func problem(_ status: Int, _ title: String, _ advice: String) -> Response {
        respond(status, document(title: title, meta: [], body: [tag("h1", [], [title]), tag("p", [], [advice])]))
            .adding(header: "Cache-Control", "no-store")
    }

    /// Malformed requests (a 10 KB query, bad encoding) answered as a page.
    static let errorStyle = ErrorStyle.custom { status, error, messages in
        problem(status, error, messages.first ?? "The link could not be read.")
    }

    static let stylesheetRoute = Route("GET", "/assets/share.css", parsesParameters: false) { _ in
        Response.bytes(200, contentType: "text/css; charset=utf-8", Array(stylesheet.utf8)).adding(header: "Cache-Control", "public, max-age=3600")
    }

    static func document(title: String, meta: [any HTMLContent], body: [any HTMLContent]) -> HTML {
        HTML.document(
            head: [
                tag("meta", [Attribute("charset", "utf-8")]),
                tag("meta", [Attribute("name", "viewport"), Attribute("content", "width=device-width, initial-scale=1")]),
                tag("title", [], [title]),
                tag("link", [Attribute("rel", "stylesheet"), .href("/assets/share.css")]),
            ] + meta, body: [tag("main", [], body)])
    }

    /// OpenGraph and Twitter tags, so a message preview reads like the page.
    static func previewTags(title: String, description: String, url: String) -> [any HTMLContent] {
        [
            tag("meta", [Attribute("name", "description"), Attribute("content", description)]),
            tag("meta", [Attribute("property", "og:type"), Attribute("content", "website")]),
            tag("meta", [Attribute("property", "og:site_name"), Attribute("content", "OneBusAway")]),
            tag("meta", [Attribute("property", "og:title"), Attribute("content", title)]),
            tag("meta", [Attribute("property", "og:description"), Attribute("content", description)]),
            tag("meta", [Attribute("property", "og:url"), Attribute("content", url)]),
            tag("meta", [Attribute("name", "twitter:card"), Attribute("content", "summary")]),
            tag("meta", [Attribute("name", "twitter:title"), Attribute("content", title)]),
            tag("meta", [Attribute("name", "twitter:description"), Attribute("content", description)]),
        ]
    }

    struct ShareContent {
        var target: ShareRoutes.Target
        var response: OBAResponse<StopArrivals>?
        var highlighted: ArrivalAndDeparture?
        var unavailable: Bool
        var zone: ZoneInfo
        var now: EpochMillis
        var canonicalURL: String
        var appLink: String
        var settings: LinkSettings
    }

    static func routeName(_ arrival: ArrivalAndDeparture, _ references: References?) -> String {
        arrival.routeShortName?.presence ?? references?.route(id: arrival.routeId)?.shortName?.presence
            ?? references?.route(id: arrival.routeId)?.longName?.presence ?? arrival.routeId ?? "?"
    }

    /// `Real-time · 2 min late`, `Real-time · on time` or `Scheduled`.
    static func status(_ arrival: ArrivalAndDeparture) -> String {
        guard arrival.predicted == true, let predicted = arrival.predictedDepartureTime ?? arrival.predictedArrivalTime, predicted.value > 0 else {
            return "Scheduled"
        }
        let scheduled = arrival.scheduledDepartureTime ?? arrival.scheduledArrivalTime ?? predicted
        let minutes = Int(predicted.millis(since: scheduled) / 60_000)
        return "Real-time · " + (minutes > 0 ? "\(minutes) min late" : minutes < 0 ? "\(-minutes) min early" : "on time")
    }

    /// `S` → `Southbound` (OneBusAway's stop directions).
    static func directionName(_ code: String) -> String? {
        let names = [
            "N": "Northbound", "S": "Southbound", "E": "Eastbound", "W": "Westbound", "NE": "Northeastbound", "NW": "Northwestbound",
            "SE": "Southeastbound", "SW": "Southwestbound",
        ]
        return names[code.uppercased()]
    }

    /// The short form in the departures table: `4 min late`, `on time`, `scheduled`.
    static func shortStatus(_ arrival: ArrivalAndDeparture) -> String {
        let long = status(arrival)
        return long.hasPrefix("Real-time · ") ? String(long.dropFirst("Real-time · ".count)) : "scheduled"
    }

    static func minutesAway(_ arrival: ArrivalAndDeparture, now: EpochMillis) -> String {
        guard let time = arrival.effectiveDepartureTime else { return "" }
        let minutes = Int(time.millis(since: now) / 60_000)
        return minutes <= 0 ? "now" : "\(minutes) min"
    }

    static func share(_ content: ShareContent) -> HTML {
        let target = content.target
        let references = content.response?.references
        let stop = references?.stop(id: target.stopID)
        let stopName = stop?.name?.presence ?? "Stop \(target.stopID)"
        let routeNames = (stop?.routeIds ?? []).map { id in references?.route(id: id)?.shortName?.presence ?? id }
        let departures =
            content.response?.entry.arrivalsAndDepartures
            .filter { ($0.effectiveDepartureTime?.millis(since: content.now) ?? .min) >= -60_000 }
            .sorted { ($0.effectiveDepartureTime?.value ?? 0) < ($1.effectiveDepartureTime?.value ?? 0) } ?? []
        let highlighted = content.highlighted
        let title: String
        let description: String
        if let highlighted {
            title = "Route \(routeName(highlighted, references)) to \(highlighted.tripHeadsign?.presence ?? "its destination") · \(stopName)"
            description = "\(status(highlighted)), departing \(RegionTime.clock(highlighted.effectiveDepartureTime, content.zone)) · OneBusAway"
        } else {
            title = stopName + (stop?.code.map { " (Stop \($0))" } ?? "")
            let next = departures.prefix(3).map { "\(routeName($0, references)) in \(minutesAway($0, now: content.now))" }
            description = next.isEmpty ? "Departures from \(stopName) on OneBusAway" : "Next: " + next.joined(separator: ", ")
        }
        var body: [any HTMLContent] = [
            tag("p", [.class("region")], ["OneBusAway · ", target.region.name]),
            tag("h1", [], [stopName]),
            tag(
                "p", [.class("stop-meta")],
                [
                    stop?.code.map { "Stop \($0)" } ?? "Stop \(target.stopID)",
                    stop?.direction.flatMap(directionName).map { " · \($0)" } ?? "",
                ]),
        ]
        if !routeNames.isEmpty {
            body.append(tag("ul", [.class("routes"), Attribute("aria-label", "Routes serving this stop")], routeNames.map { tag("li", [], [$0]) }))
        }
        if let highlighted {
            body.append(
                tag(
                    "section", [.class("trip"), Attribute("aria-label", "The shared trip")],
                    [
                        tag("h2", [], ["Route \(routeName(highlighted, references)) to \(highlighted.tripHeadsign?.presence ?? "its destination")"]),
                        tag("p", [.class(highlighted.predicted == true ? "live" : "scheduled")], [status(highlighted)]),
                        tag(
                            "p", [],
                            [
                                "Departs \(RegionTime.clock(highlighted.effectiveDepartureTime, content.zone)) (\(minutesAway(highlighted, now: content.now)))"
                            ]),
                        (highlighted.vehicleId ?? highlighted.tripStatus?.vehicleId).map { tag("p", [], ["Vehicle \($0)"]) } ?? HTML.empty,
                    ]))
        }
        body.append(
            tag(
                "div", [.class("actions")],
                [
                    tag("a", [Attribute.href(content.appLink, scheme: "onebusaway"), .class("button")], ["Open in OneBusAway"]),
                    content.settings.appStoreURL.map { tag("a", [.href($0), .class("button secondary")], ["App Store"]) } ?? HTML.empty,
                    content.settings.playStoreURL.map { tag("a", [.href($0), .class("button secondary")], ["Google Play"]) } ?? HTML.empty,
                ]))
        body.append(tag("h2", [], ["Next departures"]))
        if content.unavailable {
            body.append(tag("p", [.class("unavailable"), Attribute("role", "status")], ["Live times unavailable right now. Try again in a minute."]))
        } else if departures.isEmpty {
            body.append(tag("p", [], ["No departures in the next hour."]))
        } else {
            body.append(
                tag(
                    "table", [],
                    [
                        tag("thead", [], [tag("tr", [], ["Route", "To", "Departs"].map { tag("th", [Attribute("scope", "col")], [$0]) })]),
                        tag(
                            "tbody", [],
                            departures.prefix(20).map { arrival in
                                let isShared =
                                    highlighted != nil && arrival.tripId == highlighted?.tripId && arrival.serviceDate == highlighted?.serviceDate
                                return tag(
                                    "tr", [isShared ? .class("shared") : nil, isShared ? Attribute("aria-current", "true") : nil],
                                    [
                                        tag("td", [.class("route")], [routeName(arrival, references)]), tag("td", [], [arrival.tripHeadsign ?? ""]),
                                        tag(
                                            "td", [.class("when")],
                                            [
                                                tag("strong", [], [minutesAway(arrival, now: content.now)]), " ",
                                                tag("span", [], [RegionTime.clock(arrival.effectiveDepartureTime, content.zone)]),
                                                tag("span", [.class(arrival.predicted == true ? "live" : "scheduled")], [shortStatus(arrival)]),
                                            ]),
                                    ])
                            }),
                    ]))
            body.append(
                tag(
                    "p", [.class("note")],
                    ["Times in \(content.zone.identifier). Green times are real-time, from the bus; grey ones are from the timetable."]))
        }
        return document(title: title, meta: previewTags(title: title, description: description, url: content.canonicalURL), body: body)
    }

    static func addRegion(region: Region, link: String, qr: QRCode?, settings: LinkSettings) -> HTML {
        let title = "Add \(region.name) to OneBusAway"
        var body: [any HTMLContent] = [
            tag("h1", [], [title]),
            tag(
                "ol", [.class("steps")],
                [
                    tag("li", [], ["Install OneBusAway from the App Store or Google Play."]),
                    tag("li", [], ["Scan this code with your phone's camera, or tap the button on your phone."]),
                    tag("li", [], ["OneBusAway adds \(region.name) and switches to it."]),
                ]),
        ]
        if let qr {
            let side = qr.size + 8
            body.append(
                tag(
                    "figure", [.class("qr")],
                    [
                        tag(
                            "svg",
                            [
                                Attribute("viewBox", "0 0 \(side) \(side)"), Attribute("role", "img"),
                                Attribute("aria-label", "QR code that adds \(region.name) to OneBusAway"), Attribute("shape-rendering", "crispEdges"),
                            ],
                            [
                                tag("rect", [Attribute("width", String(side)), Attribute("height", String(side)), Attribute("fill", "#fff")]),
                                tag("path", [Attribute("d", qr.svgPath()), Attribute("fill", "#000")]),
                            ])
                    ]))
        }
        body.append(
            tag("p", [.class("actions")], [tag("a", [Attribute.href(link, scheme: "onebusaway"), .class("button")], ["Add \(region.name)"])]))
        body.append(tag("p", [.class("link")], [tag("code", [], [link])]))
        var stores: [any HTMLContent] = []
        if let app = settings.appStoreURL { stores.append(tag("a", [.href(app)], ["App Store"])) }
        if let play = settings.playStoreURL { stores.append(HTML.text(stores.isEmpty ? "" : " · ") + tag("a", [.href(play)], ["Google Play"])) }
        if !stores.isEmpty { body.append(tag("p", [.class("stores")], stores)) }
        body.append(
            tag(
                "p", [.class("note")],
                [
                    "Needs OneBusAway 26.3.0 or later on iPhone, or 26.2.0 or later on Android. Older versions add the region without its id, "
                        + "so service alerts, alarms and notifications do not work there: update the app first."
                ]))
        return document(
            title: title, meta: previewTags(title: title, description: "Scan to add \(region.name) to the OneBusAway app.", url: ""), body: body)
    }

    static let stylesheet = """
        :root { --ink: #1f2328; --muted: #57606a; --line: #d0d7de; --accent: #0b57d0; --live: #1a7f37; }
        * { box-sizing: border-box; }
        html { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; line-height: 1.5; color: var(--ink); }
        body { margin: 0; }
        main { max-width: 40rem; margin: 0 auto; padding: 1.25rem; }
        h1 { font-size: 1.6rem; margin: .25rem 0; } h2 { font-size: 1.2rem; margin-top: 1.75rem; }
        .region, .stop-meta, .note { color: var(--muted); margin: 0; }
        .routes { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .4rem; }
        .routes li { border: 1px solid var(--line); border-radius: .4rem; padding: 0 .5rem; font-weight: 600; }
        .trip { border: 2px solid var(--accent); border-radius: .75rem; padding: .75rem 1rem; margin-top: 1rem; }
        .trip h2 { margin: 0 0 .25rem; }
        .trip p { margin: .15rem 0; }
        .live { color: var(--live); font-weight: 600; } .scheduled { color: var(--muted); }
        .unavailable { padding: .75rem 1rem; border-left: 4px solid #9a6700; background: #fff8c5; }
        .actions { display: flex; flex-wrap: wrap; gap: .5rem; margin: 1.25rem 0; }
        .button { display: inline-block; padding: .6rem 1rem; border-radius: .5rem; background: var(--accent); color: #fff; text-decoration: none; font-weight: 600; }
        .button.secondary { background: #fff; color: var(--accent); border: 1px solid var(--accent); }
        :focus-visible { outline: 3px solid #1f2328; outline-offset: 2px; box-shadow: 0 0 0 2px #fff; }
        table { width: 100%; border-collapse: collapse; }
        th, td { text-align: left; padding: .45rem .5rem; border-top: 1px solid var(--line); }
        tr.shared { background: #ddf4ff; font-weight: 600; }
        td.route { font-weight: 700; white-space: nowrap; }
        td.when { white-space: nowrap; } td.when span { display: block; font-size: .9rem; }
        .qr svg { width: 16rem; height: 16rem; max-width: 100%; }
        .qr { margin: 1rem 0; }
        .link code { word-break: break-all; font-size: .85rem; }
        @media print { .actions { display: none; } .qr svg { width: 10cm; height: 10cm; } main { max-width: none; } }
        """
}
