/// GTFS-realtime messages for a service-alerts feed (gtfs-realtime.proto,
/// the subset an alerts-only feed uses), with binary encoding, decoding and
/// the protobuf JSON rendering.
public struct FeedMessage: Equatable, Sendable {
    public var header: FeedHeader
    public var entities: [FeedEntity]

    public init(header: FeedHeader, entities: [FeedEntity]) {
        self.header = header
        self.entities = entities
    }
}

public struct FeedHeader: Equatable, Sendable {
    public var gtfsRealtimeVersion: String
    /// 0 = FULL_DATASET.
    public var incrementality: Int
    /// Epoch seconds.
    public var timestamp: UInt64?

    public init(gtfsRealtimeVersion: String = "1.0", incrementality: Int = 0, timestamp: UInt64?) {
        self.gtfsRealtimeVersion = gtfsRealtimeVersion
        self.incrementality = incrementality
        self.timestamp = timestamp
    }
}

public struct FeedEntity: Equatable, Sendable {
    public var id: String
    public var alert: Alert?

    public init(id: String, alert: Alert?) {
        self.id = id
        self.alert = alert
    }
}

public struct Alert: Equatable, Sendable {
    /// `active_period` (field 1): deprecated by google/transit#546 but the
    /// only period the iOS app reads.
    public var activePeriods: [TimeRange]
    /// `communication_period` (field 2): when riders should be shown the alert.
    public var communicationPeriods: [TimeRange] = []
    /// `impact_period` (field 3): when service is affected; each range lies
    /// inside a communication period.
    public var impactPeriods: [TimeRange] = []
    public var informedEntities: [EntitySelector]
    public var cause: Cause?
    public var effect: Effect?
    public var url: TranslatedString?
    public var headerText: TranslatedString?
    public var descriptionText: TranslatedString?
    public var severityLevel: SeverityLevel?

    public init(
        activePeriods: [TimeRange] = [], communicationPeriods: [TimeRange] = [], impactPeriods: [TimeRange] = [],
        informedEntities: [EntitySelector] = [], cause: Cause? = nil, effect: Effect? = nil,
        url: TranslatedString? = nil, headerText: TranslatedString? = nil, descriptionText: TranslatedString? = nil,
        severityLevel: SeverityLevel? = nil
    ) {
        self.activePeriods = activePeriods
        self.communicationPeriods = communicationPeriods
        self.impactPeriods = impactPeriods
        self.informedEntities = informedEntities
        self.cause = cause
        self.effect = effect
        self.url = url
        self.headerText = headerText
        self.descriptionText = descriptionText
        self.severityLevel = severityLevel
    }
}

public struct TimeRange: Equatable, Sendable {
    public var start: UInt64?
    public var end: UInt64?
    public init(start: UInt64?, end: UInt64?) {
        self.start = start
        self.end = end
    }
}

/// `EntitySelector`: what an alert is about. At least one field is set.
public struct EntitySelector: Equatable, Sendable {
    public var agencyID: String?
    public var routeID: String?
    /// GTFS `route_type` (3 is bus).
    public var routeType: Int32?
    public var trip: TripDescriptor?
    public var stopID: String?
    /// GTFS `direction_id` (0 or 1), with `route_id`.
    public var directionID: UInt32?
    public init(
        agencyID: String? = nil, routeID: String? = nil, routeType: Int32? = nil, trip: TripDescriptor? = nil, stopID: String? = nil,
        directionID: UInt32? = nil
    ) {
        self.agencyID = agencyID
        self.routeID = routeID
        self.routeType = routeType
        self.trip = trip
        self.stopID = stopID
        self.directionID = directionID
    }
}

/// `TripDescriptor`, as an informed entity names a trip.
public struct TripDescriptor: Equatable, Sendable {
    public var tripID: String?
    public var routeID: String?
    public var directionID: UInt32?
    /// `HH:MM:SS`, may pass 24:00:00.
    public var startTime: String?
    /// `YYYYMMDD`.
    public var startDate: String?
    public init(tripID: String? = nil, routeID: String? = nil, directionID: UInt32? = nil, startTime: String? = nil, startDate: String? = nil) {
        self.tripID = tripID
        self.routeID = routeID
        self.directionID = directionID
        self.startTime = startTime
        self.startDate = startDate
    }
}

public struct TranslatedString: Equatable, Sendable {
    public struct Translation: Equatable, Sendable {
        public var text: String
        public var language: String?
        public init(text: String, language: String?) {
            self.text = text
            self.language = language
        }
    }
    public var translations: [Translation]
    public init(_ translations: [Translation]) { self.translations = translations }
}

/// GTFS-realtime `Alert.Cause`.
public enum Cause: Int, CaseIterable, Sendable {
    case unknownCause = 1, otherCause, technicalProblem, strike, demonstration, accident, holiday, weather, maintenance,
        construction, policeActivity, medicalEmergency
    public var name: String {
        [
            "UNKNOWN_CAUSE", "OTHER_CAUSE", "TECHNICAL_PROBLEM", "STRIKE", "DEMONSTRATION", "ACCIDENT", "HOLIDAY", "WEATHER",
            "MAINTENANCE", "CONSTRUCTION", "POLICE_ACTIVITY", "MEDICAL_EMERGENCY",
        ][rawValue - 1]
    }
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name.uppercased() }) else { return nil }
        self = match
    }
}

/// GTFS-realtime `Alert.Effect`.
public enum Effect: Int, CaseIterable, Sendable {
    case noService = 1, reducedService, significantDelays, detour, additionalService, modifiedService, otherEffect,
        unknownEffect, stopMoved, noEffect, accessibilityIssue
    public var name: String {
        [
            "NO_SERVICE", "REDUCED_SERVICE", "SIGNIFICANT_DELAYS", "DETOUR", "ADDITIONAL_SERVICE", "MODIFIED_SERVICE",
            "OTHER_EFFECT", "UNKNOWN_EFFECT", "STOP_MOVED", "NO_EFFECT", "ACCESSIBILITY_ISSUE",
        ][rawValue - 1]
    }
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name.uppercased() }) else { return nil }
        self = match
    }
}

/// GTFS-realtime `Alert.SeverityLevel`.
public enum SeverityLevel: Int, CaseIterable, Sendable {
    case unknownSeverity = 1, info, warning, severe
    public var name: String { ["UNKNOWN_SEVERITY", "INFO", "WARNING", "SEVERE"][rawValue - 1] }
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name.uppercased() }) else { return nil }
        self = match
    }
}
