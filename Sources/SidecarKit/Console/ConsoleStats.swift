import Database

/// What the dashboard shows of a region, read in one go.
struct ConsoleStats: Sendable {
    struct Reach: Sendable, Equatable {
        var ios = 0
        var android = 0
        var apnsProduction = 0
        var apnsSandbox = 0
        var testDevices = 0
        /// Locale (nil: English) → registrations, largest first.
        var locales: [(locale: String?, count: Int)] = []
        var total: Int { ios + android }

        static func == (lhs: Reach, rhs: Reach) -> Bool {
            lhs.ios == rhs.ios && lhs.android == rhs.android && lhs.apnsProduction == rhs.apnsProduction && lhs.apnsSandbox == rhs.apnsSandbox
                && lhs.testDevices == rhs.testDevices && lhs.locales.map(\.locale) == rhs.locales.map(\.locale) && lhs.locales.map(\.count) == rhs.locales.map(\.count)
        }
    }

    struct RecentSend: Sendable {
        var send: AlertSend
        var alertID: Int64
        var header: String
    }

    var reach = Reach()
    /// New registrations per day, oldest first, `days` long: the local day
    /// number (days since 1970-01-01 in the region's current UTC offset;
    /// registrations within an hour of a clock change may land a day off).
    var perDay: [(day: Int64, count: Int)] = []
    var pendingAlarms = 0
    var liveActivities = 0
    var recentSends: [RecentSend] = []

    /// Registrations by locale (nil: English), largest first.
    /// Devices per language (the catalog's tags, so at most one group per
    /// catalog language and one without), the largest first.
    static func locales(_ connection: any SQLConnection, regionID: Int, limit: Int = 12) throws -> [(locale: String?, count: Int)] {
        try connection.query("""
            SELECT locale, COUNT(*) AS n FROM push_registrations WHERE region_id = \(Int64(regionID)) GROUP BY locale ORDER BY n DESC, locale LIMIT \(Int64(limit))
            """).map { (locale: try $0.optionalString("locale"), count: Int(try $0.int("n"))) }
    }

    /// Every language group of a region's devices (the alert page's
    /// previews and its "no device reads this language" warnings).
    static func languageGroups(database: any Database, regionID: Int) async throws -> [(locale: String?, count: Int)] {
        try await database.read { connection in try locales(connection, regionID: regionID, limit: 1000) }
    }

    /// Reads the figures of a region; `utcOffset` is the region's offset now.
    static func load(database: any Database, regionID: Int, now: Int64, days: Int, utcOffset: Int) async throws -> ConsoleStats {
        let region = SQLValue.integer(Int64(regionID))
        let offset = Int64(utcOffset)
        let today = (now + offset) / 86_400
        let firstDay = today - Int64(days - 1)
        let from = firstDay * 86_400 - offset
        return try await database.read { connection in
            var stats = ConsoleStats()
            for row in try connection.query("""
                SELECT operating_system, apns_sandbox, test_device, COUNT(*) AS n FROM push_registrations WHERE region_id = \(region)
                GROUP BY operating_system, apns_sandbox, test_device
                """) {
                let count = Int(try row.int("n"))
                if try row.optionalString("operating_system") == "android" { stats.reach.android += count } else {
                    stats.reach.ios += count
                    if try row.optionalInt("apns_sandbox") == 1 { stats.reach.apnsSandbox += count } else { stats.reach.apnsProduction += count }
                }
                if try row.optionalInt("test_device") == 1 { stats.reach.testDevices += count }
            }
            stats.reach.locales = try locales(connection, regionID: regionID)
            var counts: [Int64: Int] = [:]
            // Registrations keep milliseconds.
            for row in try connection.query("""
                SELECT (created_at / 1000 + \(offset)) / 86400 AS day, COUNT(*) AS n FROM push_registrations
                WHERE region_id = \(region) AND created_at >= \(from * 1000) GROUP BY 1
                """) {
                counts[try row.optionalInt("day") ?? 0] = Int(try row.int("n"))
            }
            stats.perDay = (firstDay...today).map { (day: $0, count: counts[$0] ?? 0) }
            stats.pendingAlarms = Int(try connection.queryOne("SELECT COUNT(*) AS n FROM alarms WHERE region_id = \(region)")?.int("n") ?? 0)
            stats.liveActivities = Int(try connection.queryOne("SELECT COUNT(*) AS n FROM live_activities WHERE region_id = \(region)")?.int("n") ?? 0)
            stats.recentSends = try connection.query("""
                SELECT s.*, a.header AS alert_header FROM alert_sends s JOIN alerts a ON a.id = s.alert_id
                WHERE a.region_id = \(region) ORDER BY s.id DESC LIMIT 10
                """).map { RecentSend(send: try AlertStore.send($0), alertID: try $0.int("alert_id"), header: try $0.optionalString("alert_header") ?? "") }
            return stats
        }
    }
}
