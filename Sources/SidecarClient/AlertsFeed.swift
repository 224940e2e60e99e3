import Foundation

/// A region's service alerts, decoded from the GTFS-realtime `FeedMessage`
/// the sidecar serves at `/api/v1/regions/{id}/alerts.pb`.
///
/// The library reads the protobuf wire format itself (it depends on
/// Foundation only): just the fields of GTFS-realtime's `Alert` the apps
/// show. Unknown fields are skipped, as protobuf requires.
public struct AlertsFeed: Equatable, Sendable {
    /// `gtfs_realtime_version` of the header ("1.0" or "2.0").
    public var version: String
    /// The header's timestamp, epoch seconds.
    public var timestamp: UInt64?
    public var alerts: [ServiceAlert]

    public struct DecodingError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Decodes a serialized `FeedMessage`; an empty body or one without a
    /// header is not a feed.
    public init(decoding bytes: Data) throws(DecodingError) {
        var version: String?
        var timestamp: UInt64?
        var alerts: [ServiceAlert] = []
        try WireReader.fields(Array(bytes)) { field, value throws(DecodingError) in
            switch (field, value) {
            case (1, .bytes(let header)):
                try WireReader.fields(header) { field, value throws(DecodingError) in
                    switch (field, value) {
                    case (1, .bytes(let text)): version = String(decoding: text, as: UTF8.self)
                    case (3, .varint(let value)): timestamp = value
                    default: break
                    }
                }
            case (2, .bytes(let entity)):
                if let alert = try ServiceAlert(entity: entity) { alerts.append(alert) }
            default: break
            }
        }
        guard let version else { throw DecodingError(description: "no FeedHeader with a gtfs_realtime_version") }
        self.version = version
        self.timestamp = timestamp
        self.alerts = alerts
    }
}

/// One alert of the feed.
public struct ServiceAlert: Equatable, Sendable {
    /// Stable per alert across requests.
    public var id: String
    public var activePeriods: [ActivePeriod]
    public var informedEntities: [InformedEntity]
    /// GTFS-realtime's `Cause` and `Effect` numbers (1 = UNKNOWN_CAUSE, 4 = DETOUR …).
    public var cause: Int?
    public var effect: Int?
    /// 1 UNKNOWN_SEVERITY, 2 INFO, 3 WARNING, 4 SEVERE.
    public var severity: Int?
    public var url: [Translation]
    public var header: [Translation]
    public var description: [Translation]

    /// Epoch seconds; nil means open-ended.
    public struct ActivePeriod: Equatable, Sendable {
        public var start: UInt64?
        public var end: UInt64?
    }

    public struct InformedEntity: Equatable, Sendable {
        public var agencyID: String?
        public var routeID: String?
        public var stopID: String?
    }

    public struct Translation: Equatable, Sendable {
        public var text: String
        /// BCP-47, nil for the untagged text.
        public var language: String?
    }

