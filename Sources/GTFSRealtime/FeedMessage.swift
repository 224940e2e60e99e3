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
    /// `is_deleted` (field 2): the producer withdrew the entity (used by
    /// differential feeds; a full dataset may carry it too).
    public var isDeleted: Bool
    public var alert: Alert?

    public init(id: String, isDeleted: Bool = false, alert: Alert?) {
        self.id = id
        self.isDeleted = isDeleted
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
    /// `tts_header_text` (12) and `tts_description_text` (13): the texts
    /// written for text-to-speech.
    public var ttsHeaderText: TranslatedString? = nil
    public var ttsDescriptionText: TranslatedString? = nil
    /// `image` (15) and `image_alternative_text` (16).
    public var image: TranslatedImage? = nil
    public var imageAlternativeText: TranslatedString? = nil
    /// `cause_detail` (17) and `effect_detail` (18): the producer's own
    /// words for the cause and effect.
    public var causeDetail: TranslatedString? = nil
    public var effectDetail: TranslatedString? = nil
    /// Enum values the decoder did not know (`cause 99`): proto2 keeps such
    /// a value as an unknown field, so the field reads as unset. Filled by
    /// decoding only; never encoded.
    public var unrecognized: [String] = []

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
    /// `schedule_relationship` (field 4) as sent: 0 SCHEDULED, 1 ADDED, 2
    /// UNSCHEDULED, 3 CANCELED, 5 REPLACEMENT, 6 DUPLICATED, 7 DELETED, 8 NEW
    /// (`ScheduleRelationship.name`); nil when the producer left it out.
    public var scheduleRelationship: Int? = nil
    /// `modified_trip` (field 7), experimental: a trip as modified by a
    /// TripModifications entity.
    public var modifiedTrip: ModifiedTripSelector? = nil
    public init(
        tripID: String? = nil, routeID: String? = nil, directionID: UInt32? = nil, startTime: String? = nil, startDate: String? = nil,
        scheduleRelationship: Int? = nil
    ) {
        self.tripID = tripID
        self.routeID = routeID
        self.directionID = directionID
        self.startTime = startTime
        self.startDate = startDate
        self.scheduleRelationship = scheduleRelationship
    }
}

/// `TripDescriptor.ModifiedTripSelector` (experimental in gtfs-realtime.proto).
public struct ModifiedTripSelector: Equatable, Sendable {
    public var modificationsID: String?
    public var affectedTripID: String?
    public var startTime: String?
    public var startDate: String?
    public init(modificationsID: String? = nil, affectedTripID: String? = nil, startTime: String? = nil, startDate: String? = nil) {
        self.modificationsID = modificationsID
        self.affectedTripID = affectedTripID
        self.startTime = startTime
        self.startDate = startDate
    }
}

/// `TripDescriptor.ScheduleRelationship`'s names.
public enum ScheduleRelationship {
    public static let names: [Int: String] = [
        0: "SCHEDULED", 1: "ADDED", 2: "UNSCHEDULED", 3: "CANCELED", 5: "REPLACEMENT", 6: "DUPLICATED", 7: "DELETED", 8: "NEW",
    ]
    /// The name of a value, or its number when it has none.
    public static func name(_ value: Int) -> String { names[value] ?? String(value) }
}

/// `TranslatedImage`: an image per language.
public struct TranslatedImage: Equatable, Sendable {
    public struct LocalizedImage: Equatable, Sendable {
        public var url: String
        /// `image/png`, `image/jpeg`, ...
        public var mediaType: String
        public var language: String?
        public init(url: String, mediaType: String, language: String?) {
            self.url = url
            self.mediaType = mediaType
            self.language = language
        }
    }
    public var localizedImages: [LocalizedImage]
    public init(_ localizedImages: [LocalizedImage]) { self.localizedImages = localizedImages }
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
    /// `specialEvent` (13) joined the specification in 2026.
    case unknownCause = 1, otherCause, technicalProblem, strike, demonstration, accident, holiday, weather, maintenance,
        construction, policeActivity, medicalEmergency, specialEvent
    public var name: String {
        [
            "UNKNOWN_CAUSE", "OTHER_CAUSE", "TECHNICAL_PROBLEM", "STRIKE", "DEMONSTRATION", "ACCIDENT", "HOLIDAY", "WEATHER",
            "MAINTENANCE", "CONSTRUCTION", "POLICE_ACTIVITY", "MEDICAL_EMERGENCY", "SPECIAL_EVENT",
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
