import Core
import GTFSRealtime

/// What each shipped app does with an alert as the feed carries it, from the
/// apps' own rules, so the console and `alert show` can say which app hides
/// it and why. Pure: the entity as emitted, the feed's stamp, the clock, and
/// the agency ids the region's OneBusAway server knows (nil: not known here).
///
/// - iOS (OneBusAway/onebusaway-ios): an entity becomes an alert only with
///   an informed entity carrying `agency_id` (`AgencyAlert.swift:220`
///   `isAgencyWideAlert`) whose agency is in the server's
///   `agencies-with-coverage` or empty, region-wide (`AgencyAlert.swift:76-83`).
///   It interrupts (the banner and the unread badge of
///   `AgencyAlertsStore.swift:177` `recentHighSeverityAlerts`) only for
///   `WARNING` or `SEVERE` whose first `active_period` starts less than 8
///   hours from now either way; otherwise it is only listed.
/// - Android (OneBusAway/onebusaway-android `widealerts/GtfsAlertsHelper.kt`
///   `isValidEntity`): its launch dialog shows an alert only with an
///   `agency_id` selector, `WARNING` or `SEVERE`, and a
///   `communication_period` (else `active_period`) range whose start is 0 to
///   24 hours before the feed's `header.timestamp`; nothing else of the feed.
enum AlertAppVisibility {
    enum App: String, Sendable { case iOS, android = "Android" }

    /// One thing an app does differently from showing the alert in full.
    struct Finding: Equatable, Sendable {
        let app: App
        let text: String
        var line: String { "\(app.rawValue): \(text)" }
    }

    static let iOSInterruptWindowSeconds: Int64 = 8 * 3600
    static let androidWindowSeconds: Int64 = 24 * 3600

    static func findings(_ entity: FeedEntity, stamp: EpochSeconds, now: EpochSeconds, knownAgencies: Set<String>?) -> [Finding] {
        guard let alert = entity.alert else { return [] }
        var found: [Finding] = []
        let agency = alert.informedEntities.first { $0.agencyID != nil }?.agencyID
        let high = alert.severityLevel == .warning || alert.severityLevel == .severe
        let severityName = alert.severityLevel?.name ?? "no severity"
        // iOS
        if let agency {
            if let knownAgencies, !agency.isEmpty, !knownAgencies.contains(agency) {
                found.append(
                    Finding(app: .iOS, text: "drops it: agency \(agency) is not in the OneBusAway server's agencies-with-coverage"))
            } else if !high {
                found.append(Finding(app: .iOS, text: "lists it without a banner (\(severityName): only WARNING and SEVERE interrupt)"))
            } else if let start = alert.activePeriods.first?.start.map({ EpochSeconds(Int64(clamping: $0)) }) {
                if now.seconds(since: start) >= iOSInterruptWindowSeconds {
                    found.append(Finding(app: .iOS, text: "lists it without a banner (it started more than 8 hours ago)"))
                } else if start.seconds(since: now) >= iOSInterruptWindowSeconds {
                    found.append(Finding(app: .iOS, text: "lists it without a banner until 8 hours before it starts"))
                }
            } else {
                found.append(Finding(app: .iOS, text: "lists it without a banner (no start in its first active_period)"))
            }
        } else {
            found.append(Finding(app: .iOS, text: "drops it: no informed entity carries an agency_id"))
        }
        // Android
        if agency == nil {
            found.append(Finding(app: .android, text: "never shows it: no informed entity carries an agency_id"))
        } else if !high {
            found.append(Finding(app: .android, text: "never shows it (\(severityName): its dialog shows only WARNING and SEVERE)"))
        } else {
            let ranges = alert.communicationPeriods.isEmpty ? alert.activePeriods : alert.communicationPeriods
            let starts = ranges.compactMap { $0.start.map { EpochSeconds(Int64(clamping: $0)) } }
            if starts.isEmpty {
                found.append(Finding(app: .android, text: "never shows it: no period has a start"))
            } else if !starts.contains(where: { (0...androidWindowSeconds).contains(stamp.seconds(since: $0)) }) {
                found.append(
                    Finding(
                        app: .android,
                        text: starts.contains { $0 > stamp }
                            ? "shows it from its start (not yet)" : "no longer shows it: it started more than 24 hours ago"))
            }
        }
        return found
    }
}

extension AlertFeedView {
    /// What each app does with a published alert in the feed (empty: both
    /// show it in full, or it is not in the feed, which says so itself).
    func appFindings(_ alert: ServiceAlert, now: EpochSeconds, knownAgencies: Set<String>? = nil) -> [AlertAppVisibility.Finding] {
        let selection = selection(for: alert)
        guard let entry = selection.entries.first(where: { $0.alert.id == alert.id }) else { return [] }
        return AlertAppVisibility.findings(entry.entity, stamp: selection.stamp, now: now, knownAgencies: knownAgencies)
    }
}
