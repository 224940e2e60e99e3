import Core
import Crypto
import Database
import FoundationEssentials
import Push

/// A Live Activity subscription as stored.
struct LiveActivity: Sendable, Equatable {
    var id: Int64
    var token: String
    var regionID: Int
    var activityID: String
    var pushToken: String
    var stopID: String
    var routeShortName: String
    var tripHeadsign: String
    var apnsSandbox: Bool
    /// Epoch seconds: 8 hours after the first registration.
    var expiresAt: EpochSeconds
    var failureCount: Int
    /// The last state pushed, as JSON text.
    var lastState: String?
    /// Epoch ms of the last push.
    var lastPushedAt: EpochMillis?
    /// The trip a Track started from a vehicle follows (nil: a bookmark's Track).
    var tracked: ContentStateBuilder.TrackedVisit? = nil
}

/// Storage outcomes the Live Activity routes answer with a 4xx.
enum LiveActivityStoreError: Error, Equatable {
    /// This push token already carries this many other activities.
    case tooManyForPushToken(limit: Int)
}

/// Storage of Live Activity subscriptions (table `live_activities`).
struct LiveActivityStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    /// Spec §6.1: an activity lives at most 8 hours (Apple's ceiling).
    static let lifetimeSeconds: Int64 = 8 * 3600

    struct Registration: Sendable {
        var activityID: String
        var pushToken: String
        var stopID: String
        var routeShortName: String
        var tripHeadsign: String
        var tripID: String?
        var serviceDate: Int64?
        var vehicleID: String?
        var stopSequence: Int64?
        var apnsSandbox: Bool
    }

    /// Upserts on (region, activity_id): a re-registration (a rotated push
    /// token) rewrites every field but keeps the URL token and the expiry of
    /// the first registration. Atomic, so concurrent first registrations end
    /// with one row. Returns the URL token.
    func register(_ registration: Registration, regionID: Int, nowSeconds: EpochSeconds, maxPerPushToken: Int = 0) async throws -> String {
        let token = SecureToken.urlSafe()
        // An app registers the same activity again at each update of its
        // token: writes of one activity queue rather than hold each other.
        return try await database.write(locking: ["live_activities/\(regionID)/\(registration.activityID)"]) { connection in
            if maxPerPushToken > 0 {
                // Re-registering the same activity never counts against the cap.
                let others =
                    try connection.queryOne(
                        """
                        SELECT COUNT(*) AS n FROM live_activities WHERE push_token = \(registration.pushToken) AND NOT (region_id = \(Int64(regionID)) AND activity_id = \(registration.activityID))
                        """)?.int("n") ?? 0
                if others >= maxPerPushToken { throw LiveActivityStoreError.tooManyForPushToken(limit: maxPerPushToken) }
            }
            return try connection.queryOne(
                """
                INSERT INTO live_activities (token, region_id, activity_id, push_token, stop_id, route_short_name, trip_headsign, trip_id,
                    service_date, vehicle_id, stop_sequence, apns_sandbox, expires_at, failure_count, created_at)
                VALUES (\(token), \(Int64(regionID)), \(registration.activityID), \(registration.pushToken), \(registration.stopID), \(registration.routeShortName), \(registration.tripHeadsign), \(registration.tripID), \(registration.serviceDate), \(registration.vehicleID), \(registration.stopSequence), \(registration.apnsSandbox), \(nowSeconds.adding(seconds: Self.lifetimeSeconds)), 0, \(nowSeconds))
                ON CONFLICT (region_id, activity_id) DO UPDATE SET push_token = excluded.push_token, stop_id = excluded.stop_id,
                    route_short_name = excluded.route_short_name, trip_headsign = excluded.trip_headsign, trip_id = excluded.trip_id,
                    service_date = excluded.service_date, vehicle_id = excluded.vehicle_id, stop_sequence = excluded.stop_sequence,
                    apns_sandbox = excluded.apns_sandbox
                RETURNING token
                """)?.optionalString("token") ?? token
        }
    }

    func delete(regionID: Int, token: String) async throws -> Bool {
        try await database.write { connection in
            try connection.execute("DELETE FROM live_activities WHERE region_id = \(Int64(regionID)) AND token = \(token)") > 0
        }
    }

    /// Deletes every subscription using a dead push token (§6.5).
    func deleteByPushToken(_ pushToken: String) async throws -> Int {
        try await database.write { connection in
            try connection.execute("DELETE FROM live_activities WHERE push_token = \(pushToken)")
        }
    }

    func find(token: String) async throws -> LiveActivity? {
        try await database.read { connection in
            try connection.queryOne("SELECT * FROM live_activities WHERE token = \(token)").map(Self.activity)
        }
    }

    /// A page of a region's Live Activities in id order (the admin API's read-only list).
    func activities(regionID: Int, after: Int64, limit: Int) async throws -> [LiveActivity] {
        try await database.read { connection in
            try connection.query(
                "SELECT * FROM live_activities WHERE region_id = \(Int64(regionID)) AND id > \(after) ORDER BY id LIMIT \(Int64(limit))"
            ).map(Self.activity)
        }
    }

    func count(regionID: Int) async throws -> Int {
        try await database.read { connection in try Self.count(connection, regionID: regionID) }
    }

    func count() async throws -> Int {
        try await database.read { connection in try Self.count(connection) }
    }

    /// Live Activity subscriptions in one region or all.
    static func count(_ connection: any SQLConnection, regionID: Int? = nil) throws -> Int {
        if let regionID {
            return try connection.queryOne("SELECT COUNT(*) AS n FROM live_activities WHERE region_id = \(regionID)")?.count("n") ?? 0
        }
        return try connection.queryOne("SELECT COUNT(*) AS n FROM live_activities")?.count("n") ?? 0
    }

    /// Push tokens (iOS only) for which `unbound(column)` holds (the
    /// relay's condition on the token column), a page at a time.
    static func tokens(_ connection: any SQLConnection, where unbound: (String) -> SQL, after: String, limit: Int) throws -> [(
        token: String, platform: PushPlatform
    )] {
        try connection.query(
            "SELECT DISTINCT push_token FROM live_activities l WHERE l.push_token > \(after) AND \(unbound("l.push_token")) ORDER BY push_token LIMIT \(limit)"
        ).map { (try $0.string("push_token"), .ios) }
    }

    /// The stops with subscriptions.
    func stops() async throws -> [(regionID: Int, stopID: String)] {
        try await database.read { connection in
            try connection.query("SELECT DISTINCT region_id, stop_id FROM live_activities").map {
                (Int(try $0.int("region_id")), try $0.optionalString("stop_id") ?? "")
            }
        }
    }

    func activities(regionID: Int, stops: [String]) async throws -> [LiveActivity] {
        try await database.read { connection in
            var found: [LiveActivity] = []
            for stop in stops {
                found += try connection.query("SELECT * FROM live_activities WHERE region_id = \(Int64(regionID)) AND stop_id = \(stop) ORDER BY id")
                    .map(Self.activity)
            }
            return found
        }
    }

    /// Where a cycle's walk through the subscriptions has got to, in the
    /// order pages are claimed (region, stop, id).
    struct Position: Sendable, Equatable {
        var regionID: Int
        var stopID: String
        var id: Int64

        /// The last of a page in claim order.
        static func last(of page: [LiveActivity]) -> Position? {
            page.map { Position(regionID: $0.regionID, stopID: $0.stopID, id: $0.id) }.max {
                ($0.regionID, $0.stopID, $0.id) < ($1.regionID, $1.stopID, $1.id)
            }
        }
    }

    /// Claims a page of subscriptions due for an update that no instance
    /// holds, for `AlarmStore.claimMillis` (see `AlarmStore.claimDue`),
    /// starting after `position`. Pages go in stop order so one stop's
    /// subscriptions share an upstream request; without the position each
    /// page's index walk would pass over every subscription already done
    /// this cycle (quadratic in the subscriptions: 250,000 made 500 pages
    /// walk 62 million rows).
    func claimDue(atOrBefore cutoffMillis: EpochMillis, nowMillis: EpochMillis, limit: Int, after position: Position? = nil) async throws
        -> [LiveActivity]
    {
        let skipLocked = database.dialect.skipLocked
        let start: SQL =
            if let position { "AND (region_id, stop_id, id) > (\(Int64(position.regionID)), \(position.stopID), \(position.id))" } else { "" }
        return try await database.write { connection in
            try connection.query(
                """
                UPDATE live_activities SET claimed_until = \(nowMillis.adding(millis: AlarmStore.claimMillis)) WHERE id IN (
                    SELECT id FROM live_activities WHERE (next_update_at IS NULL OR next_update_at <= \(cutoffMillis))
                        AND (claimed_until IS NULL OR claimed_until <= \(nowMillis)) \(start)
                    ORDER BY region_id, stop_id, id LIMIT \(Int64(limit))\(raw: skipLocked))
                RETURNING *
                """
            )
            .map(Self.activity)
        }
    }

    /// Gives a processed page back, due again at `nextUpdateAt` (epoch ms).
    func release(_ ids: [Int64], nextUpdateAt: EpochMillis) async throws {
        guard !ids.isEmpty else { return }
        _ = try await database.write { connection in
            for id in ids {
                try connection.execute("UPDATE live_activities SET claimed_until = NULL, next_update_at = \(nextUpdateAt) WHERE id = \(id)")
            }
        }
    }

    enum Update: Sendable {
        case pushed(id: Int64, state: String, at: EpochMillis)
        case failure(id: Int64, count: Int)
        case succeeded(id: Int64)
        case delete(id: Int64)
    }

    func apply(_ updates: [Update]) async throws {
        guard !updates.isEmpty else { return }
        _ = try await database.write { connection in
            for update in updates {
                switch update {
                case .pushed(let id, let state, let at):
                    try connection.execute(
                        "UPDATE live_activities SET last_state = \(state), last_pushed_at = \(at), failure_count = 0 WHERE id = \(id)")
                case .failure(let id, let count):
                    try connection.execute("UPDATE live_activities SET failure_count = \(Int64(count)) WHERE id = \(id)")
                case .succeeded(let id):
                    try connection.execute("UPDATE live_activities SET failure_count = 0 WHERE id = \(id)")
                case .delete(let id):
                    try connection.execute("DELETE FROM live_activities WHERE id = \(id)")
                }
            }
        }
    }

    static func activity(_ row: Row) throws -> LiveActivity {
        LiveActivity(
            id: try row.int("id"), token: try row.string("token"), regionID: Int(try row.int("region_id")),
            activityID: try row.string("activity_id"), pushToken: try row.string("push_token"), stopID: try row.optionalString("stop_id") ?? "",
            routeShortName: try row.optionalString("route_short_name") ?? "", tripHeadsign: try row.string("trip_headsign"),
            apnsSandbox: try row.bool("apns_sandbox"), expiresAt: try row.seconds("expires_at"), failureCount: Int(try row.int("failure_count")),
            lastState: try row.optionalString("last_state"), lastPushedAt: try row.optionalMillis("last_pushed_at"),
            tracked: try row.optionalString("trip_id").map {
                ContentStateBuilder.TrackedVisit(
                    tripID: $0, serviceDate: try row.optionalInt("service_date"), stopSequence: try row.optionalInt("stop_sequence"))
            })
    }

}

