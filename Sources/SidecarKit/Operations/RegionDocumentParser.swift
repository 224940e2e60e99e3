import Core
import Crypto
import FoundationEssentials
import GTFSRealtime
import Push

/// Reads a `sidecar-export/1` document and checks it against the regions
/// directory and the rules authored content obeys, naming the place of
/// every problem (`alerts[2].cause`), before anything is written.
enum RegionDocumentParser {
    static let format = RegionExchange.format
    typealias Document = RegionExchange.Document
    typealias Failure = RegionExchange.Failure
    typealias Alert = RegionExchange.Alert
    typealias Translation = RegionExchange.Translation
    typealias Study = RegionExchange.Study
    typealias Survey = RegionExchange.Survey
    typealias Question = RegionExchange.Question
    typealias Response = RegionExchange.Response
    typealias Registration = RegionExchange.Registration
    typealias GhostBusReport = RegionExchange.GhostBusReport
    typealias MirrorLink = RegionExchange.MirrorLink
    typealias Source = RegionExchange.Source

    /// What a parse noticed without refusing: the fields it skipped.
    final class Notes {
        /// Refuse a field this sidecar does not know (`import --strict`)
        /// instead of skipping it.
        let strict: Bool
        /// Fields skipped, by place (`alerts[2].priority`).
        var skipped: [String] = []
        init(strict: Bool) { self.strict = strict }
    }

    /// One JSON object of the document: a member it does not know (a newer
    /// exporter's) is skipped and listed, or refused when strict (a typo
    /// must not be dropped silently either way); names the place of every
    /// problem (`alerts[2].cause`).
    struct Reader {
        let path: String
        let members: [String: JSONValue]
        let notes: Notes

        init(_ value: JSONValue, at path: String, notes: Notes, keys: Set<String>) throws(Failure) {
            guard case .object(let members) = value else { throw Failure("\(path) must be an object") }
            for unknown in members.keys.sorted() where !keys.contains(unknown) {
                let place = "\(path.isEmpty ? "" : path + ".")\(unknown)"
                if notes.strict {
                    throw Failure(
                        "\(place) is not a field of \(format) (known: \(keys.sorted().joined(separator: ", ")); without --strict it is skipped)")
                }
                notes.skipped.append(place)
            }
            self.path = path
            self.members = members
            self.notes = notes
        }

        func place(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

        /// A string; missing or null reads as "" (Go's zero value).
        func string(_ key: String) throws(Failure) -> String {
            switch members[key] {
            case nil, .null?: return ""
            case .string(let value)?: return value
            default: throw Failure("\(place(key)) must be a string")
            }
        }

        func required(_ key: String) throws(Failure) -> String {
            let value = try string(key)
            guard !value.isEmpty else { throw Failure("\(place(key)) is required") }
            return value
        }

        func optionalInteger(_ key: String) throws(Failure) -> Int64? {
            switch members[key] {
            case nil, .null?: return nil
            case .integer(let value)?: return value
            case .double(let value)? where value == value.rounded() && abs(value) < 9e15: return Int64(value)
            default: throw Failure("\(place(key)) must be a whole number")
            }
        }

        func integer(_ key: String) throws(Failure) -> Int64 { try optionalInteger(key) ?? 0 }

        func optionalNumber(_ key: String) throws(Failure) -> Double? {
            switch members[key] {
            case nil, .null?: return nil
            case .integer(let value)?: return Double(value)
            case .double(let value)? where value.isFinite: return value
            default: throw Failure("\(place(key)) must be a number")
            }
        }

        func optionalBool(_ key: String) throws(Failure) -> Bool? {
            switch members[key] {
            case nil, .null?: return nil
            case .bool(let value)?: return value
            default: throw Failure("\(place(key)) must be true or false")
            }
        }

        func bool(_ key: String) throws(Failure) -> Bool { try optionalBool(key) ?? false }

        /// An RFC 3339 instant as epoch milliseconds.
        func optionalTime(_ key: String) throws(Failure) -> EpochMillis? {
            switch members[key] {
            case nil, .null?: return nil
            case .string(let text)?:
                guard let millis = Timestamp.parseMillis(text) else {
                    throw Failure("\(place(key)) must be an RFC 3339 time with an offset, e.g. 2026-12-01T08:00:00Z (got '\(text)')")
                }
                return EpochMillis(millis)
            default: throw Failure("\(place(key)) must be an RFC 3339 time string")
            }
        }

        func time(_ key: String) throws(Failure) -> EpochMillis {
            guard let value = try optionalTime(key) else { throw Failure("\(place(key)) is required") }
            return value
        }

        func array(_ key: String) throws(Failure) -> [(JSONValue, String)] {
            switch members[key] {
            case nil, .null?: return []
            case .array(let items)?: return items.enumerated().map { ($1, "\(place(key))[\($0)]") }
            default: throw Failure("\(place(key)) must be an array")
            }
        }

        func optionalStrings(_ key: String) throws(Failure) -> [String]? {
            switch members[key] {
            case nil, .null?: return nil
            case .array(let items)?:
                var strings: [String] = []
                for item in items {
                    guard case .string(let value) = item else { throw Failure("\(place(key)) must list strings") }
                    strings.append(value)
                }
                return strings
            default: throw Failure("\(place(key)) must be an array of strings or null")
            }
        }

        func raw(_ key: String) -> JSONValue { members[key] ?? .null }
    }

