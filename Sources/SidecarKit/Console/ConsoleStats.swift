import Core
import Database

/// What the dashboard shows of a region, read in one snapshot from the
/// stores that own each figure.
struct ConsoleStats: Sendable {
    typealias Reach = PushRegistrationStore.Reach
    typealias RecentSend = AlertSendStore.RecentSend

    var reach = Reach()
    /// New registrations per day, oldest first, `days` long: the local day
    /// number (days since 1970-01-01 in the region's current UTC offset;
    /// registrations within an hour of a clock change may land a day off).
    var perDay: [(day: Int64, count: Int)] = []
    var pendingAlarms = 0
    var liveActivities = 0
    var recentSends: [RecentSend] = []

    /// Every language group of a region's devices (the alert page's
    /// previews and its "no device reads this language" warnings).
    static func languageGroups(database: any Database, regionID: Int, audience: AlertSend.Audience = .all) async throws -> [(
        locale: String?, count: Int
    )] {
        try await database.read { connection in
            try PushRegistrationStore.languages(connection, regionID: regionID, testOnly: audience == .test, limit: 1000)
        }
    }

    /// Reads the figures of a region; `utcOffset` is the region's offset now.
    static func load(database: any Database, regionID: Int, now: EpochSeconds, days: Int, utcOffset: Int) async throws -> ConsoleStats {
        let offset = Int64(utcOffset)
        let today = (now.value + offset) / 86_400
        let firstDay = today - Int64(days - 1)
        let from = firstDay * 86_400 - offset
        return try await database.read { connection in
            var stats = ConsoleStats()
            stats.reach = try PushRegistrationStore.reach(connection, regionID: regionID)
            // Registrations keep milliseconds.
            let counts = try PushRegistrationStore.newPerDay(connection, regionID: regionID, from: EpochSeconds(from).millis, utcOffset: offset)
            stats.perDay = (firstDay...today).map { (day: $0, count: counts[$0] ?? 0) }
            stats.pendingAlarms = try AlarmStore.count(connection, regionID: regionID)
            stats.liveActivities = try LiveActivityStore.count(connection, regionID: regionID)
            stats.recentSends = try AlertSendStore.recentSends(connection, regionID: regionID, limit: 10)
            return stats
        }
    }
}
