import Core
import FoundationEssentials
import OBA
import Push
import Synchronization

/// Spec §5.3 and §12: the alarm checker. Every interval it takes the alarms
/// due for a check, looks them up stop by stop (one
/// `arrivals-and-departures-for-stop` request serves every alarm at a stop),
/// and fires, expires, reaps or reschedules each. Alarms whose departure is
/// far off are rescheduled several intervals ahead (`AlarmRules.nextCheck`),
/// so the cost of a cycle follows the stops with alarms near firing, not
/// the number of alarms.
struct AlarmChecker: Sendable {
    let store: AlarmStore
    let regions: RegionDirectory
    let oba: OBAGateway
    let transport: (any PushTransport)?
    /// Where dead tokens are removed from the alert audience (§6.5).
    var pushRegistrations: PushRegistrationStore? = nil
    let clock: any WallClock
    let logger: Logger
    let intervalSeconds: Int
    /// OneBusAway requests in flight at once (stop requests, then trip
    /// requests): a page of alarms never asks the agency's server for more.
    var maxConcurrentLookups = 32
    /// Alarms pushed by this process: if deleting one failed, the next cycle
    /// retries the delete but never pushes again.
    let fired = FiredAlarms()
    /// Graceful stop: the page under way is pushed and committed, then the
    /// cycle ends (no alarm of it is pushed again after a restart).
    var stop: StopSignal? = nil
    /// Told of every cycle's report and its seconds (metrics).
    var onCycle: (@Sendable (CycleReport, Double) -> Void)? = nil

    /// What one cycle did (logged, and read by tests and the benchmark).
    struct CycleReport: Sendable, Equatable {
        var checked = 0
        var stopRequests = 0
        var tripRequests = 0
        var fired = 0
        var expired = 0
        var reaped = 0
        var waiting = 0
        var notFound = 0
        var transient = 0
        var pushFailures = 0
    }

    /// What a lookup said about one alarm (the route and headsign name the
    /// bus in the text pushed when it fires).
    enum Verdict: Sendable {
        /// `stopSequence` is the visit's, from the lookup (an alarm created
        /// without one gets it filled in so the iOS app can decode the push).
        case found(departure: EpochMillis, currentTime: EpochMillis, route: String?, headsign: String?, stopSequence: Int?)
        case notFound
        case transient

        /// What an answer's entry for the visit says: found with its
        /// departure, or not found when it has no departure time.
        static func of(_ entry: ArrivalAndDeparture, currentTime: EpochMillis, references: References?) -> Verdict {
            guard let departure = entry.effectiveDepartureTime else { return .notFound }
            return .found(
                departure: departure, currentTime: currentTime, route: AlarmRules.routeName(of: entry, references: references),
                headsign: entry.tripHeadsign, stopSequence: entry.stopSequence)
        }
    }

    func run() async {
        if transport == nil {
            logger.warning("no push transport configured: alarms are checked and reaped but never fired (set --gorush-url or --push-transport)")
        }
        await clock.repeatEvery(seconds: Double(intervalSeconds), stop: stop) { _ = await runCycle() }
    }

    /// Alarms claimed per page: bounds memory whatever their number, and is
    /// the most a dying instance can leave to be pushed again.
    var alarmsPerPage = 500

    @discardableResult
    func runCycle() async -> CycleReport {
        let started = ContinuousClock.now
        let now = clock.nowMillis
        // Half an interval of tolerance: a cycle that starts a little early
        // must not skip an alarm scheduled for it.
        let cutoff = now.adding(millis: Int64(intervalSeconds) * 500)
        var report = CycleReport()
        do {
            // Page by page, each claimed for this instance: instances sharing
            // a database split the cycle between them.
            while stop?.isStopping != true {
                let alarms = try await store.claimDue(atOrBefore: cutoff, nowMillis: clock.nowMillis, limit: alarmsPerPage)
                if alarms.isEmpty { break }
                await process(alarms, now: now, report: &report)
            }
        } catch {
            logger.error("alarm cycle could not read alarms", [("error", "\(error)")])
        }
        let elapsed = ContinuousClock.now - started
        onCycle?(report, elapsed.seconds)
        if report.checked > 0 {
            logger.info(
                "alarm cycle",
                [
                    ("checked", String(report.checked)), ("stop_requests", String(report.stopRequests)),
                    ("trip_requests", String(report.tripRequests)), ("fired", String(report.fired)), ("expired", String(report.expired)),
                    ("reaped", String(report.reaped)), ("waiting", String(report.waiting)), ("not_found", String(report.notFound)),
                    ("transient", String(report.transient)), ("push_failures", String(report.pushFailures)),
                    ("duration_ms", String(elapsed.wholeMilliseconds)),
                ])
        }
        return report
    }

