import Crypto
import Database
import Dispatch
import FoundationEssentials
import HTTPClient
import HTTPServer
import OBA
import Push
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why the server could not start; `exitCode` is 2 for configuration the
/// operator must fix and 1 for everything else.
struct StartupError: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32
}

/// The running application: regions, storage, routes and background loops,
/// wired from one configuration as a list of features.
final class Sidecar: Sendable {
    let configuration: SidecarConfiguration
    let database: any Database
    let regions: RegionDirectory
    let server: HTTPServer
    let context: FeatureContext
    /// Every feature: its routes are the server's, its jobs run in the background.
    let features: [any Feature]
    let metricsServer: HTTPServer?
    /// The simulated region of `--demo`, or nil.
    let demoRegionID: Int?

    var clock: any WallClock { context.clock }
    var logger: Logger { context.logger }
    var work: BackgroundWork { context.work }
    var publicURL: PublicBaseURL { context.publicURL }
    var oba: OBAGateway { context.oba }
    var transport: (any PushTransport)? { context.transport }
    var limits: RiderLimits { context.limits }
    var metrics: SidecarMetrics? { context.metrics }
    var alertFeedCache: AlertFeedCache { context.alertFeedCache }
    var alertSends: AlertSendRunner { context.alertSends }
    func feature<F: Feature>(_ type: F.Type) -> F? { features.lazy.compactMap { $0 as? F }.first }
    var alarmChecker: AlarmChecker { feature(AlarmRoutes.self)!.checker }
    var liveActivityUpdater: LiveActivityUpdater { feature(LiveActivityRoutes.self)!.updater }
    var alertFeedWatcher: AlertFeedVersionWatcher { feature(AlertFeedRoutes.self)!.watcher }
    var pruner: PushRegistrationPruner { feature(PushRegistrationRoutes.self)!.pruner }

    /// Loads the regions directory, opens and migrates the database and
    /// builds the features. Nothing listens until `start()`.
    static func prepare(
        configuration: SidecarConfiguration, clock: any WallClock = SystemClock(),
        logger: Logger, httpClient: HTTPClient = HTTPClient()
    ) async throws(StartupError) -> Sidecar {
        let metrics = configuration.metricsListen != nil ? SidecarMetrics() : nil
        if let metrics { httpClient.observe(metrics.observeUpstream) }
        let source = RegionSource(argument: configuration.regions)
        var regionList: [Region]
        do { regionList = try await source.load(client: httpClient) } catch {
            throw StartupError(description: "regions directory \(source.label): \(error.description)", exitCode: 2)
        }
        // The demo region's URL names the public base; start() corrects the port.
        let demoRegion =
            configuration.demo
            ? DemoTransit.region(id: DemoRegion.id(avoiding: regionList), obaBaseURL: DemoRegion.serverURL(base: configuration.effectivePublicURL()))
            : nil
        if let demoRegion { regionList.append(demoRegion) }
        let (opened, applied) = try await configuration.openMigrated(readers: configuration.server.threads + 2) { logger.info($0) }
        if !applied.isEmpty { logger.info("applied migrations", [("versions", applied.map(String.init).joined(separator: ","))]) }
        let measured: any Database = metrics.map { MeasuredDatabase(inner: opened, metrics: $0) } ?? opened
        let database: any Database = GuardedDatabase(inner: measured, schema: SchemaGuard())
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
        let context = Self.context(
            configuration, database: database, regions: directory, clock: clock, logger: logger, upstream: upstream,
            transport: transport, metrics: metrics)
        let features = Self.features(context, regionSource: source, directoryClient: httpClient, demoRegionID: demoRegion?.id)
        do {
            return try Sidecar(context: context, features: features, demoRegionID: demoRegion?.id)
        } catch {
            await database.close()
            throw StartupError(description: "\(error)", exitCode: 1)
        }
    }