    /// Reads and checks a whole document against the regions directory.
    static func parse(_ value: JSONValue, regions: RegionDirectory, strict: Bool = true) throws(Failure) -> Document {
        let notes = Notes(strict: strict)
        let top = try Reader(
            value, at: "", notes: notes,
            keys: [
                "format", "exported_at", "region_id", "alerts", "studies", "survey_responses",
                "push_registrations", "ghost_bus_reports", "alert_sources",
            ])
        let declared = try top.string("format")
        guard declared == format else { throw Failure("format is '\(declared)'; this sidecar reads \(format)") }
        _ = try top.optionalTime("exported_at")
        guard let regionNumber = try top.optionalInteger("region_id") else { throw Failure("region_id is required") }
        guard let region = regions.region(id: Int(clamping: regionNumber)) else {
            throw Failure("region \(regionNumber) is not in the regions directory (see sidecar region list)")
        }
        let causes = Set(Cause.allCases.map(\.name)), effects = Set(Effect.allCases.map(\.name)), severities = Set(SeverityLevel.allCases.map(\.name))
        func enumName(_ reader: Reader, _ key: String, _ names: Set<String>, default fallback: String) throws(Failure) -> String {
            let name = try reader.string(key)
            if name.isEmpty { return fallback }
            guard names.contains(name) else {
                throw Failure("\(reader.place(key)) '\(name)' is not one of \(names.sorted().joined(separator: ", "))")
            }
            return name
        }

        var alerts: [Alert] = []
        /// Alerts the document gives no severity (OBACloud's older exports).
        var unrated: [Int64] = []
        for (item, path) in try top.array("alerts") {
            let r = try Reader(
                item, at: path, notes: notes,
                keys: Set([
                    "id", "agency_id", "header_text", "description_text", "url", "cause", "effect", "severity",
                    "start_time", "end_time", "published", "is_test", "created_at", "updated_at", "translations",
                    "impact_start_time", "impact_end_time", "scope",
                ]).union(mirrorKeys))
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var translations: [Translation] = []
            for (item, path) in try r.array("translations") {
                let t = try Reader(
                    item, at: path, notes: notes,
                    keys: ["language", "header_text", "description_text", "source_header_text", "source_description_text"])
                let language = try t.required("language")
                guard language != "en" else { throw Failure("\(t.place("language")) must not be en (English is the alert's own text)") }
                translations.append(
                    Translation(
                        language: language, header: try t.required("header_text"), description: try t.string("description_text"),
                        sourceHeader: try t.string("source_header_text"), sourceDescription: try t.string("source_description_text")))
            }
            let start = try r.time("start_time")
            alerts.append(
                Alert(
                    id: id, agencyID: try r.string("agency_id"), header: try r.required("header_text"),
                    description: try r.string("description_text"), url: try r.string("url"),
                    cause: try enumName(r, "cause", causes, default: Cause.unknownCause.name),
                    effect: try enumName(r, "effect", effects, default: Effect.unknownEffect.name),
                    severity: try enumName(r, "severity", severities, default: SeverityLevel.unknownSeverity.name),
                    start: start, end: try r.optionalTime("end_time"), published: try r.bool("published"), test: try r.bool("is_test"),
                    created: try r.optionalTime("created_at") ?? start, updated: try r.optionalTime("updated_at") ?? start,
                    translations: translations, impactStart: try r.optionalTime("impact_start_time"),
                    impactEnd: try r.optionalTime("impact_end_time"), mirror: try mirrorLink(r)))
            try checkPeriods(alerts[alerts.count - 1], r)
            if try r.string("severity").isEmpty { unrated.append(id) }
            // Held to the rules of a scope typed in the console.
            if let scope = try r.string("scope").presence {
                switch AlertScope.parse(scope, agencyID: alerts[alerts.count - 1].agencyID) {
                case .success(let selectors): alerts[alerts.count - 1].scope = selectors
                case .failure(let failure): throw Failure("\(r.place("scope")): \(failure.messages.joined(separator: "; "))")
                }
            }
        }

        var studies: [Study] = []
        for (item, path) in try top.array("studies") {
            let r = try Reader(item, at: path, notes: notes, keys: ["id", "name", "description", "created_at", "updated_at", "surveys"])
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var surveys: [Survey] = []
            for (item, path) in try r.array("surveys") {
                let s = try Reader(
                    item, at: path, notes: notes,
                    keys: [
                        "id", "name", "available", "start_time", "end_time", "show_on_map", "show_on_stops",
                        "always_visible", "allows_multiple_responses", "visible_stop_list", "visible_route_list",
                        "created_at", "updated_at", "questions",
                    ])
                let surveyID = try s.integer("id")
                guard surveyID > 0 else { throw Failure("\(s.place("id")) must be a positive number") }
                let (start, end) = (try s.optionalTime("start_time"), try s.optionalTime("end_time"))
                guard (start == nil) == (end == nil) else { throw Failure("\(path) has only one of start_time and end_time; set both or neither") }
                var questions: [Question] = []
                for (item, path) in try s.array("questions") {
                    let q = try Reader(item, at: path, notes: notes, keys: ["id", "position", "required", "content"])
                    let questionID = try q.integer("id")
                    guard questionID > 0 else { throw Failure("\(q.place("id")) must be a positive number") }
                    let content = q.raw("content")
                    guard case .object(let members) = content, let type = members["type"]?.scalarText, SurveyQuestion.types.contains(type) else {
                        throw Failure(
                            "\(q.place("content")) must be an object whose type is one of \(SurveyQuestion.types.sorted().joined(separator: ", "))")
                    }
                    questions.append(
                        Question(id: questionID, position: try q.integer("position"), required: try q.bool("required"), content: content))
                }
                let created = try s.optionalTime("created_at") ?? 0
                surveys.append(
                    Survey(
                        id: surveyID, name: try s.required("name"), available: try s.bool("available"), start: start, end: end,
                        showOnMap: try s.bool("show_on_map"), showOnStops: try s.bool("show_on_stops"),
                        alwaysVisible: try s.bool("always_visible"), allowsMultipleResponses: try s.bool("allows_multiple_responses"),
                        visibleStops: try s.optionalStrings("visible_stop_list"), visibleRoutes: try s.optionalStrings("visible_route_list"),
                        created: created, updated: try s.optionalTime("updated_at") ?? created, questions: questions))
            }
            let created = try r.optionalTime("created_at") ?? 0
            studies.append(
                Study(
                    id: id, name: try r.required("name"), description: try r.string("description"), created: created,
                    updated: try r.optionalTime("updated_at") ?? created, surveys: surveys))
        }

        var responses: [Response] = []
        for (item, path) in try top.array("survey_responses") {
            let r = try Reader(
                item, at: path, notes: notes,
                keys: [
                    "survey_id", "public_id", "user_identifier", "stop_identifier", "stop_latitude",
                    "stop_longitude", "answers", "created_at", "updated_at",
                ])
            guard case .array = r.raw("answers") else { throw Failure("\(r.place("answers")) must be an array of answers") }
            let created = try r.optionalTime("created_at") ?? 0
            responses.append(
                Response(
                    surveyID: try r.integer("survey_id"), publicID: try r.required("public_id"),
                    user: try r.required("user_identifier"), stop: try r.string("stop_identifier"),
                    latitude: try r.optionalNumber("stop_latitude"), longitude: try r.optionalNumber("stop_longitude"),
                    answers: r.raw("answers"), created: created, updated: try r.optionalTime("updated_at") ?? created))
        }

        var registrations: [Registration] = []
        for (item, path) in try top.array("push_registrations") {
            let r = try Reader(
                item, at: path, notes: notes,
                keys: [
                    "token", "operating_system", "locale", "apns_sandbox", "test_device", "description",
                    "last_seen_at", "created_at",
                ])
            guard let system = PushPlatform(rawValue: try r.string("operating_system")) else {
                throw Failure("\(r.place("operating_system")) must be ios or android")
            }
            let created = try r.optionalTime("created_at") ?? 0
            registrations.append(
                Registration(
                    token: try r.required("token"), operatingSystem: system, locale: try r.string("locale"),
                    sandbox: try r.bool("apns_sandbox"), testDevice: try r.bool("test_device"),
                    description: try r.string("description"), lastSeen: try r.optionalTime("last_seen_at") ?? created,
                    created: created))
        }

        var reports: [GhostBusReport] = []
        for (item, path) in try top.array("ghost_bus_reports") {
            let r = try Reader(
                item, at: path, notes: notes,
                keys: [
                    "public_id", "user_identifier", "trip_identifier", "service_date_ms", "route_identifier",
                    "stop_identifier", "vehicle_identifier", "stop_sequence", "predicted",
                    "schedule_deviation_minutes", "wait_duration_minutes", "comment", "user_latitude",
                    "user_longitude", "scheduled_arrival_ms", "predicted_arrival_ms", "prediction_last_updated_ms",
                    "snapshot_status", "snapshot", "snapshot_captured_at", "created_at",
                ])
            let status = try r.string("snapshot_status")
            guard ["pending", "captured", "unavailable"].contains(status) else {
                throw Failure("\(r.place("snapshot_status")) must be pending, captured or unavailable")
            }
            let snapshot = r.raw("snapshot")
            if status == "captured" {
                guard case .object = snapshot else { throw Failure("\(r.place("snapshot")) must be an object when snapshot_status is captured") }
            }
            reports.append(
                GhostBusReport(
                    publicID: try r.required("public_id"), user: try r.required("user_identifier"), trip: try r.required("trip_identifier"),
                    serviceDate: EpochMillis(try r.integer("service_date_ms")), route: try r.string("route_identifier"),
                    stop: try r.string("stop_identifier"),
                    vehicle: try r.string("vehicle_identifier"), stopSequence: try r.optionalInteger("stop_sequence"),
                    predicted: try r.optionalBool("predicted"),
                    deviation: try r.optionalInteger("schedule_deviation_minutes"), wait: try r.integer("wait_duration_minutes"),
                    comment: try r.string("comment"), latitude: try r.optionalNumber("user_latitude"),
                    longitude: try r.optionalNumber("user_longitude"),
                    scheduled: try r.optionalInteger("scheduled_arrival_ms").map { EpochMillis($0) },
                    predictedArrival: try r.optionalInteger("predicted_arrival_ms").map { EpochMillis($0) },
                    predictionUpdated: try r.optionalInteger("prediction_last_updated_ms").map { EpochMillis($0) }, status: status,
                    snapshot: status == "captured" ? snapshot : nil, capturedAt: try r.optionalTime("snapshot_captured_at"),
                    created: try r.optionalTime("created_at") ?? 0))
        }
        var document = Document(
            regionID: region.id, alerts: alerts, studies: studies, responses: responses, registrations: registrations, reports: reports)
        document.sources = try sources(top, regionID: region.id)
        document.skippedFields = notes.skipped
        document.unratedAlerts = unrated
        for alert in alerts {
            if let link = alert.mirror, !document.sources.contains(where: { $0.settings.id == link.sourceID }) {
                throw Failure("alert \(alert.id) comes from alert source \(link.sourceID), which the document does not carry")
            }
        }
        return document
    }

