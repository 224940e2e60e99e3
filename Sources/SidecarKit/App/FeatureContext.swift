import Crypto
import Database
import FoundationEssentials
import HTTPClient
import HTTPServer
import Push

/// What every feature is built from, each made once: storage and its
/// stores, the regions, the clock, the log, the OneBusAway gateway, the push
/// transport, the public URL, the limits and the server's stop signal.
struct FeatureContext: Sendable {
    let configuration: SidecarConfiguration
    let database: any Database
    let stores: Stores
    let regions: RegionDirectory
    let clock: any WallClock
    let logger: Logger
    let oba: OBAGateway
    /// The outbound client for OneBusAway servers, gorush, weather and Stripe.
    let upstream: HTTPClient
    let transport: (any PushTransport)?
    let publicURL: PublicBaseURL
    let metrics: SidecarMetrics?
    /// On PostgreSQL, where several instances may share the database:
    /// singleton jobs take a lease there, and one instance fetches for all.
    let coordination: CoordinationStore?
    /// Throttle counts kept in the database (PostgreSQL), so a limit holds
    /// across every instance.
    let sharedCounts: SharedWindowCounter?
    let limits: RiderLimits
    /// Admin API requests per minute per key, one budget across every admin
    /// feature (and failed sign-ins per client address).
    let adminAPILimiter: FixedWindowRateLimiter
    /// The background work, and the stop signal every job is built with.
    let work: BackgroundWork
    var stop: StopSignal { work.stop }
    /// The port the server listens on, once it does.
    let boundPort: BoundPort
    let alertFeedCache: AlertFeedCache
    let administration: AlertAdministration
    let alertSends: AlertSendRunner

    /// The stores, one of each.
    struct Stores: Sendable {
        let pushRegistrations: PushRegistrationStore
        let alarms: AlarmStore
        let alerts: AlertStore
        let liveActivities: LiveActivityStore
        let surveys: SurveyStore
        let ghostBus: GhostBusStore
        let apiKeys: ApiKeyStore
        let console: ConsoleStore
        let audit: AuditLog
        let alertSources: AlertSourceStore
        let idempotency: IdempotencyStore

        init(database: any Database, logger: Logger, sendLeaseSeconds: Int) {
            pushRegistrations = PushRegistrationStore(database: database)
            alarms = AlarmStore(database: database)
            alerts = AlertStore(database: database, sendLeaseSeconds: Int64(sendLeaseSeconds))
            liveActivities = LiveActivityStore(database: database)
            surveys = SurveyStore(database: database)
            ghostBus = GhostBusStore(database: database)
            apiKeys = ApiKeyStore(database: database)
            console = ConsoleStore(database: database)
            audit = AuditLog(database: database, logger: logger)
            alertSources = AlertSourceStore(database: database)
            idempotency = IdempotencyStore(database: database)
        }
    }

    /// Seconds since 1970 by the injected clock, for limiters and caches.
    var now: @Sendable () -> Double {
        let clock = clock
        return { clock.now().timeIntervalSince1970 }
    }

    /// A limit of `limit` requests per window per key (0: none), shared by
    /// every instance on PostgreSQL.
    func limiter(
        _ name: String, limit: Int, windowSeconds: Int = 60,
        keyForLogs: @escaping @Sendable (String) -> String = { $0 }
    ) -> FixedWindowRateLimiter {
        FixedWindowRateLimiter(
            limit: limit, windowSeconds: windowSeconds, name: name, logger: logger, keyForLogs: keyForLogs,
            shared: sharedCounts, now: now)
    }

    /// The alert sources' poller and management as this server runs them:
    /// sends they start run here; no source may point at `boundPort`.
    func alertSources(runsInBackground: Bool = false) -> (poller: AlertSourcePoller, administration: AlertSourceAdministration) {
        let host = configuration.host
        let boundPort = boundPort
        let sends = alertSends
        let poller = AlertSourcePoller(
            sources: stores.alertSources, alerts: stores.alerts, administration: administration, launch: { sends.launch($0) }, http: upstream,
            coordination: coordination ?? CoordinationStore(database: database), clock: clock, logger: logger, metrics: metrics,
            listening: { (host, boundPort.port) }, environment: ProcessInfo.processInfo.environment, catalog: configuration.locales,
            proxy: configuration.sourceProxy, work: runsInBackground ? work : nil, stop: stop)
        let management = AlertSourceAdministration(
            store: stores.alertSources, alerts: stores.alerts, regions: regions, clock: clock, poller: poller, audit: stores.audit,
            listening: { (host, boundPort.port) })
        return (poller, management)
    }

    /// A region's time zone (UTC when none is set).
    func zone(regionID: Int) async -> ZoneInfo {
        let name = (try? await RegionSettingsStore(database: stores.alerts.database).all()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0) } ?? .utc
    }
}
