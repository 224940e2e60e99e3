import Database
import FoundationEssentials
import HTTPServer
import Metrics
import Push
import Synchronization

/// Every `sidecar_*` metric, and the hooks that feed them. Exists only with
/// `--metrics-listen`: without it nothing is counted, so metrics cost
/// nothing when off.
final class SidecarMetrics: Sendable {
    let registry = MetricsRegistry()

    let requests: Counter
    let requestDuration: Histogram
    let pushes: Counter
    let alarmsFired: Counter
    let alarmsExpired: Counter
    let alarmsReaped: Counter
    let alarmCycleDuration: Histogram
    let alarmCycleUpstreamRequests: Histogram
    let liveActivityCycleDuration: Histogram
    let liveActivityCycleUpstreamRequests: Histogram
    let liveActivityCyclesOverrun: Counter
    let upstreamRequests: Counter
    let databaseErrors: Counter
    let sourcePolls: Counter
    let sourceAlerts: Gauge
    let sourcePushes: Counter
    let sourceUnknownValues: Counter

    /// Request durations: most answers take a millisecond or less; an
    /// upstream lookup can take seconds.
    static let durationBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    static let cycleBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120]
    static let upstreamCountBuckets: [Double] = [0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000]

    init() {
        let r = registry
        requests = r.counter(
            "sidecar_http_requests_total", "HTTP requests answered, by route pattern, method and status.",
            labels: ["route", "method", "status"])
        requestDuration = r.histogram(
            "sidecar_http_request_duration_seconds", "Seconds from a request's first byte to its queued answer.",
            labels: ["route", "method"], buckets: Self.durationBuckets)
        pushes = r.counter(
            "sidecar_pushes_total",
            "Push notifications handed to a transport, by transport, platform and outcome "
                + "(delivered, terminal: the token is dead, transient: retried, rejected: the message was refused).",
            labels: ["transport", "platform", "outcome"])
        alarmsFired = r.counter("sidecar_alarms_fired_total", "Departure alarms pushed and delivered.")
        alarmsExpired = r.counter("sidecar_alarms_expired_total", "Departure alarms dropped because the departure passed before they could fire.")
        alarmsReaped = r.counter("sidecar_alarms_reaped_total", "Departure alarms deleted because their trip could not be found, check after check.")
        alarmCycleDuration = r.histogram(
            "sidecar_alarm_cycle_duration_seconds", "Seconds one alarm checker cycle took.",
            buckets: Self.cycleBuckets)
        alarmCycleUpstreamRequests = r.histogram(
            "sidecar_alarm_cycle_upstream_requests", "OneBusAway requests one alarm checker cycle made.",
            buckets: Self.upstreamCountBuckets)
        liveActivityCycleDuration = r.histogram(
            "sidecar_live_activity_cycle_duration_seconds", "Seconds one Live Activity update cycle took.",
            buckets: Self.cycleBuckets)
        liveActivityCycleUpstreamRequests = r.histogram(
            "sidecar_live_activity_cycle_upstream_requests",
            "OneBusAway requests one Live Activity update cycle made.",
            buckets: Self.upstreamCountBuckets)
        liveActivityCyclesOverrun = r.counter(
            "sidecar_live_activity_cycles_overrun_total",
            "Live Activity update cycles that took longer than their interval (the next one waited for each to finish).")
        upstreamRequests = r.counter(
            "sidecar_upstream_requests_total",
            "Outbound requests by upstream (oba, gorush, apns, fcm, fcm_oauth, "
                + "pirate_weather, stripe, regions) and status (the HTTP status, timeout or error).",
            labels: ["upstream", "status"])
        databaseErrors = r.counter(
            "sidecar_database_errors_total", "Storage operations that failed, by kind (unavailable, busy, constraint, closed, failed).",
            labels: ["kind"])
        sourcePolls = r.counter(
            "sidecar_source_polls_total", "Polls of alert sources by outcome (ok, not_modified: answered 304, failed).", labels: ["outcome"])
        sourceAlerts = r.gauge("sidecar_source_alerts", "Alerts each alert source listed at its last successful poll.", labels: ["source"])
        sourcePushes = r.counter("sidecar_source_pushes_total", "Sends started for alerts from alert sources.")
        sourceUnknownValues = r.counter(
            "sidecar_source_unknown_values_total",
            "Enum values (cause, effect, severity) alert sources sent that this server does not know: kept as unknown.")
        let build = r.gauge("sidecar_build_info", "Always 1; the version label names the running release.", labels: ["version"])
        build.set(CommandLineInterface.version, to: 1)
        r.addCollector { ProcessMetrics.collect(prefix: "sidecar_") }
    }

    /// Methods outside this set are counted as `other`: the method is sent
    /// by the client and must not create new series.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    func observeAnswer(method: String, route: String, status: Int, seconds: Double) {
        let method = Self.knownMethods.contains(method) ? method : "other"
        requests.increment(route, method, String(status))
        requestDuration.observe(seconds, route, method)
    }

    func observeUpstream(_ upstream: String, outcome: String) {
        upstreamRequests.increment(upstream, outcome)
    }

    func observe(alarmCycle report: AlarmChecker.CycleReport, seconds: Double) {
        alarmsFired.increment(by: report.fired)
        alarmsExpired.increment(by: report.expired)
        alarmsReaped.increment(by: report.reaped)
        alarmCycleDuration.observe(seconds)
        alarmCycleUpstreamRequests.observe(Double(report.stopRequests + report.tripRequests))
    }

    func observe(liveActivityCycle report: LiveActivityUpdater.CycleReport, seconds: Double) {
        liveActivityCycleDuration.observe(seconds)
        liveActivityCycleUpstreamRequests.observe(Double(report.stopRequests))
        if report.overran { liveActivityCyclesOverrun.increment(by: 1) }
    }

    /// Counts from the HTTP server, read when scraped.
    func watch(server: HTTPServer) {
        registry.addCollector { [weak server] in
            guard let server else { return [] }
            return [
                CollectedFamily(
                    name: "sidecar_http_connections_open", help: "Client connections open now.", kind: .gauge,
                    value: Double(server.openConnections)),
                CollectedFamily(
                    name: "sidecar_http_requests_in_flight", help: "Requests whose handlers are running now.", kind: .gauge,
                    value: Double(server.requestsInFlight)),
                CollectedFamily(
                    name: "sidecar_http_connections_closed_by_guard_total",
                    help: "Connections closed for being slow, idle near the limit or over the per-client limit.", kind: .counter,
                    value: Double(server.connectionsClosedByGuard)),
            ]
        }
    }

    /// Counts from storage, read when scraped (at most every few seconds:
    /// a scrape loop must not become a load on the database).
    func watch(storage database: any Database, now: @escaping @Sendable () -> Double) {
        let cache = Mutex<(at: Double, families: [CollectedFamily])?>(nil)
        registry.addCollector {
            let time = now()
            if let cached = cache.withLock({ $0 }), time - cached.at < 5 { return cached.families }
            let families = (try? await Self.storageFamilies(database)) ?? []
            cache.withLock { $0 = (time, families) }
            return families
        }
    }

    static func storageFamilies(_ database: any Database) async throws -> [CollectedFamily] {
        try await database.read { connection in
            let registrations = try PushRegistrationStore.countsByRegionAndPlatform(connection)
            return [
                CollectedFamily(
                    name: "sidecar_push_registrations", help: "Push registrations stored, by region and platform.", kind: .gauge,
                    labelNames: ["region", "platform"],
                    samples: registrations.map { (labels: [String($0.regionID), $0.platform], value: Double($0.count)) }),
                CollectedFamily(
                    name: "sidecar_alert_sends_in_progress", help: "Alert sends running now (on any instance).", kind: .gauge,
                    value: Double(try AlertSendStore.runningSendCount(connection))),
                CollectedFamily(
                    name: "sidecar_alarms_waiting", help: "Departure alarms stored and waiting to fire.", kind: .gauge,
                    value: Double(try AlarmStore.count(connection))),
                CollectedFamily(
                    name: "sidecar_live_activities", help: "Live Activity subscriptions stored.", kind: .gauge,
                    value: Double(try LiveActivityStore.count(connection))),
            ]
        }
    }
}

