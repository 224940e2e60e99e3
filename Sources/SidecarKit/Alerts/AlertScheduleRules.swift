import Core
import Crypto
import GTFSRealtime

/// A send scheduled for later: at the alert's start, or at a chosen time.
struct AlertSchedule: Sendable, Equatable {
    /// What happens when the alert changed before the time came.
    enum IfChanged: String, Sendable, CaseIterable {
        /// It waits for an editor: send it now, give it a new time, or cancel it.
        case hold
        /// It does not go.
        case skip
    }
    enum Status: String, Sendable {
        case scheduled
        /// Claimed by one server, which is starting its send.
        case starting
        case started, cancelled, skipped, held
    }
    var id: Int64
    var alertID: Int64
    var regionID: Int
    var audience: AlertSend.Audience
    /// Follows the alert's start rather than a time of its own.
    var atStart: Bool
    var runAt: EpochSeconds
    var ifChanged: IfChanged
    /// The alert's content when it was scheduled (`AlertScheduleRules.fingerprint`).
    var alertFingerprint: String
    var status: Status
    var sendID: Int64?
    /// Why it was held or skipped.
    var reason: String?
    var createdBy: String
    var createdAt: EpochSeconds
    var updatedAt: EpochSeconds

    /// Still to go (or waiting for an editor): editable and cancellable.
    var isOpen: Bool { status == .scheduled || status == .held }
}

/// The rules of scheduled sends. Pure.
enum AlertScheduleRules {
    /// Open schedules an alert may have.
    static let maxOpenPerAlert = 20
    /// The furthest ahead a send may be scheduled.
    static let maxAheadSeconds: Int64 = 366 * 86_400
    /// A claim older than this (its server died while starting it) is
    /// scheduled again.
    static let staleClaimSeconds: Int64 = 300

    /// What riders would get, as a digest: publishing or withdrawing does
    /// not change it, an edit of the text, the times, the severity or the
    /// places does.
    static func fingerprint(_ alert: ServiceAlert) -> String {
        let parts = [
            alert.header, alert.description, alert.url ?? "", alert.cause.name, alert.effect.name, alert.severity.name,
            String(alert.startsAt.value), alert.endsAt.map { String($0.value) } ?? "", AlertScope.text(alert.scope), alert.test ? "test" : "",
        ]
        return Hex.encode(Array(SHA256.digest(Array(parts.joined(separator: "\u{0}").utf8)).prefix(16)))
    }

    /// When a schedule asked for as `at` (`start`, or an instant) runs, or why not.
    static func runAt(_ at: String, alert: ServiceAlert, now: EpochSeconds, parse: (String) -> EpochSeconds?) -> Result<
        (atStart: Bool, runAt: EpochSeconds), ValidationFailure
    > {
        let text = at.trimmingWhitespace()
        let atStart = text.lowercased() == "start"
        guard let instant = atStart ? alert.startsAt : parse(text) else {
            return .failure(
                ValidationFailure(["at must be start or a time with its UTC offset, e.g. 2026-12-01T08:00:00-08:00 (got '\(text.prefix(40))')"]))
        }
        if instant <= now {
            return .failure(
                ValidationFailure([
                    atStart
                        ? "The alert has already started (\(Timestamp.format(instant))): send it now instead of scheduling it at its start"
                        : "at (\(Timestamp.format(instant))) has passed: a scheduled send goes later; send it now instead"
                ]))
        }
        if instant.seconds(since: now) > maxAheadSeconds {
            return .failure(ValidationFailure(["at is more than a year ahead (\(Timestamp.format(instant)))"]))
        }
        return .success((atStart, instant))
    }

    enum Decision: Equatable, Sendable {
        case go
        case hold(String)
        case skip(String)
    }

    /// What a due schedule does, given the alert as it is now.
    static func decide(_ schedule: AlertSchedule, alert: ServiceAlert?, now: EpochSeconds) -> Decision {
        guard let alert else { return .skip("the alert was deleted") }
        var why: String?
        if schedule.audience == .all && !alert.published {
            why = alert.withdrawnAt != nil ? "the alert was withdrawn" : "the alert is not published"
        } else if let end = AlertFeedRules.effectiveEnd(alert), end <= now {
            why = "the alert has ended"
        } else if fingerprint(alert) != schedule.alertFingerprint {
            why = "the alert was edited after the send was scheduled"
        }
        guard let why else { return .go }
        return schedule.ifChanged == .hold ? .hold(why) : .skip(why)
    }
}
