import Core
import Push
import Synchronization

/// How a send retries pushes that failed for a passing reason (a provider
/// or gateway answering 5xx or 429, a network error): exponential backoff
/// with jitter, `attempts` tries in all.
struct SendRetryPolicy: Sendable {
    /// Tries per message, the first included.
    var attempts = 6
    var firstDelaySeconds = 1.0
    var maxDelaySeconds = 30.0
    /// A number in 0..<1 for the jitter (injected so tests are exact).
    var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

    init() {}

    /// A policy that retries at once (tests that must not wait).
    static var immediate: SendRetryPolicy {
        var policy = SendRetryPolicy()
        policy.firstDelaySeconds = 0
        policy.maxDelaySeconds = 0
        return policy
    }

    /// Seconds to wait before try `attempt` (2, 3, ...): the first delay
    /// doubled per try, capped, then spread ±20% so many senders retrying
    /// at once do not arrive together.
    func delay(beforeAttempt attempt: Int) -> Double {
        let doubled = firstDelaySeconds * Double(1 << min(max(attempt - 2, 0), 20))
        return min(doubled, maxDelaySeconds) * (0.8 + 0.4 * random())
    }
}

/// Spec §4 "What gets pushed": fans an alert out to a region's
/// registrations, page by page in registration-id order. Each page is
/// grouped by (platform, locale, APNs environment) so every group gets its
/// language's copy, sent, and recorded with the cursor in one transaction,
/// so a send that is killed resumes after the last recorded page instead of
/// pushing the whole audience again.
///
/// Passing failures are retried with backoff (`SendRetryPolicy`). What still
/// fails is kept as the send's *pending* registrations: a page where nothing
/// got through means the provider is down, and the send stops there as
/// `failed`; otherwise the send goes on and retries the pending ones once
/// more at the end. A send that ends `failed` holds exactly what was not
/// delivered (its pending registrations and the audience after its
/// cursor), so starting it again pushes only those.
struct AlertSender: Sendable {
    let store: AlertStore
    let transport: any PushTransport
    let clock: any WallClock
    let logger: Logger
    var pageSize = 1000
    /// Messages handed to the transport at once within a page (gorush
    /// takes them as four batches of 100 in flight): at most this many are
    /// pushed again after a stop that could not wait for the transport.
    var chunkSize = 400
    var retry: SendRetryPolicy
    /// Stops between pages (graceful shutdown); the lease is released.
    var stop: StopSignal?
    /// Pushes a minute to the audience (`AlertSendPacing`; nil: as fast as
    /// the transport takes them).
    var pacePerMinute: Int?
    /// Seconds a page may wait on the transport (its retries included)
    /// before the send says it is stalled.
    static let stallSeconds: Double = 30

    init(
        store: AlertStore, transport: any PushTransport, clock: any WallClock, logger: Logger, pageSize: Int = 1000,
        retry: SendRetryPolicy = SendRetryPolicy(), stop: StopSignal? = nil, pacePerMinute: Int? = nil
    ) {
        self.store = store
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.pageSize = max(pageSize, 1)
        self.retry = retry
        self.stop = stop
        self.pacePerMinute = pacePerMinute
    }

    private var stopping: Bool { stop?.isStopping ?? false }
    private var nowSeconds: EpochSeconds { clock.nowSeconds }

