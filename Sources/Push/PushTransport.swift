import Core

/// The platform a push token belongs to.
public enum PushPlatform: String, Sendable, Codable {
    case ios, android
}

/// One notification to one device.
public struct PushMessage: Sendable, Equatable {
    public var token: String
    public var platform: PushPlatform
    /// The token came from a debug build: APNs sandbox host (§2.7).
    public var apnsSandbox: Bool
    public var title: String?
    public var body: String?
    /// Custom keys delivered beside `aps` on iOS and as FCM data on Android.
    /// Transports deliver them as given; Android data values must already be
    /// strings (FCM data is a string map).
    public var data: [String: JSONValue]
    /// What kind of APNs push this is.
    public var kind: Kind = .alert
    /// APNs priority: 10 delivers at once, 5 when convenient.
    public var priority = 10
    /// Epoch seconds after which the provider may drop it (0 = APNs tries
    /// once, now; FCM keeps it its default four weeks).
    public var expiration: Int64 = 0
    /// The Android notification channel to post on (`android.notification.channel_id`).
    public var androidChannel: String? = nil
    /// Lets a newer push replace an undelivered older one on the device.
    public var collapseID: String?
    /// For Live Activities: the `aps` members (`event`, `content-state`,
    /// `timestamp`, `stale-date`, `dismissal-date`) sent instead of an alert.
    public var liveActivity: [String: JSONValue]?
    /// How a visible notification announces itself on the device.
    public var attention: Attention = .ordinary
    /// The app icon's badge count (APNs `aps.badge`), when set.
    public var badge: Int? = nil

    /// How loudly a notification asks for the rider's attention.
    public enum Attention: String, Sendable, Equatable {
        /// The default sound at the ordinary level (service alerts).
        case ordinary
        /// The default sound, iOS's `time-sensitive` interruption level (it
        /// breaks through Focus and scheduled summaries) and high priority on
        /// Android: a departure alarm wakes the rider whose phone is in a pocket.
        case timeSensitive = "time-sensitive"
    }

    /// `alert` pushes go to the bundle id; Live Activity pushes to
    /// `<bundle id>.push-type.liveactivity` with `apns-push-type: liveactivity`.
    public enum Kind: String, Sendable, Equatable { case alert, liveActivity = "liveactivity" }

    public init(
        token: String, platform: PushPlatform, apnsSandbox: Bool = false, title: String? = nil, body: String? = nil,
        data: [String: JSONValue] = [:]
    ) {
        self.token = token
        self.platform = platform
        self.apnsSandbox = platform == .ios && apnsSandbox
        self.title = title
        self.body = body
        self.data = data
    }
}

/// What became of one message.
public enum PushOutcome: Sendable, Equatable {
    case delivered
    /// The token is dead (unregistered, malformed, wrong topic): stop using it.
    case terminal(reason: String)
    /// Worth trying again later (throttled, provider or network trouble).
    case transient(reason: String)
    /// Refused for the message itself (too large, malformed): retrying will
    /// not help, and the token is not to blame.
    case rejected(reason: String)

    /// Reads a provider's failure reason. Token death is matched by
    /// substring (spec §6.5); `ExpiredProviderToken` is about our own
    /// credentials and so transient.
    public static func classify(failure reason: String) -> PushOutcome {
        let terminalReasons = [
            "Unregistered", "BadDeviceToken", "DeviceTokenNotForTopic", "TopicDisallowed",
            "NotRegistered", "InvalidRegistration", "UNREGISTERED", "MismatchSenderId",
        ]
        if terminalReasons.contains(where: { reason.contains($0) }) { return .terminal(reason: reason) }
        return .transient(reason: reason)
    }
}

/// A way to deliver pushes. Implementations return one outcome per message,
/// in order, and never throw: a failure is an outcome.
public protocol PushTransport: Sendable {
    /// A short name for logs (`gorush`, `log`, `apns`).
    var name: String { get }
    func send(_ messages: [PushMessage]) async -> [PushOutcome]
}
