import Core
import Database
import Push

/// Storage of alarms (table `alarms`).
struct AlarmStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    static let columns = """
        id, token, region_id, api_version, user_push_id, operating_system, apns_sandbox, stop_id, trip_id, service_date, \
        vehicle_id, stop_sequence, seconds_before, message, failure_count, departure_estimate, next_check_at, created_at
        """

    /// What a new alarm carries: the rider's parsed request plus what the
    /// server decided (the store assigns the id).
    struct NewAlarm: Sendable {
        var token: String
        var regionID: Int
        var apiVersion: AlarmAPIVersion
        var request: AlarmRequest
        var message: String
        var departureEstimate: EpochMillis?
        var nowMillis: EpochMillis
    }

    /// Inserts an alarm; throws `AlarmStoreError.duplicate` when a v1
    /// alarm with the same identity (or, by a one-in-2^128 chance, the
    /// same token) already exists, and `AlarmStoreError.tooManyPending`
    /// when the device already has `maxPerDevice` alarms waiting (checked in
    /// the same transaction).
    func insert(_ alarm: NewAlarm, maxPerDevice: Int = 0) async throws {
        let request = alarm.request
        do {
            try await insertRow(alarm, request: request, maxPerDevice: maxPerDevice)
        } catch DatabaseError.constraintViolation(_) {
            throw AlarmStoreError.duplicate
        }
    }

    private func insertRow(_ alarm: NewAlarm, request: AlarmRequest, maxPerDevice: Int) async throws {
        _ = try await database.write { connection in
            if maxPerDevice > 0 {
                let pending = try connection.queryOne("SELECT COUNT(*) AS n FROM alarms WHERE user_push_id = \(request.userPushID)")?.int("n") ?? 0
                if pending >= maxPerDevice { throw AlarmStoreError.tooManyPending(limit: maxPerDevice) }
            }
            try connection.execute(
                """
                INSERT INTO alarms (token, region_id, api_version, user_push_id, operating_system, apns_sandbox, stop_id, trip_id,
                    service_date, vehicle_id, stop_sequence, seconds_before, message, failure_count, departure_estimate, next_check_at, created_at)
                VALUES (\(alarm.token), \(Int64(alarm.regionID)), \(alarm.apiVersion.rawValue), \(request.userPushID), \(request.operatingSystem), \(request.apnsSandbox), \(request.stopID), \(request.tripID), \(request.serviceDate), \(request.vehicleID), \(request.stopSequence), \(Int64(request.secondsBefore)), \(alarm.message), 0, \(alarm.departureEstimate), \(alarm.nowMillis), \(alarm.nowMillis))
                """)
        }
    }

    /// The v1 alarm with this identity (§5.1 idempotency), if any.
    func findV1(regionID: Int, userPushID: String, tripID: String?, stopID: String?, serviceDate: EpochMillis?) async throws -> Alarm? {
        try await database.read { connection in
            try connection.queryOne(
                """
                SELECT \(raw: Self.columns) FROM alarms WHERE api_version = 1 AND region_id = \(Int64(regionID)) AND user_push_id = \(userPushID)
                    AND COALESCE(trip_id, '') = \(tripID ?? "") AND COALESCE(stop_id, '') = \(stopID ?? "") AND COALESCE(service_date, -1) = \(serviceDate ?? -1)
                """
            ).map(Self.alarm)
        }
    }

    /// Deletes one region's alarm by token; false when there was none.
    func delete(regionID: Int, token: String) async throws -> Bool {
        try await database.write { connection in
            try connection.execute("DELETE FROM alarms WHERE region_id = \(Int64(regionID)) AND token = \(token)") > 0
        }
    }

    func find(token: String) async throws -> Alarm? {
        try await database.read { connection in
            try connection.queryOne("SELECT \(raw: Self.columns) FROM alarms WHERE token = \(token)").map(Self.alarm)
        }
    }

    /// How long a claimed page belongs to the instance that claimed it: if
    /// that instance dies mid-page, another takes the page over after this.
    static let claimMillis: Int64 = 30_000

    /// Claims a page of alarms due at or before `cutoffMillis` that no
    /// instance holds (ordered by stop, so a stop's alarms travel together):
    /// several instances sharing a database split a cycle, each alarm in one
    /// page. On PostgreSQL rows another instance is claiming are skipped,
    /// not waited for.
    func claimDue(atOrBefore cutoffMillis: EpochMillis, nowMillis: EpochMillis, limit: Int) async throws -> [Alarm] {
        let skipLocked = database.dialect.skipLocked
        return try await database.write { connection in
            try connection.query(
                """
                UPDATE alarms SET claimed_until = \(nowMillis.adding(millis: Self.claimMillis)) WHERE id IN (
                    SELECT id FROM alarms WHERE next_check_at <= \(cutoffMillis) AND (claimed_until IS NULL OR claimed_until <= \(nowMillis))
                    ORDER BY region_id, stop_id, id LIMIT \(Int64(limit))\(raw: skipLocked))
                RETURNING \(raw: Self.columns)
                """
            )
            .map(Self.alarm)
        }
    }

    /// Alarms whose next check is at or before `cutoffMillis`.
    func due(atOrBefore cutoffMillis: EpochMillis) async throws -> [Alarm] {
        try await database.read { connection in
            try connection.query("SELECT \(raw: Self.columns) FROM alarms WHERE next_check_at <= \(cutoffMillis)").map(Self.alarm)
        }
    }

    /// A page of a region's alarms in id order (the admin API's read-only list).
    func alarms(regionID: Int, after: Int64, limit: Int) async throws -> [Alarm] {
        try await database.read { connection in
            try connection.query(
                "SELECT \(raw: Self.columns) FROM alarms WHERE region_id = \(Int64(regionID)) AND id > \(after) ORDER BY id LIMIT \(Int64(limit))"
            ).map(Self.alarm)
        }
    }

    func count(regionID: Int) async throws -> Int {
        try await database.read { connection in try Self.count(connection, regionID: regionID) }
    }

    func count() async throws -> Int {
        try await database.read { connection in try Self.count(connection) }
    }

    /// Alarms waiting to fire, in one region or all.
    static func count(_ connection: any SQLConnection, regionID: Int? = nil) throws -> Int {
        if let regionID { return try connection.queryOne("SELECT COUNT(*) AS n FROM alarms WHERE region_id = \(regionID)")?.count("n") ?? 0 }
        return try connection.queryOne("SELECT COUNT(*) AS n FROM alarms")?.count("n") ?? 0
    }

    /// Devices' tokens for which `unbound(column)` holds (the relay's
    /// condition on the token column), a page at a time.
    static func tokens(_ connection: any SQLConnection, where unbound: (String) -> SQL, after: String, limit: Int) throws -> [(
        token: String, platform: PushPlatform
    )] {
        try connection.query(
            """
            SELECT DISTINCT user_push_id, operating_system FROM alarms a WHERE a.user_push_id > \(after) AND \(unbound("a.user_push_id"))
            ORDER BY user_push_id LIMIT \(limit)
            """
        ).map { (try $0.string("user_push_id"), PushPlatform(rawValue: try $0.string("operating_system")) ?? .ios) }
    }

    /// What one check decided for one alarm.
    enum Update: Sendable {
        /// Keep it: new streak, next check, departure estimate.
        case reschedule(id: Int64, failureCount: Int, nextCheckAt: EpochMillis, departureEstimate: EpochMillis?)
        case delete(id: Int64)
    }

    /// Applies a cycle's decisions in one transaction.
    func apply(_ updates: [Update]) async throws {
        guard !updates.isEmpty else { return }
        _ = try await database.write { connection in
            for update in updates {
                switch update {
                case .reschedule(let id, let failureCount, let nextCheckAt, let departureEstimate):
                    try connection.execute(
                        """
                        UPDATE alarms SET failure_count = \(Int64(failureCount)), next_check_at = \(nextCheckAt), departure_estimate = COALESCE(\(departureEstimate), departure_estimate),
                            claimed_until = NULL
                        WHERE id = \(id)
                        """)
                case .delete(let id):
                    try connection.execute("DELETE FROM alarms WHERE id = \(id)")
                }
            }
        }
    }

    static func apiVersion(_ row: Row) throws -> AlarmAPIVersion {
        let number = try row.count("api_version")
        guard let version = AlarmAPIVersion(rawValue: number) else {
            throw DatabaseError.failed(code: 0, message: "alarm api_version \(number) is neither 1 nor 2")
        }
        return version
    }

    static func alarm(_ row: Row) throws -> Alarm {
        Alarm(
            id: try row.int("id"), token: try row.string("token"), regionID: Int(try row.int("region_id")),
            apiVersion: try Self.apiVersion(row), userPushID: try row.string("user_push_id"),
            operatingSystem: try row.platform("operating_system"), apnsSandbox: try row.bool("apns_sandbox"),
            stopID: try row.optionalString("stop_id"), tripID: try row.optionalString("trip_id"), serviceDate: try row.optionalMillis("service_date"),
            vehicleID: try row.optionalString("vehicle_id"), stopSequence: try row.optionalInt("stop_sequence").map(Int.init),
            secondsBefore: Int(try row.optionalInt("seconds_before") ?? Int64(AlarmRules.defaultSecondsBefore)),
            message: try row.string("message"), failureCount: Int(try row.int("failure_count")),
            departureEstimate: try row.optionalMillis("departure_estimate"), nextCheckAt: try row.millis("next_check_at"),
            createdAt: try row.millis("created_at"))
    }

}

