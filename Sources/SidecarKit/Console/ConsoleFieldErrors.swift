/// What was wrong with a submitted alert form, in an editor's words and
/// tied to the field it concerns. The rules behind the messages are shared
/// with the admin API and the CLI, which name fields as their callers do
/// (`impact_start`, ISO 8601); the console names them as its labels do.
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
}