    /// Runs a send: its pending registrations first, then the audience from
    /// its cursor, then one more round for what became pending meanwhile.
    /// - Parameters:
    ///   - progress: called after each recorded page.
    ///   - stopAfterPages: stop early (as a killed process would), for tests.
    @discardableResult
    func run(
        _ send: AlertSend, alert: ServiceAlert, translations: [AlertTranslation],
        progress: @Sendable (AlertSend) -> Void = { _ in }, stopAfterPages: Int? = nil
    ) async throws -> AlertSend {
        var current = send
        var pages = 0
        var copies: [AlertPushRules.Group: (title: String, body: String)] = [:]
        var audiencePagesLeftPending = false
        func messages(for page: [(id: Int64, registration: PushRegistration)]) -> [PushMessage] {
            let expiration = AlertPushRules.expiration(for: alert, now: nowSeconds)
            return page.map { entry -> PushMessage in
                let group = AlertPushRules.group(of: entry.registration)
                let copy = copies[group] ?? AlertPushRules.copy(for: alert, translations: translations, locale: group.locale, messages: send.messages)
                copies[group] = copy
                var message = PushMessage(
                    token: entry.registration.token, platform: group.platform, apnsSandbox: group.apnsSandbox,
                    title: copy.title, body: copy.body)
                message.expiration = expiration.value
                return message
            }
        }
        /// Sends one page and records it; returns false when the send must stop.
        /// The page goes to the transport a chunk at a time; a stop asked for
        /// between chunks records what was sent so far (the cursor at its
        /// last registration), so a restart pushes none of it again.
        func deliver(_ page: [(id: Int64, registration: PushRegistration)], fromPending: Bool, cursor: Int64, lastPage: Bool) async throws -> Bool {
            var outcomes: [PushOutcome] = []
            for chunk in page.pages(of: chunkSize) {
                outcomes += await sendWatchingForStalls(messages(for: Array(chunk)), sendID: send.id)
                if stopping { break }
            }
            let handled = page.prefix(outcomes.count)
            let cutShort = handled.count < page.count
            var record = AlertSendStore.PageRecord(
                sendID: send.id, cursor: cutShort && !fromPending ? handled.last?.id ?? current.cursor : cursor, now: nowSeconds)
            for (entry, outcome) in zip(handled, outcomes) {
                if !fromPending { record.targeted += 1 }
                switch outcome {
                case .delivered:
                    record.delivered += 1
                    if fromPending { record.resolved.append(entry.id) }
                case .terminal:
                    record.failed += 1
                    record.deadTokens.append((entry.registration.regionID, entry.registration.token))
                    if fromPending { record.resolved.append(entry.id) }
                case .rejected(let reason):
                    // Refused for good: counted, and said, so the send does not look clean.
                    record.failed += 1
                    record.lastError = reason
                    if fromPending { record.resolved.append(entry.id) }
                case .transient(let reason):
                    record.lastError = reason
                    if !fromPending { record.stillPending.append(entry.id) }
                }
            }
            let stillPending = fromPending ? handled.count - record.resolved.count : record.stillPending.count
            // A page of the audience where nothing got through and nothing
            // was settled: the provider is down, so the send stops here
            // rather than churn through every page. (A few stubborn pending
            // tokens retried alone say nothing about the provider.)
            let providerDown = !fromPending && stillPending == handled.count && !handled.isEmpty && !stopping
            if providerDown { record.status = "failed" } else if lastPage && !cutShort { record.status = "done" }
            if !fromPending && stillPending > 0 { audiencePagesLeftPending = true }
            current = try await store.sends.recordPage(record)
            pages += 1
            progress(current)
            return !providerDown
        }

        /// Pages through the send's pending registrations once.
        func retryPending() async throws {
            guard current.pending > 0 else { return }
            var after: Int64 = 0
            while !stopping && current.status != "cancelled" {
                let page = try await store.sends.pendingPage(sendID: current.id, after: after, limit: pageSize)
                guard let last = page.last else { break }
                _ = try await deliver(page, fromPending: true, cursor: current.cursor, lastPage: false)
                after = last.id
                if page.count < pageSize { break }
            }
            current = try await store.sends.send(id: current.id) ?? current
        }

        // 1. What an earlier run left pending.
        try await retryPending()
        // 2. The audience after the cursor, at the region's pace if it has one.
        let runStartedAt = clock.now().timeIntervalSince1970
        let targetedBefore = current.targeted
        let audiencePageSize = pacePerMinute.map { AlertSendPacing.pageSize(pace: $0, base: pageSize) } ?? pageSize
        while true {
            if let stopAfterPages, pages >= stopAfterPages {
                // Stopping early leaves the lease to lapse, as a killed process would.
                return current
            }
            if let pace = pacePerMinute {
                try await wait(
                    until: AlertSendPacing.due(sent: current.targeted - targetedBefore, pace: pace, runStartedAt: runStartedAt),
                    sendID: send.id)
            }
            if stopping { return try await pause(current) }
            let page = try await store.sends.audiencePage(
                regionID: alert.regionID, audience: send.audience, after: current.cursor, limit: audiencePageSize)
            guard let last = page.last else { break }
            guard try await deliver(page, fromPending: false, cursor: last.id, lastPage: false), current.status != "cancelled" else {
                return try await finish(current, alert: alert)
            }
            if page.count < audiencePageSize { break }
        }
        // 3. One more round for what became pending during this run.
        if audiencePagesLeftPending { try await retryPending() }
        if current.status == "cancelled" { return try await finish(current, alert: alert) }
        if stopping { return try await pause(current) }
        current = try await store.sends.recordPage(
            AlertSendStore.PageRecord(
                sendID: send.id, cursor: current.cursor, now: nowSeconds,
                status: current.pending > 0 ? "failed" : "done"))
        return try await finish(current, alert: alert)
    }

