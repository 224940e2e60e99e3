import Core

/// Two editors on one alert: what the other changed since this editor
/// opened the form, field by field, and the values "Save again" sends. A
/// field only they changed takes their value; a field both changed keeps
/// this editor's (saving again replaces theirs there, knowingly); a field
/// only this editor changed keeps this editor's.
enum ConsoleEditConflict {
    /// The alert form's fields compared, with the label an editor reads.
    static let alertFields: [(name: String, label: String)] = [
        ("header", "Header"), ("description", "Description"), ("url", "More information (URL)"), ("cause", "Cause"),
        ("effect", "Effect"), ("severity", "Severity"), ("start", "Starts"), ("end", "Ends"),
        ("impact_start", "Service affected from"), ("impact_end", "Service affected until"), ("region_wide", "For every agency of the region"),
        ("scope", "Where"), ("test", "Test alert"),
    ]

    /// What the editor reads first.
    static let problem =
        "Someone changed this alert after you opened it, so nothing was saved. Their changes are merged into the form below, field by field: check it, then save again."

    /// The hidden field carrying a field's value as the form was opened.
    static func baseName(_ name: String) -> String { "base_" + name }

    struct Outcome: Equatable, Sendable {
        /// The values the form is shown with again.
        var values: [String: String]
        /// One line per field the other editor changed.
        var changes: [String]
    }

    /// - Parameters:
    ///   - mine: what this editor submitted.
    ///   - base: the values the form was opened with.
    ///   - theirs: the values stored now.
    static func merge(mine: [String: String], base: [String: String], theirs: [String: String]) -> Outcome {
        var values = mine
        var changes: [String] = []
        func shown(_ value: String?) -> String {
            guard let value, !value.isEmpty else { return "empty" }
            if value == "true" { return "on" }
            if value == "false" { return "off" }
            return "“" + String(value.prefix(80)) + "”"
        }
        for (name, label) in alertFields {
            guard let was = base[name], let now = theirs[name], now != was else { continue }
            let typed = mine[name] ?? was
            if typed == was {
                values[name] = now
                changes.append("\(label): changed by someone else from \(shown(was)) to \(shown(now)); their change is kept below.")
            } else if typed == now {
                changes.append("\(label): they made the same change as you.")
            } else {
                changes.append(
                    "\(label): changed by someone else from \(shown(was)) to \(shown(now)); you changed it too, and saving again puts yours, \(shown(typed))."
                )
            }
        }
        return Outcome(values: values, changes: changes)
    }
}
