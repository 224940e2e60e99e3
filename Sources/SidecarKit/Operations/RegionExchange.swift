import Core
import Database
import FoundationEssentials
import GTFSRealtime

/// `sidecar export` and `sidecar import`: one region's agency content and
/// rider state as a `sidecar-export/1` document, the interchange format
/// OBACloud exports and the reference sidecar imports. Ids the apps keep
/// (alert ids inside feed entity ids, survey and question ids) are carried
/// as they are, so a region that moves looks unchanged to riders.
///
/// Instants are RFC 3339 in UTC; `*_ms` fields are epoch milliseconds as on
/// the wire they came from. Importing is idempotent: a row that is already
/// there (same id, public id, or region and token) is left alone and counted
/// as present, so importing a later export adds only what is new.
enum RegionExchange {
    static let format = "sidecar-export/1"

    /// Why a document cannot be imported (or a region exported).
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// What an import did (or would do), per kind.
    struct Summary: Equatable, Sendable {
        struct Counts: Equatable, Sendable {
            var added = 0
            var present = 0
        }
        var alerts = Counts(), translations = Counts(), studies = Counts(), surveys = Counts(), questions = Counts()
        var surveyResponses = Counts(), pushRegistrations = Counts(), ghostBusReports = Counts()

        var lines: [String] {
            let kinds: [(label: String, counts: Counts)] = [
                ("alerts", alerts), ("translations", translations), ("studies", studies), ("surveys", surveys), ("questions", questions),
                ("survey responses", surveyResponses), ("push registrations", pushRegistrations), ("ghost bus reports", ghostBusReports)]
            return kinds.map { kind in
                let padding = String(repeating: " ", count: max(1, 20 - kind.label.count))
                return "  \(kind.label)\(padding)\(kind.counts.added) added, \(kind.counts.present) already present"
            }
        }
    }

    // MARK: - Export

