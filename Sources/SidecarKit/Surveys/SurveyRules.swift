import Core
import FoundationEssentials

/// A question as authored and served (spec §7.1).
struct SurveyQuestion: Sendable, Equatable {
    static let types: Set<String> = ["text", "label", "radio", "checkbox", "external_survey"]
    var id: Int64
    var position: Int
    var required: Bool
    /// `{"type", "label_text", ...}` as served.
    var content: [String: JSONValue]

    var type: String { content["type"]?.scalarText ?? "" }
}

/// A survey as stored.
struct Survey: Sendable, Equatable {
    var id: Int64
    var regionID: Int
    var studyID: Int64
    var name: String
    var available: Bool
    /// Epoch seconds; nil = no limit.
    var startDate: EpochSeconds?
    var endDate: EpochSeconds?
    var showOnMap: Bool
    var showOnStops: Bool
    var alwaysVisible: Bool
    var allowsMultipleResponses: Bool
    var visibleStopList: [String]?
    var visibleRouteList: [String]?
    var requireStopIDInResponse: Bool
    var questions: [SurveyQuestion]
    var createdAt: EpochSeconds
    var updatedAt: EpochSeconds

    /// A new survey's defaults: available, on the map and on stop pages, so
    /// that both apps show it. Android 26.2.0 shows a survey only where
    /// `show_on_map` is true (the map screen); later Android builds and the
    /// iOS app show it on stop pages when `show_on_stops` is true
    /// (OneBusAway/onebusaway-android `ui/survey/utils/SurveyUtils.kt`
    /// `getCurrentSurveyIndex`; OneBusAway/onebusaway-ios
    /// `OBAKitCore/Surveys/Service/SurveyService.swift:315`).
    static func blank(regionID: Int, studyID: Int64 = 0, now: EpochSeconds) -> Survey {
        Survey(
            id: 0, regionID: regionID, studyID: studyID, name: "", available: true, startDate: nil, endDate: nil, showOnMap: true,
            showOnStops: true, alwaysVisible: false, allowsMultipleResponses: false, visibleStopList: nil, visibleRouteList: nil,
            requireStopIDInResponse: false, questions: [], createdAt: now, updatedAt: now)
    }

    /// Where each app shows a survey with these settings, in an editor's words.
    static let placementHint =
        "Android 26.2 shows a survey only on the map screen (\u{201C}Show on the map\u{201D}); iOS and later Android builds show it on stop pages (\u{201C}Show on stop pages\u{201D}). Keep both for every rider."
}

struct Study: Sendable, Equatable {
    var id: Int64
    var regionID: Int
    var name: String
    var description: String?
    /// Epoch seconds.
    var createdAt: EpochSeconds = 0
    /// Epoch seconds; nil for a study never changed since the schema kept it.
    var updatedAt: EpochSeconds? = nil
}

/// Spec §7 rules: authoring documents, the served shape, the active window,
/// and the `responses` string.
enum SurveyRules {
    /// Active now: marked available and inside its window (no window = always).
    static func isActive(_ survey: Survey, now: EpochSeconds) -> Bool {
        survey.available && (survey.startDate.map { $0 <= now } ?? true) && (survey.endDate.map { now <= $0 } ?? true)
    }

