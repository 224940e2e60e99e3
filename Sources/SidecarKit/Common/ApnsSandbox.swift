import HTTPServer
import Push

/// Spec §2.7: whether a token came from a debug build and so must be pushed
/// through the APNs sandbox host.
///
/// The parse is a strict allow-list because the two mistakes differ: a debug
/// token sent to production fails in front of a developer, while a production
/// token sent to the sandbox bounces `BadDeviceToken` in front of a rider (and
/// for a Live Activity that bounce is terminal).
enum ApnsSandbox {
    /// What a raw `apns_sandbox` value means.
    enum Reading: Equatable, Sendable {
        case sandbox
        case production
        /// Not on either list: production, and worth a log line.
        case unrecognized
    }

    /// Reads a raw parameter: `1|t|true|on` are sandbox; `0|f|false|off`,
    /// empty and absent are production; anything else is production too.
    /// Case-insensitive, surrounding whitespace ignored.
    static func read(_ raw: String?) -> Reading {
        guard let raw else { return .production }
        switch raw.trimmingWhitespace().lowercasedFastIfASCII() {
        case "1", "t", "true", "on": return .sandbox
        case "0", "f", "false", "off", "": return .production
        default: return .unrecognized
        }
    }

    /// The stored flag for a registration: only iOS tokens can be sandbox
    /// tokens, so the flag is always false for Android.
    static func flag(_ raw: String?, operatingSystem: PushPlatform) -> Bool {
        operatingSystem == .ios && read(raw) == .sandbox
    }
}

/// Boolean-ish parameters such as `test_device`: a recognised true or false,
/// or nil (absent, blank or unrecognised) so sticky fields keep their value.
enum BooleanParameter {
    static func read(_ raw: String?) -> Bool? {
        guard let raw else { return nil }
        switch raw.trimmingWhitespace().lowercasedFastIfASCII() {
        case "1", "t", "true", "on", "yes", "y": return true
        case "0", "f", "false", "off", "no", "n": return false
        default: return nil
        }
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and newlines.
    func trimmingWhitespace() -> String {
        // Fast path: printable ASCII at both ends means nothing to trim.
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x7F, last > 0x20, last < 0x7F { return self }
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }

    /// The trimmed string, or nil when it is blank.
    var presence: String? {
        let trimmed = trimmingWhitespace()
        return trimmed.isEmpty ? nil : trimmed
    }
}