    /// The region's document, read in one snapshot.
    static func export(regionID: Int, database: any Database, nowMillis: Int64) async throws -> JSONValue {
        let region = Int64(regionID)
        return try await database.read { connection in
            var alerts: [JSONValue] = []
            for row in try connection.query("SELECT * FROM alerts WHERE region_id = \(region) ORDER BY id") {
                let id = try row.int("id")
                let sourceVersion = try row.int("source_version")
                let translations = try connection.query("SELECT * FROM alert_translations WHERE alert_id = \(id) ORDER BY language").map { translation -> JSONValue in
                        // A translation made before its source text was kept
                        // was made from the current text when it is current.
                        let current = try translation.optionalInt("source_version") == sourceVersion
                        let sourceHeader = try translation.optionalString("source_header") ?? (current ? try row.optionalString("header") : nil) ?? ""
                        let sourceDescription = try translation.optionalString("source_description") ?? (current ? try row.optionalString("description") : nil) ?? ""
                        return .object([
                            "language": .string(try translation.string("language")),
                            "header_text": .string(try translation.string("header")),
                            "description_text": .string(try translation.optionalString("description") ?? ""),
                            "source_header_text": .string(sourceHeader), "source_description_text": .string(sourceDescription),
                        ])
                    }
                var alert: [String: JSONValue] = [
                    "id": .integer(id), "agency_id": try text(row, "agency_id"), "header_text": try text(row, "header"),
                    "description_text": try text(row, "description"), "url": try text(row, "url"), "cause": try text(row, "cause"),
                    "effect": try text(row, "effect"), "severity": try text(row, "severity"), "start_time": try seconds(row, "starts_at"),
                    "end_time": try seconds(row, "ends_at"), "published": .bool(try row.bool("published")), "is_test": .bool(try row.bool("test")),
                    "created_at": try seconds(row, "created_at"), "updated_at": try seconds(row, "updated_at"), "translations": .array(translations),
                ]
                // Optional members (a Sidecar extension): only when set, so
                // documents without an impact period stay as OBACloud writes them.
                if try row.optionalInt("impact_starts_at") != nil, try row.optionalInt("impact_ends_at") != nil {
                    alert["impact_start_time"] = try seconds(row, "impact_starts_at")
                    alert["impact_end_time"] = try seconds(row, "impact_ends_at")
                }
                alerts.append(.object(alert))
            }
            var studies: [JSONValue] = []
            for study in try connection.query("SELECT * FROM studies WHERE region_id = \(region) ORDER BY id") {
                var surveys: [JSONValue] = []
                for survey in try connection.query("SELECT * FROM surveys WHERE study_id = \(study.int("id")) ORDER BY id") {
                    let questions = try connection.query("SELECT * FROM survey_questions WHERE survey_id = \(survey.int("id")) ORDER BY position, id").map { question -> JSONValue in
                        .object(["id": .integer(try question.int("id")), "position": .integer(try question.int("position")),
                                 "required": .bool(try question.bool("required")), "content": json(try question.optionalString("content")) ?? .object([:])])
                    }
                    surveys.append(.object([
                        "id": .integer(try survey.int("id")), "name": try text(survey, "name"), "available": .bool(try survey.bool("available")),
                        "start_time": try seconds(survey, "start_date"), "end_time": try seconds(survey, "end_date"),
                        "show_on_map": .bool(try survey.bool("show_on_map")), "show_on_stops": .bool(try survey.bool("show_on_stops")),
                        "always_visible": .bool(try survey.bool("always_visible")),
                        "allows_multiple_responses": .bool(try survey.bool("allows_multiple_responses")),
                        "visible_stop_list": json(try survey.optionalString("visible_stop_list")) ?? .null,
                        "visible_route_list": json(try survey.optionalString("visible_route_list")) ?? .null,
                        "created_at": try seconds(survey, "created_at"), "updated_at": try seconds(survey, "updated_at"), "questions": .array(questions),
                    ]))
                }
                studies.append(.object([
                    "id": .integer(try study.int("id")), "name": try text(study, "name"), "description": try text(study, "description"),
                    "created_at": try seconds(study, "created_at"), "updated_at": try seconds(study, try study.optionalInt("updated_at") == nil ? "created_at" : "updated_at"),
                    "surveys": .array(surveys),
                ]))
            }
            let responses = try connection.query("""
                SELECT r.* FROM survey_responses r JOIN surveys s ON s.id = r.survey_id WHERE s.region_id = \(region) ORDER BY r.id
                """).map { row -> JSONValue in
                    .object(["survey_id": .integer(try row.int("survey_id")), "public_id": try text(row, "public_id"),
                             "user_identifier": try text(row, "user_identifier"), "stop_identifier": try text(row, "stop_identifier"),
                             "stop_latitude": try number(row, "stop_latitude"), "stop_longitude": try number(row, "stop_longitude"),
                             "answers": json(try row.optionalString("responses")) ?? .array([]),
                             "created_at": try seconds(row, "created_at"), "updated_at": try seconds(row, "updated_at")])
                }
            let registrations = try connection.query("SELECT * FROM push_registrations WHERE region_id = \(region) ORDER BY id").map { row -> JSONValue in
                .object(["token": try text(row, "token"), "operating_system": try text(row, "operating_system"), "locale": try text(row, "locale"),
                         "apns_sandbox": .bool(try row.bool("apns_sandbox")), "test_device": .bool(try row.bool("test_device")),
                         "description": try text(row, "description"), "last_seen_at": try millis(row, "last_seen_at"), "created_at": try millis(row, "created_at")])
            }
            let reports = try connection.query("SELECT * FROM ghost_bus_reports WHERE region_id = \(region) ORDER BY id").map { row -> JSONValue in
                let snapshot = json(try row.optionalString("trip_snapshot"))
                let status = snapshot != nil ? "captured" : (try row.int("snapshot_attempts")) > 0 ? "unavailable" : "pending"
                return .object([
                    "public_id": try text(row, "public_id"), "user_identifier": try text(row, "user_identifier"),
                    "trip_identifier": try text(row, "trip_identifier"), "service_date_ms": try integer(row, "service_date", orZero: true),
                    "route_identifier": try text(row, "route_identifier"), "stop_identifier": try text(row, "stop_identifier"),
                    "vehicle_identifier": try text(row, "vehicle_identifier"), "stop_sequence": try integer(row, "stop_sequence"),
                    "predicted": try row.optionalInt("predicted").map { .bool($0 != 0) } ?? .null,
                    "schedule_deviation_minutes": try integer(row, "schedule_deviation_minutes"),
                    "wait_duration_minutes": try integer(row, "wait_duration_minutes", orZero: true), "comment": try text(row, "comment"),
                    "user_latitude": try number(row, "user_latitude"), "user_longitude": try number(row, "user_longitude"),
                    "scheduled_arrival_ms": try integer(row, "scheduled_arrival_at"), "predicted_arrival_ms": try integer(row, "predicted_arrival_at"),
                    "prediction_last_updated_ms": try integer(row, "prediction_last_updated_at"), "snapshot_status": .string(status),
                    "snapshot": snapshot ?? .null, "snapshot_captured_at": try millis(row, "snapshot_captured_at"), "created_at": try millis(row, "created_at"),
                ])
            }
            return .object([
                "format": .string(format), "exported_at": .string(Timestamp.format(millis: nowMillis)), "region_id": .integer(region),
                "alerts": .array(alerts), "studies": .array(studies), "survey_responses": .array(responses),
                "push_registrations": .array(registrations), "ghost_bus_reports": .array(reports),
            ])
        }
    }