    static func time(_ instant: EpochSeconds?) -> JSONValue {
        guard let instant else { return .null }
        return .string(
            Date(timeIntervalSince1970: Double(instant.value)).formatted(
                .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
    }

    static func list(_ values: [String]?) -> JSONValue { values.map { .array($0.map(JSONValue.string)) } ?? .null }

    /// A survey as the apps decode it: every key the OpenAPI schema lists,
    /// always (iOS drops a region's surveys when one fails to decode).
    static func served(_ survey: Survey, study: Study) -> JSONValue {
        .object([
            "id": .integer(survey.id), "name": .string(survey.name), "start_date": time(survey.startDate), "end_date": time(survey.endDate),
            "created_at": time(survey.createdAt), "updated_at": time(survey.updatedAt), "show_on_map": .bool(survey.showOnMap),
            "show_on_stops": .bool(survey.showOnStops), "always_visible": .bool(survey.alwaysVisible),
            "allows_multiple_responses": .bool(survey.allowsMultipleResponses), "visible_stop_list": list(survey.visibleStopList),
            "visible_route_list": list(survey.visibleRouteList),
            "study": .object(["id": .integer(study.id), "name": .string(study.name), "description": study.description.map(JSONValue.string) ?? .null]
            ),
            "questions": .array(
                survey.questions.sorted { ($0.position, $0.id) < ($1.position, $1.id) }.map { question in
                    .object([
                        "id": .integer(question.id), "position": .integer(Int64(question.position)), "required": .bool(question.required),
                        "content": .object(question.content),
                    ])
                }),
        ])
    }

    /// The authoring document of a survey (what `survey show` prints and
    /// `survey edit` reads back).
    static func document(_ survey: Survey) -> JSONValue {
        .object([
            "id": .integer(survey.id), "region_id": .integer(Int64(survey.regionID)), "study_id": .integer(survey.studyID),
            "name": .string(survey.name), "available": .bool(survey.available), "start_date": time(survey.startDate),
            "end_date": time(survey.endDate),
            "show_on_map": .bool(survey.showOnMap), "show_on_stops": .bool(survey.showOnStops), "always_visible": .bool(survey.alwaysVisible),
            "allows_multiple_responses": .bool(survey.allowsMultipleResponses), "visible_stop_list": list(survey.visibleStopList),
            "visible_route_list": list(survey.visibleRouteList), "require_stop_id_in_response": .bool(survey.requireStopIDInResponse),
            "questions": .array(
                survey.questions.map { question in
                    .object([
                        "id": .integer(question.id), "position": .integer(Int64(question.position)), "required": .bool(question.required),
                        "content": .object(question.content),
                    ])
                }),
        ])
    }

    /// Reads an authoring document into a survey (ids of existing questions
    /// are kept; new questions get id 0). Every problem is reported.
    static func parse(document: JSONValue, into survey: inout Survey) -> [String] {
        guard case .object(let fields) = document else { return ["the survey document must be a JSON object"] }
        var messages: [String] = []
        func bool(_ key: String, _ assign: (Bool) -> Void) {
            guard let value = fields[key] else { return }
            if case .bool(let flag) = value { assign(flag) } else { messages.append("\(key) must be true or false") }
        }
        func strings(_ key: String, _ assign: ([String]?) -> Void) {
            guard let value = fields[key] else { return }
            switch value {
            case .null: assign(nil)
            case .array(let items):
                let texts = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
                if texts.count == items.count { assign(texts) } else { messages.append("\(key) must be a list of strings or null") }
            default: messages.append("\(key) must be a list of strings or null")
            }
        }
        func date(_ key: String, _ assign: (EpochSeconds?) -> Void) {
            guard let value = fields[key] else { return }
            switch value {
            case .null: assign(nil)
            case .string(let text):
                if let seconds = AlertInputRules.parseTime(text) {
                    if TimeBounds.contains(seconds) { assign(seconds) } else { messages.append(TimeBounds.message(key, seconds)) }
                } else {
                    messages.append("\(key) must be an ISO 8601 time with a UTC offset or null")
                }
            default: messages.append("\(key) must be an ISO 8601 time with a UTC offset or null")
            }
        }
        if let name = fields["name"] {
            if let text = name.scalarText?.presence { survey.name = text } else { messages.append("name can't be blank") }
            messages += FieldLimits.check([("name", name.scalarText, FieldLimits.name)])
        } else if survey.name.isEmpty {
            messages.append("name can't be blank")
        }
        if case .integer(let study)? = fields["study_id"] {
            survey.studyID = study
        } else if fields["study_id"] != nil {
            messages.append("study_id must be a number")
        }
        if case .integer(let region)? = fields["region_id"] {
            survey.regionID = Int(region)
        } else if fields["region_id"] != nil {
            messages.append("region_id must be a number")
        }
        bool("available") { survey.available = $0 }
        bool("show_on_map") { survey.showOnMap = $0 }
        bool("show_on_stops") { survey.showOnStops = $0 }
        bool("always_visible") { survey.alwaysVisible = $0 }
        bool("allows_multiple_responses") { survey.allowsMultipleResponses = $0 }
        bool("require_stop_id_in_response") { survey.requireStopIDInResponse = $0 }
        strings("visible_stop_list") { survey.visibleStopList = $0 }
        strings("visible_route_list") { survey.visibleRouteList = $0 }
        date("start_date") { survey.startDate = $0 }
        date("end_date") { survey.endDate = $0 }
        if let start = survey.startDate, let end = survey.endDate, end < start { messages.append("end_date must not be before start_date") }
        var refusedQuestions = 0
        if let questions = fields["questions"] {
            guard case .array(let items) = questions else { return messages + ["questions must be a list"] }
            if items.count > FieldLimits.surveyQuestionCount {
                return messages + ["a survey has at most \(FieldLimits.surveyQuestionCount) questions"]
            }
            var parsed: [SurveyQuestion] = []
            for (index, item) in items.enumerated() {
                switch question(item, index: index) {
                case .success(let value): parsed.append(value)
                case .failure(let failure):
                    messages += failure.messages
                    refusedQuestions += 1
                }
            }
            survey.questions = parsed
        }
        // Riders would open an empty survey: only one with something to ask
        // may be shown. (Not said when the questions themselves were refused:
        // the editor is correcting them, not leaving them out.)
        if survey.available && refusedQuestions == 0 && !survey.questions.contains(where: { $0.type != "label" }) {
            messages.append("a survey with no questions cannot be made available: add a question, or leave it unavailable")
        }
        return messages
    }

    static func question(_ item: JSONValue, index: Int) -> Result<SurveyQuestion, ValidationFailure> {
        let where_ = "question \(index + 1)"
        guard case .object(let fields) = item, case .object(var content)? = fields["content"] else {
            return .failure(ValidationFailure(["\(where_) needs a content object"]))
        }
        var messages: [String] = []
        let type = content["type"]?.scalarText ?? ""
        if !SurveyQuestion.types.contains(type) {
            messages.append("\(where_): type must be one of \(SurveyQuestion.types.sorted().joined(separator: ", ")) (got '\(type)')")
        }
        // The apps decode label_text as a string: a number would break their decoding.
        let label: String? = if case .string(let text)? = content["label_text"] { text } else { nil }
        if label?.presence == nil {
            messages.append("\(where_): label_text must be text and can't be blank")
        }
        // Authored by staff, served to every rider: bounded all the same.
        if content.encodedSize > FieldLimits.surveyQuestionBytes {
            messages.append("\(where_): the question is too long (maximum is \(FieldLimits.surveyQuestionBytes) bytes)")
        }
        if type == "radio" || type == "checkbox" {
            guard case .array(let options)? = content["options"], !options.isEmpty,
                options.allSatisfy({ if case .string = $0 { true } else { false } })
            else {
                return .failure(ValidationFailure(messages + ["\(where_): a \(type) question needs options, a list of strings"]))
            }
        } else {
            content.removeValue(forKey: "options")
        }
        if type == "external_survey" {
            let url = content["url"]?.scalarText ?? ""
            if !(url.hasPrefix("https://") || url.hasPrefix("http://")) { messages.append("\(where_): an external_survey needs an http(s) url") }
            if content["survey_provider"]?.scalarText?.presence == nil { messages.append("\(where_): an external_survey needs a survey_provider") }
            if content["embedded_data_fields"] == nil { content["embedded_data_fields"] = .array([]) }
            if case .array(let fields)? = content["embedded_data_fields"], fields.allSatisfy({ if case .string = $0 { true } else { false } }) {
            } else {
                messages.append("\(where_): embedded_data_fields must be a list of strings")
            }
            if let sdk = content["sdk_configuration_values"], case .object = sdk {} else { content.removeValue(forKey: "sdk_configuration_values") }
        } else {
            for key in ["url", "survey_provider", "embedded_data_fields", "sdk_configuration_values"] { content.removeValue(forKey: key) }
        }
        guard messages.isEmpty else { return .failure(ValidationFailure(messages)) }
        let id: Int64 = if case .integer(let value)? = fields["id"] { value } else { 0 }
        let position: Int = if case .integer(let value)? = fields["position"] { Int(value) } else { index + 1 }
        let requested: Bool = if case .bool(let value)? = fields["required"] { value } else { false }
        // Display-only and hand-off questions can never be required.
        let required = requested && type != "label" && type != "external_survey"
        return .success(SurveyQuestion(id: id, position: position, required: required, content: content))
    }

    /// Reads the `responses` parameter: a JSON-array-encoded string (or, from
    /// a JSON body, a real array) of objects with an integer `question_id`.
    /// Answers are kept exactly as sent.
    static func answers(_ value: JSONValue?) -> Result<[[String: JSONValue]], ValidationFailure> {
        let decoded: JSONValue
        switch value {
        case .string(let text)?:
            guard let parsed = try? JSONValue(parsing: text.utf8) else {
                return .failure(ValidationFailure(["Responses must be a JSON array"]))
            }
            decoded = parsed
        case .array?: decoded = value!
        default: return .failure(ValidationFailure(["Responses can't be blank"]))
        }
        guard case .array(let items) = decoded else { return .failure(ValidationFailure(["Responses must be a JSON array"])) }
        if let problem = answersTooLarge(items) { return .failure(ValidationFailure([problem])) }
        var answers: [[String: JSONValue]] = []
        for item in items {
            guard case .object(let answer) = item, case .integer? = answer["question_id"] else {
                return .failure(ValidationFailure(["Each response needs an integer question_id"]))
            }
            answers.append(answer)
        }
        return .success(answers)
    }

    /// Why a list of answers is too large to store, or nil: at most
    /// `FieldLimits.surveyAnswerCount` answers and
    /// `FieldLimits.surveyAnswerBytes` bytes once encoded (amending merges
    /// into the stored answers, so the merged list is checked too).
    static func answersTooLarge(_ answers: [JSONValue]) -> String? {
        if answers.count > FieldLimits.surveyAnswerCount {
            return "Responses has too many answers (maximum is \(FieldLimits.surveyAnswerCount))"
        }
        if JSONValue.array(answers).encoded().count > FieldLimits.surveyAnswerBytes {
            return "Responses is too long (maximum is \(FieldLimits.surveyAnswerBytes) bytes)"
        }
        return nil
    }

    /// Amending merges by `question_id`: an incoming answer replaces the
    /// stored one for its question; other stored answers stay, in order.
    static func merge(stored: [[String: JSONValue]], incoming: [[String: JSONValue]]) -> [[String: JSONValue]] {
        var merged = stored
        for answer in incoming {
            if let index = merged.firstIndex(where: { $0["question_id"] == answer["question_id"] }) {
                merged[index] = answer
            } else {
                merged.append(answer)
            }
        }
        return merged
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// Bytes of this object encoded as JSON.
    var encodedSize: Int { JSONValue.object(self).encoded().count }
}
