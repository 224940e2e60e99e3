import Core
import Push

/// Spec §4 "What gets pushed": fans an alert out to a region's
/// registrations, page by page in registration-id order. Each page is
/// grouped by (platform, locale, APNs environment) so every group gets its
/// language's copy, sent, and recorded with the cursor in one transaction,
/// so a send that is killed resumes after the last recorded page instead of
/// pushing the whole audience again.
public struct AlertSender: Sendable {
    let store: AlertStore
    let transport: any PushTransport
    let clock: any WallClock
    let logger: Logger
    var pageSize = 1000

    public init(store: AlertStore, transport: any PushTransport, clock: any WallClock, logger: Logger, pageSize: Int = 1000) {
        self.store = store
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.pageSize = max(pageSize, 1)
    }

    /// Runs a send from its cursor to the end of the audience.
    /// - Parameters:
    ///   - progress: called after each recorded page.
    ///   - stopAfterPages: stop early (as a killed process would), for tests.
    @discardableResult
    public func run(_ send: AlertSend, alert: ServiceAlert, translations: [AlertTranslation],
                    progress: @Sendable (AlertSend) -> Void = { _ in }, stopAfterPages: Int? = nil) async throws -> AlertSend {
        var current = send
        var pages = 0
        var copies: [AlertPushRules.Group: (title: String, body: String)] = [:]
        while current.status != "done" {
            if let stopAfterPages, pages >= stopAfterPages {
                // Stopping early leaves the lease to lapse, as a killed process would.
                return current
            }
            let page = try await store.audiencePage(regionID: alert.regionID, audience: send.audience, after: current.cursor, limit: pageSize)
            let now = clock.now().epochMillis / 1000
            guard let last = page.last else {
                current = try await store.recordPage(sendID: send.id, cursor: current.cursor, targeted: 0, delivered: 0, failed: 0,
                                                     deadTokens: [], finished: true, now: now)
                break
            }
            let messages = page.map { entry -> PushMessage in
                let group = AlertPushRules.group(of: entry.registration)
                let copy = copies[group] ?? AlertPushRules.copy(for: alert, translations: translations, locale: group.locale)
                copies[group] = copy
                return PushMessage(token: entry.registration.token, platform: group.platform, apnsSandbox: group.apnsSandbox,
                                   title: copy.title, body: copy.body)
            }
            let outcomes = await transport.send(messages)
            var delivered = 0
            var failed = 0
            var dead: [(regionID: Int, token: String)] = []
            for (entry, outcome) in zip(page, outcomes) {
                switch outcome {
                case .delivered: delivered += 1
                case .terminal:
                    failed += 1
                    dead.append((entry.registration.regionID, entry.registration.token))
                case .transient, .rejected: failed += 1
                }
            }
            current = try await store.recordPage(sendID: send.id, cursor: last.id, targeted: page.count, delivered: delivered, failed: failed,
                                                 deadTokens: dead, finished: page.count < pageSize, now: now)
            pages += 1
            progress(current)
        }
        logger.info("alert send finished", [("alert", String(alert.id)), ("audience", send.audience.rawValue),
                                            ("targeted", String(current.targeted)), ("delivered", String(current.delivered)),
                                            ("failed", String(current.failed)), ("pruned", String(current.pruned))])
        return current
    }
}