    static func text(_ row: Row, _ column: String) throws -> JSONValue { .string(try row.optionalString(column) ?? "") }
    static func seconds(_ row: Row, _ column: String) throws -> JSONValue { try row.optionalInt(column).map { .string(Timestamp.format(seconds: $0)) } ?? .null }
    static func millis(_ row: Row, _ column: String) throws -> JSONValue { try row.optionalInt(column).map { .string(Timestamp.format(millis: $0)) } ?? .null }
    static func number(_ row: Row, _ column: String) throws -> JSONValue { try row.optionalDouble(column).map(JSONValue.double) ?? .null }
    static func integer(_ row: Row, _ column: String, orZero: Bool = false) throws -> JSONValue {
        try row.optionalInt(column).map(JSONValue.integer) ?? (orZero ? .integer(0) : .null)
    }
    static func json(_ text: String?) -> JSONValue? {
        guard let text else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }
    static func encoded(_ value: JSONValue) -> String { String(decoding: value.encoded(), as: UTF8.self) }
}

// MARK: - Reading a document

extension RegionExchange {
    struct Alert {
        var id: Int64, agencyID: String, header: String, description: String, url: String, cause: String, effect: String, severity: String
        var start: Int64, end: Int64?, published: Bool, test: Bool, created: Int64, updated: Int64
        var translations: [Translation]
        /// Epoch milliseconds, both or neither.
        var impactStart: Int64? = nil, impactEnd: Int64? = nil
    }
    struct Translation { var language: String, header: String, description: String, sourceHeader: String, sourceDescription: String }
    struct Study { var id: Int64, name: String, description: String, created: Int64, updated: Int64, surveys: [Survey] }
    struct Survey {
        var id: Int64, name: String, available: Bool, start: Int64?, end: Int64?, showOnMap: Bool, showOnStops: Bool, alwaysVisible: Bool
        var allowsMultipleResponses: Bool, visibleStops: [String]?, visibleRoutes: [String]?, created: Int64, updated: Int64
        var questions: [Question]
    }
    struct Question { var id: Int64, position: Int64, required: Bool, content: JSONValue }
    struct Response {
        var surveyID: Int64, publicID: String, user: String, stop: String, latitude: Double?, longitude: Double?, answers: JSONValue
        var created: Int64, updated: Int64
    }
    struct Registration {
        var token: String, operatingSystem: String, locale: String, sandbox: Bool, testDevice: Bool, description: String
        var lastSeen: Int64, created: Int64
    }
    struct GhostBusReport {
        var publicID: String, user: String, trip: String, serviceDate: Int64, route: String, stop: String, vehicle: String
        var stopSequence: Int64?, predicted: Bool?, deviation: Int64?, wait: Int64, comment: String, latitude: Double?, longitude: Double?
        var scheduled: Int64?, predictedArrival: Int64?, predictionUpdated: Int64?, status: String, snapshot: JSONValue?, capturedAt: Int64?
        var created: Int64
    }
    struct Document {
        var regionID: Int, alerts: [Alert], studies: [Study], responses: [Response], registrations: [Registration], reports: [GhostBusReport]
    }

