import Core
import OBA
import Push

/// Spec §5: the rules of departure alarms, as pure functions.
enum AlarmRules {
    static let defaultSecondsBefore = 600

    /// §5.2: `seconds_before` is read as a number and truncated (the iOS app
    /// sends "300.0"); absent, non-numeric, non-finite or ≤ 0 becomes 600.
    /// Values beyond a week are clamped (no departure is predicted that far).
    static func secondsBefore(_ raw: String?) -> Int {
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
    static func message(route: String?, headsign: String?, secondsBefore: Int) -> String {
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
    static func genericMessage(secondsBefore: Int) -> String {
        message(route: nil, headsign: nil, secondsBefore: secondsBefore)
    }

    /// The message for a looked-up arrival: route short name (from the entry,
    /// else the route reference, else its long name) and headsign.
    static func message(for arrival: ArrivalAndDeparture, references: References?, secondsBefore: Int) -> String {
        message(route: routeName(of: arrival, references: references), headsign: arrival.tripHeadsign, secondsBefore: secondsBefore)
    }

    /// The name riders know a route by: the entry's short name, else the
    /// route reference's, else a long name; nil when none is known.
    static func routeName(of arrival: ArrivalAndDeparture, references: References?) -> String? {
        let reference = references?.route(id: arrival.routeId)
        return arrival.routeShortName?.presence ?? reference?.shortName?.presence
            ?? arrival.routeLongName?.presence ?? reference?.longName?.presence
    }

    /// "leaves now" under a minute, else "leaves in 1 minute" / "leaves in N
    /// minutes", whole minutes rounded down (a rider told 4 minutes when 4:59
    /// remain is early, never late).
    static func departurePhrase(secondsUntilDeparture: Int64) -> String {
        let minutes = max(secondsUntilDeparture, 0) / 60
        switch minutes {
        case 0: return "leaves now"
        case 1: return "leaves in 1 minute"
        default: return "leaves in \(minutes) minutes"
        }
    }

    /// The text pushed when an alarm fires, from the lookup that decided to
    /// fire it: "The 44 to Ballard leaves in 5 minutes" with the minutes
    /// remaining now (the route alone when the headsign is blank). When the
    /// lookup did not name the route, the text stored at creation is kept.
    static func firingMessage(route: String?, headsign: String?, secondsUntilDeparture: Int64, stored: String) -> String {
        guard let route = route?.presence else { return stored }
        let subject = headsign?.presence.map { "The \(route) to \($0)" } ?? "The \(route)"
        return "\(subject) \(departurePhrase(secondsUntilDeparture: secondsUntilDeparture))"
    }

    /// A v1 alarm is the arrival of one trip at one stop on one service
    /// day: the messages naming each of `stop_id`, `trip_id` and
    /// `service_date` that is missing, or nil when all three are there.
    static func missingTripIdentity(_ request: AlarmRequest) -> [String]? {
        var messages: [String] = []
        if request.stopID == nil { messages.append("Stop can't be blank") }
        if request.tripID == nil { messages.append("Trip can't be blank") }
        if request.serviceDate == nil { messages.append("Service date can't be blank") }
        return messages.isEmpty ? nil : messages
    }

    /// §5.3 steps 2-5.
    enum Decision: Equatable, Sendable {
        /// Not yet: departure is more than `seconds_before` away.
        case wait
        /// Push now, then delete.
        case fire
        /// The bus already left: delete without pushing.
        case expire
    }

    /// Whole seconds until departure, rounded down (a departure 0.5 s ago is
    /// in the past), measured against the OBA server's clock.
    static func secondsUntilDeparture(_ departure: EpochMillis, currentTime: EpochMillis) -> Int64 {
        departure.seconds(since: currentTime)
    }

    static func decide(secondsUntilDeparture: Int64, secondsBefore: Int) -> Decision {
        if secondsUntilDeparture > Int64(secondsBefore) { return .wait }
        if secondsUntilDeparture < 0 { return .expire }
        return .fire
    }

    /// §5.3 reaping: consecutive "trip not found" lookups before an alarm is deleted.
    static let reapAfterFailures = 3

    /// The failure streak after a lookup: not-found counts, a success resets,
    /// a transient failure leaves it unchanged.
    static func streak(after outcome: LookupOutcome, previous: Int) -> Int {
        switch outcome {
        case .found: return 0
        case .notFound: return previous + 1
        case .transient: return previous
        }
    }

    /// How a lookup ended, for the streak rule.
    enum LookupOutcome: Equatable, Sendable { case found, notFound, transient }

    // MARK: Checking far-off alarms less often

    /// How much earlier a departure prediction is assumed able to move: at
    /// once (`maxJumpSeconds`, e.g. real-time data appearing for a trip shown
    /// on schedule) plus per minute (`maxDriftPerMinute`). Within these
    /// bounds, skipping checks never delays a firing.
    static let maxJumpSeconds: Int64 = 900
    static let maxDriftPerMinute: Int64 = 60

    /// The next time (epoch ms) an alarm that is not yet due must be checked.
    /// With `slack` seconds between departure and firing, no check before
    /// `k` intervals can fire when `maxJump + k·(interval + drift·interval/60)
    /// < slack`, so the alarm sleeps that many whole intervals (at least
    /// one). Far-off alarms are checked rarely; alarms near firing every cycle.
    static func nextCheck(nowMillis: EpochMillis, secondsUntilDeparture: Int64, secondsBefore: Int, intervalSeconds: Int64) -> EpochMillis {
        let interval = max(intervalSeconds, 1)
        let slack = secondsUntilDeparture - Int64(secondsBefore)
        let perInterval = interval + maxDriftPerMinute * interval / 60
        let intervals = max((slack - maxJumpSeconds) / perInterval, 1)
        return nowMillis.adding(seconds: intervals * interval)
    }

    // MARK: Push payload (§5.4)

    /// The Android app's channel for arrival reminders (onebusaway-android
    /// `NotificationChannels`); without it FCM falls back to its own channel.
    static let androidChannel = "arrival_reminders"

    /// The push for a fired alarm. iOS data is exactly
    /// `{"arrival_and_departure": {...}}` beside `aps`; Android (FCM data is
    /// a string map) carries the same object as a JSON string.
    /// `expiresAt` (epoch seconds, the departure) bounds delivery: APNs
    /// `apns-expiration`, FCM `android.ttl`, gorush's `expiration` and
    /// `time_to_live`. On Android it goes to the app's `arrival_reminders`
    /// notification channel.
    static func push(for alarm: Alarm, text: String? = nil, expiresAt: EpochSeconds? = nil) -> PushMessage {
        let payload = JSONValue.object([
            "region_id": .integer(Int64(alarm.regionID)),
            "stop_id": alarm.stopID.map(JSONValue.string) ?? .null,
            "trip_id": alarm.tripID.map(JSONValue.string) ?? .null,
            "service_date": alarm.serviceDate.map { JSONValue.integer($0.value) } ?? .null,
            "vehicle_id": alarm.vehicleID.map(JSONValue.string) ?? .null,
            "stop_sequence": alarm.stopSequence.map { JSONValue.integer(Int64($0)) } ?? .null,
        ])
        let platform = alarm.operatingSystem
        let data: JSONValue = platform == .ios ? payload : .string(String(decoding: payload.encoded(), as: UTF8.self))
        var message = PushMessage(
            token: alarm.userPushID, platform: platform, apnsSandbox: alarm.apnsSandbox,
            title: "OneBusAway", body: text ?? alarm.message, data: ["arrival_and_departure": data])
        // The rider asked to be woken for the bus: sound, and through Focus.
        message.attention = .timeSensitive
        if let expiresAt { message.expiration = expiresAt.value }
        message.androidChannel = androidChannel
        return message
    }
}

/// A stored alarm.
struct Alarm: Sendable, Equatable {
    var id: Int64
    var token: String
    var regionID: Int
    /// 1 or 2: which API created it (v1 dedupes).
    var apiVersion: AlarmAPIVersion
    /// APNs device token or FCM registration token (a OneSignal id on v1).
    var userPushID: String
    var operatingSystem: PushPlatform
    var apnsSandbox: Bool
    var stopID: String?
    var tripID: String?
    var serviceDate: EpochMillis?
    var vehicleID: String?
    var stopSequence: Int?
    var secondsBefore: Int
    /// Composed at creation from the lead time; what the push says when the
    /// lookup at firing time does not name the route.
    var message: String
    /// Consecutive not-found lookups.
    var failureCount: Int
    /// Last known departure (epoch ms), for choosing a stop's window.
    var departureEstimate: EpochMillis?
    /// When the checker looks at it next (epoch ms).
    var nextCheckAt: EpochMillis
    var createdAt: EpochMillis
}
