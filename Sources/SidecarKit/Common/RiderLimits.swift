import HTTPServer

/// Per-client limits on what riders' requests may cost: writes per minute
/// per route family, rows per device, and lookups on the agency's
/// OneBusAway server. Shared by the routes so that one route cannot be used
/// to get around another's limit (a v2 alarm also registers its device,
/// which draws on the push-registration budget).
struct RiderLimits: Sendable {
    let pushRegistrations: FixedWindowRateLimiter
    let alarms: FixedWindowRateLimiter
    let liveActivities: FixedWindowRateLimiter
    /// Lookups a rider's request causes on the OneBusAway server (alarm
    /// creation, a cold vehicle fleet).
    let upstreamLookups: FixedWindowRateLimiter
    /// Ghost-bus reports per hour per client address, and per day per
    /// rider (`user_identifier`, counted by digest once a report validates).
    let ghostBusPeers: FixedWindowRateLimiter
    let ghostBusUsers: FixedWindowRateLimiter
    /// Alarms waiting to fire per `user_push_id`; 0 = no cap.
    let maxAlarmsPerDevice: Int
    /// Live Activities per push token; 0 = no cap.
    let maxLiveActivitiesPerPushToken: Int

    init(_ configuration: SidecarConfiguration, logger: Logger, shared: SharedWindowCounter? = nil, now: @escaping @Sendable () -> Double) {
        func minute(_ limit: Int, _ name: String) -> FixedWindowRateLimiter {
            FixedWindowRateLimiter(limit: limit, windowSeconds: 60, name: name, logger: logger, shared: shared, now: now)
        }
        pushRegistrations = minute(configuration.pushRegistrationLimit, "push_registrations")
        alarms = minute(configuration.alarmLimit, "alarms")
        liveActivities = minute(configuration.liveActivityLimit, "live_activities")
        upstreamLookups = minute(configuration.upstreamLookupLimit, "upstream_lookups")
        ghostBusPeers = FixedWindowRateLimiter(
            limit: configuration.ghostBusPeerLimit, windowSeconds: 3600, name: "ghost_bus_ip",
            logger: logger, shared: shared, now: now)
        ghostBusUsers = FixedWindowRateLimiter(
            limit: configuration.ghostBusUserLimit, windowSeconds: 86_400, name: "ghost_bus_user",
            logger: logger, keyForLogs: { String($0.prefix(12)) }, shared: shared, now: now)
        maxAlarmsPerDevice = configuration.maxAlarmsPerDevice
        maxLiveActivitiesPerPushToken = configuration.maxLiveActivitiesPerPushToken
    }

    /// The 429 a limiter's refusal answers, in the route's error shape.
    static func tooMany(_ style: ErrorStyle, retryAfter: Int, what: String = "requests") -> Response {
        style.response(status: 429, error: "Rate limit exceeded", messages: ["Too many \(what); retry in \(retryAfter) seconds"])
            .adding(header: "Retry-After", String(retryAfter))
    }
}