/// Storage outcomes the alarm routes answer with a 4xx.
enum AlarmStoreError: Error, Equatable {
    /// The device already has this many alarms waiting to fire.
    case tooManyPending(limit: Int)
    /// A v1 alarm with the same identity exists (a concurrent identical
    /// request won), or the random token was taken.
    case duplicate
}

extension AlarmStore {
    /// Rows whose token breaks the token rule (what version 25 removes).
    static func tokensBreakingTheRule(_ connection: any SQLConnection) throws -> Int {
        try connection.queryOne("SELECT COUNT(*) AS n FROM alarms WHERE \(raw: TokenRuleSQL.breaks("user_push_id", connection.dialect))")?.count("n")
            ?? 0
    }
}

extension AlarmStore {
    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "AlarmStore",
        [
            // Tokens stored before the token rule that no provider issues.
            25: [TokenRuleSQL.removal("alarms", "user_push_id")],
            2: [
                .table(
                    "alarms", withID: true,
                    """
                    token TEXT NOT NULL UNIQUE,
                    region_id BIGINT NOT NULL,
                    api_version BIGINT NOT NULL,
                    user_push_id TEXT NOT NULL,
                    operating_system TEXT NOT NULL,
                    apns_sandbox BIGINT NOT NULL DEFAULT 0,
                    stop_id TEXT,
                    trip_id TEXT,
                    service_date BIGINT,
                    vehicle_id TEXT,
                    stop_sequence BIGINT,
                    seconds_before BIGINT NOT NULL,
                    message TEXT NOT NULL,
                    failure_count BIGINT NOT NULL DEFAULT 0,
                    departure_estimate BIGINT,
                    next_check_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                    """),
                .same("CREATE INDEX alarms_next_check ON alarms (next_check_at)"),
                .same("CREATE INDEX alarms_region_token ON alarms (region_id, token)"),
                .same("CREATE INDEX alarms_stop_due ON alarms (region_id, stop_id, next_check_at)"),
                .same(
                    """
                    CREATE UNIQUE INDEX alarms_v1_identity ON alarms (region_id, user_push_id, COALESCE(trip_id, ''), COALESCE(stop_id, ''),
                                    COALESCE(service_date, -1)) WHERE api_version = 1
                    """),
            ],
            8: [
                .same("CREATE INDEX alarms_user_push_id ON alarms (user_push_id)")
            ],
            9: [
                .same("ALTER TABLE alarms ADD COLUMN claimed_until BIGINT"),
                .same("CREATE INDEX alarms_due_unclaimed ON alarms (next_check_at, region_id, stop_id)"),
            ],
        ])
}
