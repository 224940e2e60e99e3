import Core
import GTFSRealtime
import HTTPServer

/// `--demo`'s simulated agency alerts feed: the GTFS-realtime Alerts feed an
/// agency's own tool would publish, served on a loopback port of its own
/// (not this server's listener, which no source may poll), and a source of
/// the demo region that polls it every 15 s with pushes after review. One
/// alert is there from the start (the source's baseline, never pushed); a
/// second appears a minute after the server starts, so a newcomer sees it
/// arrive, wait in the console's review queue and push once approved.
struct DemoAgencyFeed: Sendable {
    let regionID: Int
    let clock: any WallClock
    let logger: Logger
    let sources: AlertSourceAdministration
    let stop: StopSignal
    /// Seconds after start when the second alert appears.
    var delaySeconds: Int64 = 60

    static let path = "/agency-alerts.pb"

    /// The feed at `secondsSinceStart`.
    static func feed(secondsSinceStart: Int64, startedAt: EpochSeconds, delaySeconds: Int64) -> FeedMessage {
        let agency = EntitySelector(agencyID: DemoTransit.agencyID)
        // From the day's start (UTC), so a restarted demo serves the same
        // alert and its source does not see a change worth a push.
        let day = startedAt.value - startedAt.value % 86_400
        var entities = [
            FeedEntity(
                id: "weekend-works",
                alert: Alert(
                    activePeriods: [TimeRange(start: UInt64(day), end: UInt64(day + 3 * 86_400))],
                    informedEntities: [agency], cause: .maintenance, effect: .modifiedService,
                    headerText: TranslatedString([
                        .init(text: "Weekend track work on the waterfront line", language: "en"),
                        .init(text: "Obras en la vía del frente marítimo este fin de semana", language: "es"),
                    ]),
                    severityLevel: .warning))
        ]
        if secondsSinceStart >= delaySeconds {
            entities.append(
                FeedEntity(
                    id: "signal-problem",
                    alert: Alert(
                        activePeriods: [
                            TimeRange(
                                start: UInt64(startedAt.adding(seconds: delaySeconds).value),
                                end: UInt64(startedAt.adding(seconds: delaySeconds + 7200).value))
                        ],
                        informedEntities: [agency], cause: .technicalProblem, effect: .significantDelays,
                        headerText: TranslatedString([
                            .init(text: "Signal problem: expect delays of up to 15 minutes", language: "en"),
                            .init(text: "Problema de señales: retrasos de hasta 15 minutos", language: "es"),
                        ]),
                        descriptionText: TranslatedString([
                            .init(text: "Crews are on site. Allow extra time for your trip.", language: "en"),
                            .init(text: "El personal está en el lugar. Prevea más tiempo para su viaje.", language: "es"),
                        ]),
                        severityLevel: .severe)))
        }
        return FeedMessage(header: FeedHeader(timestamp: UInt64(startedAt.adding(seconds: secondsSinceStart).value)), entities: entities)
    }

    /// Serves the feed, points the demo source at it, and stops with the server.
    func run() async {
        let startedAt = clock.nowSeconds
        var router = Router()
        let (clock, delay) = (clock, delaySeconds)
        router.add(
            Route("GET", Self.path, parsesParameters: false) { request in
                let elapsed = clock.nowSeconds.seconds(since: startedAt)
                let etag = "\"demo-\(elapsed >= delay ? 2 : 1)\""
                if request.header("if-none-match") == etag { return Response(status: 304, headers: [("ETag", etag)], body: []) }
                return .bytes(
                    200, contentType: "application/x-protobuf",
                    Self.feed(secondsSinceStart: elapsed, startedAt: startedAt, delaySeconds: delay).encoded()
                )
                .adding(header: "ETag", etag)
            })
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, router: router, logger: Logger(level: .error))
        do {
            let port = try server.start()
            let url = "http://127.0.0.1:\(port)\(Self.path)"
            let existing = try await sources.store.sources(regionID: regionID).first
            // The simulated agency runs on this machine: the one source allowed loopback.
            if let existing {
                _ = try await sources.edit(id: existing.0.id, fields: ["url": url, "allow_private": "true"])
            } else {
                _ = try await sources.add(
                    regionID: regionID, fields: ["url": url, "interval": "15", "push": "review", "min_severity": "WARNING", "allow_private": "true"])
            }
            logger.info("demo agency feed ready", [("url", url), ("new_alert_in_seconds", String(delaySeconds))])
        } catch {
            logger.warning("demo agency feed could not start", [("error", "\(error)")])
        }
        while !stop.isStopping {
            try? await clock.sleep(seconds: 1)
        }
        _ = await server.shutdown(grace: .seconds(1))
    }
}
