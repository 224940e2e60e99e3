import CMicroHTTPD
import PlatformThreads
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps one client, or a slow one, from holding the server:
/// - at most `perClientLimit` open connections per client (IPv4 address or
///   IPv6 /64), unless the address is exempt (a trusted proxy);
/// - a request head must be complete `headerTimeout` after its first byte
///   arrived (slowloris);
/// - a body must keep an average of `minimumBodyRate` bytes per second after
///   a grace of `headerTimeout` (slow POST);
/// - connections still sending a request (its head or body) share a budget
///   of half the connection limit: past it, the one that has been sending
///   longest is cut, so slow clients from many addresses cannot fill the
///   server;
/// - when the server nears its connection limit, the connections that have
///   held their slot longest without finishing a request are closed first (a
///   request head arriving since long ago, or a keep-alive connection idle
///   since its last answer, whichever began earlier), and never the
///   connection that just arrived, so neither slow heads nor idle sockets can
///   lock others out, and a request that has just begun is not cut for them.
///
/// libmicrohttpd only knows an idle timeout, which a client trickling one
/// byte at a time never reaches. A reaper thread therefore checks every
/// connection four times a second and closes offenders with `shutdown(2)`;
/// libmicrohttpd then sees the end of the stream and frees the connection.
/// The reaper holds the registry lock while it calls `shutdown`, and a
/// connection leaves the registry (in the close notification, under the same
/// lock) before libmicrohttpd closes its socket, so a descriptor is never
/// shut down after being reused by a new connection.
final class ConnectionGuard: Sendable {
    struct Settings: Sendable {
        var perClientLimit: Int
        var headerTimeoutSeconds: Int
        var minimumBodyBytesPerSecond: Int
        var connectionLimit: Int
        var isExempt: @Sendable (String) -> Bool
    }

    /// One open connection.
    final class Tracked: Sendable {
        enum Phase: UInt8 {
            /// Waiting for a request (new, or kept alive after a response).
            case idle = 0
            /// Receiving a body.
            case body = 1
            /// A handler or a response owns it.
            case busy = 2
        }
        let fd: Int32
        let clientKey: String
        let address: String
        let exempt: Bool
        let phase = Atomic<UInt8>(Phase.idle.rawValue)
        let phaseSince: Atomic<UInt64>
        /// When the current request's first byte was seen (0: not yet).
        let headStarted = Atomic<UInt64>(0)
        /// Bytes received on the socket when it last became idle.
        let baseline = Atomic<UInt64>(0)
        let bodyBytes = Atomic<Int>(0)
        let closing = Atomic<Bool>(false)
        /// Body bytes + 1 when a sweep last found the peer gone mid-request
        /// (0: not seen); a second sweep with no progress closes it.
        let peerGoneAt = Atomic<Int>(0)

        init(fd: Int32, clientKey: String, address: String, exempt: Bool, now: UInt64) {
            self.fd = fd
            self.clientKey = clientKey
            self.address = address
            self.exempt = exempt
            phaseSince = Atomic(now)
        }
    }

    let settings: Settings
    let logger: Logger
    private struct Registry {
        var connections: [ObjectIdentifier: Tracked] = [:]
        var perClient: [String: Int] = [:]
    }
    private let registry = Mutex(Registry())
    private let running = Atomic<Bool>(false)
    /// Connections closed by the guard since the last log line, by reason.
    private let closedCounts = Mutex<[String: Int]>([:])
    /// Connections the guard has closed, for tests and logs.
    let closedTotal = Atomic<Int>(0)

    init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    var openConnections: Int { registry.withLock { $0.connections.count } }
    /// Open connections not being closed: what the limit counts.
    var liveConnections: Int { registry.withLock { $0.connections.values.lazy.filter { !$0.closing.load(ordering: .relaxed) }.count } }

    /// Connections sending a request (head begun or body under way), as the
    /// budget and the eviction order see them.
    var requestsUnderWay: Int { registry.withLock { Self.receiving($0, sparing: nil).count } }

