import HTTPServer
import Testing

@testable import SidecarKit

/// Throttle counters kept in the database (instances sharing PostgreSQL):
/// a request that weighs several hits counts them all, in one upsert.
@Suite("App: throttle counters in the database")
struct SharedWindowCounterTests {
    @Test func aWeightedHitCountsItsWholeCost() async throws {
        try await TestSidecar.run({ _ in }) { sidecar in
            let counter = DatabaseWindowCounter(database: sidecar.sidecar.database)
            let first = try await counter.increment(key: "relay_server:a", windowStart: 600, by: 3)
            let second = try await counter.increment(key: "relay_server:a", windowStart: 600, by: 1)
            let counted = try await counter.count(key: "relay_server:a", windowStart: 600)
            let nextWindow = try await counter.count(key: "relay_server:a", windowStart: 660)
            #expect([first, second, counted, nextWindow] == [3, 4, 4, 0])

            let limiter = FixedWindowRateLimiter(limit: 5, windowSeconds: 60, name: "weighted", shared: counter) { 1_000_020 }
            #expect(await limiter.check("b", cost: 3) == .allowed)
            #expect(await limiter.check("b", cost: 2) == .allowed)
            #expect(await limiter.check("b") == .limited(retryAfter: 60))
            #expect(await limiter.check("c", cost: 6) == .limited(retryAfter: 60))
        }
    }
}
