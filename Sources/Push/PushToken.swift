/// The one rule for push tokens, shared by everything that takes one (push
/// registrations' `token`, alarms' `user_push_id`, Live Activities'
/// `push_token`) and the relay: 8 to 4096 characters of ASCII letters,
/// digits, `_`, `:` and `-`. Every token the providers issue passes: APNs
/// device and Live Activity tokens are hexadecimal (32 bytes and more),
/// FCM registration tokens are URL-safe base64 with a `:` (about 160
/// characters), OneSignal player ids (v1 alarms) are UUIDs. A token outside
/// it is refused where it arrives, so one bad token can never fail a
/// batch of other riders' pushes at the relay.
public enum PushToken {
    public static let lengths = 8...4096

    /// What a refusal says the rule is.
    public static let rule = "8 to 4096 letters, digits, '_', ':' or '-'"

    public static func isValid(_ token: String) -> Bool {
        lengths.contains(token.utf8.count)
            && token.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
                    || byte == 0x3A
            }
    }

    /// "Token is not a push token a provider issues (...)" for a present
    /// value that breaks the rule; nil otherwise.
    public static func problem(_ label: String, _ value: String?) -> String? {
        guard let value, !isValid(value) else { return nil }
        return "\(label) is not a push token a provider issues (\(rule))"
    }
}
