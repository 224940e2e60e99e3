import Core

/// The protobuf JSON mapping of a FeedMessage (lowerCamelCase names, enums
/// by name, 64-bit integers as strings), for `alerts.pbtext` debugging.
extension FeedMessage {
    public func jsonText() -> String {
        var root: [(String, JSONText)] = [("header", .object(headerFields))]
        if !entities.isEmpty { root.append(("entity", .array(entities.map { .object($0.jsonFields) }))) }
        return JSONText.object(root).rendered(indent: "")
    }

    private var headerFields: [(String, JSONText)] {
        var fields: [(String, JSONText)] = [("gtfsRealtimeVersion", .string(header.gtfsRealtimeVersion))]
        fields.append(("incrementality", .string(header.incrementality == 0 ? "FULL_DATASET" : "DIFFERENTIAL")))
        if let timestamp = header.timestamp { fields.append(("timestamp", .string(String(timestamp)))) }
        return fields
    }
}

extension FeedEntity {
    var jsonFields: [(String, JSONText)] {
        var fields: [(String, JSONText)] = [("id", .string(id))]
        if isDeleted { fields.append(("isDeleted", .bool(true))) }
        if let alert { fields.append(("alert", .object(alert.jsonFields))) }
        return fields
    }
}

extension Alert {
    var jsonFields: [(String, JSONText)] {
        var fields: [(String, JSONText)] = []
        for (name, periods) in [("activePeriod", activePeriods), ("communicationPeriod", communicationPeriods), ("impactPeriod", impactPeriods)]
        where !periods.isEmpty {
            fields.append(
                (
                    name,
                    .array(
                        periods.map { period in
                            var range: [(String, JSONText)] = []
                            if let start = period.start { range.append(("start", .string(String(start)))) }
                            if let end = period.end { range.append(("end", .string(String(end)))) }
                            return .object(range)
                        })
                ))
        }
        if !informedEntities.isEmpty {
            fields.append(
                (
                    "informedEntity",
                    .array(
                        informedEntities.map { .object($0.jsonFields) })
                ))
        }
        if let cause { fields.append(("cause", .string(cause.name))) }
        if let effect { fields.append(("effect", .string(effect.name))) }
        if let url { fields.append(("url", url.json)) }
        if let headerText { fields.append(("headerText", headerText.json)) }
        if let descriptionText { fields.append(("descriptionText", descriptionText.json)) }
        if let ttsHeaderText { fields.append(("ttsHeaderText", ttsHeaderText.json)) }
        if let ttsDescriptionText { fields.append(("ttsDescriptionText", ttsDescriptionText.json)) }
        if let severityLevel { fields.append(("severityLevel", .string(severityLevel.name))) }
        if let image {
            let images = image.localizedImages.map { image -> JSONText in
                var fields: [(String, JSONText)] = [("url", .string(image.url)), ("mediaType", .string(image.mediaType))]
                if let language = image.language { fields.append(("language", .string(language))) }
                return .object(fields)
            }
            fields.append(("image", .object([("localizedImage", .array(images))])))
        }
        if let imageAlternativeText { fields.append(("imageAlternativeText", imageAlternativeText.json)) }
        if let causeDetail { fields.append(("causeDetail", causeDetail.json)) }
        if let effectDetail { fields.append(("effectDetail", effectDetail.json)) }
        return fields
    }
}

extension EntitySelector {
    var jsonFields: [(String, JSONText)] {
        var fields: [(String, JSONText)] = []
        if let agencyID { fields.append(("agencyId", .string(agencyID))) }
        if let routeID { fields.append(("routeId", .string(routeID))) }
        if let routeType { fields.append(("routeType", .number(String(routeType)))) }
        if let trip {
            var nested: [(String, JSONText)] = []
            if let tripID = trip.tripID { nested.append(("tripId", .string(tripID))) }
            if let routeID = trip.routeID { nested.append(("routeId", .string(routeID))) }
            if let directionID = trip.directionID { nested.append(("directionId", .number(String(directionID)))) }
            if let startTime = trip.startTime { nested.append(("startTime", .string(startTime))) }
            if let startDate = trip.startDate { nested.append(("startDate", .string(startDate))) }
            if let relationship = trip.scheduleRelationship {
                // Protobuf JSON names a known enum value and writes an unknown one as its number.
                let name = ScheduleRelationship.names[relationship]
                nested.append(("scheduleRelationship", name.map(JSONText.string) ?? .number(String(relationship))))
            }
            if let modified = trip.modifiedTrip {
                var selector: [(String, JSONText)] = []
                if let value = modified.modificationsID { selector.append(("modificationsId", .string(value))) }
                if let value = modified.affectedTripID { selector.append(("affectedTripId", .string(value))) }
                if let value = modified.startTime { selector.append(("startTime", .string(value))) }
                if let value = modified.startDate { selector.append(("startDate", .string(value))) }
                nested.append(("modifiedTrip", .object(selector)))
            }
            fields.append(("trip", .object(nested)))
        }
        if let stopID { fields.append(("stopId", .string(stopID))) }
        if let directionID { fields.append(("directionId", .number(String(directionID)))) }
        return fields
    }
}

extension TranslatedString {
    var json: JSONText {
        .object([
            (
                "translation",
                .array(
                    translations.map { translation in
                        var fields: [(String, JSONText)] = [("text", .string(translation.text))]
                        if let language = translation.language { fields.append(("language", .string(language))) }
                        return .object(fields)
                    })
            )
        ])
    }
}

/// Ordered JSON for stable, readable output.
indirect enum JSONText {
    case string(String)
    /// A 32-bit number, written bare (64-bit ones are strings in protobuf JSON).
    case number(String)
    case bool(Bool)
    case array([JSONText])
    case object([(String, JSONText)])

    func rendered(indent: String) -> String {
        let inner = indent + "  "
        switch self {
        case .string(let text): return Self.quote(text)
        case .number(let digits): return digits
        case .bool(let value): return value ? "true" : "false"
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[\n" + items.map { inner + $0.rendered(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let fields):
            if fields.isEmpty { return "{}" }
            return "{\n" + fields.map { inner + Self.quote($0.0) + ": " + $0.1.rendered(indent: inner) }.joined(separator: ",\n") + "\n" + indent
                + "}"
        }
    }

    static func quote(_ text: String) -> String { jsonQuoted(text) }
}
