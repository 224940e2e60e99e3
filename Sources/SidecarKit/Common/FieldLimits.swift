import HTTPServer

/// The longest value stored for each kind of field, in characters. A
/// client can only make the server store what fits: a longer value is
/// refused with 422 in the route's error shape. The README lists them.
public enum FieldLimits {
    /// Push tokens and device identifiers (APNs and FCM tokens, OneSignal ids).
    public static let token = 4096
    /// Identifiers: stops, trips, vehicles, routes, Live Activities, users.
    public static let identifier = 255
    /// Names shown to riders: route short names, headsigns, device descriptions.
    public static let name = 255
    /// Locale tags.
    public static let locale = 64
    /// Free text a rider writes (a ghost-bus comment).
    public static let comment = 1000
    /// Answers in one survey response: how many, and their encoded size.
    public static let surveyAnswerCount = 200
    public static let surveyAnswerBytes = 64 * 1024
    /// Survey authoring: questions per survey, and one question's content encoded.
    public static let surveyQuestionCount = 200
    public static let surveyQuestionBytes = 16 * 1024
    /// Alert text (per language) and links.
    public static let alertHeader = 500
    public static let alertDescription = 10_000
    public static let url = 2048
    /// A donor's email and name (passed to Stripe, never stored here).
    public static let email = 254

    /// One message per present value over its limit, in the wording of the
    /// other validation messages ("Stop is too long (maximum is 255 characters)").
    public static func check(_ fields: [(label: String, value: String?, limit: Int)]) -> [String] {
        fields.compactMap { field in
            guard let value = field.value, value.count > field.limit else { return nil }
            return "\(field.label) is too long (maximum is \(field.limit) characters)"
        }
    }
}
