import Core
import GTFSRealtime

/// An authored service alert (spec §3), as stored.
public struct ServiceAlert: Sendable, Equatable {
    public var id: Int64
    public var regionID: Int
    /// The `agency_id` apps match alerts against (the region's OBA agency).
    public var agencyID: String
    /// English source text.
    public var header: String
    public var description: String
    public var url: String?
    public var cause: Cause
    public var effect: Effect
    public var severity: SeverityLevel
    /// Epoch seconds: when riders are shown the alert (the feed's
    /// `active_period` and `communication_period`).
    public var startsAt: EpochSeconds
    public var endsAt: EpochSeconds?
    public var published: Bool
    /// Shown only to feeds requested with `?test=` and pushed only to test devices.
    public var test: Bool
    /// Increases whenever the English header or description changes, so a
    /// translation made from an older text can be recognised as stale.
    public var sourceVersion: Int
    public var createdAt: Int64
    public var updatedAt: Int64
    /// Epoch seconds: when service is affected (the feed's `impact_period`),
    /// both or neither, inside the shown period.
    public var impactStartsAt: EpochSeconds? = nil
    public var impactEndsAt: EpochSeconds? = nil
    /// When it was unpublished after being published (nil: never, or
    /// published again since): a withdrawn alert, not a draft.
    public var withdrawnAt: EpochSeconds? = nil
}

/// A translation of an alert's header and description.
public struct AlertTranslation: Sendable, Equatable {
    public var language: String
    public var header: String
    public var description: String
    /// The alert's `sourceVersion` this translation was made from.
    public var sourceVersion: Int
    /// The English text it was made from (kept since migration 13).
    public var sourceHeader: String?
    public var sourceDescription: String?

    public init(language: String, header: String, description: String, sourceVersion: Int, sourceHeader: String? = nil, sourceDescription: String? = nil) {
        self.language = language
        self.header = header
        self.description = description
        self.sourceVersion = sourceVersion
        self.sourceHeader = sourceHeader
        self.sourceDescription = sourceDescription
    }
}

/// One push send of an alert to an audience, resumable from its cursor.
public struct AlertSend: Sendable, Equatable {
    public enum Audience: String, Sendable, CaseIterable { case all, test }
    public var id: Int64
    public var alertID: Int64
    public var audience: Audience
    /// `running`, `done`, or `failed` (pushes failed for a passing reason
    /// after every retry; starting the send again retries only those).
    public var status: String
    /// The last push registration id already sent (pages are by id).
    public var cursor: Int64
    public var targeted: Int
    public var delivered: Int
    public var failed: Int
    /// Registrations deleted because the provider called their token dead.
    public var pruned: Int
    /// Registrations whose push failed for a passing reason, still to retry.
    public var pending: Int
    public var startedAt: Int64
    public var finishedAt: Int64?
    /// The provider's last passing failure, e.g. "gorush answered HTTP 500".
    public var lastError: String?
    /// How many registrations the audience had when the send started.
    public var audienceSize = 0

    /// Pushes not delivered yet that a resume would try: those pending after
    /// a passing failure and the audience after the cursor (counted by the caller).
    public func undelivered(remainingAfterCursor: Int) -> Int { pending + remainingAfterCursor }
}

/// Per-region settings the regions directory does not carry.
public struct RegionSettings: Sendable, Equatable {
    public var regionID: Int
    public var agencyID: String?
    public var timezone: String?
}
