import HTML
import HTTPServer

/// The version an edit form was opened at: the admin API's `ETag` of the
/// same object, carried in a hidden field. A save over a change someone made
/// since is refused (412) and the form comes back with what the editor typed,
/// so two editors never overwrite each other silently.
enum ConsoleEditVersion {
    static let field = "version"

    /// An alert's version: the admin API's `ETag` for it.
    static func version(of alert: ServiceAlert) -> String { AdminConventions.etag(AdminJSON.alert(alert)) }

    /// A survey's version: the admin API's `ETag` for it.
    static func version(of survey: Survey) -> String { AdminConventions.etag(SurveyRules.document(survey)) }

    /// The hidden field: the version the editor saw (`values` keeps it across
    /// a form shown again).
    static func input(values: [String: String], current: String?) -> [any HTMLContent] {
        guard let version = values[field] ?? current else { return [] }
        return [tag("input", [Attribute("type", "hidden"), Attribute("name", field), Attribute("value", version)])]
    }

    /// True when the form names a version other than `current`. A form with
    /// none (a script posting the form) is not refused.
    static func isStale(_ request: Request, current: String) -> Bool {
        guard let offered = request.parameters[field], !offered.isEmpty else { return false }
        return offered != current
    }

    /// The box's heading: nothing in the form needs correcting.
    static let heading = "Not saved:"

    /// What the editor reads above their own values.
    static func problem(_ what: String) -> String {
        "Someone changed this \(what) after you opened it. Your version is below and has not been saved: "
            + "open the \(what) in another tab to see theirs, then save again to replace it with yours."
    }
}
