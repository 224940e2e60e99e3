import HTTPServer

/// Spec §4 Retention and §12: once a day, delete registrations not seen for
/// 180 days (a silent row is a dead device; the apps refresh on launch).
struct PushRegistrationPruner: Sendable {
    let store: PushRegistrationStore
    let clock: any WallClock
    let logger: Logger
    var intervalSeconds: Double = 24 * 60 * 60

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

    /// Prunes at start and then every interval until stopped.
    func run(stop: StopSignal? = nil) async {
        await clock.repeatEvery(seconds: intervalSeconds, stop: stop) { _ = await pruneOnce() }
    }
}
