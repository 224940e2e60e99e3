import HTTPServer
import Testing

@testable import SidecarKit

/// Throttle counters kept in the database (instances sharing PostgreSQL):
/// a request that weighs several hits counts them all, in one upsert.
@Suite("App: throttle counters in the database")
struct SharedWindowCounterTests {
    @Test func aWeightedHitCountsItsWholeCost() async throws {
        try await TestSidecar.run({ _ in }) { sidecar in
            // Windows at the sidecar's own time: the daily prune (which runs
            // at start) forgets windows two days older than that clock.
            let now = sidecar.clock.now().timeIntervalSince1970
            let window = Int64(now / 60) * 60
            let counter = DatabaseWindowCounter(database: sidecar.sidecar.database)
            let first = try await counter.increment(key: "relay_server:a", windowStart: window, by: 3)
            let second = try await counter.increment(key: "relay_server:a", windowStart: window, by: 1)
            let counted = try await counter.count(key: "relay_server:a", windowStart: window)
            let nextWindow = try await counter.count(key: "relay_server:a", windowStart: window + 60)
            #expect([first, second, counted, nextWindow] == [3, 4, 4, 0])

            let limiter = FixedWindowRateLimiter(limit: 5, windowSeconds: 60, name: "weighted", shared: counter) { now }
            #expect(await limiter.check("b", cost: 3) == .allowed)
            #expect(await limiter.check("b", cost: 2) == .allowed)
            let retryAfter = Int((Double(window + 60) - now).rounded(.up))
            #expect(await limiter.check("b") == .limited(retryAfter: retryAfter))
            #expect(await limiter.check("c", cost: 6) == .limited(retryAfter: retryAfter))
        }
    }
}
