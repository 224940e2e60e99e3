import Core
import Database
import HTTPClient
import HTTPServer

/// What every feature is built from, each made once. The kernel's part is
/// here: storage, the clock, the log, the outbound client, the background
/// work and its stop signal, the addresses the server answers on, and the
/// limiters and leases that hold across instances. The composition root's
/// part (`Shared`: the configuration, the stores, the regions, the push
/// transport, ...) names features, so it is declared in `App/` and read
/// through this context as if it were the context's own member
/// (`context.stores`), which keeps the kernel free of any feature.
@dynamicMemberLookup
struct KernelContext<Shared: Sendable>: Sendable {
    let database: any Database
    let clock: any WallClock
    let logger: Logger
    /// The outbound client for OneBusAway servers, gorush, weather and Stripe.
    let upstream: HTTPClient
    /// On PostgreSQL, where several instances may share the database:
    /// singleton jobs take a lease there, and one instance fetches for all.
    let coordination: CoordinationStore?
    /// Throttle counts kept in the database (PostgreSQL), so a limit holds
    /// across every instance.
    let sharedCounts: SharedWindowCounter?
    /// The background work, and the stop signal every job is built with.
    let work: BackgroundWork
    /// The port the server listens on, once it does.
    let boundPort: BoundPort
    let publicURL: PublicBaseURL
    /// What the composition root shares with every feature.
    let shared: Shared

    var stop: StopSignal { work.stop }

    subscript<Member>(dynamicMember member: KeyPath<Shared, Member>) -> Member { shared[keyPath: member] }

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
}