    /// The text for a language: an exact tag, then its primary language,
    /// then the untagged text, then the first.
    public static func text(_ translations: [Translation], language: String) -> String? {
        let wanted = language.lowercased()
        let primary = wanted.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init) ?? wanted
        return translations.first { $0.language?.lowercased() == wanted }?.text
            ?? translations.first { $0.language?.lowercased() == primary }?.text
            ?? translations.first { $0.language == nil }?.text
            ?? translations.first?.text
    }

    /// Reads a `FeedEntity`; nil when it carries no alert (or is a deletion).
    init?(entity: [UInt8]) throws(AlertsFeed.DecodingError) {
        var id = ""
        var alert: [UInt8]?
        var deleted = false
        try WireReader.fields(entity) { field, value throws(AlertsFeed.DecodingError) in
            switch (field, value) {
            case (1, .bytes(let text)): id = String(decoding: text, as: UTF8.self)
            case (2, .varint(let flag)): deleted = flag != 0
            case (5, .bytes(let body)): alert = body
            default: break
            }
        }
        guard let alert, !deleted else { return nil }
        self.id = id
        activePeriods = []
        informedEntities = []
        url = []
        header = []
        description = []
        try WireReader.fields(alert) { field, value throws(AlertsFeed.DecodingError) in
            switch (field, value) {
            case (1, .bytes(let range)):
                var period = ActivePeriod()
                try WireReader.fields(range) { field, value throws(AlertsFeed.DecodingError) in
                    if case .varint(let time) = value { if field == 1 { period.start = time } else if field == 2 { period.end = time } }
                }
                activePeriods.append(period)
            case (5, .bytes(let selector)):
                var entity = InformedEntity()
                try WireReader.fields(selector) { field, value throws(AlertsFeed.DecodingError) in
                    guard case .bytes(let text) = value else { return }
                    let string = String(decoding: text, as: UTF8.self)
                    switch field {
                    case 1: entity.agencyID = string
                    case 2: entity.routeID = string
                    case 5: entity.stopID = string
                    default: break
                    }
                }
                informedEntities.append(entity)
            case (6, .varint(let value)): cause = Int(truncatingIfNeeded: value)
            case (7, .varint(let value)): effect = Int(truncatingIfNeeded: value)
            case (14, .varint(let value)): severity = Int(truncatingIfNeeded: value)
            case (8, .bytes(let text)): url = try Self.translations(text)
            case (10, .bytes(let text)): header = try Self.translations(text)
            case (11, .bytes(let text)): description = try Self.translations(text)
            default: break
            }
        }
    }

    static func translations(_ bytes: [UInt8]) throws(AlertsFeed.DecodingError) -> [Translation] {
        var translations: [Translation] = []
        try WireReader.fields(bytes) { field, value throws(AlertsFeed.DecodingError) in
            guard field == 1, case .bytes(let body) = value else { return }
            var translation = Translation(text: "", language: nil)
            try WireReader.fields(body) { field, value throws(AlertsFeed.DecodingError) in
                guard case .bytes(let text) = value else { return }
                if field == 1 { translation.text = String(decoding: text, as: UTF8.self) }
                if field == 2 { translation.language = String(decoding: text, as: UTF8.self) }
            }
            translations.append(translation)
        }
        return translations
    }
}

/// The protobuf wire format, read-only: each field's number and value,
/// fixed-width values skipped, groups refused (GTFS-realtime has none).
enum WireReader {
    enum Value {
        case varint(UInt64)
        case bytes([UInt8])
        case fixed
    }

    static func fields(_ bytes: [UInt8], _ visit: (Int, Value) throws(AlertsFeed.DecodingError) -> Void) throws(AlertsFeed.DecodingError) {
        var index = 0
        func varint() throws(AlertsFeed.DecodingError) -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
            throw AlertsFeed.DecodingError(description: "a truncated varint at byte \(index)")
        }
        func skip(_ count: Int) throws(AlertsFeed.DecodingError) {
            guard count >= 0, count <= bytes.count - index else {
                throw AlertsFeed.DecodingError(description: "a field runs past the end at byte \(index)")
            }
            index += count
        }
        while index < bytes.count {
            let key = try varint()
            let field = Int(truncatingIfNeeded: key >> 3)
            guard field > 0 else { throw AlertsFeed.DecodingError(description: "field number 0 at byte \(index)") }
            switch key & 7 {
            case 0: try visit(field, .varint(varint()))
            case 1:
                try skip(8)
                try visit(field, .fixed)
            case 2:
                let length = try varint()
                guard length <= UInt64(bytes.count - index) else {
                    throw AlertsFeed.DecodingError(description: "a field runs past the end at byte \(index)")
                }
                let start = index
                index += Int(length)
                try visit(field, .bytes(Array(bytes[start..<index])))
            case 5:
                try skip(4)
                try visit(field, .fixed)
            default: throw AlertsFeed.DecodingError(description: "wire type \(key & 7) at byte \(index)")
            }
        }
    }
}
