import Core
import GTFSRealtime

/// A GTFS-realtime Alerts feed an agency already publishes, polled so its
/// alerts reach riders' feeds and phones without being typed twice.
struct AlertSource: Sendable, Equatable {
    /// What happens to the source's alerts besides pushes.
    enum Mode: String, Sendable, CaseIterable {
        /// Shown in the region's feed, kept in step with the source.
        case mirror
        /// Not republished (the agency's OneBusAway server shows them); only pushed.
        case pushOnly = "push-only"
    }

    /// Whether new and changed alerts push.
    enum PushMode: String, Sendable, CaseIterable {
        case off
        /// At once, when the rules pass.
        case auto
        /// After an editor approves it in the console (or `sidecar source approve`).
        case review
    }

    /// How narrowly an alert may be scoped and still push.
    enum Scope: String, Sendable, CaseIterable, Comparable {
        /// Only alerts about the whole agency (or a mode of it).
        case agency
        /// Also alerts about whole routes.
        case route
        /// Also alerts about single stops and trips.
        case any

        static func < (lhs: Scope, rhs: Scope) -> Bool { allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)! }
    }

    /// A request header whose value is a secret read when polling, never stored.
    struct SecretHeader: Sendable, Equatable {
        enum Origin: Sendable, Equatable {
            case file(String)
            case environment(String)
        }
        var name: String
        var origin: Origin

        /// `NAME:file:PATH` or `NAME:env:VARIABLE`, as stored.
        var stored: String {
            switch origin {
            case .file(let path): return "\(name):file:\(path)"
            case .environment(let variable): return "\(name):env:\(variable)"
            }
        }

        /// Where the value comes from, as `source show` prints it (never the value).
        var described: String {
            switch origin {
            case .file(let path): return "\(name) from the file \(path)"
            case .environment(let variable): return "\(name) from $\(variable)"
            }
        }
    }

    var id: Int64
    var regionID: Int
    var url: String
    var mode: Mode
    var intervalSeconds: Int
    var push: PushMode
    var minSeverity: SeverityLevel
    /// Effects that push; empty: any.
    var effects: [Effect]
    var scope: Scope
    /// Minutes after local midnight in the region's zone; pushes wait while
    /// inside [start, end) (which may wrap past midnight).
    var quietHours: QuietHours?
    var audience: AlertSend.Audience
    /// More push candidates than this in one poll all wait for review.
    var floodThreshold: Int
    /// Whether a change within 10 minutes of a push pushes again.
    var pushCorrections: Bool
    /// Pushes the rules may start in any hour; beyond it they wait for review.
    var pushesPerHour = AlertSourceRules.defaultPushesPerHour
    var headers: [SecretHeader]
    /// Lets the URL reach link-local and cloud metadata addresses.
    var allowLinkLocal: Bool
    /// Lets the URL reach loopback, private (RFC 1918, unique-local) and
    /// shared (CGNAT) addresses: an on-premises feed.
    var allowPrivate = false
    var maxBytes: Int
    var createdAt: EpochSeconds
    var updatedAt: EpochSeconds
}

/// Quiet hours in a region's local time, in minutes after midnight.
struct QuietHours: Sendable, Equatable {
    var start: Int
    var end: Int

    /// `22:00-06:30`.
    var text: String { "\(Self.clock(start))-\(Self.clock(end))" }
    static func clock(_ minutes: Int) -> String {
        let hours = minutes / 60
        let rest = minutes % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (rest < 10 ? "0" : "") + "\(rest)"
    }
}

/// What the poller knows of a source between polls.
struct AlertSourceStatus: Sendable, Equatable {
    var lastPollAt: EpochSeconds?
    /// `ok`, `not modified`, `failing`, `held` (a flood waits for review).
    var state: String?
    var lastSuccessAt: EpochSeconds?
    /// When the current run of failures began (nil: not failing).
    var failingSince: EpochSeconds?
    var lastError: String?
    /// Problems with single alerts in the last fetched feed (they were left out).
    var problems: [String] = []
    var etag: String?
    var lastModified: String?
    var failures: Int = 0
    var nextPollAt: EpochSeconds = 0
    /// Whether a poll ever succeeded: the first one's alerts are the baseline.
    var baselined = false
    var alertCount = 0
    var polls = 0
    var notModified = 0
    var failedPolls = 0
    var pushes = 0
    /// Why the last poll's pushes were held, when they were.
    var heldReason: String?
}

/// One alert of a source as mapped for storage: the fields authored
/// alerts have (so the console, the send path and the per-language fan-out
/// work unchanged) and the feed's own message, re-emitted as it came.
struct MirroredAlert: Sendable, Equatable {
    var entityID: String
    var header: String
    var description: String
    var url: String?
    var cause: Cause
    var effect: Effect
    var severity: SeverityLevel
    var startsAt: EpochSeconds
    var endsAt: EpochSeconds?
    var impactStartsAt: EpochSeconds?
    var impactEndsAt: EpochSeconds?
    /// Every other language, each a translation.
    var translations: [AlertTranslation]
    /// The alert as the feed re-emits it, with the region's agency selector added.
    var feedAlert: GTFSRealtime.Alert
    var scope: AlertSource.Scope
    /// Changes with anything the feed re-emits.
    var contentHash: String
    /// Changes only with what makes a change worth a push: the header in
    /// any language, or a period.
    var materialHash: String
    /// Values dropped or kept as unknown (a `javascript:` URL, an unknown
    /// cause), for the poll's report; the alert itself was taken.
    var notes: [String] = []
    /// Enum values the source sent that this server does not know.
    var unknownValues = 0
}

/// What the source store remembers of one alert it has seen.
struct SourceAlertState: Sendable, Equatable {
    /// Where the alert is in the push pipeline.
    enum Decision: String, Sendable {
        /// Present at the first successful poll: never pushed.
        case baseline
        /// Seen, and the rules said not to push (the reason says which).
        case skipped
        /// Waiting for an editor.
        case review
        /// Approved or pushed by the rules; its send is being started.
        case due
        /// Waiting for quiet hours to end.
        case deferred
        case pushed
        case dismissed
    }
    var sourceID: Int64
    var entityID: String
    var alertID: Int64
    var contentHash: String
    var materialHash: String
    var decision: Decision
    var reason: String?
    var notBefore: EpochSeconds?
    var pushedAt: EpochSeconds?
    var sendID: Int64?
    var present: Bool
    var changedAt: EpochSeconds
    /// When the source first listed it: the start of an alert that has no period.
    var firstSeenAt: EpochSeconds
    /// Kept out of the feed by an editor ("Dismiss from the feed") while
    /// the source still lists it.
    var hidden = false
}
