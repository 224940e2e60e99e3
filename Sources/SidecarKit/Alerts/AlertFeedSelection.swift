import Core
import GTFSRealtime

/// What the alerts feed carries at a moment, and why each published alert
/// is or is not in it. The feed route encodes it, and the console's and the
/// CLI's "live" lists are read from it, so what staff are told riders see
/// is what the apps download.
///
/// The feed is current conditions (spec §3): an alert whose shown period
/// has ended leaves it. What riders need now goes first: every alert shown
/// now before any upcoming one, then the more severe, then the newer start
/// (the soonest, for upcoming ones). The Android app shows the first alert
/// in feed order that passes its rules (OneBusAway/onebusaway-android
/// `widealerts/GtfsAlerts.kt:73-85`), so the order decides what it shows.
/// Authored alerts are never displaced by mirrored ones, and one source may
/// fill at most `maxPerSource` places.
struct AlertFeedSelection: Sendable {
    /// An alert in the feed, as it goes out.
    struct Entry: Sendable {
        var alert: ServiceAlert
        /// Shown now (else upcoming).
        var activeNow: Bool
        var entity: FeedEntity
        var bytes: Int
    }

    /// Why a published alert is not in the feed.
    enum Exclusion: Equatable, Sendable {
        /// A test alert: only feeds asked for with `?test=` carry it.
        case test
        /// A push-only source's alert, or one an editor dismissed from the feed.
        case keptOut
        /// Its shown period is over.
        case ended
        /// The feed's places are taken by alerts riders need more.
        case full
        /// Its source already fills its share of the feed.
        case sourceShare
        /// The feed's bytes are taken by alerts riders need more.
        case size

        /// The reason, in an editor's words.
        var explanation: String {
            switch self {
            case .test: return "a test alert: only test devices' feeds carry it"
            case .keptOut: return "kept out of the feed (a push-only source's alert, or dismissed from the feed)"
            case .ended: return "its shown period is over"
            case .full:
                return "the feed is full: its \(AlertFeedRules.maxAlerts) places go to alerts shown now, then the more severe, then the newer"
            case .sourceShare: return "its source already fills \(AlertFeedRules.maxPerSource) places, the most one source may"
            case .size:
                return "the feed would pass \(AlertFeedRules.maxBytes / 1024) KiB: its bytes go to alerts shown now, then the more severe"
            }
        }
    }

    /// The alerts in the feed, in feed order.
    var entries: [Entry]
    /// Published alerts left out, by id, and why.
    var excluded: [Int64: Exclusion]
    /// When the selection next changes by itself: an alert starts or ends,
    /// or leaves the Android app's 24-hour window. nil: not before an edit.
    var nextChange: EpochSeconds?
    /// The feed header's timestamp: when the content last changed (an edit
    /// or one of those moments). It moves only when the content does, so an
    /// unchanged feed keeps its bytes and its ETag, and it is never before
    /// the start of an alert that is shown: Android shows an alert only when
    /// `0 <= header.timestamp - start <= 24 h`
    /// (`widealerts/GtfsAlertsHelper.kt:63-67`), from its start second.
    var stamp: EpochSeconds

    /// Whether an alert is in the feed.
    func includes(_ id: Int64) -> Bool { entries.contains { $0.alert.id == id } }

    /// The window Android shows an alert in after its start, plus a second
    /// (its test is inclusive): the stamp moves then so the alert leaves it.
    static let androidWindowSeconds: Int64 = 24 * 3600 + 1

    /// The ranges riders are shown an alert in: an authored alert's start
    /// to its end (or the 8-hour default); a mirrored one's communication
    /// periods, else its active ones, open-ended where the source left the
    /// end out (a period without a start began when the alert did).
    static func periods(_ alert: ServiceAlert, message: GTFSRealtime.Alert?) -> [(start: EpochSeconds, end: EpochSeconds?)] {
        guard alert.sourceID != nil, let message else {
            let end = AlertFeedRules.effectiveEnd(alert) ?? alert.startsAt.adding(seconds: AlertFeedRules.defaultDurationSeconds)
            return [(alert.startsAt, end)]
        }
        let shown = AlertSourceMapping.shownPeriods(message)
        guard !shown.isEmpty else { return [(alert.startsAt, alert.endsAt)] }
        return shown.map {
            (EpochSeconds(Int64(clamping: $0.start ?? UInt64(max(alert.startsAt.value, 0)))), $0.end.map { EpochSeconds(Int64(clamping: $0)) })
        }
    }

