/// What was wrong with a submitted form (an alert, a survey, an alert
/// source), in an editor's words and tied to the field it concerns. The
/// rules behind the messages are shared with the admin API and the CLI,
/// which name fields as their callers do (`impact_start`, ISO 8601,
/// `--min-severity`); the console names them as its labels do.
enum ConsoleFieldErrors {
    /// One problem: the form field it belongs to (nil: the whole form) and its text.
    struct Placed: Equatable, Sendable {
        var field: String?
        var text: String
    }

    /// The alert form's labels, by field name.
    static let alertLabels: [(field: String, label: String)] = [
        ("impact_start", "Service affected from"), ("impact_end", "Service affected until"), ("header", "Header"),
        ("description", "Description"), ("url", "More information (URL)"), ("cause", "Cause"), ("effect", "Effect"),
        ("severity", "Severity"), ("start", "Starts"), ("end", "Ends"),
    ]

    /// Each message placed on its field and said with the form's labels.
    static func alert(_ messages: [String]) -> [Placed] {
        messages.map { message in
            let lower = message.lowercased()
            func placed(_ field: String, _ text: String) -> Placed { Placed(field: field, text: text) }
            if lower.hasPrefix("impact_start and impact_end go together") {
                return placed("impact_start", "Service affected from and until go together: fill in both, or leave both empty.")
            }
            if lower.hasPrefix("impact_end must be after impact_start") {
                return placed("impact_end", "Service affected until must be after Service affected from.")
            }
            if lower.hasPrefix("the impact period") {
                return placed(
                    "impact_start",
                    "The time service is affected must lie within the time riders are shown the alert (Starts to Ends, or 8 hours from Starts when Ends is empty)."
                )
            }
            if lower.hasPrefix("scope") { return placed("scope", message) }
            if lower.hasPrefix("end must be after start") { return placed("end", "Ends must be after Starts.") }
            if lower.hasPrefix("start is required") { return placed("start", "Starts is required: when riders first see the alert.") }
            if lower.hasPrefix("url must be an http(s) url") {
                return placed("url", "More information (URL) must be a web address starting with https:// or http://.")
            }
            for (field, label) in alertLabels {
                // The console's own messages start with the label; the shared
                // rules' with the field's name (or the label in lower case).
                if message.hasPrefix(label + " ") { return placed(field, message) }
                let prefixes = [field + " ", field.replacingOccurrences(of: "_", with: " ") + " "]
                if let prefix = prefixes.first(where: { lower.hasPrefix($0) }) {
                    var text = label + " " + String(message.dropFirst(prefix.count))
                    if text.contains("ISO 8601") { text = "\(label) must be a date and time such as 2026-12-01T08:00." }
                    return placed(field, text)
                }
            }
            return Placed(field: nil, text: message)
        }
    }

    /// The first problem of each field.
    static func byField(_ placed: [Placed]) -> [String: String] {
        var errors: [String: String] = [:]
        for problem in placed { if let field = problem.field, errors[field] == nil { errors[field] = problem.text } }
        return errors
    }

    /// An alert source's messages (already named by the form's labels,
    /// `AlertSourceRules.FieldNaming.console`), each on its field; whatever
    /// is said about the feed's address belongs to the URL.
    static func source(_ messages: [String]) -> [Placed] {
        let labels = AlertSourceRules.FieldNaming.consoleLabels.sorted { $0.value.count > $1.value.count }
        return messages.map { message in
            if let (field, _) = labels.first(where: { message.hasPrefix($0.value + " ") }) { return Placed(field: field, text: message) }
            if message.hasPrefix("The URL") { return Placed(field: "url", text: message) }
            return Placed(field: nil, text: message)
        }
    }

    /// A survey's messages. The shared rules name a survey document's
    /// fields (`end_date`, `label_text`, `radio`) and count questions as the
    /// document does; `questionSlots[n]` is the form's slot of question n+1
    /// (empty slots are skipped when the document is built).
    static func survey(_ messages: [String], questionSlots: [Int]) -> [Placed] {
        messages.map { message in
            if let placed = surveyQuestion(message, questionSlots: questionSlots) { return placed }
            let lower = message.lowercased()
            let labels = [("start_date", "Available from"), ("end_date", "Available until")]
            if lower.hasPrefix("end_date must not be before start_date") {
                return Placed(field: "end_date", text: "Available until must not be before Available from.")
            }
            if lower.hasPrefix("name can't be blank") { return Placed(field: "name", text: "Name can't be blank.") }
            if lower.hasPrefix("name is too long") || message.hasPrefix("Name ") {
                return Placed(field: "name", text: "Name" + message.dropFirst(4))
            }
            if lower.hasPrefix("a survey with no questions cannot be made available") {
                return Placed(field: "available", text: "A survey with no questions cannot be available: add a question, or untick Available.")
            }
            if message.hasPrefix("Choose a study") || message.hasPrefix("New study name") { return Placed(field: "new_study", text: message) }
            if message.hasPrefix("That study") { return Placed(field: "study_id", text: message) }
            for (field, label) in labels {
                if message.hasPrefix(label) { return Placed(field: field, text: "\(label) must be a date and time such as 2026-12-01T08:00.") }
                if lower.hasPrefix(field + " ") {
                    return Placed(
                        field: field, text: label + " " + message.dropFirst(field.count + 1).replacing("ISO 8601 time", with: "date and time"))
                }
            }
            return Placed(field: nil, text: message)
        }
    }

    /// The survey form's names for its question types.
    static let surveyTypeNames: [(type: String, name: String)] = [
        ("text", "Free text"), ("radio", "One choice"), ("checkbox", "Several choices"), ("label", "Text only (no answer)"),
        ("external_survey", "External survey link"),
    ]

    static func surveyTypeName(_ type: String) -> String { surveyTypeNames.first { $0.type == type }?.name ?? type }

    /// A message about one question ("question 2: ..."), on that question's field.
    static func surveyQuestion(_ message: String, questionSlots: [Int]) -> Placed? {
        guard message.hasPrefix("question "),
            let number = Int(message.dropFirst("question ".count).prefix { $0.isNumber }), number >= 1
        else { return nil }
        let slot = number - 1 < questionSlots.count ? questionSlots[number - 1] : number - 1
        let rest = message.dropFirst("question \(number)".count).drop { $0 == ":" || $0 == " " }
        let name = "Question \(number)"
        func placed(_ suffix: String, _ text: String) -> Placed { Placed(field: "q\(slot)_\(suffix)", text: "\(name): \(text)") }
        if rest.hasPrefix("type must be") { return placed("type", "choose its type.") }
        if rest.hasPrefix("label_text") { return placed("label", "the label can't be empty.") }
        if rest.hasPrefix("the question is too long") {
            return placed("label", "it is too long (at most \(FieldLimits.surveyQuestionBytes) bytes with its choices).")
        }
        if rest.hasPrefix("a radio question needs options") || rest.hasPrefix("a checkbox question needs options") {
            let type = rest.hasPrefix("a radio") ? "radio" : "checkbox"
            return placed("options", "a “\(surveyTypeName(type))” question needs its choices, one per line.")
        }
        if rest.hasPrefix("an external_survey needs an http(s) url") {
            return placed("url", "an external survey link needs a web address starting with https:// or http://.")
        }
        if rest.hasPrefix("an external_survey needs a survey_provider") { return placed("provider", "an external survey link needs its provider.") }
        if rest.hasPrefix("needs a content object") { return placed("label", "it could not be read.") }
        return Placed(field: nil, text: "\(name): \(rest)")
    }
}
