import Core
import HTTPServer

/// A ghost-bus report after validation (spec §8).
struct GhostBusReport: Sendable, Equatable {
    var userIdentifier: String
    var tripIdentifier: String
    /// Epoch ms; part of the dedupe key.
    var serviceDate: EpochMillis
    var routeIdentifier: String?
    var stopIdentifier: String?
    var vehicleIdentifier: String?
    var stopSequence: Int64?
    var predicted: Bool?
    var scheduleDeviationMinutes: Int64?
    var waitDurationMinutes: Int64
    var comment: String?
    var userLatitude: Double?
    var userLongitude: Double?
    var scheduledArrivalAt: EpochMillis?
    var predictedArrivalAt: EpochMillis?
    var predictionLastUpdatedAt: EpochMillis?
}

/// Spec §8 rules.
enum GhostBusRules {
    static let waitDurations: Set<Int64> = [5, 10, 15, 20, 30]
    static let maxCommentLength = 1000
    /// A JSON report body declaring more than this is refused unread.
    static let identifierReadCap = 8 * 1024

    /// An integer and nothing else: an ISO date or a decimal is absent, never
    /// fuzzily converted (`service_date` is in the dedupe key, so its stored
    /// value must be deterministic).
    static func strictInteger(_ raw: String?) -> Int64? {
        guard let text = raw?.trimmingWhitespace(), !text.isEmpty else { return nil }
        return Int64(text)
    }

    static func number(_ raw: String?) -> (value: Double?, malformed: Bool) {
        guard let text = raw?.trimmingWhitespace(), !text.isEmpty else { return (nil, false) }
        guard let value = Double(text), value.isFinite else { return (nil, true) }
        return (value, false)
    }

    static func parse(_ parameters: Parameters) -> Result<GhostBusReport, ValidationFailure> {
        var messages: [String] = []
        let user = parameters.identifier("user_identifier")?.presence
        if user == nil { messages.append("User identifier can't be blank") }
        let trip = parameters.identifier("trip_identifier")?.presence
        if trip == nil { messages.append("Trip identifier can't be blank") }
        let serviceDate = strictInteger(parameters["service_date"]).map { EpochMillis($0) }
        if serviceDate == nil { messages.append("Service date can't be blank") }
        let wait = strictInteger(parameters["wait_duration_minutes"])
        if wait.map({ !waitDurations.contains($0) }) ?? true { messages.append("Wait duration minutes is not included in the list") }
        let comment = parameters["comment"]?.presence
        let latitude = number(parameters["user_latitude"])
        if latitude.malformed { messages.append("User latitude is not a number") }
        if let value = latitude.value, !(-90...90).contains(value) { messages.append("User latitude must be between -90 and 90") }
        let longitude = number(parameters["user_longitude"])
        if longitude.malformed { messages.append("User longitude is not a number") }
        if let value = longitude.value, !(-180...180).contains(value) { messages.append("User longitude must be between -180 and 180") }
        messages += FieldLimits.check([
            ("User identifier", user, FieldLimits.identifier), ("Trip identifier", trip, FieldLimits.identifier),
            ("Route identifier", parameters["route_identifier"]?.presence, FieldLimits.identifier),
            ("Stop identifier", parameters["stop_identifier"]?.presence, FieldLimits.identifier),
            ("Vehicle identifier", parameters["vehicle_identifier"]?.presence, FieldLimits.identifier),
            ("Comment", comment, maxCommentLength),
        ])
        guard messages.isEmpty, let user, let trip, let serviceDate, let wait else { return .failure(ValidationFailure(messages)) }
        return .success(
            GhostBusReport(
                userIdentifier: user, tripIdentifier: trip, serviceDate: serviceDate, routeIdentifier: parameters["route_identifier"]?.presence,
                stopIdentifier: parameters["stop_identifier"]?.presence, vehicleIdentifier: parameters["vehicle_identifier"]?.presence,
                stopSequence: strictInteger(parameters["stop_sequence"]), predicted: BooleanParameter.read(parameters["predicted"]),
                scheduleDeviationMinutes: strictInteger(parameters["schedule_deviation_minutes"]), waitDurationMinutes: wait, comment: comment,
                userLatitude: latitude.value, userLongitude: longitude.value,
                scheduledArrivalAt: strictInteger(parameters["scheduled_arrival_at"]).map { EpochMillis($0) },
                predictedArrivalAt: strictInteger(parameters["predicted_arrival_at"]).map { EpochMillis($0) },
                predictionLastUpdatedAt: strictInteger(parameters["prediction_last_updated_at"]).map { EpochMillis($0) }))
    }

    /// True when a JSON body declares (or has) more than the read cap.
    static func jsonBodyTooLarge(_ request: Request) -> Bool {
        let type = request.mediaType
        guard type == "application/json" || (type?.hasSuffix("+json") ?? false) else { return false }
        let declared = request.header("content-length").flatMap { Int($0.trimmingWhitespace()) } ?? 0
        return declared > identifierReadCap || request.body.count > identifierReadCap
    }
}