    /// One of each thing the features share.
    static func context(
        _ configuration: SidecarConfiguration, database: any Database, regions: RegionDirectory, clock: any WallClock,
        logger: Logger, upstream: HTTPClient, transport: (any PushTransport)?, metrics: SidecarMetrics?
    ) -> FeatureContext {
        let now: @Sendable () -> Double = { clock.now().timeIntervalSince1970 }
        let postgres = database.dialect == .postgresql
        let shared: SharedWindowCounter? = postgres ? DatabaseWindowCounter(database: database) : nil
        let stores = FeatureServices.Stores(database: database, logger: logger, sendLeaseSeconds: configuration.sendLeaseSeconds)
        let cache = AlertFeedCache()
        let work = BackgroundWork()
        let oba = OBAGateway(
            client: OBAClient(http: upstream), defaultKey: configuration.obaAPIKey, regionKeys: configuration.obaRegionAPIKeys, logger: logger)
        let limits = RiderLimits(configuration, logger: logger, shared: shared, now: now)
        let services = FeatureServices(
            configuration: configuration, stores: stores, regions: regions, oba: oba,
            transport: transport, metrics: metrics, limits: limits,
            adminAPILimiter: FixedWindowRateLimiter(
                limit: configuration.adminAPILimit, windowSeconds: 60, name: "admin_api", logger: logger, shared: shared, now: now),
            alertFeedCache: cache,
            administration: AlertAdministration(
                store: stores.alerts, regions: regions, clock: clock, cache: cache, catalog: configuration.locales,
                audit: stores.audit, scopeChecker: OBAScopeChecker(oba: oba, lookups: limits.upstreamLookups)),
            alertSends: AlertSendRunner(
                store: stores.alerts, transport: transport, clock: clock, logger: logger, work: work,
                retry: configuration.sendRetry))
        return FeatureContext(
            database: database, clock: clock, logger: logger, upstream: upstream,
            coordination: postgres ? CoordinationStore(database: database) : nil, sharedCounts: shared, work: work,
            boundPort: BoundPort(), publicURL: PublicBaseURL(configuration.effectivePublicURL()), shared: services)
    }

    /// Every feature of the server, in one list.
    static func features(_ context: FeatureContext, regionSource: RegionSource, directoryClient: HTTPClient, demoRegionID: Int?) -> [any Feature] {
        // The console kit, built once: every feature's pages share its
        // sessions, limits and caches.
        let console = ConsoleRoutes(context)
        // The Go reference's admin contract, built once: its routes share one limit on failed keys.
        let reference = ReferenceAdminAPI(context)
        var features: [any Feature] = [
            HealthRoutes(context), OpenAPIRoutes(), PushRegistrationRoutes(context), AlarmRoutes(context), LiveActivityRoutes(context),
            AlertFeedRoutes(context), SurveyRoutes(context), GhostBusRoutes(context), DonationRoutes(context), GorushWebhookRoutes(context),
            WeatherRoutes(context), VehicleRoutes(context), ShareRoutes(context),
            // The admin API, each feature's routes built with the admin kit.
            RegionAdminRoutes(context), AlertAdminRoutes(context), AlertScheduleAdminRoutes(context), ApprovalAdminRoutes(context),
            AlertSends(context), AlertScheduler(context),
            AdminKeyRoutes(context), SurveyAdminRoutes(context),
            GhostBusAdminRoutes(context), ActivityAdminRoutes(context),
            // The same operations in the Go reference's contract, under /api/admin/v1.
            RegionReferenceRoutes(reference, context), ReferenceKeyRoutes(reference, context), AlertReferenceRoutes(reference, context),
            AlertPushReferenceRoutes(reference, context), AlarmReferenceRoutes(reference, context), SurveyReferenceRoutes(reference, context),
            GhostBusReferenceRoutes(reference, context), SessionReferenceRoutes(console: console, api: reference),
            // The console: the kit's own pages, then each feature's.
            console, DashboardConsolePages(console, context), KeyConsolePages(console, context), AuditConsolePages(console, context),
            AlertConsolePages(console, context), AlertFormConsolePages(console, context), AlertTranslationConsolePages(console, context),
            AlertScheduleConsolePages(console, context), ApprovalConsolePages(console, context),
            MirroredAlertConsolePages(console, context), AlertSendConsolePages(console, context), RegionConsolePages(console, context),
            SurveyConsolePages(console, context), GhostBusConsolePages(console, context),
            SourceConsolePages(console, context),
            RegionRefresher(context, source: regionSource, client: directoryClient), AlertSourcePolling(context),
        ]
        if let binder = RelayBinder(context) { features.append(binder) }
        if let guarded = context.database as? GuardedDatabase { features.append(SchemaWatch(context, schema: guarded.schema)) }
        if let demoRegionID { features.append(DemoFeature(context, regionID: demoRegionID)) }
        return features
    }