    /// Checks one page of due alarms: looks them up stop by stop, pushes
    /// what fires, and saves every decision in one transaction.
    private func process(_ due: [Alarm], now: EpochMillis, report: inout CycleReport) async {
        report.checked += due.count
        let checked = await check(due, now: now)
        let verdicts = checked.verdicts
        report.stopRequests += checked.stopRequests
        report.tripRequests += checked.tripRequests
        var updates: [AlarmStore.Update] = []
        var toFire: [(alarm: Alarm, text: String, expiresAt: EpochSeconds)] = []
        let interval = Int64(intervalSeconds)
        // Per stop, what was decided (logged at debug).
        let debugging = logger.isEnabled(.debug)
        var decisions: [StopKey: [String: Int]] = [:]
        func note(_ alarm: Alarm, _ decision: String) {
            if debugging { decisions[StopKey(regionID: alarm.regionID, stopID: alarm.stopID), default: [:]][decision, default: 0] += 1 }
        }
        for (alarm, verdict) in verdicts {
            switch verdict {
            case .found(let departure, let currentTime, let route, let headsign, let stopSequence):
                let seconds = AlarmRules.secondsUntilDeparture(departure, currentTime: currentTime)
                let decision = AlarmRules.decide(secondsUntilDeparture: seconds, secondsBefore: alarm.secondsBefore)
                note(alarm, "\(decision)")
                switch decision {
                case .wait:
                    report.waiting += 1
                    updates.append(
                        .reschedule(
                            id: alarm.id, failureCount: 0,
                            nextCheckAt: AlarmRules.nextCheck(
                                nowMillis: now, secondsUntilDeparture: seconds,
                                secondsBefore: alarm.secondsBefore, intervalSeconds: interval),
                            departureEstimate: departure))
                case .expire:
                    // Said at info: an operator asked why a rider got no
                    // alarm finds the reason (never the device's token).
                    report.expired += 1
                    logger.info(
                        "alarm dropped without a push",
                        [
                            ("alarm", String(alarm.id)), ("region", String(alarm.regionID)), ("stop", alarm.stopID ?? "-"),
                            ("trip", alarm.tripID ?? "-"),
                            (
                                "reason",
                                "the bus left \(-seconds) s before this check, so the alarm \(alarm.secondsBefore) s before departure can no longer be on time"
                            ),
                        ])
                    updates.append(.delete(id: alarm.id))
                case .fire:
                    if fired.contains(alarm.id) {
                        updates.append(.delete(id: alarm.id))
                    } else if transport == nil {
                        // Nothing can deliver it: keep checking until it expires.
                        updates.append(
                            .reschedule(id: alarm.id, failureCount: 0, nextCheckAt: now.adding(seconds: interval), departureEstimate: departure))
                    } else {
                        var firing = alarm
                        if firing.stopSequence == nil { firing.stopSequence = stopSequence }
                        // No use after the bus left: APNs and FCM drop it then.
                        toFire.append(
                            (
                                firing,
                                AlarmRules.firingMessage(
                                    route: route, headsign: headsign, secondsUntilDeparture: seconds,
                                    stored: alarm.message), now.seconds.adding(seconds: max(seconds, 1))
                            ))
                    }
                }
            case .notFound:
                report.notFound += 1
                note(alarm, "not_found")
                let streak = AlarmRules.streak(after: .notFound, previous: alarm.failureCount)
                if streak >= AlarmRules.reapAfterFailures {
                    report.reaped += 1
                    logger.info(
                        "alarm dropped without a push",
                        [
                            ("alarm", String(alarm.id)), ("region", String(alarm.regionID)), ("stop", alarm.stopID ?? "-"),
                            ("trip", alarm.tripID ?? "-"),
                            ("reason", "OneBusAway did not know the trip at this stop in \(streak) checks in a row"),
                        ])
                    updates.append(.delete(id: alarm.id))
                } else {
                    updates.append(
                        .reschedule(id: alarm.id, failureCount: streak, nextCheckAt: now.adding(seconds: interval), departureEstimate: nil))
                }
            case .transient:
                report.transient += 1
                note(alarm, "transient")
                updates.append(
                    .reschedule(
                        id: alarm.id, failureCount: alarm.failureCount, nextCheckAt: now.adding(seconds: interval),
                        departureEstimate: nil))
            }
        }
        for (stop, counts) in decisions {
            logger.debug(
                "alarm stop checked",
                [("region", String(stop.regionID)), ("stop", stop.stopID ?? "-")]
                    + counts.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) })
        }
        var deadTokens: [String] = []
        if let transport, !toFire.isEmpty {
            // Send first, delete after (at-least-once, §12): a crash between
            // the two re-fires on restart rather than losing the push.
            let outcomes = await transport.send(toFire.map { AlarmRules.push(for: $0.alarm, text: $0.text, expiresAt: $0.expiresAt) })
            for ((alarm, _, _), outcome) in zip(toFire, outcomes) {
                switch outcome {
                case .delivered:
                    report.fired += 1
                    fired.insert(alarm.id)
                    updates.append(.delete(id: alarm.id))
                case .terminal:
                    report.pushFailures += 1
                    deadTokens.append(alarm.userPushID)
                    updates.append(.delete(id: alarm.id))
                case .rejected:
                    // The message itself was refused: retrying cannot help.
                    report.pushFailures += 1
                    updates.append(.delete(id: alarm.id))
                case .transient:
                    report.pushFailures += 1
                    updates.append(
                        .reschedule(
                            id: alarm.id, failureCount: alarm.failureCount, nextCheckAt: now.adding(seconds: interval),
                            departureEstimate: nil))
                }
            }
        }
        do {
            try await store.apply(updates)
            // §6.5: a dead token leaves the alert audience too.
            for token in deadTokens { _ = try? await pushRegistrations?.deleteEverywhere(token: token) }
            fired.forget(updates.compactMap { if case .delete(let id) = $0 { id } else { nil } })
        } catch {
            logger.error("alarm cycle could not save its decisions; they are retried next cycle", [("error", "\(error)")])
        }
    }

    struct StopKey: Hashable, Sendable {
        let regionID: Int
        let stopID: String?
    }

    /// One trip's visit to a stop: what a trip request asks about. The
    /// alarm's vehicle only disambiguates; it does not make another visit
    /// (so no rider's choice of vehicle id multiplies the requests).
    struct TripVisit: Hashable, Sendable {
        let stop: StopKey
        let tripID: String
        let serviceDate: EpochMillis
        let stopSequence: Int?
    }

    /// What a stop's request settled, and the alarms whose visits it did not
    /// contain (outside its window, or gone), left for trip requests.
    struct StopOutcome: Sendable {
        var verdicts: [(Alarm, Verdict)] = []
        var pending: [(alarm: Alarm, visit: TripVisit)] = []
        var stopRequests = 0
    }

    /// Looks up every alarm of a page: one request per stop, then one trip
    /// request per visit (trip, service date, stop sequence, at that stop)
    /// no stop's window contained, shared by every alarm waiting for it.
    /// Both kinds run at most `maxConcurrentLookups` at a time across the
    /// page, so a page whose alarms wait on many trips at few stops is not
    /// asked one trip after another.
    func check(_ due: [Alarm], now: EpochMillis) async -> (verdicts: [(Alarm, Verdict)], stopRequests: Int, tripRequests: Int) {
        let groups = Dictionary(grouping: due) { StopKey(regionID: $0.regionID, stopID: $0.stopID) }
        let stops = await boundedMap(Array(groups), limit: maxConcurrentLookups) { key, alarms in
            await checkStop(key: key, alarms: alarms, now: now)
        }
        var verdicts = stops.flatMap(\.verdicts)
        let pending = stops.flatMap(\.pending)
        // Each visit once, asked with the vehicle of the first alarm waiting for it.
        var seen: Set<TripVisit> = []
        var visits: [(visit: TripVisit, vehicleID: String?)] = []
        for (alarm, visit) in pending where seen.insert(visit).inserted { visits.append((visit, alarm.vehicleID)) }
        let answers = await boundedMap(visits, limit: maxConcurrentLookups) { visit, vehicleID in
            await lookUp(visit, vehicleID: vehicleID)
        }
        let byVisit = Dictionary(uniqueKeysWithValues: zip(visits.map(\.visit), answers.map(\.verdict)))
        for (alarm, visit) in pending { verdicts.append((alarm, byVisit[visit] ?? .transient)) }
        return (verdicts, stops.reduce(0) { $0 + $1.stopRequests }, answers.filter(\.asked).count)
    }

    /// One stop's request: the alarms it settles, and those it leaves for
    /// trip requests.
    func checkStop(key: StopKey, alarms: [Alarm], now: EpochMillis) async -> StopOutcome {
        guard let region = regions.region(id: key.regionID), let stopID = key.stopID else {
            // No region (it left the directory) or no stop: the lookup can
            // never succeed, so these count toward reaping.
            return StopOutcome(verdicts: alarms.map { ($0, .notFound) })
        }
        let lookupable = alarms.filter { $0.tripID != nil && $0.serviceDate != nil }
        var outcome = StopOutcome(verdicts: alarms.filter { $0.tripID == nil || $0.serviceDate == nil }.map { ($0, .notFound) })
        guard !lookupable.isEmpty else { return outcome }
        // Stopping: nothing more is asked; these wait for the next cycle (of
        // this server after its restart, or of another instance).
        guard stop?.isStopping != true else {
            outcome.verdicts += lookupable.map { ($0, .transient) }
            return outcome
        }
        let horizon = lookupable.map { ($0.departureEstimate ?? now.adding(millis: 3_600_000)).millis(since: now) }.max() ?? 0
        let minutesAfter = min(max(Int(horizon / 60_000) + 10, 35), 240)
        outcome.stopRequests = 1
        let stopResponse: OBAResponse<StopArrivals>
        do {
            stopResponse = try await oba.arrivalsAndDepartures(region: region, stopID: stopID, minutesBefore: 5, minutesAfter: minutesAfter)
        } catch .notFound {
            outcome.verdicts += lookupable.map { ($0, .notFound) }
            return outcome
        } catch {
            outcome.verdicts += lookupable.map { ($0, .transient) }
            return outcome
        }
        for alarm in lookupable {
            if let entry = Self.match(alarm, in: stopResponse.entry.arrivalsAndDepartures), entry.effectiveDepartureTime != nil {
                outcome.verdicts.append((alarm, .of(entry, currentTime: stopResponse.currentTime, references: stopResponse.references)))
            } else {
                // Outside the window (or gone): the trip's visit itself is asked.
                outcome.pending.append(
                    (alarm, TripVisit(stop: key, tripID: alarm.tripID!, serviceDate: alarm.serviceDate!, stopSequence: alarm.stopSequence)))
            }
        }
        return outcome
    }

    /// One trip request: what OneBusAway says of a visit (`asked` is false
    /// when it was not asked: the server is stopping, or the region left).
    func lookUp(_ visit: TripVisit, vehicleID: String?) async -> (verdict: Verdict, asked: Bool) {
        guard stop?.isStopping != true else { return (.transient, false) }
        guard let region = regions.region(id: visit.stop.regionID), let stopID = visit.stop.stopID else { return (.notFound, false) }
        do {
            let response = try await oba.arrivalAndDeparture(
                region: region, stopID: stopID, tripID: visit.tripID, serviceDate: visit.serviceDate, vehicleID: vehicleID,
                stopSequence: visit.stopSequence)
            return (.of(response.entry, currentTime: response.currentTime, references: response.references), true)
        } catch .notFound {
            return (.notFound, true)
        } catch {
            return (.transient, true)
        }
    }

    /// The stop's entry for an alarm's trip visit: same trip and service
    /// date, same stop sequence when the alarm has one (a loop route visits
    /// a stop twice), preferring the alarm's vehicle when several report.
    static func match(_ alarm: Alarm, in entries: [ArrivalAndDeparture]) -> ArrivalAndDeparture? {
        let candidates = entries.filter { entry in
            entry.tripId == alarm.tripID && entry.serviceDate == alarm.serviceDate
                && (alarm.stopSequence == nil || entry.stopSequence == alarm.stopSequence)
        }
        if let vehicle = alarm.vehicleID, let exact = candidates.first(where: { $0.vehicleId == vehicle }) { return exact }
        return candidates.first
    }
}

/// Ids of alarms this process has pushed but not yet seen deleted.
final class FiredAlarms: Sendable {
    private let ids = Mutex<Set<Int64>>([])
    func contains(_ id: Int64) -> Bool { ids.withLock { $0.contains(id) } }
    func insert(_ id: Int64) { ids.withLock { _ = $0.insert(id) } }
    func forget(_ deleted: [Int64]) { ids.withLock { $0.subtract(deleted) } }
}