    /// One JSON object of the document: refuses members it does not know
    /// (a typo or a newer format must not be dropped silently) and names
    /// the place of every problem (`alerts[2].cause`).
    struct Reader {
        let path: String
        let members: [String: JSONValue]

        init(_ value: JSONValue, at path: String, keys: Set<String>) throws(Failure) {
            guard case .object(let members) = value else { throw Failure("\(path) must be an object") }
            if let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
                throw Failure("\(path.isEmpty ? "" : path + ".")\(unknown) is not a field of \(format) (known: \(keys.sorted().joined(separator: ", ")))")
            }
            self.path = path
            self.members = members
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
        func optionalTime(_ key: String) throws(Failure) -> Int64? {
            switch members[key] {
            case nil, .null?: return nil
            case .string(let text)?:
                guard let millis = Timestamp.parseMillis(text) else {
                    throw Failure("\(place(key)) must be an RFC 3339 time with an offset, e.g. 2026-12-01T08:00:00Z (got '\(text)')")
                }
                return millis
            default: throw Failure("\(place(key)) must be an RFC 3339 time string")
            }
        }

        func time(_ key: String) throws(Failure) -> Int64 {
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
    static func parse(_ value: JSONValue, regions: RegionDirectory) throws(Failure) -> Document {
        let top = try Reader(value, at: "", keys: ["format", "exported_at", "region_id", "alerts", "studies", "survey_responses",
                                                   "push_registrations", "ghost_bus_reports"])
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
            guard names.contains(name) else { throw Failure("\(reader.place(key)) '\(name)' is not one of \(names.sorted().joined(separator: ", "))") }
            return name
        }

        var alerts: [Alert] = []
        for (item, path) in try top.array("alerts") {
            let r = try Reader(item, at: path, keys: ["id", "agency_id", "header_text", "description_text", "url", "cause", "effect", "severity",
                                                      "start_time", "end_time", "published", "is_test", "created_at", "updated_at", "translations",
                                                      "impact_start_time", "impact_end_time"])
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var translations: [Translation] = []
            for (item, path) in try r.array("translations") {
                let t = try Reader(item, at: path, keys: ["language", "header_text", "description_text", "source_header_text", "source_description_text"])
                let language = try t.required("language")
                guard language != "en" else { throw Failure("\(t.place("language")) must not be en (English is the alert's own text)") }
                translations.append(Translation(language: language, header: try t.required("header_text"), description: try t.string("description_text"),
                                                sourceHeader: try t.string("source_header_text"), sourceDescription: try t.string("source_description_text")))
            }
            let start = try r.time("start_time")
            alerts.append(Alert(id: id, agencyID: try r.string("agency_id"), header: try r.required("header_text"),
                                description: try r.string("description_text"), url: try r.string("url"),
                                cause: try enumName(r, "cause", causes, default: Cause.unknownCause.name),
                                effect: try enumName(r, "effect", effects, default: Effect.unknownEffect.name),
                                severity: try enumName(r, "severity", severities, default: SeverityLevel.unknownSeverity.name),
                                start: start, end: try r.optionalTime("end_time"), published: try r.bool("published"), test: try r.bool("is_test"),
                                created: try r.optionalTime("created_at") ?? start, updated: try r.optionalTime("updated_at") ?? start,
                                translations: translations, impactStart: try r.optionalTime("impact_start_time"),
                                impactEnd: try r.optionalTime("impact_end_time")))
            try checkPeriods(alerts[alerts.count - 1], r)
        }

        var studies: [Study] = []
        for (item, path) in try top.array("studies") {
            let r = try Reader(item, at: path, keys: ["id", "name", "description", "created_at", "updated_at", "surveys"])
            let id = try r.integer("id")
            guard id > 0 else { throw Failure("\(r.place("id")) must be a positive number") }
            var surveys: [Survey] = []
            for (item, path) in try r.array("surveys") {
                let s = try Reader(item, at: path, keys: ["id", "name", "available", "start_time", "end_time", "show_on_map", "show_on_stops",
                                                          "always_visible", "allows_multiple_responses", "visible_stop_list", "visible_route_list",
                                                          "created_at", "updated_at", "questions"])
                let surveyID = try s.integer("id")
                guard surveyID > 0 else { throw Failure("\(s.place("id")) must be a positive number") }
                let (start, end) = (try s.optionalTime("start_time"), try s.optionalTime("end_time"))
                guard (start == nil) == (end == nil) else { throw Failure("\(path) has only one of start_time and end_time; set both or neither") }
                var questions: [Question] = []
                for (item, path) in try s.array("questions") {
                    let q = try Reader(item, at: path, keys: ["id", "position", "required", "content"])
                    let questionID = try q.integer("id")
                    guard questionID > 0 else { throw Failure("\(q.place("id")) must be a positive number") }
                    let content = q.raw("content")
                    guard case .object(let members) = content, let type = members["type"]?.scalarText, SurveyQuestion.types.contains(type) else {
                        throw Failure("\(q.place("content")) must be an object whose type is one of \(SurveyQuestion.types.sorted().joined(separator: ", "))")
                    }
                    questions.append(Question(id: questionID, position: try q.integer("position"), required: try q.bool("required"), content: content))
                }
                let created = try s.optionalTime("created_at") ?? 0
                surveys.append(Survey(id: surveyID, name: try s.required("name"), available: try s.bool("available"), start: start, end: end,
                                      showOnMap: try s.bool("show_on_map"), showOnStops: try s.bool("show_on_stops"),
                                      alwaysVisible: try s.bool("always_visible"), allowsMultipleResponses: try s.bool("allows_multiple_responses"),
                                      visibleStops: try s.optionalStrings("visible_stop_list"), visibleRoutes: try s.optionalStrings("visible_route_list"),
                                      created: created, updated: try s.optionalTime("updated_at") ?? created, questions: questions))
            }
            let created = try r.optionalTime("created_at") ?? 0
            studies.append(Study(id: id, name: try r.required("name"), description: try r.string("description"), created: created,
                                 updated: try r.optionalTime("updated_at") ?? created, surveys: surveys))
        }

        var responses: [Response] = []
        for (item, path) in try top.array("survey_responses") {
            let r = try Reader(item, at: path, keys: ["survey_id", "public_id", "user_identifier", "stop_identifier", "stop_latitude",
                                                      "stop_longitude", "answers", "created_at", "updated_at"])
            guard case .array = r.raw("answers") else { throw Failure("\(r.place("answers")) must be an array of answers") }
            let created = try r.optionalTime("created_at") ?? 0
            responses.append(Response(surveyID: try r.integer("survey_id"), publicID: try r.required("public_id"),
                                      user: try r.required("user_identifier"), stop: try r.string("stop_identifier"),
                                      latitude: try r.optionalNumber("stop_latitude"), longitude: try r.optionalNumber("stop_longitude"),
                                      answers: r.raw("answers"), created: created, updated: try r.optionalTime("updated_at") ?? created))
        }

        var registrations: [Registration] = []
        for (item, path) in try top.array("push_registrations") {
            let r = try Reader(item, at: path, keys: ["token", "operating_system", "locale", "apns_sandbox", "test_device", "description",
                                                      "last_seen_at", "created_at"])
            let system = try r.string("operating_system")
            guard system == "ios" || system == "android" else { throw Failure("\(r.place("operating_system")) must be ios or android") }
            let created = try r.optionalTime("created_at") ?? 0
            registrations.append(Registration(token: try r.required("token"), operatingSystem: system, locale: try r.string("locale"),
                                              sandbox: try r.bool("apns_sandbox"), testDevice: try r.bool("test_device"),
                                              description: try r.string("description"), lastSeen: try r.optionalTime("last_seen_at") ?? created,
                                              created: created))
        }

        var reports: [GhostBusReport] = []
        for (item, path) in try top.array("ghost_bus_reports") {
            let r = try Reader(item, at: path, keys: ["public_id", "user_identifier", "trip_identifier", "service_date_ms", "route_identifier",
                                                      "stop_identifier", "vehicle_identifier", "stop_sequence", "predicted",
                                                      "schedule_deviation_minutes", "wait_duration_minutes", "comment", "user_latitude",
                                                      "user_longitude", "scheduled_arrival_ms", "predicted_arrival_ms", "prediction_last_updated_ms",
                                                      "snapshot_status", "snapshot", "snapshot_captured_at", "created_at"])
            let status = try r.string("snapshot_status")
            guard ["pending", "captured", "unavailable"].contains(status) else {
                throw Failure("\(r.place("snapshot_status")) must be pending, captured or unavailable")
            }
            let snapshot = r.raw("snapshot")
            if status == "captured" {
                guard case .object = snapshot else { throw Failure("\(r.place("snapshot")) must be an object when snapshot_status is captured") }
            }
            reports.append(GhostBusReport(
                publicID: try r.required("public_id"), user: try r.required("user_identifier"), trip: try r.required("trip_identifier"),
                serviceDate: try r.integer("service_date_ms"), route: try r.string("route_identifier"), stop: try r.string("stop_identifier"),
                vehicle: try r.string("vehicle_identifier"), stopSequence: try r.optionalInteger("stop_sequence"), predicted: try r.optionalBool("predicted"),
                deviation: try r.optionalInteger("schedule_deviation_minutes"), wait: try r.integer("wait_duration_minutes"),
                comment: try r.string("comment"), latitude: try r.optionalNumber("user_latitude"), longitude: try r.optionalNumber("user_longitude"),
                scheduled: try r.optionalInteger("scheduled_arrival_ms"), predictedArrival: try r.optionalInteger("predicted_arrival_ms"),
                predictionUpdated: try r.optionalInteger("prediction_last_updated_ms"), status: status,
                snapshot: status == "captured" ? snapshot : nil, capturedAt: try r.optionalTime("snapshot_captured_at"),
                created: try r.optionalTime("created_at") ?? 0))
        }
        return Document(regionID: region.id, alerts: alerts, studies: studies, responses: responses, registrations: registrations, reports: reports)
    }
}

// MARK: - Writing a document

extension RegionExchange {
    /// Rolls a dry run back once it has counted.
    struct DryRunFinished: Error { let summary: Summary }