    init(context: FeatureContext, features: [any Feature], demoRegionID: Int?) throws(Router.Conflict) {
        self.context = context
        self.features = features
        self.demoRegionID = demoRegionID
        configuration = context.configuration
        database = context.database
        regions = context.regions
        var router = Router()
        try router.register(features.flatMap(\.routes))
        // The console answers its unknown paths with its own page; the admin API stays JSON.
        router.answerNotFound(under: "/admin") { _ in
            ConsoleLayout.errorPage(404, "Not found", "There is no such page, or it belongs to a region you cannot see.")
        }
        router.answerNotFound(under: "/admin/api") { _ in .json(404, ["error": "Not Found"]) }
        var serverConfiguration = configuration.serverConfiguration
        let metrics = context.metrics
        if let metrics {
            serverConfiguration.onAnswer = { method, route, status, seconds in
                metrics.observeAnswer(method: method, route: route, status: status, seconds: seconds)
            }
        }
        server = HTTPServer(configuration: serverConfiguration, router: router, logger: context.logger)
        if let metrics, let listen = configuration.metricsListen, let health = features.lazy.compactMap({ $0 as? HealthRoutes }).first {
            metrics.watch(server: server)
            metrics.watch(storage: database, now: context.now)
            metricsServer = MetricsRoutes.server(metrics: metrics, listen: listen, logger: context.logger, extra: [health.detailedRoute()])
        } else {
            metricsServer = nil
        }
    }

    /// The outbound client for OneBusAway servers, gorush, weather and Stripe.
    static func upstreamClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.maxConcurrentTransfers = 64
        // Alarm cycles fan out one request per stop to each region's server.
        configuration.maxConnectionsPerHost = 16
        return HTTPClient(configuration: configuration)
    }

    /// Starts listening and the background loops; returns the bound port.
    @discardableResult
    func start() async throws(StartupError) -> Int {
        let port: Int
        do { port = try server.start() } catch { throw StartupError(description: "\(error)", exitCode: 1) }
        if let metricsServer {
            do {
                let metricsPort = try metricsServer.start()
                logger.info(
                    "metrics listening",
                    [("address", "http://\(SidecarConfiguration.ListenAddress(host: metricsServer.configuration.host, port: metricsPort))/metrics")])
            } catch {
                // The main listener is stopped before the error is
                // returned, so nothing is left serving half a server.
                await server.shutdown(grace: .zero)
                throw StartupError(description: "metrics: \(error)", exitCode: 1)
            }
        }
        publicURL.set(configuration.effectivePublicURL(boundPort: port))
        context.boundPort.set(port)
        if let demoRegionID {
            // Apps reach the demo server at the public URL; this process
            // reaches it over loopback (no trip through a proxy).
            regions.pin(DemoTransit.region(id: demoRegionID, obaBaseURL: DemoRegion.serverURL(base: publicURL.url)))
            oba.localBaseURLs.set(DemoRegion.serverURL(base: "http://\(Self.loopback(for: configuration.server.host)):\(port)"), for: demoRegionID)
            logger.info(
                "demo region ready",
                [
                    ("region", String(demoRegionID)), ("guide", publicURL.url + "/demo"),
                    ("push_transport", transport?.name ?? "none"),
                ])
        }
        for job in features.flatMap(\.jobs) { work.run(job.run) }
        logger.info(
            "sidecar listening",
            [
                ("version", CommandLineInterface.version), ("host", configuration.server.host), ("port", String(port)),
                ("public_url", configuration.effectivePublicURL(boundPort: port)),
                ("regions", String(regions.all.count)), ("database", configuration.databaseName),
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
    func shutdown() async -> Bool {
        logger.info(
            "shutting down",
            [
                ("requests_in_flight", String(server.requestsInFlight)),
                ("background_tasks", String(work.runningCount)),
            ])
        let grace = Duration.seconds(configuration.shutdownTimeoutSeconds)
        let deadline = ContinuousClock.now + grace
        async let serverStopped = server.shutdown(grace: grace)
        async let metricsStopped = metricsServer?.shutdown(grace: .seconds(1)) ?? true
        let workStopped = await work.stopAndWait(until: deadline)
        let requestsFinished = await serverStopped
        _ = await metricsStopped
        context.upstream.shutdown()
        guard requestsFinished && workStopped else {
            logger.warning(
                "stopped at the shutdown deadline with work unfinished",
                [
                    ("requests_finished", String(requestsFinished)), ("background_tasks_left", String(work.runningCount)),
                ])
            return false
        }
        await database.close()
        logger.info("stopped")
        return true
    }
}
