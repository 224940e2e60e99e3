// Field numbers from gtfs-realtime.proto.

extension FeedMessage {
    /// The binary protobuf encoding.
    public func encoded() -> [UInt8] {
        var writer = ProtobufWriter()
        writer.message(1) { header.write(to: &$0) }
        for entity in entities { writer.message(2) { entity.write(to: &$0) } }
        return writer.bytes
    }

    /// Decodes a binary FeedMessage (unknown fields are skipped).
    public init(decoding bytes: [UInt8]) throws(ProtobufError) {
        var reader = ProtobufReader(bytes[...])
        var header: FeedHeader?
        var entities: [FeedEntity] = []
        while let (field, value) = try reader.next() {
            switch field {
            case 1: header = try FeedHeader(try value.message())
            case 2: entities.append(try FeedEntity(try value.message()))
            default: continue
            }
        }
        guard let header else { throw ProtobufError("FeedMessage without a header") }
        self.init(header: header, entities: entities)
    }
}

/// An entity a lenient decode left out, and why.
public struct RejectedEntity: Equatable, Sendable {
    /// Its position among the feed's entities (0-based).
    public let index: Int
    /// Its id, when that much could be read.
    public let id: String?
    public let reason: String
}

extension FeedMessage {
    /// Decodes a feed written by someone else, one entity at a time: the
    /// message's own framing must be sound (or this throws), but an entity
    /// that does not decode (invalid UTF-8, a malformed field) is left out
    /// and reported, so one broken alert does not hide the others.
    public static func decodingEntities(_ bytes: [UInt8]) throws(ProtobufError) -> (message: FeedMessage, rejected: [RejectedEntity]) {
        var reader = ProtobufReader(bytes[...])
        var header: FeedHeader?
        var entities: [FeedEntity] = []
        var rejected: [RejectedEntity] = []
        var index = 0
        while let (field, value) = try reader.next() {
            switch field {
            case 1: header = try FeedHeader(try value.message())
            case 2:
                let nested = try value.message()
                do { entities.append(try FeedEntity(nested)) } catch {
                    rejected.append(RejectedEntity(index: index, id: FeedEntity.idOnly(nested), reason: error.description))
                }
                index += 1
            default: continue
            }
        }
        guard let header else { throw ProtobufError("FeedMessage without a header") }
        return (FeedMessage(header: header, entities: entities), rejected)
    }
}

extension FeedEntity {
    /// The id of an entity that did not decode, if it can be read.
    static func idOnly(_ reader: ProtobufReader) -> String? {
        var reader = reader
        while let (field, value) = try? reader.next() {
            if field == 1 { return try? value.string() }
        }
        return nil
    }
}

