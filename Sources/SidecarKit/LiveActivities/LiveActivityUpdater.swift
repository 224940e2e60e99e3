import Core
import FoundationEssentials
import OBA
import Push

/// Spec §6.3 and §6.4: every interval, for each subscription: end it when
/// expired; build its content state from its stop's arrivals (one request
/// per stop, through a cache of about 55 s shared by every subscription on
/// the stop); count a failure on an error or an empty state (three in a row
/// end it); push an update when the state changed or 55 s passed since the
/// last push.
struct LiveActivityUpdater: Sendable {
    let store: LiveActivityStore
    let regions: RegionDirectory
    let oba: OBAGateway
    let transport: (any PushTransport)?
    let clock: any WallClock
    let logger: Logger
    let intervalSeconds: Int
    /// Per (region, stop): the last arrivals response, for ~55 s.
    let stopCache: TimedCache<String, OBAResponse<StopArrivals>>
    var maxConcurrentStops = 32
    /// Subscriptions claimed per page.
    var activitiesPerPage = 2000
    /// Graceful stop: the page under way finishes, then the cycle ends.
    var stop: StopSignal? = nil
    /// Told of every cycle's report and its seconds (metrics).
    var onCycle: (@Sendable (CycleReport, Double) -> Void)? = nil

    static let keepaliveSeconds: Int64 = 55
    static let failuresBeforeEnd = 3
    static let staleAfterSeconds: Int64 = 600
    static let dismissAfterSeconds: Int64 = 900

    struct CycleReport: Sendable, Equatable {
        var subscriptions = 0
        var stopRequests = 0
        var updates = 0
        var ended = 0
        var failures = 0
        var pushFailures = 0
        /// The cycle took longer than its interval. The next never starts
        /// on top of it (`repeatEvery` waits for each cycle to end); the
        /// metrics and the log say it was late.
        var overran = false
    }

    func run() async {
        await clock.repeatEvery(seconds: Double(intervalSeconds), stop: stop) { _ = await runCycle() }
    }

    @discardableResult
    func runCycle() async -> CycleReport {
        var report = CycleReport()
        let started = ContinuousClock.now
        let cycleStart = clock.nowMillis
        // A subscription is updated once per interval, in a page claimed
        // for this instance: instances sharing a database split the cycle.
        let cutoff = cycleStart.adding(millis: Int64(intervalSeconds) * 500)
        do {
            var position: LiveActivityStore.Position?
            while stop?.isStopping != true {
                let page = try await store.claimDue(
                    atOrBefore: cutoff, nowMillis: clock.nowMillis, limit: activitiesPerPage, after: position)
                if page.isEmpty { break }
                position = LiveActivityStore.Position.last(of: page)
                for (regionID, activities) in Dictionary(grouping: page, by: \.regionID) {
                    await process(activities, regionID: regionID, report: &report)
                }
                try await store.release(page.map(\.id), nextUpdateAt: cycleStart.adding(seconds: Int64(intervalSeconds)))
            }
        } catch {
            logger.error("live activity cycle could not read subscriptions", [("error", "\(error)")])
        }
        let elapsed = ContinuousClock.now - started
        // On the injected clock, so a test can make a cycle late.
        report.overran = clock.nowMillis > cycleStart.adding(seconds: Int64(intervalSeconds))
        if report.overran {
            logger.warning(
                "live activity cycle overran its interval; the next starts when this one ended",
                [
                    ("subscriptions", String(report.subscriptions)), ("duration_ms", String(elapsed.wholeMilliseconds)),
                    ("interval_s", String(intervalSeconds)),
                ])
        }
        onCycle?(report, elapsed.seconds)
        if report.subscriptions > 0 {
            logger.info(
                "live activity cycle",
                [
                    ("subscriptions", String(report.subscriptions)), ("stop_requests", String(report.stopRequests)),
                    ("updates", String(report.updates)), ("ended", String(report.ended)), ("failures", String(report.failures)),
                    ("push_failures", String(report.pushFailures)),
                    ("duration_ms", String(elapsed.wholeMilliseconds)),
                ])
        }
        return report
    }

    /// What a push will do for one subscription.
    enum Plan { case update(LiveActivity, ContentState), end(LiveActivity, ContentState) }

