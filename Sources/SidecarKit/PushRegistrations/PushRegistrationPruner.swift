import HTTPServer

/// Spec §4 Retention and §12: once a day, delete registrations not seen for
/// 180 days (a silent row is a dead device; the apps refresh on launch).
struct PushRegistrationPruner: Sendable {
    let store: PushRegistrationStore
    let clock: any WallClock
    let logger: Logger
    var intervalSeconds: Double = 24 * 60 * 60
    /// With several instances on one database: only the holder of the
    /// daily lease prunes (the others try every hour).
    var coordination: CoordinationStore? = nil
    /// Throttle counters kept in the database: old windows are dropped too.
    var sharedCounters: DatabaseWindowCounter? = nil
    /// The server's stop signal: the loop ends once it is raised.
    var stop: StopSignal? = nil

    /// Prunes now; returns how many registrations were removed.
    @discardableResult
    func pruneOnce() async -> Int {
        let cutoff = PushRegistrationRules.pruneCutoff(now: clock.now())
        do {
            let removed = try await store.prune(seenAtOrBefore: cutoff)
            logger.info("pruned stale push registrations", [("removed", String(removed))])
            return removed
        } catch {
            logger.error("push registration prune failed; will retry next cycle", [("error", "\(error)")])
            return 0
        }
    }

    /// How long the loop sleeps between two cycles: the interval alone, or
    /// an hour when instances share the database and take turns by lease.
    var cycleSeconds: Double { coordination == nil ? intervalSeconds : min(intervalSeconds, 3600) }

    /// Prunes at start and then every interval until stopped.
    func run() async {
        guard let coordination else {
            await clock.repeatEvery(seconds: cycleSeconds, stop: stop) { _ = await pruneOnce() }
            return
        }
        await clock.repeatEvery(seconds: cycleSeconds, stop: stop) {
            let now = clock.nowSeconds
            guard (try? await coordination.acquire("daily-prune", ttlSeconds: Int64(intervalSeconds) - 60, nowSeconds: now)) == true else { return }
            _ = await pruneOnce()
            try? await sharedCounters?.prune(endedBefore: now.adding(seconds: -2 * 86_400))
        }
    }
}
