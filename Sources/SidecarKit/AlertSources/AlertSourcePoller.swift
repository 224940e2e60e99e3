import Core
import FoundationEssentials
import GTFSRealtime
import HTTPClient
import Synchronization

/// Polls alert sources: a conditional GET (kind to the upstream), the feed
/// mapped and decided alert by alert, the result stored in one transaction,
/// and the pushes it decided started through the alert send path. One
/// poller per source at a time across every instance and the CLI (a lease
/// in the database), so an alert is never decided twice.
struct AlertSourcePoller: Sendable {
    let sources: AlertSourceStore
    let alerts: AlertStore
    /// Starts sends, recorded as done by the source.
    let administration: AlertAdministration
    /// Runs a started send in this process (the server); nil in the CLI,
    /// whose sends a running server claims once their lease lapses.
    let launch: (@Sendable (AlertSend) -> Void)?
    let http: HTTPClient
    let coordination: CoordinationStore
    let clock: any WallClock
    let logger: Logger
    let metrics: SidecarMetrics?
    /// Where this server listens (host, bound port), so no source polls it.
    let listening: @Sendable () -> (host: String, port: Int?)
    /// Header secrets named `--header-env` come from here.
    let environment: [String: String]
    /// How mirrored translations' languages are read (the registrations' catalog).
    var catalog: LocaleCatalog = .standard
    /// `--source-proxy`: polls go through it (nil: no proxy at all).
    var proxy: String? = nil
    var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// Where polls run in the server (waited for at shutdown); nil: inline.
    var work: BackgroundWork?
    var stop: StopSignal?
    /// Sources this process is polling now.
    let inFlight = PollsInFlight()
    /// How often due sources are looked for.
    var tickSeconds = 2.0
    /// Sources polled at once.
    var concurrency = 4

    static let leaseSeconds: Int64 = 120

    /// What one poll did, line by line (`sidecar source poll` prints them).
    struct Report: Sendable, Equatable {
        var lines: [String] = []
        /// Why the poll failed, when it did.
        var failure: String?
    }

    private var now: EpochSeconds { clock.nowSeconds }
    static func leaseName(_ sourceID: Int64) -> String { "alert-source-\(sourceID)" }

    // MARK: The loop

    /// Polls every due source until the stop signal.
    func run() async {
        await clock.repeatEvery(seconds: tickSeconds, stop: stop) { await pollDue() }
    }

    /// Polls the sources whose time has come, at most `concurrency` at
    /// once, each as background work of its own: a source that hangs until
    /// its timeout holds up no other. A source another instance is polling
    /// is left to it.
    func pollDue() async {
        let due: [(AlertSource, AlertSourceStatus)]
        do { due = try await sources.due(now: now) } catch {
            logger.error("alert sources could not be read", [("error", "\(error)")])
            return
        }
        for (source, _) in due {
            if stop?.isStopping == true { return }
            guard inFlight.begin(source.id, limit: concurrency) else { continue }
            let started =
                work?.run {
                    await pollUnderLease(source.id)
                    inFlight.end(source.id)
                } ?? false
            if !started {
                await pollUnderLease(source.id)
                inFlight.end(source.id)
            }
        }
    }

    /// Polls a source if no one else is polling it and it is still due.
    func pollUnderLease(_ sourceID: Int64) async {
        let name = Self.leaseName(sourceID)
        guard (try? await coordination.acquire(name, ttlSeconds: Self.leaseSeconds, nowSeconds: now)) == true else { return }
        // Read again under the lease: another instance may have just polled it.
        if let (current, status) = try? await sources.source(id: sourceID), status.nextPollAt <= now,
            let failure = await poll(current, status).failure
        {
            logger.warning("alert source poll failed", [("source", String(sourceID)), ("error", failure)])
        }
        try? await coordination.release(name)
    }

