import HTTPServer

/// The longest value stored for each kind of field, in characters. A
/// client can only make the server store what fits: a longer value is
/// refused with 422 in the route's error shape. docs/operator-guide.md lists them.
enum FieldLimits {
    /// Push tokens and device identifiers (APNs and FCM tokens, OneSignal ids).
    static let token = 4096
    /// Identifiers: stops, trips, vehicles, routes, Live Activities, users.
    static let identifier = 255
    /// Names shown to riders: route short names, headsigns, device descriptions.
    static let name = 255
    /// Locale tags.
    static let locale = 64
    /// Free text a rider writes (a ghost-bus comment).
    static let comment = 1000
    /// Answers in one survey response: how many, and their encoded size.
    static let surveyAnswerCount = 200
    static let surveyAnswerBytes = 64 * 1024
    /// Survey authoring: questions per survey, and one question's content encoded.
    static let surveyQuestionCount = 200
    static let surveyQuestionBytes = 16 * 1024
    /// Alert text (per language) and links.
    static let alertHeader = 500
    static let alertDescription = 10_000
    static let url = 2048
    /// A donor's email and name (passed to Stripe, never stored here).
    static let email = 254

    /// Whether `text` has more than `limit` characters. A string of at most
    /// `limit` UTF-8 bytes cannot, so only longer ones pay for counting
    /// characters (grapheme breaking, on every field of every request).
    static func exceeds(_ text: String, _ limit: Int) -> Bool {
        text.utf8.count > limit && text.count > limit
    }

    /// One message per present value over its limit, in the wording of the
    /// other validation messages ("Stop is too long (maximum is 255 characters)").
    /// Also refuses the bidirectional controls that reorder what follows
    /// them (embeddings, overrides and isolates: `…\u{202E}gnp.exe` reads as
    /// `exe.png`), so no stored text can show staff something other than
    /// what it says. The marks LRM and RLM, which reorder nothing, are kept.
    static func check(_ fields: [(label: String, value: String?, limit: Int)]) -> [String] {
        fields.compactMap { problem($0.label, $0.value, $0.limit) }
    }

    /// `check` for one field: its message, or nil.
    static func problem(_ label: String, _ value: String?, _ limit: Int) -> String? {
        guard let value else { return nil }
        if exceeds(value, limit) { return "\(label) is too long (maximum is \(limit) characters)" }
        if containsBidiControls(value) {
            return "\(label) contains bidirectional control characters (U+202A to U+202E, U+2066 to U+2069), which would show it reordered"
        }
        return nil
    }

    /// U+202A–U+202E (embeddings and overrides) and U+2066–U+2069 (isolates).
    static func containsBidiControls(_ text: String) -> Bool {
        text.unicodeScalars.contains { (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) }
    }
}
