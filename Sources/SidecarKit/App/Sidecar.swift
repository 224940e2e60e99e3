import Database
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HTTPClient
import Crypto
import HTTPServer
import OBA
import Push
import Synchronization

/// Why the server could not start; `exitCode` is 2 for configuration the
/// operator must fix and 1 for everything else.
public struct StartupError: Error, CustomStringConvertible {
    public let description: String
    public let exitCode: Int32
}

/// The running application: regions, storage, routes and background loops,
/// wired from one configuration.
public final class Sidecar: Sendable {
    public let configuration: SidecarConfiguration
    public let database: any Database
    public let regions: RegionDirectory
    public let server: HTTPServer
    let clock: any WallClock
    let logger: Logger
    let regionRefresher: RegionRefresher
    let pruner: PushRegistrationPruner
    let alarmChecker: AlarmChecker
    let liveActivityUpdater: LiveActivityUpdater
    let alertFeedCache = AlertFeedCache()
    let alertFeedWatcher: AlertFeedVersionWatcher
    let alertSends: AlertSendRunner
    let pushTransport: (any PushTransport)?
    /// Base of handed-out URLs; known for sure only once the port is bound.
    let publicURL: PublicBaseURL
    /// The outbound client for OneBusAway servers and push gateways.
    let upstream: HTTPClient
    /// Background loops and sends, and the stop signal they obey.
    let work = BackgroundWork()
    /// The simulated region of `--demo`, or nil.
    let demoRegionID: Int?
    /// Every region's OneBusAway server, as the loops and routes reach them.
    let oba: OBAGateway
    /// Metrics and their own listener (`--metrics-listen`), or nil.
    let metrics: SidecarMetrics?
    /// The per-client limits rider routes share.
    let limits: RiderLimits
    let metricsServer: HTTPServer?

    /// Loads the regions directory, opens and migrates the database and
    /// builds the routes. Nothing listens until `start()`.
    public static func prepare(configuration: SidecarConfiguration, clock: any WallClock = SystemClock(),
                               logger: Logger, httpClient: HTTPClient = HTTPClient()) async throws(StartupError) -> Sidecar {
        let metrics = configuration.metricsListen != nil ? SidecarMetrics() : nil
        if let metrics { httpClient.observe(metrics.observeUpstream) }
        let source = RegionSource(argument: configuration.regions)
        var regionList: [Region]
        do { regionList = try await source.load(client: httpClient) } catch {
            throw StartupError(description: "regions directory \(source.label): \(error.description)", exitCode: 2)
        }
        // The demo region's URL names the public base; start() corrects the port.
        let demoRegion = configuration.demo
            ? DemoTransit.region(id: DemoRegion.id(avoiding: regionList), obaBaseURL: DemoRegion.serverURL(base: configuration.effectivePublicURL()))
            : nil
        if let demoRegion { regionList.append(demoRegion) }
        let (opened, applied) = try await configuration.openMigrated(readers: configuration.threads + 2) { logger.info($0) }
        if !applied.isEmpty { logger.info("applied migrations", [("versions", applied.map(String.init).joined(separator: ","))]) }
        let database: any Database = metrics.map { MeasuredDatabase(inner: opened, metrics: $0) } ?? opened
        let upstream = Self.upstreamClient()
        if let metrics { upstream.observe(metrics.observeUpstream) }
        var transport: (any PushTransport)?
        do { transport = try pushTransport(configuration, http: upstream, logger: logger, observer: metrics?.observeUpstream) } catch {
            await database.close()
            throw error
        }
        if configuration.demo && transport == nil && configuration.pushTransport == .automatic {
            transport = LogTransport(logger: logger, fingerprint: SHA256.fingerprint)
        }
        if let metrics, let inner = transport { transport = MeasuredTransport(inner: inner, metrics: metrics) }
        let directory = RegionDirectory(regionList)
        if let demoRegion {
            directory.pin(demoRegion)
            do { try await DemoRegion.seed(database: database, regions: directory, regionID: demoRegion.id, clock: clock) } catch {
                logger.warning("demo content could not be written", [("error", "\(error)")])
            }
        }
        return Sidecar(configuration: configuration, database: database, regions: directory,
                       source: source, clock: clock, logger: logger, httpClient: httpClient, upstream: upstream, transport: transport,
                       metrics: metrics, demoRegionID: demoRegion?.id)
    }