extension FeedHeader {
    func write(to writer: inout ProtobufWriter) {
        writer.string(1, gtfsRealtimeVersion)
        writer.uint(2, UInt64(incrementality))
        if let timestamp { writer.uint(3, timestamp) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var version: String?
        var incrementality = 0
        var timestamp: UInt64?
        while let (field, value) = try reader.next() {
            switch field {
            case 1: version = try value.string()
            case 2: incrementality = Int(try value.uint())
            case 3: timestamp = try value.uint()
            default: continue
            }
        }
        guard let version else { throw ProtobufError("FeedHeader without gtfs_realtime_version") }
        self.init(gtfsRealtimeVersion: version, incrementality: incrementality, timestamp: timestamp)
    }
}

extension FeedEntity {
    func write(to writer: inout ProtobufWriter) {
        writer.string(1, id)
        if let alert { writer.message(5) { alert.write(to: &$0) } }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var id: String?
        var alert: Alert?
        while let (field, value) = try reader.next() {
            switch field {
            case 1: id = try value.string()
            case 5: alert = try Alert(try value.message())
            default: continue
            }
        }
        guard let id else { throw ProtobufError("FeedEntity without an id") }
        self.init(id: id, alert: alert)
    }
}

extension Alert {
    func write(to writer: inout ProtobufWriter) {
        for (field, periods) in [(1, activePeriods), (2, communicationPeriods), (3, impactPeriods)] {
            for period in periods { writer.message(field) { period.write(to: &$0) } }
        }
        for selector in informedEntities { writer.message(5) { selector.write(to: &$0) } }
        if let cause { writer.uint(6, UInt64(cause.rawValue)) }
        if let effect { writer.uint(7, UInt64(effect.rawValue)) }
        if let url { writer.message(8) { url.write(to: &$0) } }
        if let headerText { writer.message(10) { headerText.write(to: &$0) } }
        if let descriptionText { writer.message(11) { descriptionText.write(to: &$0) } }
        if let severityLevel { writer.uint(14, UInt64(severityLevel.rawValue)) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var alert = Alert()
        while let (field, value) = try reader.next() {
            switch field {
            case 1: alert.activePeriods.append(try TimeRange(try value.message()))
            case 2: alert.communicationPeriods.append(try TimeRange(try value.message()))
            case 3: alert.impactPeriods.append(try TimeRange(try value.message()))
            case 5: alert.informedEntities.append(try EntitySelector(try value.message()))
            case 6: alert.cause = Cause(rawValue: Int(try value.uint()))
            case 7: alert.effect = Effect(rawValue: Int(try value.uint()))
            case 8: alert.url = try TranslatedString(try value.message())
            case 10: alert.headerText = try TranslatedString(try value.message())
            case 11: alert.descriptionText = try TranslatedString(try value.message())
            case 14: alert.severityLevel = SeverityLevel(rawValue: Int(try value.uint()))
            default: continue
            }
        }
        self = alert
    }
}

extension EntitySelector {
    func write(to writer: inout ProtobufWriter) {
        if let agencyID { writer.string(1, agencyID) }
        if let routeID { writer.string(2, routeID) }
        // int32 on the wire: a negative value is ten bytes, sign-extended.
        if let routeType { writer.uint(3, UInt64(bitPattern: Int64(routeType))) }
        if let trip { writer.message(4) { trip.write(to: &$0) } }
        if let stopID { writer.string(5, stopID) }
        if let directionID { writer.uint(6, UInt64(directionID)) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        self.init()
        while let (field, value) = try reader.next() {
            switch field {
            case 1: agencyID = try value.string()
            case 2: routeID = try value.string()
            case 3: routeType = Int32(truncatingIfNeeded: Int64(bitPattern: try value.uint()))
            case 4: trip = try TripDescriptor(try value.message())
            case 5: stopID = try value.string()
            case 6: directionID = UInt32(truncatingIfNeeded: try value.uint())
            default: continue
            }
        }
    }
}

extension TripDescriptor {
    func write(to writer: inout ProtobufWriter) {
        if let tripID { writer.string(1, tripID) }
        if let startTime { writer.string(2, startTime) }
        if let startDate { writer.string(3, startDate) }
        if let routeID { writer.string(5, routeID) }
        if let directionID { writer.uint(6, UInt64(directionID)) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        self.init()
        while let (field, value) = try reader.next() {
            switch field {
            case 1: tripID = try value.string()
            case 2: startTime = try value.string()
            case 3: startDate = try value.string()
            case 5: routeID = try value.string()
            case 6: directionID = UInt32(truncatingIfNeeded: try value.uint())
            default: continue
            }
        }
    }
}

extension TimeRange {
    func write(to writer: inout ProtobufWriter) {
        if let start { writer.uint(1, start) }
        if let end { writer.uint(2, end) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        self.init(start: nil, end: nil)
        while let (field, value) = try reader.next() {
            if field == 1 { start = try value.uint() } else if field == 2 { end = try value.uint() }
        }
    }
}

extension TranslatedString {
    func write(to writer: inout ProtobufWriter) {
        for translation in translations {
            writer.message(1) { nested in
                nested.string(1, translation.text)
                if let language = translation.language { nested.string(2, language) }
            }
        }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var translations: [Translation] = []
        while let (field, value) = try reader.next() {
            guard field == 1 else { continue }
            var nested = try value.message()
            var text: String?
            var language: String?
            while let (inner, innerValue) = try nested.next() {
                if inner == 1 { text = try innerValue.string() } else if inner == 2 { language = try innerValue.string() }
            }
            translations.append(Translation(text: text ?? "", language: language))
        }
        self.init(translations)
    }
}