    /// Polls one source now (`sidecar source poll`, the admin API), waiting
    /// up to `waitSeconds` for a poll another process is making to end.
    func pollNow(sourceID: Int64, waitSeconds: Double = 60) async throws -> Report {
        let name = Self.leaseName(sourceID)
        var waited = 0.0
        while !(try await coordination.acquire(name, ttlSeconds: Self.leaseSeconds, nowSeconds: now)) {
            guard waited < waitSeconds else {
                throw AdministrationError.invalid(["another process is polling source \(sourceID); try again shortly"])
            }
            try await Task.sleep(for: .milliseconds(250))
            waited += 0.25
        }
        do {
            guard let (source, status) = try await sources.source(id: sourceID) else { throw AdministrationError.notFound("No source \(sourceID)") }
            let report = await poll(source, status)
            try? await coordination.release(name)
            return report
        } catch {
            try? await coordination.release(name)
            throw error
        }
    }

    // MARK: One poll

    /// Fetches, decides, stores and pushes; the caller holds the lease.
    func poll(_ source: AlertSource, _ status: AlertSourceStatus) async -> Report {
        let started = now
        let settings = try? await RegionSettingsStore(database: alerts.database).all()[source.regionID]
        guard let agencyID = settings?.agencyID?.presence else {
            return await fail(
                source, status,
                "region \(source.regionID) has no agency id; set it with: sidecar region set --id \(source.regionID) --agency-id ID")
        }
        let response: HTTPClientResponse
        do { response = try await http.send(try await request(source, status)) } catch let error as AdministrationError {
            return await fail(source, status, error.messages.joined(separator: "; "))
        } catch let error as HTTPClientError {
            return await fail(source, status, Self.describe(error, source: source))
        } catch is CancellationError {
            // The server is stopping: the source is due again at once after a start.
            return Report(lines: [], failure: "cancelled: the server is stopping")
        } catch {
            return await fail(source, status, "the poll failed")
        }
        if response.status == 304 {
            metrics?.sourcePolls.increment("not_modified")
            try? await sources.recordNotModified(
                sourceID: source.id, now: started, nextPollAt: started.adding(seconds: Int64(source.intervalSeconds)))
            var report = Report(lines: ["not modified"])
            report.lines += await startDuePushes(source)
            return report
        }
        guard response.status == 200 else {
            return await fail(source, status, "the source answered HTTP \(response.status)")
        }
        // What the body was is not said: a service that is not a feed must
        // not have its banner shown to whoever can read the source.
        guard let decoded = try? FeedMessage.decodingEntities(response.body) else {
            return await fail(source, status, "the answer is not a GTFS-realtime feed")
        }
        let previous: [String: SourceAlertState]
        do { previous = try await sources.states(sourceID: source.id) } catch { return await fail(source, status, "storage: \(error)") }
        let firstSeen = previous.mapValues(\.firstSeenAt)
        let context = AlertSourceMapping.Context(agencyID: agencyID, catalog: catalog, firstSeen: { firstSeen[$0] ?? started })
        let (mapped, deleted, problems) = AlertSourceMapping.alerts(decoded.message, context: context, rejected: decoded.rejected)
        let unknown = mapped.reduce(0) { $0 + $1.unknownValues }
        if unknown > 0 { metrics?.sourceUnknownValues.increment(by: unknown) }
        let zone = settings?.timezone.flatMap { ZoneInfo.named($0) } ?? .utc
        let outcomes = mapped.map {
            AlertSourceRules.outcome($0, previous: previous[$0.entityID], source: source, baseline: !status.baselined, now: started, zone: zone)
        }
        let (flooded, floodHeld) = AlertSourceRules.holdingFlood(outcomes, threshold: source.floodThreshold)
        let pushed = (try? await sources.pushes(sourceID: source.id, regionID: source.regionID, since: started.adding(seconds: -3600))) ?? (0, 0)
        let (decided, capHeld) = AlertSourceRules.holdingOverCap(flooded, pushed: pushed, perSource: source.pushesPerHour)
        let held = [floodHeld, capHeld].compactMap { $0 }.joined(separator: "; ").presence
        let validators = (
            response.header("etag").flatMap { $0.count <= AlertSourceRules.maxValidatorLength ? $0 : nil },
            response.header("last-modified").flatMap { $0.count <= AlertSourceRules.maxValidatorLength ? $0 : nil }
        )
        do {
            try await sources.applyPoll(
                source, agencyID: agencyID, decided: zip(mapped, decided).map { AlertSourceStore.Decided(alert: $0, outcome: $1) },
                problems: problems, held: held, validators: validators, now: started,
                nextPollAt: started.adding(seconds: Int64(source.intervalSeconds)))
        } catch {
            return await fail(source, status, "storage: \(error)")
        }
        // This process's feed changes at once; other instances notice the version.
        administration.cache?.invalidate(regionID: source.regionID)
        metrics?.sourcePolls.increment("ok")
        metrics?.sourceAlerts.set(String(source.id), to: mapped.count)
        var report = Report(lines: Self.describe(mapped: mapped, outcomes: decided, previous: previous, deleted: Set(deleted), zone: zone))
        report.lines += problems.map { "problem: \($0)" }
        if let held { report.lines.append(held) }
        report.lines += await startDuePushes(source)
        report.lines.append(Self.summary(mapped: mapped, outcomes: decided, previous: previous))
        report.lines = Self.bounded(report.lines)
        return report
    }

