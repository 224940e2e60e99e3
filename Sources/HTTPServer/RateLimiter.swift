import Synchronization

/// Counters kept outside the process (a database several instances share),
/// so a limit holds across all of them.
public protocol SharedWindowCounter: Sendable {
    /// Counts `hits` (at least one) for `key` in the window starting at
    /// `windowStart` (epoch seconds) and returns the window's count so far.
    func increment(key: String, windowStart: Int64, by hits: Int) async throws -> Int
    /// The window's count so far for `key`, without counting.
    func count(key: String, windowStart: Int64) async throws -> Int
}

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
    /// When set, counts live there instead of in this process.
    public let shared: SharedWindowCounter?
    private let logger: Logger?
    private let keyForLogs: @Sendable (String) -> String
    private let now: @Sendable () -> Double
    /// Keys counted at once in one window; past it the oldest are forgotten
    /// (a forgotten key starts over), so no flood of distinct keys grows
    /// memory without bound.
    public let maxKeys: Int
    private struct Counter {
        var window: Int64
        var hits: Int
    }
    private struct State {
        var counters: [String: Counter] = [:]
        /// Keys in the order they were first counted this window.
        var order: [String] = []
        var oldest = 0
        var sweptWindow: Int64 = .min
    }
    private let state = Mutex(State())

    /// The longest key kept as given; a longer one (an identifier a client
    /// chose) is kept as a fixed-size digest of itself.
    static let maxKeyBytes = 64

    /// - Parameters:
    ///   - limit: hits allowed per window; 0 or less disables the limiter.
    ///   - now: seconds since the epoch.
    ///   - name, logger: at `debug`, each refusal is logged with the
    ///     limiter's name and its key as `keyForLogs` shows it (a key that
    ///     identifies a rider rather than an address must be hashed there).
    ///   - shared: counters several instances share (nil: this process's memory).
    public init(
        limit: Int, windowSeconds: Int, name: String = "throttle", logger: Logger? = nil,
        keyForLogs: @escaping @Sendable (String) -> String = { $0 }, shared: SharedWindowCounter? = nil,
        maxKeys: Int = 100_000, now: @escaping @Sendable () -> Double
    ) {
        self.limit = limit
        self.maxKeys = max(maxKeys, 1)
        self.windowSeconds = max(windowSeconds, 1)
        self.name = name
        self.shared = shared
        self.logger = logger
        self.keyForLogs = keyForLogs
        self.now = now
    }

    /// A key of at most `maxKeyBytes`: long keys become a 128-bit digest
    /// (two FNV-1a 64-bit hashes with different bases), hex.
    public static func boundedKey(_ key: String) -> String {
        guard key.utf8.count > maxKeyBytes else { return key }
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x84222325_cbf29ce4
        for byte in key.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 &+ 1
        }
        return "#" + String(first, radix: 16) + String(second, radix: 16)
    }

    /// Keys counted in the current window (for tests and bounds).
    public var trackedKeys: Int { state.withLock { $0.counters.count } }

    /// Counts `cost` hits (one unless a request weighs more, as a relay
    /// send of many tokens) for `key`.
    public func hit(_ rawKey: String, cost: Int = 1) -> Decision {
        let cost = max(cost, 1)
        guard limit > 0 else { return .allowed }
        let key = Self.boundedKey(rawKey)
        let seconds = now()
        let window = Int64((seconds / Double(windowSeconds)).rounded(.down))
        let maxKeys = maxKeys
        let decision: Decision = state.withLock { state in
            if state.sweptWindow != window {
                // Forget earlier windows once per window so memory tracks only
                // the peers active in the current one.
                state.counters = state.counters.filter { $0.value.window == window }
                state.order = Array(state.counters.keys)
                state.oldest = 0
                state.sweptWindow = window
            }
            let counter: Counter
            if let index = state.counters.index(forKey: key) {
                // A key seen before (the usual case): counted in place, one hash.
                if state.counters.values[index].window != window { state.counters.values[index] = Counter(window: window, hits: 0) }
                state.counters.values[index].hits += cost
                counter = state.counters.values[index]
            } else {
                counter = Counter(window: window, hits: cost)
                state.counters[key] = counter
                state.order.append(key)
                while state.counters.count > maxKeys, state.oldest < state.order.count {
                    state.counters.removeValue(forKey: state.order[state.oldest])
                    state.oldest += 1
                }
                if state.oldest > 4096, state.oldest * 2 > state.order.count {
                    state.order.removeFirst(state.oldest)
                    state.oldest = 0
                }
            }
            if counter.hits <= limit { return .allowed }
            let windowEnd = Double(window + 1) * Double(windowSeconds)
            return .limited(retryAfter: max(1, Int((windowEnd - seconds).rounded(.up))))
        }
        if case .limited(let retryAfter) = decision, let logger, logger.isEnabled(.debug) {
            logger.debug(
                "throttled",
                [
                    ("limiter", name), ("key", keyForLogs(key)), ("limit", "\(limit)/\(windowSeconds)s"),
                    ("retry_after", String(retryAfter)),
                ])
        }
        return decision
    }

    /// Counts `cost` hits (one by default) wherever the counts live: shared
    /// counters when set (failing open, with a warning, when they cannot be
    /// reached: storage that is down refuses the request's write anyway),
    /// else this process.
    public func check(_ key: String, cost: Int = 1) async -> Decision {
        guard limit > 0 else { return .allowed }
        guard let shared else { return hit(key, cost: cost) }
        let seconds = now()
        let window = Int64((seconds / Double(windowSeconds)).rounded(.down)) * Int64(windowSeconds)
        do {
            let hits = try await shared.increment(key: name + ":" + Self.boundedKey(key), windowStart: window, by: max(cost, 1))
            if hits <= limit { return .allowed }
            let retryAfter = max(1, Int((Double(window + Int64(windowSeconds)) - seconds).rounded(.up)))
            if let logger, logger.isEnabled(.debug) {
                logger.debug(
                    "throttled",
                    [
                        ("limiter", name), ("key", keyForLogs(key)), ("limit", "\(limit)/\(windowSeconds)s"),
                        ("retry_after", String(retryAfter)),
                    ])
            }
            return .limited(retryAfter: retryAfter)
        } catch {
            logger?.warning("shared throttle counters unavailable; allowing the request", [("limiter", name), ("error", "\(error)")])
            return .allowed
        }
    }

    /// The hits counted for `key` in the current window, without counting
    /// one (shared counters that cannot be reached read as 0: failing open,
    /// as `check` does).
    public func peek(_ rawKey: String) async -> Int {
        guard limit > 0 else { return 0 }
        let key = Self.boundedKey(rawKey)
        let seconds = now()
        let window = Int64((seconds / Double(windowSeconds)).rounded(.down))
        guard let shared else {
            return state.withLock { state in state.counters[key].map { $0.window == window ? $0.hits : 0 } ?? 0 }
        }
        return (try? await shared.count(key: name + ":" + key, windowStart: window * Int64(windowSeconds))) ?? 0
    }

    /// Whether `key` has used its whole budget this window (without counting).
    public func isExhausted(_ key: String) async -> Bool {
        guard limit > 0 else { return false }
        return await peek(key) >= limit
    }

    /// A precheck answering 429 with `Retry-After` once `key(request)` is
    /// over the limit, in the route's error shape (on the server's thread:
    /// a flood of refused requests costs no task). With shared counters it
    /// lets everything through to `middleware`, which asks them.
    func precheck(errorStyle: ErrorStyle, key: @escaping @Sendable (Request) -> String = { $0.clientKey }) -> Precheck {
        { request in
            guard self.shared == nil, case .limited(let retryAfter) = self.hit(key(request)) else { return nil }
            return Self.refusal(errorStyle, retryAfter: retryAfter)
        }
    }

    /// The shared-counter half of `precheck` (a no-op without shared counters).
    public func middleware(errorStyle: ErrorStyle, key: @escaping @Sendable (Request) -> String = { $0.clientKey }) -> Middleware {
        { request, next in
            guard self.shared != nil, case .limited(let retryAfter) = await self.check(key(request)) else { return await next(request) }
            return Self.refusal(errorStyle, retryAfter: retryAfter)
        }
    }

    static func refusal(_ errorStyle: ErrorStyle, retryAfter: Int) -> Response {
        errorStyle.response(status: 429, error: "Rate limit exceeded", messages: ["Too many requests; retry in \(retryAfter) seconds"])
            .adding(header: "Retry-After", String(retryAfter))
    }
}
