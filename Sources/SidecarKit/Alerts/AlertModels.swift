import Core
import FoundationEssentials
import GTFSRealtime

/// An authored service alert (spec §3), as stored.
struct ServiceAlert: Sendable, Equatable {
    var id: Int64
    var regionID: Int
    /// The `agency_id` apps match alerts against (the region's OBA agency).
    var agencyID: String
    /// English source text.
    var header: String
    var description: String
    var url: String?
    var cause: Cause
    var effect: Effect
    var severity: SeverityLevel
    /// Epoch seconds: when riders are shown the alert (the feed's
    /// `active_period` and `communication_period`).
    var startsAt: EpochSeconds
    var endsAt: EpochSeconds?
    var published: Bool
    /// Shown only to feeds requested with `?test=` and pushed only to test devices.
    var test: Bool
    /// Increases whenever the English header or description changes, so a
    /// translation made from an older text can be recognised as stale.
    var sourceVersion: Int
    var createdAt: EpochSeconds
    var updatedAt: EpochSeconds
    /// Epoch seconds: when service is affected (the feed's `impact_period`),
    /// both or neither, inside the shown period.
    var impactStartsAt: EpochSeconds? = nil
    var impactEndsAt: EpochSeconds? = nil
    /// When it was unpublished after being published (nil: never, or
    /// published again since): a withdrawn alert, not a draft.
    var withdrawnAt: EpochSeconds? = nil
    /// The alert source it comes from (nil: authored here), and its entity
    /// id there: such an alert is changed at its source, not here.
    var sourceID: Int64? = nil
    var sourceEntity: String? = nil
    /// False for a push-only source's alerts: pushed, never in the feed.
    var inFeed = true
    /// The routes, stops and trips an authored alert is about (empty: the
    /// whole agency, or region). A mirrored alert keeps its source's own.
    var scope: [AlertSelector] = []
    /// Publish-time warnings an editor has acknowledged, by code
    /// (`AlertPublishChecks`): not said again.
    var acknowledgedChecks: Set<String> = []
}

/// A translation of an alert's header and description.
struct AlertTranslation: Sendable, Equatable {
    var language: String
    var header: String
    var description: String
    /// The alert's `sourceVersion` this translation was made from.
    var sourceVersion: Int
    /// The English text it was made from (kept since migration 13).
    var sourceHeader: String?
    var sourceDescription: String?

    init(language: String, header: String, description: String, sourceVersion: Int, sourceHeader: String? = nil, sourceDescription: String? = nil) {
        self.language = language
        self.header = header
        self.description = description
        self.sourceVersion = sourceVersion
        self.sourceHeader = sourceHeader
        self.sourceDescription = sourceDescription
    }
}

/// One push send of an alert to an audience, resumable from its cursor.
struct AlertSend: Sendable, Equatable {
    enum Audience: String, Sendable, CaseIterable { case all, test }
    var id: Int64
    var alertID: Int64
    var audience: Audience
    /// `running`, `done`, or `failed` (pushes failed for a passing reason
    /// after every retry; starting the send again retries only those).
    var status: String
    /// The last push registration id already sent (pages are by id).
    var cursor: Int64
    var targeted: Int
    var delivered: Int
    var failed: Int
    /// Registrations deleted because the provider called their token dead.
    var pruned: Int
    /// Registrations whose push failed for a passing reason, still to retry.
    var pending: Int
    var startedAt: EpochSeconds
    var finishedAt: EpochSeconds?
    /// The provider's last passing failure, e.g. "gorush answered HTTP 500".
    var lastError: String?
    /// How many registrations the audience had when the send started.
    var audienceSize = 0
    /// Push text the caller supplied instead of the alert's, by language
    /// (`en` is the copy for every language without its own).
    var messages: Messages? = nil
    /// When a running send's transport stopped answering (seconds), while
    /// it has not answered since; `lastError` then says what it last said.
    var stalledSince: EpochSeconds? = nil

    /// The status people are shown: a running send that has made no
    /// progress for `AlertSender.stallSeconds` is `stalled`.
    var shownStatus: String { status == "running" && stalledSince != nil ? "stalled" : status }

    /// One language's push title and body.
    struct PushText: Sendable, Equatable {
        var title: String
        var body: String
    }

    typealias Messages = [String: PushText]

    static func encode(_ messages: Messages) -> String {
        let object = JSONValue.object(
            messages.mapValues { JSONValue.object(["title": .string($0.title), "body": .string($0.body)]) })
        return String(decoding: object.encoded(), as: UTF8.self)
    }

    static func decode(_ text: String) -> Messages? {
        guard case .object(let languages)? = try? JSONValue(parsing: text.utf8) else { return nil }
        var messages: Messages = [:]
        for (language, value) in languages {
            guard case .object(let fields) = value, case .string(let title)? = fields["title"], case .string(let body)? = fields["body"] else {
                continue
            }
            messages[language] = PushText(title: title, body: body)
        }
        return messages
    }

    /// Pushes not delivered yet that a resume would try: those pending after
    /// a passing failure and the audience after the cursor (counted by the caller).
    func undelivered(remainingAfterCursor: Int) -> Int { pending + remainingAfterCursor }
}