    /// The most lines a poll's report keeps (what `source poll` prints and
    /// the admin API answers): a feed of 100,000 entities says it in a page.
    static let maxReportLines = 200

    static func bounded(_ lines: [String]) -> [String] {
        guard lines.count > maxReportLines else { return lines }
        // The summary, last, is always kept.
        return Array(lines.prefix(maxReportLines - 2)) + ["and \(lines.count - maxReportLines + 1) more lines", lines[lines.count - 1]]
    }

    /// The request: conditional on what the last answer said, with the
    /// source's secret headers, a size cap, no proxy but `--source-proxy`
    /// (the environment's is ignored, so it cannot carry a poll past the
    /// address check), and no connection to a refused address: checked on
    /// the socket itself, or, through a proxy, on every address the host
    /// resolves to before anything is sent.
    func request(_ source: AlertSource, _ status: AlertSourceStatus) async throws -> HTTPClientRequest {
        var headers: [(name: String, value: String)] = [("Accept", "application/x-protobuf, application/octet-stream;q=0.9, */*;q=0.1")]
        if let etag = status.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = status.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let allowance = AlertSourceAddresses.Allowance(linkLocal: source.allowLinkLocal, private: source.allowPrivate)
        let own = ownListener()
        guard let parts = AlertSourceAddresses.urlParts(source.url) else {
            throw AdministrationError.invalid(["the URL must be an http:// or https:// URL with a host"])
        }
        if let problem = AlertSourceAddresses.urlProblem(source.url, allowance: allowance, own: own) {
            throw AdministrationError.invalid(["refused: \(problem)"])
        }
        if proxy != nil {
            let addresses = await HostResolver.addresses(of: parts.host)
            guard !addresses.isEmpty else { throw AdministrationError.invalid(["could not resolve \(parts.host)"]) }
            for address in addresses {
                if let reason = AlertSourceAddresses.connectionRefusal(address: address, port: parts.port, allowance: allowance, own: own) {
                    throw AdministrationError.invalid(["refused: \(parts.host) resolves to \(address), \(reason)"])
                }
            }
        }
        // Secrets are read last: nothing is read for a request that is refused.
        for secret in source.headers {
            let value: String?
            switch secret.origin {
            case .file(let path):
                value = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                guard value != nil else { throw AdministrationError.invalid(["the header \(secret.name) could not be read from \(path)"]) }
            case .environment(let variable):
                value = environment[variable]
                guard value != nil else { throw AdministrationError.invalid(["the header \(secret.name) needs $\(variable), which is not set"]) }
            }
            guard let value, !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw AdministrationError.invalid(["the value of the header \(secret.name) is empty or has a line break"])
            }
            headers.append((secret.name, value))
        }
        let check: @Sendable (String, Int) -> Bool = { address, connectedPort in
            AlertSourceAddresses.connectionRefusal(address: address, port: connectedPort, allowance: allowance, own: own) != nil
        }
        // Through a proxy the socket reaches the proxy: the target's
        // addresses were checked above instead.
        let refuse = proxy != nil ? nil : check
        let proxyUse: HTTPClientRequest.ProxyUse = proxy.map { .through($0) } ?? .none
        return HTTPClientRequest(
            url: source.url, headers: headers, timeoutSeconds: AlertSourceRules.timeoutSeconds, upstream: "alert_source",
            maxBodyBytes: source.maxBytes, refuseAddress: refuse, proxy: proxyUse,
            // A graceful stop cancels background work: a slow feed must not
            // hold it up (the source is still due, and polled after a start).
            cancellable: true)
    }

    /// This server's listener as a source must not reach it.
    func ownListener() -> AlertSourceAddresses.OwnListener {
        let (host, port) = listening()
        return AlertSourceAddresses.OwnListener(host: host, port: port, localAddresses: Self.localAddresses)
    }

    /// Read once: interfaces do not change under a running server often
    /// enough to matter, and a poll must not walk them every time.
    static let localAddresses = IPAddress.localInterfaceAddresses()

    /// Records a failed poll (the source's alerts stay as they were) and
    /// schedules the next with backoff.
    func fail(_ source: AlertSource, _ status: AlertSourceStatus, _ reason: String) async -> Report {
        metrics?.sourcePolls.increment("failed")
        let started = now
        let delay = AlertSourceRules.nextDelay(intervalSeconds: source.intervalSeconds, failures: status.failures + 1, random: random())
        try? await sources.recordFailure(sourceID: source.id, error: reason, now: started, nextPollAt: started.adding(seconds: Int64(delay)))
        return Report(lines: [], failure: reason)
    }

    /// Starts the send of every due alert (decided now, approved, or out of
    /// quiet hours), marking each pushed so no poll, restart or other
    /// instance starts it again.
    func startDuePushes(_ source: AlertSource) async -> [String] {
        guard let due = try? await sources.duePushes(sourceID: source.id, now: now) else { return [] }
        var lines: [String] = []
        let acting = administration.acting(as: "source \(source.id)")
        for state in due {
            do {
                let (send, _) = try await acting.startSend(id: state.alertID, audience: source.audience)
                try await sources.markPushed(sourceID: source.id, entityID: state.entityID, sendID: send.id, now: now)
                metrics?.sourcePushes.increment()
                if let launch {
                    launch(send)
                    lines.append("push \(state.entityID): send \(send.id) to \(source.audience.rawValue)")
                } else {
                    // Decided outside the server (the CLI): the send is left
                    // unclaimed, so the running server's next look (every
                    // resume interval) takes it at once rather than after a lease.
                    try await alerts.sends.releaseSend(id: send.id)
                    lines.append(
                        "push \(state.entityID): send \(send.id) to \(source.audience.rawValue) is queued; the running server starts it "
                            + "within \(Int(AlertSendRunner.resumeInterval(leaseSeconds: alerts.sends.sendLeaseSeconds))) s "
                            + "(or push it from here: sidecar alert send \(state.alertID))")
                }
            } catch {
                let reason = (error as? AdministrationError)?.messages.joined(separator: "; ") ?? "\(error)"
                try? await sources.markNotPushed(sourceID: source.id, entityID: state.entityID, reason: "its send could not start: \(reason)")
                lines.append("not pushed \(state.entityID): \(reason)")
            }
        }
        return lines
    }

    // MARK: Wording

    /// What an operator needs of a failed request: timed out, refused, no
    /// such host, TLS; never what the other end said.
    static func describe(_ error: HTTPClientError, source: AlertSource) -> String {
        switch error {
        case .bodyTooLarge(let limit): return "the feed is larger than \(limit) bytes (the source's largest feed)"
        case .refusedAddress(let address):
            let allowance = AlertSourceAddresses.Allowance(linkLocal: source.allowLinkLocal, private: source.allowPrivate)
            let reason = AlertSourceAddresses.kind(ofAddress: address).flatMap { AlertSourceAddresses.refusal($0, allowance: allowance) }
            return "refused to connect to \(address): \(reason ?? "this server itself")"
        case .transport where error.isTimeout: return "timed out: no complete answer within \(AlertSourceRules.timeoutSeconds) s"
        case .transport(let code, _):
            switch code {
            case 6: return "the host name could not be resolved"
            case 7: return "the connection was refused or could not be made"
            case 35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91: return "the TLS connection failed (certificate or handshake)"
            case 52: return "the server closed the connection without answering"
            case 1, 8, 56: return "the answer was not HTTP the poller could read"
            default: return "the request failed (curl error \(code))"
            }
        case .invalidURL: return "the URL could not be used"
        case .shutDown: return "the server is stopping"
        }
    }

    /// One line per alert whose state changed in this poll.
    static func describe(
        mapped: [MirroredAlert], outcomes: [AlertSourceRules.Outcome], previous: [String: SourceAlertState], deleted: Set<String> = [],
        zone: ZoneInfo
    ) -> [String] {
        var lines: [String] = []
        for (alert, outcome) in zip(mapped, outcomes) {
            let before = previous[alert.entityID]
            switch outcome {
            case .baseline: lines.append("baseline \(alert.entityID)")
            default:
                if before == nil || before?.present == false {
                    lines.append("added \(alert.entityID)")
                } else if before?.contentHash != alert.contentHash {
                    lines.append("changed \(alert.entityID)")
                }
            }
            switch outcome {
            case .skip(let reason) where before?.materialHash != alert.materialHash: lines.append("skipped \(alert.entityID): \(reason)")
            case .review(let reason): lines.append("review \(alert.entityID): \(reason)")
            case .deferred(let until, let reason):
                lines.append("deferred \(alert.entityID) until \(RegionTime.iso8601(until, zone)) (\(reason))")
            default: break
            }
        }
        let present = Set(mapped.map(\.entityID))
        for state in previous.values.sorted(by: { $0.entityID < $1.entityID }) where state.present && !present.contains(state.entityID) {
            lines.append(deleted.contains(state.entityID) ? "removed \(state.entityID): the source marked it deleted" : "removed \(state.entityID)")
        }
        return lines
    }

    static func summary(mapped: [MirroredAlert], outcomes: [AlertSourceRules.Outcome], previous: [String: SourceAlertState]) -> String {
        let added = mapped.filter { previous[$0.entityID]?.present != true }.count
        let changed = mapped.filter { previous[$0.entityID]?.present == true && previous[$0.entityID]?.contentHash != $0.contentHash }.count
        let removed = previous.values.filter(\.present).count - (mapped.count - added)
        let reviews = outcomes.filter { if case .review = $0 { return true } else { return false } }.count
        return "\(mapped.count) alerts; \(added) added, \(changed) changed, \(removed) removed; \(reviews) waiting for review"
    }
}

/// The sources one process is polling, at most a limit at once.
final class PollsInFlight: Sendable {
    private let ids = Mutex<Set<Int64>>([])
    /// False when the source is already being polled here, or the limit is reached.
    func begin(_ id: Int64, limit: Int) -> Bool {
        ids.withLock { ids in
            guard !ids.contains(id), ids.count < limit else { return false }
            ids.insert(id)
            return true
        }
    }
    func end(_ id: Int64) { ids.withLock { _ = $0.remove(id) } }
}