    /// The outbound client for OneBusAway servers, gorush, weather and Stripe.
    static func upstreamClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.maxConcurrentTransfers = 64
        // Alarm cycles fan out one request per stop to each region's server.
        configuration.maxConnectionsPerHost = 16
        return HTTPClient(configuration: configuration)
    }

    init(configuration: SidecarConfiguration, database: any Database, regions: RegionDirectory, source: RegionSource,
         clock: any WallClock, logger: Logger, httpClient: HTTPClient, upstream: HTTPClient, transport: (any PushTransport)?,
         metrics: SidecarMetrics? = nil, demoRegionID: Int? = nil) {
        self.configuration = configuration
        self.metrics = metrics
        self.demoRegionID = demoRegionID
        self.database = database
        self.regions = regions
        self.clock = clock
        self.logger = logger
        let pushStore = PushRegistrationStore(database: database)
        // On PostgreSQL several instances may share the database: singleton
        // jobs take a lease there, and one instance fetches for all.
        let coordination = database.dialect == .postgresql ? CoordinationStore(database: database) : nil
        var refresher = RegionRefresher(source: source, directory: regions, client: httpClient,
                                        intervalSeconds: Double(configuration.regionsRefreshSeconds), clock: clock, logger: logger)
        refresher.coordination = coordination
        regionRefresher = refresher
        var pruner = PushRegistrationPruner(store: pushStore, clock: clock, logger: logger)
        pruner.coordination = coordination
        pruner.sharedCounters = coordination.map { _ in DatabaseWindowCounter(database: database) }
        self.pruner = pruner
        publicURL = PublicBaseURL(configuration.effectivePublicURL())
        self.upstream = upstream
        let oba = OBAGateway(client: OBAClient(http: upstream), defaultKey: configuration.obaAPIKey,
                             regionKeys: configuration.obaRegionAPIKeys, logger: logger)
        self.oba = oba
        pushTransport = transport
        let alertStore = AlertStore(database: database, sendLeaseSeconds: Int64(configuration.sendLeaseSeconds))
        alertFeedWatcher = AlertFeedVersionWatcher(store: alertStore, cache: alertFeedCache, clock: clock)
        let liveActivityStore = LiveActivityStore(database: database)
        var updater = LiveActivityUpdater(store: liveActivityStore, regions: regions, oba: oba, transport: transport, clock: clock,
                                          logger: logger, intervalSeconds: configuration.liveActivityIntervalSeconds,
                                          stopCache: TimedCache(lifetimeSeconds: 55, now: { clock.now().timeIntervalSince1970 }))
        updater.stop = work.stop
        if let metrics { updater.onCycle = { report, seconds in metrics.observe(liveActivityCycle: report, seconds: seconds) } }
        liveActivityUpdater = updater
        let audit = AuditLog(database: database, logger: logger)
        var administration = AlertAdministration(store: alertStore, regions: regions, clock: clock, cache: alertFeedCache)
        administration.catalog = configuration.locales
        administration.audit = audit
        let alarmStore = AlarmStore(database: database)
        var checker = AlarmChecker(store: alarmStore, regions: regions, oba: oba, transport: transport, pushRegistrations: pushStore,
                                   clock: clock, logger: logger, intervalSeconds: configuration.alarmCheckIntervalSeconds)
        checker.stop = work.stop
        if let metrics { checker.onCycle = { report, seconds in metrics.observe(alarmCycle: report, seconds: seconds) } }
        alarmChecker = checker
        alertSends = AlertSendRunner(store: alertStore, transport: transport, clock: clock, logger: logger, work: work,
                                     retry: configuration.sendRetry)

        let now: @Sendable () -> Double = { clock.now().timeIntervalSince1970 }
        // On PostgreSQL several instances may share the work: throttle counts
        // live in the database so a limit holds across all of them.
        let shared: SharedWindowCounter? = database.dialect == .postgresql ? DatabaseWindowCounter(database: database) : nil
        limits = RiderLimits(configuration, logger: logger, shared: shared, now: now)
        var router = Router()
        let consoleStore = ConsoleStore(database: database)
        let health = HealthRoutes(database: database, logger: logger, freshSeconds: configuration.healthCacheSeconds)
        let features: [[Route]] = [
            health.routes,
            OpenAPIDocument.routes,
            PushRegistrationRoutes(
                store: pushStore, regions: regions, catalog: configuration.locales, clock: clock, logger: logger,
                limiter: limits.pushRegistrations).routes,
            AlarmRoutes(store: alarmStore, pushRegistrations: pushStore, regions: regions, oba: oba, clock: clock, logger: logger,
                        publicURL: publicURL, limits: limits).routes,
            LiveActivityRoutes(store: liveActivityStore, regions: regions, clock: clock, logger: logger, publicURL: publicURL,
                               limits: limits).routes,
            AlertFeedRoutes(store: alertStore, regions: regions, cache: alertFeedCache, clock: clock, logger: logger,
                            serverStart: clock.now().epochMillis / 1000).routes,
            SurveyRoutes(store: SurveyStore(database: database), regions: regions, clock: clock, logger: logger,
                         limiter: FixedWindowRateLimiter(limit: configuration.surveyResponseLimit, windowSeconds: 60, name: "survey_responses",
                                                         logger: logger, shared: shared, now: now)).routes,
            GhostBusRoutes(store: GhostBusStore(database: database), regions: regions, oba: oba, clock: clock, logger: logger,
                           peerLimiter: limits.ghostBusPeers, userLimiter: limits.ghostBusUsers).routes,
            DonationRoutes(stripe: StripeClient(http: upstream, baseURL: configuration.stripeURL), liveKey: configuration.stripeSecretKey,
                           testKey: configuration.stripeTestSecretKey, product: configuration.stripeProduct,
                           limiter: FixedWindowRateLimiter(limit: configuration.donationLimit, windowSeconds: 60, name: "donations", logger: logger,
                                                   shared: shared, now: now), logger: logger).routes,
            GorushWebhookRoutes(registrations: pushStore, liveActivities: liveActivityStore, secret: configuration.gorushWebhookSecret,
                                limiter: FixedWindowRateLimiter(limit: configuration.webhookLimit, windowSeconds: 60, name: "webhook", logger: logger,
                                                          shared: shared, now: now), logger: logger).routes,
            WeatherRoutes(regions: regions, http: upstream, apiKey: configuration.pirateWeatherKey, baseURL: configuration.pirateWeatherURL,
                          cache: TimedCache(lifetimeSeconds: 30 * 60, now: now), clock: clock, logger: logger).routes,
            VehicleRoutes(regions: regions, oba: oba, fleets: TimedCache(lifetimeSeconds: 30 * 60, now: now),
                          results: TimedCache(lifetimeSeconds: 5 * 60, now: now), lookups: limits.upstreamLookups, logger: logger).routes,
            AdminRoutes(administration: administration, keys: ApiKeyStore(database: database), store: alertStore, sends: alertSends,
                        clock: clock, logger: logger).routes,
            ConsoleRoutes(store: consoleStore, administration: administration, alerts: alertStore, sends: alertSends,
                          surveys: SurveyStore(database: database), ghostBus: GhostBusStore(database: database), keys: ApiKeyStore(database: database),
                          audit: audit, regions: regions, database: database, clock: clock, logger: logger,
                          secureCookies: publicURL.url.hasPrefix("https://"),
                          clientLogins: FixedWindowRateLimiter(limit: ConsoleRules.attemptsPerClient, windowSeconds: ConsoleRules.loginWindowSeconds,
                                                               name: "console_login_client", logger: logger, shared: shared, now: now),
                          accountLogins: FixedWindowRateLimiter(limit: ConsoleRules.failuresPerAccount, windowSeconds: ConsoleRules.loginWindowSeconds,
                                                                name: "console_login_account", logger: logger, keyForLogs: SHA256.fingerprint,
                                                                shared: shared, now: now),
                          failingSources: FixedWindowRateLimiter(limit: Int(Int32.max), windowSeconds: ConsoleRules.loginWindowSeconds,
                                                                 name: "console_login_source", logger: logger, keyForLogs: SHA256.fingerprint,
                                                                 shared: shared, now: now),
                          formTokens: FormTokens(store: consoleStore),
                          userWrites: FixedWindowRateLimiter(limit: configuration.consoleWriteLimit, windowSeconds: 60, name: "console_writes",
                                                             logger: logger, shared: shared, now: now)).routes,
            ShareRoutes(regions: regions, oba: oba, settings: configuration.links, publicURL: publicURL, clock: clock, logger: logger,
                        arrivals: TimedCache(lifetimeSeconds: Double(ShareRoutes.cacheSeconds), maxEntries: 5000, now: now),
                        zones: { regionID in
                            let name = (try? await alertStore.regionSettings()[regionID]?.timezone) ?? nil
                            return name.flatMap { ZoneInfo.named($0) } ?? .utc
                        }, lookups: limits.upstreamLookups).routes,
        ]
        features.joined().forEach { router.add($0) }
        // The console answers its unknown paths with its own page; the admin API stays JSON.
        router.answerNotFound(under: "/admin") { _ in
            ConsoleLayout.errorPage(404, "Not found", "There is no such page, or it belongs to a region you cannot see.")
        }
        router.answerNotFound(under: "/admin/api") { _ in .json(404, ["error": "Not Found"]) }
        if let demoRegionID {
            (DemoOneBusAway(clock: clock).routes + [DemoRegion.guide(regionID: demoRegionID, publicURL: publicURL, clock: clock)]).forEach { router.add($0) }
        }
        var serverConfiguration = configuration.serverConfiguration
        if let metrics {
            serverConfiguration.onAnswer = { method, route, status, seconds in
                metrics.observeAnswer(method: method, route: route, status: status, seconds: seconds)
            }
        }
        server = HTTPServer(configuration: serverConfiguration, router: router, logger: logger)
        if let metrics, let listen = configuration.metricsListen {
            metrics.watch(server: server)
            metrics.watch(storage: database, now: now)
            metricsServer = MetricsRoutes.server(metrics: metrics, listen: listen, logger: logger, extra: [health.detailedRoute()])
        } else {
            metricsServer = nil
        }
    }

    /// Builds the configured push transport; a key or account file that
    /// cannot be read is an error the operator must fix.
    static func pushTransport(_ configuration: SidecarConfiguration, http: HTTPClient, logger: Logger,
                              observer: HTTPClient.Observer? = nil) throws(StartupError) -> (any PushTransport)? {
        let direct = configuration.apnsKeyFile != nil || configuration.fcmServiceAccount != nil
        switch configuration.pushTransport {
        case .none: return nil
        case .log: return LogTransport(logger: logger, fingerprint: SHA256.fingerprint)
        case .relay: return try relayTransport(configuration, http: http, logger: logger)
        case .gorush:
            return configuration.gorushURL.map { GorushTransport(baseURL: $0, apnsTopic: configuration.apnsTopic, http: http) }
        case .automatic where configuration.gorushURL != nil:
            return GorushTransport(baseURL: configuration.gorushURL!, apnsTopic: configuration.apnsTopic, http: http)
        case .automatic where !direct:
            return nil
        case .direct, .automatic:
            return try directTransport(configuration, observer: observer)
        }
    }

    /// `--push-transport relay`: the relay at `--relay-url`, signing with the
    /// key at `--relay-key-file` (created on first use).
    static func relayTransport(_ configuration: SidecarConfiguration, http: HTTPClient, logger: Logger,
                               clock: any WallClock = SystemClock()) throws(StartupError) -> RelayTransport {
        guard let url = configuration.relayURL else { throw StartupError(description: "--push-transport relay needs --relay-url", exitCode: 2) }
        let identity = try RelayIdentity.loadOrCreate(path: configuration.relayKeyFile)
        return RelayTransport(baseURL: url, identity: identity, http: http, clock: clock, logger: logger)
    }

    /// APNs for iOS and FCM for Android, each over its own HTTP/2 client.
    static func directTransport(_ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil) throws(StartupError) -> any PushTransport {
        let ios: any PushTransport = try apnsTransport(configuration, observer: observer) ?? UnavailableTransport(name: "APNs")
        let android: any PushTransport = try fcmTransport(configuration, observer: observer) ?? UnavailableTransport(name: "FCM")
        return PlatformRouter(ios: ios, android: android)
    }

    /// Direct APNs from `--apns-key-file` (nil without one).
    static func apnsTransport(_ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil) throws(StartupError) -> APNsTransport? {
        guard let path = configuration.apnsKeyFile else { return nil }
        guard let keyID = configuration.apnsKeyID, let teamID = configuration.apnsTeamID else {
            throw StartupError(description: "--apns-key-file needs --apns-key-id and --apns-team-id", exitCode: 2)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError(description: "cannot read the APNs key \(path)", exitCode: 2)
        }
        let key: PrivateKey
        do { key = try PrivateKey(pem: String(decoding: data, as: UTF8.self)) } catch {
            throw StartupError(description: "APNs key \(path): \(error)", exitCode: 2)
        }
        var http = HTTPClient.Configuration()
        http.http2 = true
        http.maxConcurrentTransfers = 1000
        http.maxConnectionsPerHost = 4
        http.caFile = configuration.apnsCAFile
        var apns = APNsTransport.Configuration(keyID: keyID, teamID: teamID, topic: configuration.apnsTopic)
        apns.productionURL = configuration.apnsURL
        apns.sandboxURL = configuration.apnsSandboxURL
        let client = HTTPClient(configuration: http)
        client.observe(observer)
        return APNsTransport(configuration: apns, key: key, http: client)
    }

    /// Direct FCM from `--fcm-service-account` (nil without one).
    static func fcmTransport(_ configuration: SidecarConfiguration, observer: HTTPClient.Observer? = nil) throws(StartupError) -> FCMTransport? {
        guard let path = configuration.fcmServiceAccount else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StartupError(description: "cannot read the FCM service account \(path)", exitCode: 2)
        }
        let account: FCMTransport.ServiceAccount
        do { account = try FCMTransport.ServiceAccount(json: [UInt8](data)) } catch {
            throw StartupError(description: "FCM service account \(path): \(error)", exitCode: 2)
        }
        var http = HTTPClient.Configuration()
        http.http2 = true
        http.maxConcurrentTransfers = 200
        let client = HTTPClient(configuration: http)
        client.observe(observer)
        return FCMTransport(account: account, http: client, baseURL: configuration.fcmURL)
    }

    /// Starts listening and the background loops; returns the bound port.
    @discardableResult
    public func start() throws(StartupError) -> Int {
        let port: Int
        do { port = try server.start() } catch { throw StartupError(description: "\(error)", exitCode: 1) }
        if let metricsServer {
            do {
                let metricsPort = try metricsServer.start()
                logger.info("metrics listening", [("address", "http://\(SidecarConfiguration.ListenAddress(host: metricsServer.configuration.host, port: metricsPort))/metrics")])
            } catch {
                Task { [server] in await server.shutdown(grace: .zero) }
                throw StartupError(description: "metrics: \(error)", exitCode: 1)
            }
        }
        publicURL.set(configuration.effectivePublicURL(boundPort: port))
        if let demoRegionID {
            // Apps reach the demo server at the public URL; this process
            // reaches it over loopback (no trip through a proxy).
            regions.pin(DemoTransit.region(id: demoRegionID, obaBaseURL: DemoRegion.serverURL(base: publicURL.url)))
            oba.localBaseURLs.set(DemoRegion.serverURL(base: "http://\(Self.loopback(for: configuration.host)):\(port)"), for: demoRegionID)
            logger.info("demo region ready", [("region", String(demoRegionID)), ("guide", publicURL.url + "/demo"),
                                              ("push_transport", pushTransport?.name ?? "none")])
        }
        let refresher = regionRefresher
        let pruner = self.pruner
        let checker = alarmChecker
        let watcher = alertFeedWatcher
        let updater = liveActivityUpdater
        let sends = alertSends
        let stop = work.stop
        if configuration.runsLiveActivityUpdater { work.run { await updater.run() } }
        work.run { await watcher.run(stop: stop) }
        work.run { await pruner.run(stop: stop) }
        work.run { await refresher.run(stop: stop) }
        if configuration.runsSendResumer { work.run { await sends.run() } }
        if configuration.runsAlarmChecker { work.run { await checker.run() } }
        if configuration.pushTransport == .relay, let relay = (pushTransport as? RelayTransport) ?? (pushTransport as? MeasuredTransport)?.inner as? RelayTransport {
            let binder = RelayBinder(database: database, transport: relay, clock: clock, logger: logger)
            work.run { await binder.run(stop: stop) }
            logger.info("pushing through the relay", [("relay", relay.baseURL), ("server_id", relay.identity.serverID)])
        }
        logger.info("sidecar listening", [
            ("version", CommandLineInterface.version), ("host", configuration.host), ("port", String(port)),
            ("public_url", configuration.effectivePublicURL(boundPort: port)),
            ("regions", String(regions.all.count)), ("database", configuration.database),
            ("sqlite_synchronous", configuration.sqliteSynchronous.rawValue),
        ])
        return port
    }

    /// The address this process reaches its own listener at.
    static func loopback(for host: String) -> String {
        switch host {
        case "0.0.0.0", "", "localhost", "*": return "127.0.0.1"
        case "::", "::1": return "[::1]"
        default: return host.contains(":") ? "[\(host)]" : host
        }
    }

    /// Graceful stop, bounded by `--shutdown-timeout`: no new connections;
    /// requests under way are answered (keep-alive connections close after
    /// them); each background loop finishes and commits the page it is
    /// pushing and sends give back their leases; then the database closes.
    /// Returns false when the deadline cut work off (the database is then
    /// left to the process exit: every commit so far is durable).
    @discardableResult
    public func shutdown() async -> Bool {
        logger.info("shutting down", [("requests_in_flight", String(server.requestsInFlight)),
                                      ("background_tasks", String(work.runningCount))])
        let grace = Duration.seconds(configuration.shutdownTimeoutSeconds)
        let deadline = ContinuousClock.now + grace
        async let serverStopped = server.shutdown(grace: grace)
        async let metricsStopped = metricsServer?.shutdown(grace: .seconds(1)) ?? true
        let workStopped = await work.stopAndWait(until: deadline)
        let requestsFinished = await serverStopped
        _ = await metricsStopped
        upstream.shutdown()
        guard requestsFinished && workStopped else {
            logger.warning("stopped at the shutdown deadline with work unfinished", [
                ("requests_finished", String(requestsFinished)), ("background_tasks_left", String(work.runningCount))])
            return false
        }
        await database.close()
        logger.info("stopped")
        return true
    }
}

/// Waits for SIGTERM or SIGINT (kept out of main.swift so the handler is not
/// main-actor isolated).
public enum ShutdownSignal {
    /// Returns the first of SIGTERM/SIGINT to arrive.
    public static func wait() async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let stream = AsyncStream<Int32> { continuation in
            var sources: [any DispatchSourceSignal] = []
            for number in [SIGTERM, SIGINT] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                sources.append(source)
            }
            let retained = SignalSources(sources)
            continuation.onTermination = { _ in retained.cancel() }
        }
        for await number in stream { return number }
        return SIGTERM
    }
}

final class SignalSources: @unchecked Sendable {
    // Held only to keep the sources alive until the stream ends.
    private let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
    func cancel() { sources.forEach { $0.cancel() } }
}

/// The public base URL (`--public-url`, or one built from the bound port).
final class PublicBaseURL: Sendable {
    private let value: Mutex<String>
    init(_ initial: String) { value = Mutex(initial) }
    func set(_ url: String) { value.withLock { $0 = url } }
    var url: String { value.withLock { $0 } }
}
