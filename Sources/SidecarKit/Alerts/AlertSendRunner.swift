import Core
import Push
import Synchronization

/// Runs alert sends in the server's background: those started through the
/// admin API, and any send whose runner died or stopped (claimed once its
/// lease lapses, by whichever running server looks first).
struct AlertSendRunner: Sendable {
    let store: AlertStore
    let transport: (any PushTransport)?
    let clock: any WallClock
    let logger: Logger
    let work: BackgroundWork
    var retry = SendRetryPolicy()
    /// How often lapsed sends are looked for (and once at start): half a
    /// lease, at most 15 s, so a dead runner's send resumes soon after its
    /// lease lapses.
    var resumeIntervalSeconds: Double { Self.resumeInterval(leaseSeconds: store.sends.sendLeaseSeconds) }

    static func resumeInterval(leaseSeconds: Int64) -> Double { min(15, max(1, Double(leaseSeconds) / 2)) }
    let running = RunningSends()

    /// Runs a send this process has claimed, unless it already runs it.
    func launch(_ send: AlertSend) {
        guard let transport, running.begin(send.id) else { return }
        let started = work.run { [self] in
            defer { running.end(send.id) }
            do {
                guard let alert = try await store.find(id: send.alertID) else { return }
                let translations = try await store.translations(alertID: alert.id)
                let pace = try await RegionSettingsStore(database: store.database).sendPace(for: alert)
                let sender = AlertSender(
                    store: store, transport: transport, clock: clock, logger: logger, retry: retry, stop: work.stop, pacePerMinute: pace)
                try await sender.run(send, alert: alert, translations: translations)
            } catch {
                logger.error("alert send stopped; it resumes once its lease lapses", [("send", String(send.id)), ("error", "\(error)")])
                try? await store.sends.releaseSend(id: send.id)
            }
        }
        if !started { running.end(send.id) }
    }

    /// Looks for lapsed sends now and then every interval.
    func run() async {
        guard transport != nil else { return }
        await clock.repeatEvery(seconds: resumeIntervalSeconds, stop: work.stop) { await resumeLapsed() }
    }

    /// Claims every running send whose lease lapsed and runs it here.
    func resumeLapsed() async {
        do {
            for send in try await store.sends.claimLapsedSends(now: clock.nowSeconds) {
                logger.info("resuming an alert send whose runner stopped", [("send", String(send.id)), ("alert", String(send.alertID))])
                launch(send)
            }
        } catch {
            logger.error("could not look for alert sends to resume", [("error", "\(error)")])
        }
    }
}

/// Send ids being run by this process.
final class RunningSends: Sendable {
    private let ids = Mutex<Set<Int64>>([])
    func begin(_ id: Int64) -> Bool { ids.withLock { $0.insert(id).inserted } }
    func end(_ id: Int64) { ids.withLock { _ = $0.remove(id) } }
    var isEmpty: Bool { ids.withLock { $0.isEmpty } }
}