extension LiveActivityStore {
    /// Rows whose token breaks the token rule (what version 25 removes).
    static func tokensBreakingTheRule(_ connection: any SQLConnection) throws -> Int {
        try connection.queryOne("SELECT COUNT(*) AS n FROM live_activities WHERE \(raw: TokenRuleSQL.breaks("push_token", connection.dialect))")?
            .count("n") ?? 0
    }
}

extension LiveActivityStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "LiveActivityStore",
        [
            // Tokens stored before the token rule that no provider issues.
            25: [TokenRuleSQL.removal("live_activities", "push_token")],
            6: [
                .table(
                    "live_activities", withID: true,
                    """
                    token TEXT NOT NULL UNIQUE,
                    region_id BIGINT NOT NULL,
                    activity_id TEXT NOT NULL,
                    push_token TEXT NOT NULL,
                    stop_id TEXT NOT NULL,
                    route_short_name TEXT NOT NULL,
                    trip_headsign TEXT NOT NULL,
                    trip_id TEXT,
                    service_date BIGINT,
                    vehicle_id TEXT,
                    stop_sequence BIGINT,
                    apns_sandbox BIGINT NOT NULL DEFAULT 0,
                    expires_at BIGINT NOT NULL,
                    failure_count BIGINT NOT NULL DEFAULT 0,
                    last_state TEXT,
                    last_pushed_at BIGINT,
                    created_at BIGINT NOT NULL,
                    UNIQUE (region_id, activity_id)
                    """),
                .same("CREATE INDEX live_activities_stop ON live_activities (region_id, stop_id)"),
                .same("CREATE INDEX live_activities_push_token ON live_activities (push_token)"),
            ],
            10: [
                .same("ALTER TABLE live_activities ADD COLUMN next_update_at BIGINT"),
                .same("ALTER TABLE live_activities ADD COLUMN claimed_until BIGINT"),
                .same("CREATE INDEX live_activities_due ON live_activities (next_update_at)"),
            ],
        ])
}
