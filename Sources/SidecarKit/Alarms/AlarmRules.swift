import Core
import OBA
import Push

/// Spec §5: the rules of departure alarms, as pure functions.
public enum AlarmRules {
    public static let defaultSecondsBefore = 600

    /// §5.2: `seconds_before` is read as a number and truncated (the iOS app
    /// sends "300.0"); absent, non-numeric, non-finite or ≤ 0 becomes 600.
    /// Values beyond a week are clamped (no departure is predicted that far).
    public static func secondsBefore(_ raw: String?) -> Int {
        guard let text = raw?.trimmingWhitespace(), let value = Double(text), value.isFinite else { return defaultSecondsBefore }
        let truncated = value.rounded(.towardZero)
        guard truncated > 0 else { return defaultSecondsBefore }
        return Int(min(truncated, 7 * 86_400))
    }

    /// "1 minute", "10 minutes": minutes from `seconds_before` (the lead
    /// time the push fires at), never "0 minutes".
    static func minutesPhrase(_ secondsBefore: Int) -> String {
        let minutes = max(secondsBefore / 60, 1)
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }

    /// §5.2: "The 44 to Ballard leaves in 10 minutes"; the route alone when
    /// the headsign is blank; "The bus" when the route is unknown.
    public static func message(route: String?, headsign: String?, secondsBefore: Int) -> String {
        let routeName = route?.presence
        let subject: String
        switch (routeName, headsign?.presence) {
        case let (route?, headsign?): subject = "The \(route) to \(headsign)"
        case let (route?, nil): subject = "The \(route)"
        case let (nil, headsign?): subject = "The bus to \(headsign)"
        case (nil, nil): subject = "The bus"
        }
        return "\(subject) leaves in \(minutesPhrase(secondsBefore))"
    }

    /// The generic message used when the arrival cannot be looked up (v2).
    public static func genericMessage(secondsBefore: Int) -> String {
        message(route: nil, headsign: nil, secondsBefore: secondsBefore)
    }

    /// The message for a looked-up arrival: route short name (from the entry,
    /// else the route reference, else its long name) and headsign.
    public static func message(for arrival: ArrivalAndDeparture, references: References?, secondsBefore: Int) -> String {
        let reference = references?.route(id: arrival.routeId)
        let route = arrival.routeShortName?.presence ?? reference?.shortName?.presence
            ?? arrival.routeLongName?.presence ?? reference?.longName?.presence
        return message(route: route, headsign: arrival.tripHeadsign, secondsBefore: secondsBefore)
    }

    /// §5.3 steps 2-5.
    public enum Decision: Equatable, Sendable {
        /// Not yet: departure is more than `seconds_before` away.
        case wait
        /// Push now, then delete.
        case fire
        /// The bus already left: delete without pushing.
        case expire
    }

    /// Whole seconds until departure, rounded down (a departure 0.5 s ago is
    /// in the past), measured against the OBA server's clock.
    public static func secondsUntilDeparture(departureMillis: Int64, currentTimeMillis: Int64) -> Int64 {
        let difference = departureMillis - currentTimeMillis
        return difference >= 0 ? difference / 1000 : -((-difference + 999) / 1000)
    }

    public static func decide(secondsUntilDeparture: Int64, secondsBefore: Int) -> Decision {
        if secondsUntilDeparture > Int64(secondsBefore) { return .wait }
        if secondsUntilDeparture < 0 { return .expire }
        return .fire
    }

    /// §5.3 reaping: consecutive "trip not found" lookups before an alarm is deleted.
    public static let reapAfterFailures = 3

    /// The failure streak after a lookup: not-found counts, a success resets,
    /// a transient failure leaves it unchanged.
    public static func streak(after outcome: LookupOutcome, previous: Int) -> Int {
        switch outcome {
        case .found: return 0
        case .notFound: return previous + 1
        case .transient: return previous
        }
    }

    /// How a lookup ended, for the streak rule.
    public enum LookupOutcome: Equatable, Sendable { case found, notFound, transient }

    // MARK: Checking far-off alarms less often

    /// How much earlier a departure prediction is assumed able to move: at
    /// once (`maxJumpSeconds`, e.g. real-time data appearing for a trip shown
    /// on schedule) plus per minute (`maxDriftPerMinute`). Within these
    /// bounds, skipping checks never delays a firing.
    public static let maxJumpSeconds: Int64 = 900
    public static let maxDriftPerMinute: Int64 = 60

    /// The next time (epoch ms) an alarm that is not yet due must be checked.
    /// With `slack` seconds between departure and firing, no check before
    /// `k` intervals can fire when `maxJump + k·(interval + drift·interval/60)
    /// < slack`, so the alarm sleeps that many whole intervals (at least
    /// one). Far-off alarms are checked rarely; alarms near firing every cycle.
    public static func nextCheck(nowMillis: Int64, secondsUntilDeparture: Int64, secondsBefore: Int, intervalSeconds: Int64) -> Int64 {
        let interval = max(intervalSeconds, 1)
        let slack = secondsUntilDeparture - Int64(secondsBefore)
        let perInterval = interval + maxDriftPerMinute * interval / 60
        let intervals = max((slack - maxJumpSeconds) / perInterval, 1)
        return nowMillis + intervals * interval * 1000
    }

    // MARK: Push payload (§5.4)

    /// The push for a fired alarm. iOS data is exactly
    /// `{"arrival_and_departure": {...}}` beside `aps`; Android (FCM data is
    /// a string map) carries the same object as a JSON string.
    public static func push(for alarm: Alarm) -> PushMessage {
        let payload = JSONValue.object([
            "region_id": .integer(Int64(alarm.regionID)),
            "stop_id": alarm.stopID.map(JSONValue.string) ?? .null,
            "trip_id": alarm.tripID.map(JSONValue.string) ?? .null,
            "service_date": alarm.serviceDate.map(JSONValue.integer) ?? .null,
            "vehicle_id": alarm.vehicleID.map(JSONValue.string) ?? .null,
            "stop_sequence": alarm.stopSequence.map { JSONValue.integer(Int64($0)) } ?? .null,
        ])
        let platform: PushPlatform = alarm.operatingSystem == "android" ? .android : .ios
        let data: JSONValue = platform == .ios ? payload : .string(String(decoding: payload.encoded(), as: UTF8.self))
        return PushMessage(token: alarm.userPushID, platform: platform, apnsSandbox: alarm.apnsSandbox,
                           title: "OneBusAway", body: alarm.message, data: ["arrival_and_departure": data])
    }
}

/// A stored alarm.
public struct Alarm: Sendable, Equatable {
    public var id: Int64
    public var token: String
    public var regionID: Int
    /// 1 or 2: which API created it (v1 dedupes).
    public var apiVersion: Int
    /// APNs device token or FCM registration token (a OneSignal id on v1).
    public var userPushID: String
    public var operatingSystem: String
    public var apnsSandbox: Bool
    public var stopID: String?
    public var tripID: String?
    /// Epoch ms.
    public var serviceDate: Int64?
    public var vehicleID: String?
    public var stopSequence: Int?
    public var secondsBefore: Int
    /// Composed at creation; what the push says.
    public var message: String
    /// Consecutive not-found lookups.
    public var failureCount: Int
    /// Last known departure (epoch ms), for choosing a stop's window.
    public var departureEstimate: Int64?
    /// When the checker looks at it next (epoch ms).
    public var nextCheckAt: Int64
    public var createdAt: Int64
}
