import Core

/// The server's job that starts scheduled sends when they are due: each
/// is claimed by one server (several may run), checked against the alert
/// as it is now (`AlertScheduleRules.decide`), and started, held for an
/// editor or skipped, as its editor chose.
struct AlertScheduler: Feature {
    let administration: AlertAdministration
    let runner: AlertSendRunner
    let clock: any WallClock
    let logger: Logger
    let work: BackgroundWork
    /// Scheduled sends go from servers that run sends: with a push
    /// transport (and `runsSendResumer`, which only tests turn off).
    let startsSends: Bool
    /// How often due schedules are looked for: a send goes at most this
    /// long after its time.
    static let intervalSeconds: Double = 10

    var jobs: [BackgroundJob] { startsSends ? [BackgroundJob(name: "scheduled sends", run: run)] : [] }

    func run() async {
        await clock.repeatEvery(seconds: Self.intervalSeconds, stop: work.stop) { await startDue() }
    }

    /// Starts (or holds, or skips) every schedule due now.
    func startDue() async {
        let schedules = administration.schedules
        let now = clock.nowSeconds
        let due: [AlertSchedule]
        do { due = try await schedules.claimDue(now: now) } catch {
            logger.error("could not look for scheduled sends", [("error", "\(error)")])
            return
        }
        for schedule in due {
            let alert = try? await administration.store.find(id: schedule.alertID)
            let fields = [("schedule", String(schedule.id)), ("alert", String(schedule.alertID))]
            switch AlertScheduleRules.decide(schedule, alert: alert, now: now) {
            case .go:
                do {
                    let (send, _) = try await administration.acting(as: "schedule:\(schedule.id)").startSend(
                        id: schedule.alertID, audience: schedule.audience)
                    runner.launch(send)
                    try await schedules.settle(id: schedule.id, status: .started, sendID: send.id, reason: nil, now: now)
                    logger.info("scheduled send started", fields + [("send", String(send.id))])
                } catch {
                    let reason = (error as? AdministrationError)?.messages.joined(separator: " ") ?? "the send could not start: \(error)"
                    try? await schedules.settle(id: schedule.id, status: .held, sendID: nil, reason: reason, now: now)
                    logger.warning("scheduled send held", fields + [("reason", reason)])
                }
            case .hold(let reason):
                try? await schedules.settle(id: schedule.id, status: .held, sendID: nil, reason: reason, now: now)
                logger.info("scheduled send held for an editor", fields + [("reason", reason)])
            case .skip(let reason):
                try? await schedules.settle(id: schedule.id, status: .skipped, sendID: nil, reason: reason, now: now)
                logger.info("scheduled send skipped", fields + [("reason", reason)])
            }
        }
    }
}

extension AlertScheduler {
    init(_ context: FeatureContext) {
        self.init(
            administration: context.administration.acting(as: "schedule"), runner: context.alertSends, clock: context.clock, logger: context.logger,
            work: context.work, startsSends: context.configuration.runsSendResumer && context.alertSends.transport != nil)
    }
}