    /// An impact period is refused on import exactly as when authored: both
    /// or neither, and inside the shown period.
    static func checkPeriods(_ alert: Alert, _ reader: Reader) throws(Failure) {
        var probe = ServiceAlert(
            id: alert.id, regionID: 0, agencyID: "", header: "", description: "", url: nil, cause: .unknownCause,
            effect: .unknownEffect, severity: .unknownSeverity, startsAt: alert.start.seconds, endsAt: alert.end.map(\.seconds),
            published: false, test: false, sourceVersion: 1, createdAt: 0, updatedAt: 0)
        probe.impactStartsAt = alert.impactStart.map(\.seconds)
        probe.impactEndsAt = alert.impactEnd.map(\.seconds)
        if let problem = AlertInputRules.periodProblems(probe).first { throw Failure("\(reader.place("impact_start_time")): \(problem)") }
    }

    static let mirrorKeys: Set<String> = ["source_id", "source_entity", "source_alert", "in_feed", "withdrawn_at"]

    static func mirrorLink(_ reader: Reader) throws(Failure) -> MirrorLink? {
        guard let sourceID = try reader.optionalInteger("source_id") else { return nil }
        let entity = try reader.required("source_entity")
        guard let bytes = Base64URL.decode(try reader.string("source_alert")), AlertSourceMapping.decoded(bytes) != nil else {
            throw Failure("\(reader.place("source_alert")) is not a stored GTFS-realtime alert")
        }
        return MirrorLink(
            sourceID: sourceID, entityID: entity, message: bytes, inFeed: try reader.optionalBool("in_feed") ?? true,
            withdrawnAt: try reader.optionalTime("withdrawn_at"))
    }