    func start() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        PlatformThread.detach(name: "connection-guard") { [self] in reapLoop() }
    }

    func stop() { running.store(false, ordering: .releasing) }

    // MARK: Events from libmicrohttpd's threads

    /// Whether a new connection from this address may be accepted (the
    /// exact check happens in `opened`, which can see the connection).
    func admits(clientKey: String, address: String) -> Bool {
        guard settings.perClientLimit > 0, !settings.isExempt(address) else { return true }
        return registry.withLock { ($0.perClient[clientKey] ?? 0) < settings.perClientLimit }
    }

    func opened(fd: Int32, clientKey: String, address: String) -> Tracked {
        let now = monotonicNanoseconds()
        let tracked = Tracked(fd: fd, clientKey: clientKey, address: address, exempt: settings.isExempt(address), now: now)
        registry.withLock { registry in
            registry.connections[ObjectIdentifier(tracked)] = tracked
            let count = (registry.perClient[clientKey] ?? 0) + 1
            registry.perClient[clientKey] = count
            if settings.perClientLimit > 0, !tracked.exempt, count > settings.perClientLimit {
                // Several accepts raced past `admits`: close the newest.
                terminate(tracked, reason: "per-client connection limit")
            }
            // Connections already being closed no longer hold a slot: only
            // live ones count, or evictions would outrun the need and reach
            // connections that just arrived.
            let headroom = max(settings.connectionLimit / 10, 4)
            let live = registry.connections.values.lazy.filter { !$0.closing.load(ordering: .relaxed) }.count
            if live > settings.connectionLimit - headroom {
                evict(&registry, count: live - (settings.connectionLimit - headroom), sparing: tracked)
            }
            // Still over the limit (every other connection is being served):
            // the newcomer is the one turned away.
            if registry.connections.values.lazy.filter({ !$0.closing.load(ordering: .relaxed) }).count > settings.connectionLimit {
                terminate(tracked, reason: "connection limit")
            }
        }
        return tracked
    }

    func closed(_ tracked: Tracked) {
        registry.withLock { registry in
            guard registry.connections.removeValue(forKey: ObjectIdentifier(tracked)) != nil else { return }
            let remaining = (registry.perClient[tracked.clientKey] ?? 1) - 1
            if remaining <= 0 { registry.perClient.removeValue(forKey: tracked.clientKey) } else { registry.perClient[tracked.clientKey] = remaining }
        }
    }

    /// The request line arrived: the head has begun at the latest now.
    func requestLineSeen(_ tracked: Tracked) {
        _ = tracked.headStarted.compareExchange(expected: 0, desired: monotonicNanoseconds(), ordering: .relaxed)
    }

    func headersComplete(_ tracked: Tracked) {
        tracked.bodyBytes.store(0, ordering: .relaxed)
        tracked.phaseSince.store(monotonicNanoseconds(), ordering: .relaxed)
        tracked.phase.store(Tracked.Phase.body.rawValue, ordering: .releasing)
    }

    func bodyReceived(_ tracked: Tracked, bytes: Int) {
        tracked.bodyBytes.add(bytes, ordering: .relaxed)
    }

    func busy(_ tracked: Tracked) {
        tracked.phase.store(Tracked.Phase.busy.rawValue, ordering: .releasing)
    }

    /// The request ended; the connection waits for the next one.
    func requestFinished(_ tracked: Tracked) {
        let received = sidecar_tcp_bytes_received(tracked.fd)
        tracked.baseline.store(received == UInt64.max ? 0 : received, ordering: .relaxed)
        tracked.headStarted.store(0, ordering: .relaxed)
        tracked.phaseSince.store(monotonicNanoseconds(), ordering: .relaxed)
        tracked.phase.store(Tracked.Phase.idle.rawValue, ordering: .releasing)
    }

    // MARK: The reaper

    private func reapLoop() {
        var lastReport = monotonicNanoseconds()
        while running.load(ordering: .acquiring) {
            usleep(250_000)
            sweep(now: monotonicNanoseconds())
            let now = monotonicNanoseconds()
            if now - lastReport >= 60_000_000_000 {
                lastReport = now
                let counts = closedCounts.withLock { counts in
                    defer { counts = [:] }
                    return counts
                }
                for (reason, count) in counts.sorted(by: { $0.key < $1.key }) {
                    logger.warning("closed connections", [("reason", reason), ("count", String(count))])
                }
            }
        }
    }

    /// One pass over every connection (exposed for tests).
    func sweep(now: UInt64) {
        let headerTimeout = UInt64(max(settings.headerTimeoutSeconds, 1)) * 1_000_000_000
        let rate = UInt64(max(settings.minimumBodyBytesPerSecond, 1))
        registry.withLock { registry in
            for tracked in registry.connections.values where !tracked.closing.load(ordering: .relaxed) {
                switch Tracked.Phase(rawValue: tracked.phase.load(ordering: .acquiring)) ?? .busy {
                case .idle:
                    var started = tracked.headStarted.load(ordering: .relaxed)
                    if started == 0 {
                        let received = sidecar_tcp_bytes_received(tracked.fd)
                        if received != UInt64.max, received > tracked.baseline.load(ordering: .relaxed) {
                            started = now
                            _ = tracked.headStarted.compareExchange(expected: 0, desired: now, ordering: .relaxed)
                        }
                    }
                    if started != 0, now > started, now - started > headerTimeout {
                        terminate(tracked, reason: "request head too slow")
                    }
                case .body:
                    let since = tracked.phaseSince.load(ordering: .relaxed)
                    let bodyBytes = tracked.bodyBytes.load(ordering: .relaxed)
                    let received = UInt64(max(bodyBytes, 0))
                    let allowed = since + headerTimeout + received / rate * 1_000_000_000
                    if now > allowed {
                        terminate(tracked, reason: "request body too slow")
                    } else if sidecar_tcp_peer_gone(tracked.fd) != 0 {
                        // The client hung up mid-body; libmicrohttpd may not
                        // notice before its idle timeout. Two sweeps without
                        // progress rule out bytes it has read but not yet handed on.
                        if tracked.peerGoneAt.load(ordering: .relaxed) == bodyBytes + 1 {
                            terminate(tracked, reason: "client hung up mid-request")
                        } else {
                            tracked.peerGoneAt.store(bodyBytes + 1, ordering: .relaxed)
                        }
                    }
                case .busy:
                    continue
                }
            }
            // The global budget of requests under way: the slowest go first.
            let receiving = Self.receiving(registry, sparing: nil)
            if receiving.count > receivingBudget {
                for tracked in receiving.prefix(receiving.count - receivingBudget) {
                    terminate(tracked, reason: "slowest request cut at the budget for requests under way")
                }
            }
        }
    }

    /// Connections still sending a request may hold at most this many slots.
    var receivingBudget: Int { max(settings.connectionLimit / 2, 1) }

    /// Connections sending a request (head begun, or body under way), the
    /// one that began longest ago first.
    private static func receiving(_ registry: Registry, sparing: Tracked?) -> [Tracked] {
        registry.connections.values.filter { tracked in
            guard tracked !== sparing, !tracked.closing.load(ordering: .relaxed) else { return false }
            let phase = tracked.phase.load(ordering: .relaxed)
            return phase == Tracked.Phase.body.rawValue
                || (phase == Tracked.Phase.idle.rawValue && tracked.headStarted.load(ordering: .relaxed) != 0)
        }.sorted { $0.headStarted.load(ordering: .relaxed) < $1.headStarted.load(ordering: .relaxed) }
    }

    /// Frees `count` slots near the connection limit: the connections that
    /// have held their slot longest without finishing a request go first,
    /// whether still sending one (since its head began) or idle between
    /// requests (since the last answer); never `sparing` (the connection that
    /// just arrived) nor one a handler owns. A request whose head began a
    /// moment ago outlives a keep-alive connection idle for a minute: in a
    /// large region the idle connections of riders' phones are what fills
    /// the server, and closing a request under way fails a rider, while an
    /// idle connection's client simply opens another (bench/day.sh at
    /// 300,000 devices lost a request when requests went first). A slowloris
    /// still goes: its head has been under way longer than anything idles.
    private func evict(_ registry: inout Registry, count: Int, sparing: Tracked) {
        guard count > 0 else { return }
        var candidates: [(since: UInt64, tracked: Tracked, reason: String)] = []
        for tracked in registry.connections.values where tracked !== sparing && !tracked.closing.load(ordering: .relaxed) {
            let phase = tracked.phase.load(ordering: .relaxed)
            let headStarted = tracked.headStarted.load(ordering: .relaxed)
            if phase == Tracked.Phase.body.rawValue || (phase == Tracked.Phase.idle.rawValue && headStarted != 0) {
                candidates.append((headStarted, tracked, "slowest request closed near the connection limit"))
            } else if phase == Tracked.Phase.idle.rawValue {
                candidates.append((tracked.phaseSince.load(ordering: .relaxed), tracked, "idle connection closed near the connection limit"))
            }
        }
        candidates.sort { $0.since < $1.since }
        for candidate in candidates.prefix(count) { terminate(candidate.tracked, reason: candidate.reason) }
    }

    /// Must be called with the registry locked (see the type's comment).
    private func terminate(_ tracked: Tracked, reason: String) {
        guard tracked.closing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        _ = shutdown(tracked.fd, Int32(SHUT_RDWR))
        closedTotal.add(1, ordering: .relaxed)
        closedCounts.withLock { $0[reason, default: 0] += 1 }
    }
}

/// Nanoseconds of the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
