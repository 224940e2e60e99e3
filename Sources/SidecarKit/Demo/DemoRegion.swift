import Core
import Database
import FoundationEssentials
import HTTPServer

/// `sidecar serve --demo`: a region whose OneBusAway server is simulated by
/// this process, with sample alerts and a survey, so a newcomer sees an
/// alarm fire and a Live Activity update without a server of their own.
enum DemoRegion {
    /// The demo's region id, unless the directory already uses it.
    static let preferredID = 9999

    static func id(avoiding regions: [Region]) -> Int {
        let taken = Set(regions.map(\.id))
        return taken.contains(preferredID) ? (taken.max() ?? 0) + 1 : preferredID
    }

    /// The demo region as operator commands see it: present when `serve
    /// --demo` seeded this database (its settings name the demo agency), so
    /// `sidecar source list --region 9999` works as the guide prints it.
    static func seeded(in database: any Database, avoiding regions: [Region], configuration: SidecarConfiguration) async -> Region? {
        let id = id(avoiding: regions)
        guard let settings = try? await RegionSettingsStore(database: database).all()[id], settings.agencyID == DemoTransit.agencyID else {
            return nil
        }
        return DemoTransit.region(id: id, obaBaseURL: serverURL(base: configuration.effectivePublicURL()))
    }

    /// Where the demo server lives under a base URL.
    static func serverURL(base: String) -> String { base + "/demo/oba/" }

    /// Sample content, written once: a published alert with a translation,
    /// a study with a survey, the region's agency id.
    static func seed(database: any Database, regions: RegionDirectory, regionID: Int, clock: any WallClock) async throws {
        let store = AlertStore(database: database)
        guard try await store.alerts(regionID: regionID).isEmpty else { return }
        try await RegionSettingsStore(database: store.database).set(
            RegionSettings(regionID: regionID, agencyID: DemoTransit.agencyID, timezone: DemoTransit.timezone))
        let administration = AlertAdministration(store: store, regions: regions, clock: clock, cache: nil)
        let start = Timestamp.format(millis: clock.nowMillis.adding(millis: -3_600_000).value)
        let detour = try await administration.create(
            regionID: regionID,
            fields: [
                "header": "Route 2X detoured at Stadium", "description": "Buses skip Stadium until further notice; board at Central Library.",
                "cause": "CONSTRUCTION", "effect": "DETOUR", "severity": "WARNING", "start": start, "url": "https://onebusaway.org",
                // Stadium on route 2X: the feed places it there for OneBusAway
                // servers and trip planners (the apps show it agency-wide).
                "scope": "route=demo_2 stop=demo_2002",
            ])
        _ = try await administration.translate(
            id: detour.alert.id, language: "es", header: "Ruta 2X desviada en Stadium",
            description: "Los autobuses no paran en Stadium; suba en Central Library.")
        _ = try await administration.setPublished(id: detour.alert.id, true)
        let welcome = try await administration.create(
            regionID: regionID,
            fields: [
                "header": "Welcome to the demo region", "description": "Every bus here is simulated by your sidecar.",
                "cause": "OTHER_CAUSE", "effect": "OTHER_EFFECT", "severity": "INFO", "start": start,
            ])
        _ = try await administration.setPublished(id: welcome.alert.id, true)

        let surveys = SurveyStore(database: database)
        let now = clock.nowSeconds
        let study = try await surveys.createStudy(regionID: regionID, name: "Demo rider survey", description: "Sample content", now: now)
        var survey = Survey.blank(regionID: regionID, studyID: study.id, now: 0)
        survey.alwaysVisible = true
        let document: JSONValue = .object([
            "name": .string("How was your trip?"),
            "questions": .array([
                .object([
                    "position": .integer(1), "required": .bool(true),
                    "content": .object([
                        "type": .string("radio"), "label_text": .string("How was your trip today?"),
                        "options": .array([.string("Great"), .string("Fine"), .string("Not good")]),
                    ]),
                ]),
                .object(["position": .integer(2), "content": .object(["type": .string("text"), "label_text": .string("Anything else?")])]),
            ]),
        ])
        let problems = SurveyRules.parse(document: document, into: &survey)
        guard problems.isEmpty else { throw AdministrationError.invalid(problems) }
        _ = try await surveys.save(survey, now: now)
    }