    /// Imports in one transaction: all of it, or (on any conflict) none.
    static func importDocument(_ document: Document, database: any Database, dryRun: Bool, nowSeconds: Int64) async throws -> Summary {
        do {
            return try await database.write { connection in
                let summary = try write(document, connection: connection, dialect: database.dialect, nowSeconds: nowSeconds)
                if dryRun { throw DryRunFinished(summary: summary) }
                return summary
            }
        } catch let finished as DryRunFinished {
            return finished.summary
        }
    }

    static func write(_ document: Document, connection: any SQLConnection, dialect: SQLDialect, nowSeconds: Int64) throws -> Summary {
        var summary = Summary()
        let region = Int64(document.regionID)
        func owner(_ table: String, _ column: String, id: Int64) throws -> Int64? {
            try connection.queryOne("SELECT \(raw: column) AS owner FROM \(raw: table) WHERE id = \(id)")?.optionalInt("owner")
        }
        func seconds(_ millis: Int64) -> Int64 { millis >= 0 ? millis / 1000 : (millis - 999) / 1000 }
        func optionalText(_ value: String) -> SQLValue { value.isEmpty ? .null : .text(value) }

        for alert in document.alerts {
            if let existing = try owner("alerts", "region_id", id: alert.id) {
                guard existing == region else { throw Failure("alert \(alert.id) already exists in region \(existing); ids must stay as the apps know them") }
                summary.alerts.present += 1
                summary.translations.present += alert.translations.count
                continue
            }
            try connection.execute("""
                INSERT INTO alerts (id, region_id, agency_id, header, description, url, cause, effect, severity, starts_at, ends_at, published, test,
                    source_version, created_at, updated_at, impact_starts_at, impact_ends_at)
                VALUES (\(alert.id), \(region), \(alert.agencyID), \(alert.header), \(alert.description), \(optionalText(alert.url)), \(alert.cause), \(alert.effect), \(alert.severity), \(seconds(alert.start)), \(alert.end.map { .integer(seconds($0)) } ?? SQLValue.null), \(alert.published), \(alert.test), 1, \(seconds(alert.created)), \(seconds(alert.updated)), \(alert.impactStart.map { .integer(seconds($0)) } ?? SQLValue.null), \(alert.impactEnd.map { .integer(seconds($0)) } ?? SQLValue.null))
                """)
            summary.alerts.added += 1
            for translation in alert.translations {
                // Made from the text the alert has now: current; otherwise stale (withheld from the feed).
                let current = translation.sourceHeader == alert.header && translation.sourceDescription == alert.description
                try connection.execute("""
                    INSERT INTO alert_translations (alert_id, language, header, description, source_version, source_header, source_description)
                    VALUES (\(alert.id), \(translation.language), \(translation.header), \(translation.description), \(current ? 1 : 0), \(translation.sourceHeader), \(translation.sourceDescription))
                    """)
                summary.translations.added += 1
            }
        }
        if summary.alerts.added > 0 { try AlertStore.bumpFeed(connection, regionID: document.regionID, now: nowSeconds) }
        // A region moving in has no agency id here yet: its alerts name it
        // (new alerts and the feed need one; `region set` can change it).
        if let agencyID = document.alerts.first(where: { !$0.agencyID.isEmpty })?.agencyID {
            try connection.execute("""
                INSERT INTO region_settings (region_id, agency_id) VALUES (\(region), \(agencyID))
                ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id WHERE region_settings.agency_id IS NULL
                """)
        }

        for study in document.studies {
            if let existing = try owner("studies", "region_id", id: study.id) {
                guard existing == region else { throw Failure("study \(study.id) already exists in region \(existing)") }
                summary.studies.present += 1
            } else {
                try connection.execute("INSERT INTO studies (id, region_id, name, description, created_at, updated_at) VALUES (\(study.id), \(region), \(study.name), \(optionalText(study.description)), \(seconds(study.created)), \(seconds(study.updated)))")
                summary.studies.added += 1
            }
            for survey in study.surveys {
                if let existing = try owner("surveys", "study_id", id: survey.id) {
                    guard existing == study.id else { throw Failure("survey \(survey.id) already exists in study \(existing)") }
                    summary.surveys.present += 1
                } else {
                    try connection.execute("""
                        INSERT INTO surveys (id, region_id, study_id, name, available, start_date, end_date, show_on_map, show_on_stops, always_visible,
                            allows_multiple_responses, visible_stop_list, visible_route_list, created_at, updated_at)
                        VALUES (\(survey.id), \(region), \(study.id), \(survey.name), \(survey.available), \(survey.start.map { .integer(seconds($0)) } ?? SQLValue.null), \(survey.end.map { .integer(seconds($0)) } ?? SQLValue.null), \(survey.showOnMap), \(survey.showOnStops), \(survey.alwaysVisible), \(survey.allowsMultipleResponses), \(SurveyStore.encode(survey.visibleStops)), \(SurveyStore.encode(survey.visibleRoutes)), \(seconds(survey.created)), \(seconds(survey.updated)))
                        """)
                    summary.surveys.added += 1
                }
                for question in survey.questions {
                    if let existing = try owner("survey_questions", "survey_id", id: question.id) {
                        guard existing == survey.id else { throw Failure("question \(question.id) already exists in survey \(existing)") }
                        summary.questions.present += 1
                        continue
                    }
                    try connection.execute("INSERT INTO survey_questions (id, survey_id, position, required, content) VALUES (\(question.id), \(survey.id), \(question.position), \(question.required), \(encoded(question.content)))")
                    summary.questions.added += 1
                }
            }
        }

        for response in document.responses {
            if try connection.queryOne("SELECT 1 AS found FROM survey_responses WHERE public_id = \(response.publicID)") != nil {
                summary.surveyResponses.present += 1
                continue
            }
            guard let surveyRegion = try owner("surveys", "region_id", id: response.surveyID), surveyRegion == region else {
                throw Failure("survey response \(response.publicID) answers survey \(response.surveyID), which is not a survey of region \(region)")
            }
            try connection.execute("""
                INSERT INTO survey_responses (public_id, survey_id, user_identifier, stop_identifier, stop_latitude, stop_longitude, responses,
                    created_at, updated_at)
                VALUES (\(response.publicID), \(response.surveyID), \(response.user), \(optionalText(response.stop)), \(response.latitude), \(response.longitude), \(encoded(response.answers)), \(seconds(response.created)), \(seconds(response.updated)))
                """)
            summary.surveyResponses.added += 1
        }

        for registration in document.registrations {
            let added = try connection.execute("""
                INSERT INTO push_registrations (region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device, description,
                    created_at, last_seen_at)
                VALUES (\(region), \(registration.token), \(registration.operatingSystem), \(optionalText(registration.locale)), \(optionalText(registration.locale)), \(registration.sandbox && registration.operatingSystem == "ios"), \(registration.testDevice), \(optionalText(registration.description)), \(registration.created), \(registration.lastSeen))
                ON CONFLICT (region_id, token) DO NOTHING
                """)
            if added > 0 { summary.pushRegistrations.added += 1 } else { summary.pushRegistrations.present += 1 }
        }

        for report in document.reports {
            let attempts: Int64 = report.status == "pending" ? 0 : report.status == "captured" ? 1 : 3
            let added = try connection.execute("""
                INSERT INTO ghost_bus_reports (public_id, region_id, user_identifier, trip_identifier, service_date, route_identifier, stop_identifier,
                    vehicle_identifier, stop_sequence, predicted, schedule_deviation_minutes, wait_duration_minutes, comment, user_latitude,
                    user_longitude, scheduled_arrival_at, predicted_arrival_at, prediction_last_updated_at, trip_snapshot, snapshot_attempts,
                    snapshot_captured_at, created_at)
                VALUES (\(report.publicID), \(region), \(report.user), \(report.trip), \(report.serviceDate), \(optionalText(report.route)), \(optionalText(report.stop)), \(optionalText(report.vehicle)), \(report.stopSequence), \(report.predicted.map(SQLValue.init) ?? SQLValue.null), \(report.deviation), \(report.wait), \(optionalText(report.comment)), \(report.latitude), \(report.longitude), \(report.scheduled), \(report.predictedArrival), \(report.predictionUpdated), \(report.snapshot.map { .text(encoded($0)) } ?? SQLValue.null), \(attempts), \(report.capturedAt), \(report.created))
                ON CONFLICT DO NOTHING
                """)
            if added > 0 { summary.ghostBusReports.added += 1 } else { summary.ghostBusReports.present += 1 }
        }

        if dialect == .postgresql {
            // Ids were written as given: new rows must continue after them.
            for table in ["alerts", "studies", "surveys", "survey_questions"] { try DatabaseCopy.advanceIdentity(connection, table: table) }
        }
        try AlertStore.advanceIDs(connection)
        return summary
    }
}

extension RegionExchange {
    /// What the interchange format carries that the first schema did not
    /// keep: the English text a translation was made from, a study's last
    /// change and when a ghost-bus snapshot was captured.
    static let migrations = [
        Migration(version: 13, name: "keep what sidecar-export/1 carries", sql: """
            ALTER TABLE alert_translations ADD COLUMN source_header TEXT;
            ALTER TABLE alert_translations ADD COLUMN source_description TEXT;
            ALTER TABLE studies ADD COLUMN updated_at INTEGER;
            ALTER TABLE ghost_bus_reports ADD COLUMN snapshot_captured_at INTEGER
            """),
    ]
}

extension RegionExchange {
    /// An impact period is refused on import exactly as when authored: both
    /// or neither, and inside the shown period.
    static func checkPeriods(_ alert: Alert, _ reader: Reader) throws(Failure) {
        func seconds(_ millis: Int64) -> Int64 { millis >= 0 ? millis / 1000 : (millis - 999) / 1000 }
        var probe = ServiceAlert(id: alert.id, regionID: 0, agencyID: "", header: "", description: "", url: nil, cause: .unknownCause,
                                 effect: .unknownEffect, severity: .unknownSeverity, startsAt: seconds(alert.start), endsAt: alert.end.map(seconds),
                                 published: false, test: false, sourceVersion: 1, createdAt: 0, updatedAt: 0)
        probe.impactStartsAt = alert.impactStart.map(seconds)
        probe.impactEndsAt = alert.impactEnd.map(seconds)
        if let problem = AlertInputRules.periodProblems(probe).first { throw Failure("\(reader.place("impact_start_time")): \(problem)") }
    }
}