    private func process(_ activities: [LiveActivity], regionID: Int, report: inout CycleReport) async {
        report.subscriptions += activities.count
        let nowMillis = clock.nowMillis
        let nowSeconds = nowMillis.seconds
        var updates: [LiveActivityStore.Update] = []
        var plans: [Plan] = []
        let byStop = Dictionary(grouping: activities, by: \.stopID)
        let region = regions.region(id: regionID)
        let fetched = await boundedMap(Array(byStop), limit: maxConcurrentStops) { stop, subscriptions in
            // Stopping: a stop not yet asked about is not asked; its
            // subscriptions wait for the next cycle, with no failure counted.
            if self.stop?.isStopping == true { return (stop, nil as OBAResponse<StopArrivals>?, false, true) }
            let (stopID, response, requested) =
                subscriptions.contains { $0.expiresAt >= nowSeconds } ? await self.arrivals(region: region, stopID: stop) : (stop, nil, false)
            return (stopID, response, requested, false)
        }
        var responses: [String: OBAResponse<StopArrivals>?] = [:]
        let skipped = Set(fetched.filter(\.3).map(\.0))
        for (stop, response, requested, wasSkipped) in fetched where !wasSkipped {
            responses[stop] = response
            if requested { report.stopRequests += 1 }
            if logger.isEnabled(.debug) {
                logger.debug(
                    "live activity stop",
                    [
                        ("region", String(regionID)), ("stop", stop), ("subscriptions", String(byStop[stop]?.count ?? 0)),
                        ("arrivals", response == nil ? "unavailable" : requested ? "fetched" : "cached"),
                    ])
            }
        }
        for activity in activities where !skipped.contains(activity.stopID) {
            let last = activity.lastState.flatMap { try? JSONValue(parsing: $0.utf8) }.flatMap(ContentState.init(json:))
            if activity.expiresAt < nowSeconds {
                plans.append(.end(activity, last ?? ContentState(arrivals: [])))
                continue
            }
            guard let response = responses[activity.stopID] ?? nil else {
                report.failures += 1
                failure(activity, last: last, updates: &updates, plans: &plans)
                continue
            }
            let entries = response.entry.arrivalsAndDepartures
            var state = ContentStateBuilder.build(
                entries, routeShortName: activity.routeShortName, tripHeadsign: activity.tripHeadsign, currentTime: response.currentTime)
            if let visit = activity.tracked {
                switch ContentStateBuilder.tracked(
                    entries, visit: visit, routeShortName: activity.routeShortName, tripHeadsign: activity.tripHeadsign,
                    currentTime: response.currentTime)
                {
                case .pinned(let pinned), .cancelled(let pinned): state = pinned
                case .gone:
                    // The tracked bus has left or is no longer listed: never
                    // another vehicle. The card keeps its last state, and
                    // after three such cycles the activity ends on it.
                    state = ContentState(arrivals: [])
                }
            }
            guard !state.arrivals.isEmpty else {
                // Night headways and feed gaps: one empty cycle is not an end.
                report.failures += 1
                failure(activity, last: last, updates: &updates, plans: &plans)
                continue
            }
            let keepaliveDue = nowMillis >= (activity.lastPushedAt ?? 0).adding(seconds: Self.keepaliveSeconds)
            if state != last || keepaliveDue {
                plans.append(.update(activity, state))
            } else if activity.failureCount > 0 {
                updates.append(.succeeded(id: activity.id))
            }
        }
        guard !plans.isEmpty else {
            try? await store.apply(updates)
            return
        }
        let messages = plans.map { plan -> PushMessage in
            switch plan {
            case .update(let activity, let state): return message(activity, state: state, event: "update", nowSeconds: nowSeconds)
            case .end(let activity, let state): return message(activity, state: state, event: "end", nowSeconds: nowSeconds)
            }
        }
        let outcomes = await transport?.send(messages) ?? messages.map { _ in .rejected(reason: "no push transport") }
        for (plan, outcome) in zip(plans, outcomes) {
            switch (plan, outcome) {
            case (.update(let activity, let state), .delivered):
                report.updates += 1
                let text = String(decoding: state.json.encoded(), as: UTF8.self)
                // Stamped after the push returns (the 55 s keepalive allows for it).
                updates.append(.pushed(id: activity.id, state: text, at: clock.nowMillis))
            case (.update(let activity, _), .terminal), (.end(let activity, _), .terminal):
                // A dead token: delete, and no end push could reach it anyway.
                report.pushFailures += 1
                report.ended += 1
                updates.append(.delete(id: activity.id))
            case (.update, _):
                report.pushFailures += 1
            case (.end(let activity, _), _):
                // Best effort: the end push may fail, the row goes anyway.
                report.ended += 1
                updates.append(.delete(id: activity.id))
            }
        }
        do { try await store.apply(updates) } catch {
            logger.error("live activity cycle could not save its decisions", [("error", "\(error)")])
        }
    }

    private func failure(_ activity: LiveActivity, last: ContentState?, updates: inout [LiveActivityStore.Update], plans: inout [Plan]) {
        let count = activity.failureCount + 1
        if count >= Self.failuresBeforeEnd {
            plans.append(.end(activity, last ?? ContentState(arrivals: [])))
        } else {
            updates.append(.failure(id: activity.id, count: count))
        }
    }

    private func arrivals(region: Region?, stopID: String) async -> (String, OBAResponse<StopArrivals>?, Bool) {
        guard let region else { return (stopID, nil, false) }
        let key = "\(region.id)\u{0}\(stopID)"
        if let cached = stopCache.value(key) { return (stopID, cached, false) }
        do {
            let response = try await oba.arrivalsAndDepartures(
                region: region, stopID: stopID, minutesBefore: ContentStateBuilder.minutesBefore,
                minutesAfter: ContentStateBuilder.minutesAfter)
            stopCache.store(response, for: key)
            return (stopID, response, true)
        } catch {
            return (stopID, nil, true)
        }
    }

    /// Spec §6.6: a liveactivity push at priority 10 with `event`,
    /// `content-state`, a timestamp that advances every push, and a
    /// stale-date (update) or dismissal-date (end).
    func message(_ activity: LiveActivity, state: ContentState, event: String, nowSeconds: EpochSeconds) -> PushMessage {
        var message = PushMessage(token: activity.pushToken, platform: .ios, apnsSandbox: activity.apnsSandbox)
        message.kind = .liveActivity
        message.priority = 10
        let timestamp = max(nowSeconds, (activity.lastPushedAt ?? 0).seconds.adding(seconds: 1))
        var aps: [String: JSONValue] = ["event": .string(event), "content-state": state.json, "timestamp": .integer(timestamp.value)]
        if event == "end" {
            aps["dismissal-date"] = .integer(nowSeconds.adding(seconds: Self.dismissAfterSeconds).value)
        } else {
            aps["stale-date"] = .integer(nowSeconds.adding(seconds: Self.staleAfterSeconds).value)
        }
        message.liveActivity = aps
        return message
    }
}
