import Core
import OBA

/// The Live Activity content state (spec §6.2): a strict wire contract with
/// the iOS widget. No timestamp or other always-changing field belongs here:
/// consecutive states are compared to decide whether to push.
struct ContentState: Sendable, Equatable {
    struct Arrival: Sendable, Equatable {
        var departureTime: EpochSeconds
        /// `early`, `on_time`, `delayed` or `unknown` (schedule only).
        var scheduleStatus: String
        /// Seconds; 0 when schedule-only.
        var scheduleDeviation: Int64
        var isArrival: Bool
    }
    var arrivals: [Arrival]

    var json: JSONValue {
        .object([
            "arrivals": .array(
                arrivals.map { arrival in
                    .object([
                        "departure_time": .integer(arrival.departureTime.value), "schedule_status": .string(arrival.scheduleStatus),
                        "schedule_deviation": .integer(arrival.scheduleDeviation), "is_arrival": .bool(arrival.isArrival),
                    ])
                })
        ])
    }

    init(arrivals: [Arrival]) { self.arrivals = arrivals }

    /// Reads a stored state back.
    init?(json: JSONValue) {
        guard case .object(let root) = json, case .array(let items)? = root["arrivals"] else { return nil }
        var arrivals: [Arrival] = []
        for item in items {
            guard case .object(let fields) = item, case .integer(let time)? = fields["departure_time"],
                case .string(let status)? = fields["schedule_status"], case .integer(let deviation)? = fields["schedule_deviation"],
                case .bool(let isArrival)? = fields["is_arrival"]
            else { return nil }
            arrivals.append(Arrival(departureTime: EpochSeconds(time), scheduleStatus: status, scheduleDeviation: deviation, isArrival: isArrival))
        }
        self.arrivals = arrivals
    }
}

/// Spec §6.2: building the content state from `arrivals-and-departures-for-stop`.
enum ContentStateBuilder {
    static let maxArrivals = 3
    /// The window the stop is asked for.
    static let minutesBefore = 5
    static let minutesAfter = 120

    /// The visit identity duplicates are collapsed on; nil when any part is missing.
    struct VisitKey: Hashable {
        let stopID: String
        let tripID: String
        let routeID: String
        let serviceDate: EpochMillis
        let stopSequence: Int
    }

    static func key(_ entry: ArrivalAndDeparture) -> VisitKey? {
        guard let stop = entry.stopId, let trip = entry.tripId, let route = entry.routeId, let date = entry.serviceDate,
            let sequence = entry.stopSequence
        else { return nil }
        return VisitKey(stopID: stop, tripID: trip, routeID: route, serviceDate: date, stopSequence: sequence)
    }

    /// Step 2: one entry per visit, the newest `lastUpdateTime` winning (ties:
    /// the first in response order); entries missing an identity part stay.
    /// A port of the app's own dedupe, so both sides pick the same survivor.
    static func collapseDuplicates(_ entries: [ArrivalAndDeparture]) -> [ArrivalAndDeparture] {
        var survivorIndex: [VisitKey: Int] = [:]
        var kept: [ArrivalAndDeparture?] = []
        for entry in entries {
            guard let key = key(entry) else {
                kept.append(entry)
                continue
            }
            if let index = survivorIndex[key], let current = kept[index] {
                if (entry.lastUpdateTime?.value ?? 0) > (current.lastUpdateTime?.value ?? 0) { kept[index] = entry }
            } else {
                survivorIndex[key] = kept.count
                kept.append(entry)
            }
        }
        return kept.compactMap { $0 }
    }

    /// `schedule_status` from a deviation in seconds, half-open on the late
    /// side: < −90 s early, −90 s (inclusive) to +90 s (exclusive) on time,
    /// ≥ +90 s delayed.
    static func status(deviationSeconds: Int64) -> String {
        if deviationSeconds < -90 { return "early" }
        if deviationSeconds >= 90 { return "delayed" }
        return "on_time"
    }

