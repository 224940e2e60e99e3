import Core
import FoundationEssentials

/// The Go reference's survey document read into Sidecar's authoring
/// document (`SurveyRules.parse` then checks it as every survey is checked).
/// The reference decodes it strictly and replaces the whole survey on
/// `PUT`: a field left out returns to its default (available, off, null).
/// Pure.
enum SurveyReferenceDocument {
    /// What a client may send.
    static let fields: Set<String> = [
        "study_id", "name", "available", "start_date", "end_date", "show_on_map", "show_on_stops", "always_visible", "allows_multiple_responses",
        "visible_stop_list", "visible_route_list", "questions",
    ]
    /// What the server alone sets: present in its answers, refused in a request.
    static let serverOwned = ["id", "study", "created_at", "updated_at"]
    static let questionFields: Set<String> = ["id", "position", "required", "content"]

    /// The body as a JSON object, decoded as strictly as the reference does.
    static func read(_ body: [UInt8], limit: Int) throws(ReferenceFailure) -> [String: JSONValue] {
        if body.count > limit { throw .badRequest("request body too large") }
        guard !body.isEmpty else { throw .badRequest("invalid JSON body: EOF") }
        guard case .object(let members)? = try? JSONValue(parsing: body) else {
            throw .badRequest("invalid JSON body: the body must be a JSON object")
        }
        for name in members.keys.sorted() where !fields.contains(name) && !serverOwned.contains(name) {
            throw .badRequest("invalid JSON body: json: unknown field \"\(name)\"")
        }
        if case .array(let questions)? = members["questions"] {
            for case .object(let question) in questions {
                for name in question.keys.sorted() where !questionFields.contains(name) {
                    throw .badRequest("invalid JSON body: json: unknown field \"\(name)\"")
                }
            }
        }
        for name in serverOwned where members[name] != nil { throw .status(422, "\(name) is server-owned and cannot be set") }
        return members
    }

    /// Sidecar's authoring document for a create (`existing` nil) or a whole
    /// replacement: the reference's defaults for what is left out, lists
    /// trimmed with blanks dropped (empty means everywhere), and question ids
    /// only of this survey's own questions. A survey sent without anything
    /// to ask is left unavailable unless it says otherwise (riders would open
    /// it empty; Sidecar refuses to show one).
    static func authoring(_ body: [String: JSONValue], regionID: Int, studyID: Int64, existing: Survey?) throws(ReferenceFailure) -> JSONValue {
        var document: [String: JSONValue] = [
            "region_id": .integer(Int64(regionID)), "study_id": .integer(studyID), "name": body["name"] ?? .string(""),
            "start_date": body["start_date"] ?? .null, "end_date": body["end_date"] ?? .null,
            "require_stop_id_in_response": .bool(existing?.requireStopIDInResponse ?? false),
        ]
        for flag in ["show_on_map", "show_on_stops", "always_visible", "allows_multiple_responses"] { document[flag] = body[flag] ?? .bool(false) }
        for name in ["visible_stop_list", "visible_route_list"] { document[name] = list(body[name]) }
        if (body["start_date"] ?? .null) == .null || (body["end_date"] ?? .null) == .null,
            (body["start_date"] ?? .null) != .null || (body["end_date"] ?? .null) != .null
        {
            throw .status(422, "both start_date and end_date must be set, or neither")
        }
        if case .string(let start)? = body["start_date"], case .string(let end)? = body["end_date"],
            let from = AlertInputRules.parseTime(start), let to = AlertInputRules.parseTime(end), to <= from
        {
            throw .status(422, "end_date must be after start_date")
        }
        var questions: [JSONValue] = []
        var seen = Set<Int64>()
        let own = Set(existing?.questions.map(\.id) ?? [])
        if case .array(let items)? = body["questions"] {
            for (index, item) in items.enumerated() {
                guard case .object(var question) = item else {
                    questions.append(item)
                    continue
                }
                if let id = question["id"], id != .null {
                    guard case .integer(let number) = id, own.contains(number), seen.insert(number).inserted else {
                        throw .status(422, "question id does not belong to this survey")
                    }
                }
                // Renumbered in the document's order, whatever positions it sent.
                question["position"] = .integer(Int64(index + 1))
                questions.append(.object(question))
            }
        } else if let questions = body["questions"], questions != .null {
            throw .badRequest("invalid JSON body: questions must be an array")
        }
        document["questions"] = .array(questions)
        let asks = questions.contains { item in
            guard case .object(let question) = item, case .object(let content)? = question["content"] else { return false }
            return content["type"] != .string("label")
        }
        document["available"] = body["available"] ?? .bool(asks)
        return .object(document)
    }

    /// A list as the reference keeps it: entries trimmed, blanks dropped, empty as null.
    static func list(_ value: JSONValue?) -> JSONValue {
        guard case .array(let items)? = value else { return value ?? .null }
        let kept = items.compactMap { item -> JSONValue? in
            guard case .string(let text) = item else { return item }
            let trimmed = text.trimmingWhitespace()
            return trimmed.isEmpty ? nil : .string(trimmed)
        }
        return kept.isEmpty ? .null : .array(kept)
    }
}