    /// Waits for a paced send's next page, keeping its lease; a stop ends
    /// the wait at once (the caller then pauses the send).
    private func wait(until due: Double, sendID: Int64) async throws {
        while !stopping {
            let left = due - clock.now().timeIntervalSince1970
            guard left > 0 else { return }
            try await store.sends.renewLease(sendID: sendID, now: nowSeconds)
            do { try await clock.sleep(seconds: min(left, 5)) } catch { return }
        }
    }

    /// Graceful stop between pages: give the lease back so any running
    /// server (this one after a restart, or another) resumes at once.
    private func pause(_ current: AlertSend) async throws -> AlertSend {
        try await store.sends.releaseSend(id: current.id)
        logger.info("alert send paused for shutdown; it resumes on the next start", [("send", String(current.id))])
        return current
    }

    private func finish(_ current: AlertSend, alert: ServiceAlert) async throws -> AlertSend {
        let fields = [
            ("alert", String(alert.id)), ("send", String(current.id)), ("audience", current.audience.rawValue),
            ("status", current.status), ("targeted", String(current.targeted)), ("delivered", String(current.delivered)),
            ("failed", String(current.failed)), ("pruned", String(current.pruned)), ("pending", String(current.pending)),
        ]
        if current.status == "cancelled" {
            logger.info("alert send cancelled", fields)
        } else if current.status == "failed" {
            logger.warning(
                "alert send stopped with pushes not delivered; start it again to retry them",
                fields + [("reason", current.lastError ?? "unknown")])
        } else {
            logger.info("alert send finished", fields)
        }
        return current
    }

    /// `sendWithRetries`, watched: while the page has not been answered
    /// for `stallSeconds`, the send is marked stalled with the transport's
    /// last answer (every 5 s, which keeps its lease), and logged once; the
    /// page's record clears it when the transport answers again.
    func sendWatchingForStalls(_ messages: [PushMessage], sendID: Int64) async -> [PushOutcome] {
        let lastAnswer = LastAnswer()
        return await withTaskGroup(of: [PushOutcome]?.self) { group in
            group.addTask { await sendWithRetries(messages, sendID: sendID, lastAnswer: lastAnswer) }
            group.addTask {
                let since = nowSeconds
                do { try await clock.sleep(seconds: Self.stallSeconds) } catch { return nil }
                var logged = false
                while !Task.isCancelled {
                    let reason =
                        "no progress for \(Int(Self.stallSeconds)) s; "
                        + (lastAnswer.value.map { "the transport's last answer: \($0)" } ?? "the push transport has not answered")
                    try? await store.sends.markStalled(sendID: sendID, since: since, reason: reason, now: nowSeconds)
                    if !logged {
                        logger.warning("alert send stalled: it goes on when the transport answers", [("send", String(sendID)), ("reason", reason)])
                        logged = true
                    }
                    do { try await clock.sleep(seconds: 5) } catch { return nil }
                }
                return nil
            }
            var outcomes: [PushOutcome] = []
            while let finished = await group.next() {
                guard let finished else { continue }
                outcomes = finished
                group.cancelAll()
            }
            return outcomes
        }
    }

    /// What the transport last said of a page still being retried.
    final class LastAnswer: Sendable {
        private let answer = Mutex<String?>(nil)
        var value: String? { answer.withLock { $0 } }
        func set(_ text: String) { answer.withLock { $0 = text } }
    }

    /// Sends a batch and retries its passing failures with backoff,
    /// renewing the lease while it waits. Returns one outcome per message.
    func sendWithRetries(_ messages: [PushMessage], sendID: Int64, lastAnswer: LastAnswer? = nil) async -> [PushOutcome] {
        var outcomes = await transport.send(messages)
        var attempt = 2
        while attempt <= retry.attempts && !stopping {
            let retrying = outcomes.indices.filter { if case .transient = outcomes[$0] { true } else { false } }
            guard !retrying.isEmpty else { break }
            if case .transient(let reason) = outcomes[retrying[0]] { lastAnswer?.set(reason) }
            try? await store.sends.renewLease(sendID: sendID, now: nowSeconds)
            let delay = retry.delay(beforeAttempt: attempt)
            if delay > 0 { try? await clock.sleep(seconds: delay) }
            if stopping { break }
            let again = await transport.send(retrying.map { messages[$0] })
            for (index, outcome) in zip(retrying, again) { outcomes[index] = outcome }
            attempt += 1
        }
        return outcomes
    }
}