/// A push transport that counts what became of every message.
struct MeasuredTransport: PushTransport {
    let inner: any PushTransport
    let metrics: SidecarMetrics

    var name: String { inner.name }

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        let outcomes = await inner.send(messages)
        for (message, outcome) in zip(messages, outcomes) {
            metrics.pushes.increment(transportLabel(for: message.platform), message.platform.rawValue, Self.label(outcome))
        }
        return outcomes
    }

    /// Direct delivery is two transports (`apns+fcm`): name the one the
    /// platform used.
    func transportLabel(for platform: PushPlatform) -> String {
        let parts = inner.name.lowercased().split(separator: "+")
        guard parts.count == 2 else { return inner.name.lowercased() }
        return String(platform == .ios ? parts[0] : parts[1])
    }

    static func label(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: return "delivered"
        case .terminal: return "terminal"
        case .transient: return "transient"
        case .rejected: return "rejected"
        }
    }
}

/// Storage that counts its failures (everything else passes straight through).
struct MeasuredDatabase: Database {
    let inner: any Database
    let metrics: SidecarMetrics

    var dialect: SQLDialect { inner.dialect }

    func read<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        do { return try await inner.read(work) } catch {
            count(error)
            throw error
        }
    }

    @discardableResult
    func write<T: Sendable>(locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        do { return try await inner.write(locking: keys, work) } catch {
            count(error)
            throw error
        }
    }

    func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        inner.submitWrite(locking: keys, work) { error in
            if let error { count(error) }
            completion(error)
        }
    }

    @discardableResult
    func migrate(_ migrations: [Migration]) async throws -> [Int] { try await inner.migrate(migrations) }
    func close() async { await inner.close() }
    func healthProblems() async -> [HealthProblem] { await inner.healthProblems() }

    /// Only storage's own errors count; a feature's error thrown through a
    /// transaction (a validation failure) is not a database error.
    func count(_ error: any Error) {
        guard let error = error as? DatabaseError else { return }
        let kind: String
        switch error {
        case .unavailable, .openFailed: kind = "unavailable"
        case .busy: kind = "busy"
        case .constraintViolation: kind = "constraint"
        case .closed: kind = "closed"
        case .failed, .migrationFailed, .schemaTooNew, .invalidConfiguration, .unknownColumn, .unexpectedNull: kind = "failed"
        }
        metrics.databaseErrors.increment(kind)
    }
}