    static func sources(_ top: Reader, regionID: Int) throws(Failure) -> [Source] {
        let notes = top.notes
        var sources: [Source] = []
        for (item, path) in try top.array("alert_sources") {
            let r = try Reader(
                item, at: path, notes: notes,
                keys: [
                    "id", "url", "mode", "interval_seconds", "push", "min_severity", "effects", "scope", "quiet_hours", "audience",
                    "flood_threshold", "push_corrections", "pushes_per_hour", "allow_private", "allow_link_local", "max_bytes", "needs_headers",
                    "created_at", "alerts",
                ])
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var fields: [String: String] = [
                "url": try r.required("url"), "mode": try r.string("mode"), "interval": String(try r.integer("interval_seconds")),
                "push": try r.string("push"), "min_severity": try r.string("min_severity"), "effects": try r.string("effects"),
                "scope": try r.string("scope"), "quiet_hours": try r.string("quiet_hours"), "audience": try r.string("audience"),
                "flood_threshold": String(try r.integer("flood_threshold")), "push_corrections": String(try r.bool("push_corrections")),
                "allow_private": String(try r.bool("allow_private")), "allow_link_local": String(try r.bool("allow_link_local")),
                "max_bytes": String(try r.integer("max_bytes")),
            ]
            if let perHour = try r.optionalInteger("pushes_per_hour") { fields["pushes_per_hour"] = String(perHour) }
            fields = fields.filter { !$0.value.isEmpty || $0.key == "quiet_hours" }
            let created = (try r.optionalTime("created_at") ?? 0).seconds
            var settings: AlertSource
            switch AlertSourceRules.settings(fields, regionID: regionID, base: nil, now: created, naming: .api) {
            case .success(let valid): settings = valid
            case .failure(let failure): throw Failure("\(path): \(failure.messages.joined(separator: "; "))")
            }
            settings.id = id
            var alerts: [SourceAlertState] = []
            for (item, path) in try r.array("alerts") {
                let a = try Reader(
                    item, at: path, notes: notes,
                    keys: [
                        "entity_id", "alert_id", "content_hash", "material_hash", "decision", "reason", "pushed_at", "present", "changed_at",
                        "first_seen_at", "hidden",
                    ])
                let changed = (try a.time("changed_at")).seconds
                alerts.append(
                    SourceAlertState(
                        sourceID: id, entityID: try a.required("entity_id"), alertID: try a.integer("alert_id"),
                        contentHash: try a.string("content_hash"), materialHash: try a.string("material_hash"),
                        decision: SourceAlertState.Decision(rawValue: try a.string("decision")) ?? .skipped,
                        reason: try a.string("reason").presence, notBefore: nil, pushedAt: try a.optionalTime("pushed_at").map(\.seconds),
                        sendID: nil, present: try a.bool("present"), changedAt: changed,
                        firstSeenAt: try a.optionalTime("first_seen_at").map(\.seconds) ?? changed, hidden: try a.bool("hidden")))
            }
            let names = try r.optionalStrings("needs_headers") ?? []
            sources.append(Source(settings: settings, headerNames: names, alerts: alerts))
        }
        return sources
    }
}
