import Core
import HTTPServer
import Push

/// The alarm API an alarm was made through: v1 (the legacy app, the
/// arrival looked up at creation) or v2 (the device registered too).
enum AlarmAPIVersion: Int, Sendable, CaseIterable {
    case v1 = 1
    case v2 = 2
}

/// An alarm creation request after parsing (§5.2 request fields).
struct AlarmRequest: Sendable, Equatable {
    var userPushID: String
    var operatingSystem: PushPlatform
    var apnsSandbox: Bool
    var stopID: String?
    var tripID: String?
    var serviceDate: EpochMillis?
    var vehicleID: String?
    var stopSequence: Int?
    var secondsBefore: Int

    /// §5.2 "what is actually validated": only `user_push_id` (and on v2
    /// `operating_system`) can fail. Trip fields are stored as sent (a
    /// non-numeric `service_date` or `stop_sequence` is stored as absent).
    /// v1 treats a missing or unknown `operating_system` as `ios` and has
    /// no `apns_sandbox`.
    static func parse(_ parameters: Parameters, version: AlarmAPIVersion) -> Result<AlarmRequest, ValidationFailure> {
        var messages: [String] = []
        let userPushID = parameters.identifier("user_push_id")?.presence
        if userPushID == nil { messages.append("Push identifier can't be blank") }
        let named = parameters["operating_system"]?.presence?.lowercased()
        var operatingSystem = named.flatMap(PushPlatform.init(rawValue:))
        if version == .v2 {
            if named == nil {
                messages.append("Operating system can't be blank")
            } else if operatingSystem == nil {
                messages.append("Operating system is not included in the list")
            }
        } else if operatingSystem == nil {
            operatingSystem = .ios
        }
        messages += FieldLimits.check([
            ("Push identifier", userPushID, FieldLimits.token), ("Stop", parameters.identifier("stop_id"), FieldLimits.identifier),
            ("Trip", parameters.identifier("trip_id"), FieldLimits.identifier),
            ("Vehicle", parameters.identifier("vehicle_id"), FieldLimits.identifier),
        ])
        if userPushID.map({ $0.count <= FieldLimits.token }) ?? false, let problem = PushToken.problem("Push identifier", userPushID) {
            messages.append(problem)
        }
        guard messages.isEmpty, let userPushID, let operatingSystem else { return .failure(ValidationFailure(messages)) }
        return .success(
            AlarmRequest(
                userPushID: userPushID, operatingSystem: operatingSystem,
                apnsSandbox: version == .v2 && ApnsSandbox.flag(parameters["apns_sandbox"], operatingSystem: operatingSystem),
                stopID: parameters.identifier("stop_id")?.presence, tripID: parameters.identifier("trip_id")?.presence,
                serviceDate: integer(parameters["service_date"]).map { EpochMillis($0) }, vehicleID: parameters.identifier("vehicle_id")?.presence,
                stopSequence: integer(parameters["stop_sequence"]).flatMap { Int(exactly: $0) },
                secondsBefore: AlarmRules.secondsBefore(parameters["seconds_before"])))
    }

    /// An integer parameter: digits, or a number with no fractional part
    /// ("1754809200000.0"); anything else is absent.
    static func integer(_ raw: String?) -> Int64? {
        guard let text = raw?.trimmingWhitespace(), !text.isEmpty else { return nil }
        if let value = Int64(text) { return value }
        if let value = Double(text), value.isFinite, value.rounded(.towardZero) == value, abs(value) < 9.0e15 { return Int64(value) }
        return nil
    }
}
