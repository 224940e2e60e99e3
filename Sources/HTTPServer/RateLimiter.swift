import Synchronization

/// A fixed-window request counter (the Rack::Attack model the reference
/// throttles use): at most `limit` hits per key in each aligned window of
/// `windowSeconds`. Time comes from an injected clock so tests never sleep.
public final class FixedWindowRateLimiter: Sendable {
    /// The verdict for one hit.
    public enum Decision: Equatable, Sendable {
        case allowed
        /// Over the limit; retry after this many whole seconds (at least 1).
        case limited(retryAfter: Int)
    }

    public let limit: Int
    public let windowSeconds: Int
    /// Names the limiter in debug lines ("throttled limiter=alarms ...").
    public let name: String
    private let logger: Logger?
    private let keyForLogs: @Sendable (String) -> String
    private let now: @Sendable () -> Double
    private struct Counter { var window: Int64; var hits: Int }
    private struct State { var counters: [String: Counter] = [:]; var sweptWindow: Int64 = .min }
    private let state = Mutex(State())

    /// - Parameters:
    ///   - limit: hits allowed per window; 0 or less disables the limiter.
    ///   - now: seconds since the epoch.
    ///   - name, logger: at `debug`, each refusal is logged with the
    ///     limiter's name and its key as `keyForLogs` shows it (a key that
    ///     identifies a rider rather than an address must be hashed there).
    public init(limit: Int, windowSeconds: Int, name: String = "throttle", logger: Logger? = nil,
                keyForLogs: @escaping @Sendable (String) -> String = { $0 }, now: @escaping @Sendable () -> Double) {
        self.limit = limit
        self.windowSeconds = max(windowSeconds, 1)
        self.name = name
        self.logger = logger
        self.keyForLogs = keyForLogs
        self.now = now
    }

    /// Counts one hit for `key`.
    public func hit(_ key: String) -> Decision {
        guard limit > 0 else { return .allowed }
        let seconds = now()
        let window = Int64((seconds / Double(windowSeconds)).rounded(.down))
        let decision: Decision = state.withLock { state in
            if state.sweptWindow != window {
                // Forget earlier windows once per window so memory tracks only
                // the peers active in the current one.
                state.counters = state.counters.filter { $0.value.window == window }
                state.sweptWindow = window
            }
            var counter = state.counters[key] ?? Counter(window: window, hits: 0)
            if counter.window != window { counter = Counter(window: window, hits: 0) }
            counter.hits += 1
            state.counters[key] = counter
            if counter.hits <= limit { return .allowed }
            let windowEnd = Double(window + 1) * Double(windowSeconds)
            return .limited(retryAfter: max(1, Int((windowEnd - seconds).rounded(.up))))
        }
        if case .limited(let retryAfter) = decision, let logger, logger.isEnabled(.debug) {
            logger.debug("throttled", [("limiter", name), ("key", keyForLogs(key)), ("limit", "\(limit)/\(windowSeconds)s"),
                                       ("retry_after", String(retryAfter))])
        }
        return decision
    }

    /// A precheck answering 429 with `Retry-After` once `key(request)` is
    /// over the limit, in the route's error shape (on the server's thread:
    /// a flood of refused requests costs no task).
    public func precheck(errorStyle: ErrorStyle, key: @escaping @Sendable (Request) -> String = { $0.clientKey }) -> Precheck {
        { request in
            guard case .limited(let retryAfter) = self.hit(key(request)) else { return nil }
            return errorStyle.response(status: 429, error: "Rate limit exceeded", messages: ["Too many requests; retry in \(retryAfter) seconds"])
                .adding(header: "Retry-After", String(retryAfter))
        }
    }
}
