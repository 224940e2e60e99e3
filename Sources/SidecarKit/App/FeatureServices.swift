import Crypto
import Database
import FoundationEssentials
import HTTPClient
import HTTPServer
import Push

/// The context every feature is built from: the kernel's part
/// (`KernelContext`) and what this composition root shares.
typealias FeatureContext = KernelContext<FeatureServices>

/// What the composition root makes once and every feature may use: the
/// configuration, the stores, the regions, the OneBusAway gateway, the push
/// transport, the limits, and the alert machinery several features drive.
/// A feature reads these as members of its context (`context.stores`).
struct FeatureServices: Sendable {
    let configuration: SidecarConfiguration
    let stores: Stores
    let regions: RegionDirectory
    let oba: OBAGateway
    let transport: (any PushTransport)?
    let metrics: SidecarMetrics?
    let limits: RiderLimits
    /// Admin API requests per minute per key, one budget across every admin
    /// feature (and failed sign-ins per client address).
    let adminAPILimiter: FixedWindowRateLimiter
    let alertFeedCache: AlertFeedCache
    let administration: AlertAdministration
    let alertSends: AlertSendRunner

    /// The stores, one of each.
    struct Stores: Sendable {
        let pushRegistrations: PushRegistrationStore
        let alarms: AlarmStore
        let alerts: AlertStore
        let alertSchedules: AlertScheduleStore
        let approvals: ApprovalStore
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
            alertSchedules = AlertScheduleStore(database: database)
            approvals = ApprovalStore(database: database)
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

}

extension KernelContext where Shared == FeatureServices {
    /// The alert sources' poller and management as this server runs them:
    /// sends they start run here; no source may point at `boundPort`.
    func alertSources(runsInBackground: Bool = false) -> (poller: AlertSourcePoller, administration: AlertSourceAdministration) {
        let host = shared.configuration.server.host
        let boundPort = boundPort
        let sends = shared.alertSends
        let poller = AlertSourcePoller(
            sources: shared.stores.alertSources, alerts: shared.stores.alerts, administration: shared.administration, launch: { sends.launch($0) },
            http: upstream,
            coordination: coordination ?? CoordinationStore(database: database), clock: clock, logger: logger, metrics: shared.metrics,
            listening: { (host, boundPort.port) }, environment: ProcessInfo.processInfo.environment, catalog: shared.configuration.locales,
            proxy: shared.configuration.sourceProxy, work: runsInBackground ? work : nil, stop: stop)
        let management = AlertSourceAdministration(
            store: shared.stores.alertSources, alerts: shared.stores.alerts, regions: shared.regions, clock: clock, poller: poller,
            audit: shared.stores.audit,
            listening: { (host, boundPort.port) })
        return (poller, management)
    }

    /// A region's time zone (UTC when none is set).
    func zone(regionID: Int) async -> ZoneInfo {
        let name = (try? await RegionSettingsStore(database: database).all()[regionID]?.timezone) ?? nil
        return name.flatMap { ZoneInfo.named($0) } ?? .utc
    }
}
