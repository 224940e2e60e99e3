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
        if isDeleted { writer.bool(2, true) }
        if let alert { writer.message(5) { alert.write(to: &$0) } }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var id: String?
        var isDeleted = false
        var alert: Alert?
        while let (field, value) = try reader.next() {
            switch field {
            case 1: id = try value.string()
            case 2: isDeleted = try value.uint() != 0
            case 5: alert = try Alert(try value.message())
            default: continue
            }
        }
        guard let id else { throw ProtobufError("FeedEntity without an id") }
        self.init(id: id, isDeleted: isDeleted, alert: alert)
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
        if let ttsHeaderText { writer.message(12) { ttsHeaderText.write(to: &$0) } }
        if let ttsDescriptionText { writer.message(13) { ttsDescriptionText.write(to: &$0) } }
        if let severityLevel { writer.uint(14, UInt64(severityLevel.rawValue)) }
        if let image { writer.message(15) { image.write(to: &$0) } }
        if let imageAlternativeText { writer.message(16) { imageAlternativeText.write(to: &$0) } }
        if let causeDetail { writer.message(17) { causeDetail.write(to: &$0) } }
        if let effectDetail { writer.message(18) { effectDetail.write(to: &$0) } }
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
            case 6:
                let raw = try value.uint()
                alert.cause = Cause(rawValue: Int(clamping: raw))
                if alert.cause == nil { alert.unrecognized.append("cause \(raw)") }
            case 7:
                let raw = try value.uint()
                alert.effect = Effect(rawValue: Int(clamping: raw))
                if alert.effect == nil { alert.unrecognized.append("effect \(raw)") }
            case 8: alert.url = try TranslatedString(try value.message())
            case 10: alert.headerText = try TranslatedString(try value.message())
            case 11: alert.descriptionText = try TranslatedString(try value.message())
            case 12: alert.ttsHeaderText = try TranslatedString(try value.message())
            case 13: alert.ttsDescriptionText = try TranslatedString(try value.message())
            case 14:
                let raw = try value.uint()
                alert.severityLevel = SeverityLevel(rawValue: Int(clamping: raw))
                if alert.severityLevel == nil { alert.unrecognized.append("severity_level \(raw)") }
            case 15: alert.image = try TranslatedImage(try value.message())
            case 16: alert.imageAlternativeText = try TranslatedString(try value.message())
            case 17: alert.causeDetail = try TranslatedString(try value.message())
            case 18: alert.effectDetail = try TranslatedString(try value.message())
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
        if let scheduleRelationship { writer.uint(4, UInt64(clamping: scheduleRelationship)) }
        if let routeID { writer.string(5, routeID) }
        if let directionID { writer.uint(6, UInt64(directionID)) }
        if let modifiedTrip { writer.message(7) { modifiedTrip.write(to: &$0) } }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        self.init()
        while let (field, value) = try reader.next() {
            switch field {
            case 1: tripID = try value.string()
            case 2: startTime = try value.string()
            case 3: startDate = try value.string()
            case 4: scheduleRelationship = Int(clamping: try value.uint())
            case 5: routeID = try value.string()
            case 6: directionID = UInt32(truncatingIfNeeded: try value.uint())
            case 7: modifiedTrip = try ModifiedTripSelector(try value.message())
            default: continue
            }
        }
    }
}

extension ModifiedTripSelector {
    func write(to writer: inout ProtobufWriter) {
        if let modificationsID { writer.string(1, modificationsID) }
        if let affectedTripID { writer.string(2, affectedTripID) }
        if let startTime { writer.string(3, startTime) }
        if let startDate { writer.string(4, startDate) }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        self.init()
        while let (field, value) = try reader.next() {
            switch field {
            case 1: modificationsID = try value.string()
            case 2: affectedTripID = try value.string()
            case 3: startTime = try value.string()
            case 4: startDate = try value.string()
            default: continue
            }
        }
    }
}

extension TranslatedImage {
    func write(to writer: inout ProtobufWriter) {
        for image in localizedImages {
            writer.message(1) { nested in
                nested.string(1, image.url)
                nested.string(2, image.mediaType)
                if let language = image.language { nested.string(3, language) }
            }
        }
    }

    init(_ reader: ProtobufReader) throws(ProtobufError) {
        var reader = reader
        var images: [LocalizedImage] = []
        while let (field, value) = try reader.next() {
            guard field == 1 else { continue }
            var nested = try value.message()
            var url = ""
            var mediaType = ""
            var language: String?
            while let (inner, innerValue) = try nested.next() {
                switch inner {
                case 1: url = try innerValue.string()
                case 2: mediaType = try innerValue.string()
                case 3: language = try innerValue.string()
                default: continue
                }
            }
            images.append(LocalizedImage(url: url, mediaType: mediaType, language: language))
        }
        self.init(images)
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
