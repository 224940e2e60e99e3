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
    /// Alarms waiting to fire per `user_push_id`; 0 = no cap.
    let maxAlarmsPerDevice: Int
    /// Live Activities per push token; 0 = no cap.
    let maxLiveActivitiesPerPushToken: Int

    init(_ configuration: SidecarConfiguration, now: @escaping @Sendable () -> Double) {
        pushRegistrations = FixedWindowRateLimiter(limit: configuration.pushRegistrationLimit, windowSeconds: 60, now: now)
        alarms = FixedWindowRateLimiter(limit: configuration.alarmLimit, windowSeconds: 60, now: now)
        liveActivities = FixedWindowRateLimiter(limit: configuration.liveActivityLimit, windowSeconds: 60, now: now)
        upstreamLookups = FixedWindowRateLimiter(limit: configuration.upstreamLookupLimit, windowSeconds: 60, now: now)
        maxAlarmsPerDevice = configuration.maxAlarmsPerDevice
        maxLiveActivitiesPerPushToken = configuration.maxLiveActivitiesPerPushToken
    }

    /// The 429 a limiter's refusal answers, in the route's error shape.
    static func tooMany(_ style: ErrorStyle, retryAfter: Int, what: String = "requests") -> Response {
        style.response(status: 429, error: "Rate limit exceeded", messages: ["Too many \(what); retry in \(retryAfter) seconds"])
            .adding(header: "Retry-After", String(retryAfter))
    }
}