    /// `GET /demo`: plain text for curl, listing the next departures with
    /// commands that create an alarm and a Live Activity for them.
    static func guide(regionID: Int, publicURL: PublicBaseURL, clock: any WallClock) -> Route {
        Route("GET", "/demo", parsesParameters: false) { _ in
            let base = publicURL.url
            let now = clock.nowMillis
            let stop = DemoTransit.stop(id: "demo_1003")!
            let demoZone = ZoneInfo.named(DemoTransit.timezone) ?? .utc
            let visits = DemoTransit.visits(stopID: stop.id, from: now, to: now.adding(millis: 40 * 60_000), now: now)
            var lines = [
                "Sidecar demo region \(regionID): \(DemoTransit.agencyName), simulated by this server.",
                "Its OneBusAway API: \(serverURL(base: base))api/where/ (any key works), e.g.",
                "  curl '\(serverURL(base: base))api/where/arrivals-and-departures-for-stop/\(stop.id).json?key=demo'",
                "",
                "Next departures at \(stop.name) (\(stop.id)):",
            ]
            for visit in visits.prefix(6) {
                let minutes = max(visit.expected.millis(since: now) / 60_000, 0)
                let lateness =
                    visit.predicted.map { predicted -> String in
                        let seconds = predicted.seconds(since: visit.scheduled)
                        return seconds >= 60 ? "\(seconds / 60) min late" : seconds <= -60 ? "\(-seconds / 60) min early" : "on time"
                    } ?? "scheduled"
                lines.append(
                    "  \(visit.trip.route.shortName.padding(to: 3)) to \(visit.trip.headsign.padding(to: 20)) in \(minutes) min (\(lateness))  trip \(visit.trip.id)"
                )
            }
            // The first bus a few minutes off, with a lead time that makes the
            // alarm fire at the next check (within a minute).
            if let visit = visits.first(where: { $0.expected.millis(since: now) >= 4 * 60_000 }) {
                let away = Int(visit.expected.seconds(since: now))
                let secondsBefore = (away + 59) / 60 * 60
                let trip = visit.trip
                lines += [
                    "",
                    "These commands name a bus that is \(away / 60) min away now (at \(RegionTime.clock(now, demoZone)) \(DemoTransit.timezone)):",
                    "they go stale once it has left, a few minutes from now. Fetch this page again for fresh ones:",
                    "  curl \(base)/demo",
                    "",
                    "An alarm \(secondsBefore / 60) min before the \(trip.route.shortName) leaves (it is \(away / 60) min away, so the alarm fires at the next check, within a minute; watch the log):",
                    "  curl -X POST \(base)/api/v2/regions/\(regionID)/alarms -d user_push_id=demo-phone -d operating_system=ios \\",
                    "    -d stop_id=\(stop.id) -d trip_id=\(trip.id) -d service_date=\(trip.serviceDate.value) -d vehicle_id=\(trip.vehicleID) \\",
                    "    -d stop_sequence=\(visit.sequence) -d seconds_before=\(secondsBefore)",
                    "",
                    "A Live Activity for it (an update is pushed every minute; watch the log):",
                    "  curl -X POST \(base)/api/v2/regions/\(regionID)/live_activities -d activity_id=demo-activity -d push_token=demo-token \\",
                    "    -d stop_id=\(stop.id) -d route_short_name=\(trip.route.shortName) -d 'trip_headsign=\(trip.headsign)' \\",
                    "    -d trip_id=\(trip.id) -d service_date=\(trip.serviceDate.value) -d vehicle_id=\(trip.vehicleID) -d stop_sequence=\(visit.sequence)",
                ]
            }
            lines += [
                "",
                "Alerts from the agency's own feed: a simulated GTFS-realtime feed is a source of this region (sidecar source list).",
                "Its first alert is the baseline (mirrored, never pushed); a second, SEVERE one appears a minute after the server",
                "starts and waits for review: approve it in the console (\(base)/admin/regions/\(regionID)/sources) or with",
                "  sidecar source list --region \(regionID)   (its id, then)   sidecar source approve ID --entity signal-problem",
                "and it is pushed once, in each device's language (watch the log).",
                "",
                "Sample content:",
                "  curl \(base)/api/v1/regions/\(regionID)/alerts.pbtext",
                "  curl '\(base)/api/v1/regions/\(regionID)/surveys.json?user_id=demo'",
                "",
            ]
            return Response.bytes(200, contentType: "text/plain; charset=utf-8", Array(lines.joined(separator: "\n").utf8))
        }
    }
}

/// `--demo`: the simulated OneBusAway server and the guide at `/demo`.
struct DemoFeature: Feature {
    let regionID: Int
    let publicURL: PublicBaseURL
    let clock: any WallClock
    let agencyFeed: DemoAgencyFeed

    init(_ context: FeatureContext, regionID: Int) {
        self.regionID = regionID
        publicURL = context.publicURL
        clock = context.clock
        agencyFeed = DemoAgencyFeed(
            regionID: regionID, clock: context.clock, logger: context.logger, sources: context.alertSources().administration.acting(as: "demo"),
            stop: context.stop)
    }

    var routes: [Route] { DemoOneBusAway(clock: clock).routes + [DemoRegion.guide(regionID: regionID, publicURL: publicURL, clock: clock)] }
    var jobs: [BackgroundJob] { [BackgroundJob(name: "demo agency feed", run: agencyFeed.run)] }
}