    /// Step 3 for one entry: arrival times at any stop but the trip's first
    /// (`stopSequence != 0`), falling back to departure times when the feed
    /// omits arrival times; the prediction when predicted and positive.
    static func arrival(for entry: ArrivalAndDeparture) -> (time: EpochMillis, arrival: ContentState.Arrival)? {
        let isArrival = entry.stopSequence != 0
        var scheduled = isArrival ? entry.scheduledArrivalTime : entry.scheduledDepartureTime
        var predicted = isArrival ? entry.predictedArrivalTime : entry.predictedDepartureTime
        if isArrival && (scheduled?.value ?? 0) <= 0 {
            scheduled = entry.scheduledDepartureTime
            predicted = entry.predictedDepartureTime
        }
        let usePrediction = entry.predicted == true && (predicted?.value ?? 0) > 0
        guard let time = usePrediction ? predicted : scheduled, time.value > 0 else { return nil }
        let deviation = usePrediction ? time.millis(since: scheduled ?? time) / 1000 : 0
        return (
            time,
            ContentState.Arrival(
                departureTime: time.seconds, scheduleStatus: usePrediction ? status(deviationSeconds: deviation) : "unknown",
                scheduleDeviation: deviation, isArrival: isArrival)
        )
    }

    /// Steps 1–4: filter to the route and headsign, collapse duplicates,
    /// choose times, drop the past, sort, keep 3. A cancelled trip is no
    /// arrival: its bus is not coming.
    static func build(_ entries: [ArrivalAndDeparture], routeShortName: String, tripHeadsign: String, currentTime: EpochMillis) -> ContentState {
        let matching = entries.filter {
            $0.routeShortName == routeShortName && $0.tripHeadsign == tripHeadsign && $0.tripStatus?.cancelled != true
        }
        let chosen = collapseDuplicates(matching).compactMap(arrival(for:)).filter { $0.time >= currentTime }
        let sorted = chosen.enumerated().sorted { ($0.element.time.value, $0.offset) < ($1.element.time.value, $1.offset) }.map(\.element.arrival)
        return ContentState(arrivals: Array(sorted.prefix(maxArrivals)))
    }

    /// The visit a Track started from a vehicle follows: since iOS PR #1381
    /// (OneBusAway/onebusaway-ios, merged 2026-09-04, closing #1334) the app
    /// pins that activity's content to the trip the rider tapped, and the
    /// registration carries it (`trip_id`, `service_date`, `stop_sequence`).
    struct TrackedVisit: Sendable, Equatable {
        let tripID: String
        /// Epoch ms of the service day; trip ids repeat every day.
        let serviceDate: EpochMillis?
        /// Tells apart two visits of one trip to a loop's stop.
        let stopSequence: Int?

        /// The registration's service date, in ms whichever unit it came in
        /// (the OBA convention is ms; a value below 10^11 is taken as seconds).
        init(tripID: String, serviceDate: Int64?, stopSequence: Int64?) {
            self.tripID = tripID
            self.serviceDate = serviceDate.map { $0 < 100_000_000_000 ? EpochSeconds($0).millis : EpochMillis($0) }
            self.stopSequence = stopSequence.map { Int(clamping: $0) }
        }

        func matches(_ entry: ArrivalAndDeparture) -> Bool {
            guard entry.tripId == tripID else { return false }
            if let serviceDate, let date = entry.serviceDate, date != serviceDate { return false }
            if let stopSequence, let sequence = entry.stopSequence, sequence != stopSequence { return false }
            return true
        }
    }

    /// What an update shows for a tracked visit.
    enum TrackedOutcome: Equatable {
        /// The tracked bus has not left the stop: it alone (the trip page's
        /// single-arrival content, which #1381 brought the stop page in line with).
        case pinned(ContentState)
        /// The tracked trip was cancelled: its bus is not coming, so the
        /// card shows the route and headsign's next arrivals instead.
        case cancelled(ContentState)
        /// The tracked bus has left, or the stop no longer lists it: the app
        /// keeps the departure it pinned (#1381's `[departure]` fallback)
        /// and never surfaces another vehicle, so the card keeps its last state.
        case gone
    }

    /// The content for a tracked visit from the stop's arrivals.
    static func tracked(
        _ entries: [ArrivalAndDeparture], visit: TrackedVisit, routeShortName: String, tripHeadsign: String, currentTime: EpochMillis
    ) -> TrackedOutcome {
        let visits = collapseDuplicates(entries).filter(visit.matches)
        if visits.contains(where: { $0.tripStatus?.cancelled == true }) {
            return .cancelled(build(entries, routeShortName: routeShortName, tripHeadsign: tripHeadsign, currentTime: currentTime))
        }
        let upcoming = visits.compactMap(arrival(for:)).filter { $0.time >= currentTime }.min { $0.time.value < $1.time.value }
        guard let upcoming else { return .gone }
        return .pinned(ContentState(arrivals: [upcoming.arrival]))
    }
}
