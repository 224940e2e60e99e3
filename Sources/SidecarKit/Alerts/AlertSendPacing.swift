import Core
import GTFSRealtime

/// Paced fan-out: a region can cap how many pushes a minute a send goes
/// out at, so a region-wide push does not bring every rider's app to the
/// OneBusAway server in the same minute. Urgent (SEVERE) alerts go at full
/// speed. Pure.
enum AlertSendPacing {
    /// The paces a region may set (0: unpaced).
    static let allowed = 60...1_000_000
    /// Seconds between pages of a paced send: the pace is kept smooth, and a
    /// page is never long in the making (the stall watch allows 30 s).
    static let pageSeconds = 10

    /// A region setting's text (`0` or `none` clears it), or the message.
    static func parse(_ text: String) -> Result<Int, ValidationFailure> {
        let trimmed = text.trimmingWhitespace().lowercased()
        if trimmed == "none" || trimmed == "0" || trimmed.isEmpty { return .success(0) }
        guard let value = Int(trimmed), allowed.contains(value) else {
            return .failure(
                ValidationFailure([
                    "push pace must be a number of pushes a minute from \(allowed.lowerBound) to \(allowed.upperBound), or 0 for none (got '\(text.prefix(20))')"
                ]))
        }
        return .success(value)
    }

    /// The pace a send of this alert goes at: nil when unpaced, or urgent.
    static func pace(for alert: ServiceAlert, perMinute: Int) -> Int? {
        guard perMinute > 0, alert.severity != .severe else { return nil }
        return perMinute
    }

    /// Pages of a paced send: ten seconds' worth, at most `base`.
    static func pageSize(pace: Int, base: Int) -> Int { min(base, max(pace * pageSeconds / 60, 1)) }

    /// When the next page may go, in seconds since 1970: `sent` pushes into
    /// this run at `pace` a minute, counted from the run's start (a resumed
    /// send does not burst to catch up on the time it was stopped).
    static func due(sent: Int, pace: Int, runStartedAt: Double) -> Double {
        runStartedAt + Double(sent) * 60 / Double(pace)
    }

    /// When the last of `audience` devices gets it, sending from `now`.
    static func lastDevice(audience: Int, pace: Int?, now: EpochSeconds) -> EpochSeconds? {
        guard let pace, audience > 0 else { return nil }
        return now.adding(seconds: Int64((Double(audience) * 60 / Double(pace)).rounded(.up)))
    }
}