    /// The selection at `now` of a region's published alerts. `mirrored`
    /// holds the stored messages of alerts from sources; `changedAt` is when
    /// the region's alerts were last written.
    static func select(
        _ alerts: [ServiceAlert], translations: [Int64: [AlertTranslation]], mirrored: [Int64: [UInt8]], includeTest: Bool, now: EpochSeconds,
        changedAt: EpochSeconds
    ) -> AlertFeedSelection {
        struct Candidate {
            var alert: ServiceAlert
            var message: GTFSRealtime.Alert?
            var periods: [(start: EpochSeconds, end: EpochSeconds?)]
            var activeNow: Bool
            /// The current period's start (shown now), else the next one's.
            var start: EpochSeconds
        }
        var excluded: [Int64: Exclusion] = [:]
        var candidates: [Candidate] = []
        var boundaries: [EpochSeconds] = []
        for alert in alerts where alert.published {
            let message = alert.sourceID == nil ? nil : mirrored[alert.id].flatMap(AlertSourceMapping.decoded)
            let periods = periods(alert, message: message)
            if alert.inFeed && (includeTest || !alert.test) {
                for period in periods {
                    boundaries += [period.start, period.start.adding(seconds: androidWindowSeconds)] + (period.end.map { [$0] } ?? [])
                }
            }
            guard includeTest || !alert.test else {
                excluded[alert.id] = .test
                continue
            }
            guard alert.inFeed else {
                excluded[alert.id] = .keptOut
                continue
            }
            let current = periods.filter { $0.start <= now && ($0.end.map { now < $0 } ?? true) }
            let upcoming = periods.filter { $0.start > now }
            guard !current.isEmpty || !upcoming.isEmpty else {
                excluded[alert.id] = .ended
                continue
            }
            candidates.append(
                Candidate(
                    alert: alert, message: message, periods: periods, activeNow: !current.isEmpty,
                    start: current.map(\.start).max() ?? upcoming.map(\.start).min() ?? alert.startsAt))
        }
        func precedes(_ a: Candidate, _ b: Candidate) -> Bool {
            if a.activeNow != b.activeNow { return a.activeNow }
            if a.alert.severity.rank != b.alert.severity.rank { return a.alert.severity.rank > b.alert.severity.rank }
            if a.start != b.start { return a.activeNow ? a.start > b.start : a.start < b.start }
            return a.alert.id > b.alert.id
        }
        candidates.sort(by: precedes)

        var chosen: [(Candidate, FeedEntity, Int)] = []
        var bytes = 0
        var perSource: [Int64: Int] = [:]
        // Authored alerts first: a source, however large, never displaces one.
        for authored in [true, false] {
            for candidate in candidates where (candidate.alert.sourceID == nil) == authored {
                if let sourceID = candidate.alert.sourceID, perSource[sourceID, default: 0] >= AlertFeedRules.maxPerSource {
                    excluded[candidate.alert.id] = .sourceShare
                    continue
                }
                guard chosen.count < AlertFeedRules.maxAlerts else {
                    excluded[candidate.alert.id] = .full
                    continue
                }
                let entity = AlertFeedRules.entity(
                    candidate.alert, translations: translations[candidate.alert.id] ?? [], message: candidate.message, now: now)
                let size = FeedMessage(header: FeedHeader(timestamp: nil), entities: [entity]).encoded().count
                guard bytes + size <= AlertFeedRules.maxBytes else {
                    excluded[candidate.alert.id] = .size
                    continue
                }
                bytes += size
                if let sourceID = candidate.alert.sourceID { perSource[sourceID, default: 0] += 1 }
                chosen.append((candidate, entity, size))
            }
        }
        chosen.sort { precedes($0.0, $1.0) }
        let passed = boundaries.filter { $0 <= now }.max() ?? 0
        return AlertFeedSelection(
            entries: chosen.map { Entry(alert: $0.0.alert, activeNow: $0.0.activeNow, entity: $0.1, bytes: $0.2) }, excluded: excluded,
            nextChange: boundaries.filter { $0 > now }.min(), stamp: max(changedAt, passed, 60))
    }
}

/// What riders see of an alert at a moment, read from the feed's own
/// selection: the console's and the CLI's lists say this rather than a
/// bare published flag.
enum AlertVisibility: String, CaseIterable, Sendable {
    case live, upcoming
    /// Published and not over, but not in the feed (the selection says why).
    case notInFeed = "not in feed"
    case draft, withdrawn, ended

    /// An alert's state in the selection of its feed (the test feed's for a
    /// test alert).
    static func of(_ alert: ServiceAlert, in selection: AlertFeedSelection) -> AlertVisibility {
        if !alert.published { return alert.withdrawnAt == nil ? .draft : .withdrawn }
        if let entry = selection.entries.first(where: { $0.alert.id == alert.id }) { return entry.activeNow ? .live : .upcoming }
        return selection.excluded[alert.id] == .ended ? .ended : .notInFeed
    }

    /// The console's heading for a list of alerts in this state.
    var heading: String {
        switch self {
        case .live: return "Live: riders see these now"
        case .upcoming: return "Upcoming: in the feed, shown from their start"
        case .notInFeed: return "Published but not in the feed"
        case .draft: return "Drafts: never published"
        case .withdrawn: return "Withdrawn: unpublished after being published"
        case .ended: return "Ended: riders no longer see these"
        }
    }
}

/// A region's feed selections, public and with test alerts, read together:
/// a test alert's state is the test feed's.
struct AlertFeedView: Sendable {
    let published: AlertFeedSelection
    let withTest: AlertFeedSelection

    func selection(for alert: ServiceAlert) -> AlertFeedSelection { alert.test ? withTest : published }
    func visibility(_ alert: ServiceAlert) -> AlertVisibility { AlertVisibility.of(alert, in: selection(for: alert)) }
    /// Why a published alert is not in its feed, in an editor's words.
    func exclusion(_ alert: ServiceAlert) -> AlertFeedSelection.Exclusion? { selection(for: alert).excluded[alert.id] }
}

extension AlertFeedView {
    /// A region's selections now, as the feed builds them.
    static func read(_ store: AlertStore, regionID: Int, now: EpochSeconds) async throws -> AlertFeedView {
        let snapshot = try await store.feedSnapshot(regionID: regionID, keptOut: true)
        func select(_ includeTest: Bool) -> AlertFeedSelection {
            AlertFeedSelection.select(
                snapshot.alerts, translations: snapshot.translations, mirrored: snapshot.mirrored, includeTest: includeTest, now: now,
                changedAt: snapshot.changedAt ?? 0)
        }
        return AlertFeedView(published: select(false), withTest: select(true))
    }
}
