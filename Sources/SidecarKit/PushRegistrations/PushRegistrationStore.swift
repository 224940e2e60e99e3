import Core
import Database
import FoundationEssentials
import Push

/// Storage of push registrations (table `push_registrations`).
struct PushRegistrationStore: Sendable {
    let database: any Database

    init(database: any Database) { self.database = database }

    static let columns = "region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device, description, created_at, last_seen_at"
    /// How many `columns` there are: the values a row binds.
    static let columnCount = columns.split(separator: ",").count

    /// The columns prefixed with a table alias, for joins.
    static func columns(qualifiedBy alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingPrefix(" "))" }.joined(separator: ", ")
    }

    /// The registration's upsert, its text built once (every write binds
    /// `values` in `columns`' order). ON CONFLICT keeps the write atomic
    /// where two writers race on a new token (a PostgreSQL backend); the
    /// caller also retries. Sent as a row (`sendRow`): the registrations of
    /// one PostgreSQL batch go out as one multi-row statement, answered at
    /// COMMIT. Two writes of one token never share a batch (their row key),
    /// so no statement updates a row twice.
    static let upsert = RowInsert(
        head: "INSERT INTO push_registrations (\(columns))", columnCount: columnCount,
        tail: """
            ON CONFLICT (region_id, token) DO UPDATE SET
                operating_system = excluded.operating_system, locale = excluded.locale,
                raw_locale = excluded.raw_locale, apns_sandbox = excluded.apns_sandbox,
                test_device = excluded.test_device, description = excluded.description,
                last_seen_at = excluded.last_seen_at
            """)

    /// `$1, $2, ...`: one placeholder for each of `columns`.
    static let placeholders = (1...columnCount).map { "$\($0)" }.joined(separator: ", ")

    /// The row a write of one registration locks: apps register the same
    /// token again on every launch, so writes of one token must queue rather
    /// than hold each other's rows in batches on two connections.
    static func rowKey(regionID: Int, token: String) -> String { "push_registrations/\(regionID)/\(token)" }

    /// Applies the upsert rule against the stored row inside one write
    /// transaction. Throws `ValidationFailure` when the merged registration
    /// is invalid (nothing is written).
    func register(_ request: PushRegistrationRequest, regionID: Int, catalog: LocaleCatalog, now: Date) async throws {
        // The first registration of a new token can race another request
        // for the same token; the loser retries and then finds the winner's
        // row to update.
        for attempt in 1...3 {
            do {
                return try await registerOnce(request, regionID: regionID, catalog: catalog, now: now)
            } catch DatabaseError.constraintViolation(_) where attempt < 3 {
                continue
            }
        }
        throw DatabaseError.busy("the registration kept racing another writer")
    }

    /// `register` with a callback, for a caller with no task: the same
    /// write and the same retries; `completion` gets nil once committed.
    func submitRegister(
        _ request: PushRegistrationRequest, regionID: Int, catalog: LocaleCatalog, now: Date, attempt: Int = 1,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        database.submitWrite(
            locking: [Self.rowKey(regionID: regionID, token: request.token)], Self.write(request, regionID: regionID, catalog: catalog, now: now)
        ) { error in
            if case DatabaseError.constraintViolation? = error as? DatabaseError, attempt < 3 {
                return submitRegister(request, regionID: regionID, catalog: catalog, now: now, attempt: attempt + 1, completion: completion)
            }
            completion(error)
        }
    }

    private func registerOnce(_ request: PushRegistrationRequest, regionID: Int, catalog: LocaleCatalog, now: Date) async throws {
        try await database.write(
            locking: [Self.rowKey(regionID: regionID, token: request.token)], Self.write(request, regionID: regionID, catalog: catalog, now: now))
    }

    /// The registration's one statement: merged with the stored row where the
    /// request leaves sticky fields out, then an upsert.
    private static func write(
        _ request: PushRegistrationRequest, regionID: Int, catalog: LocaleCatalog, now: Date
    ) -> @Sendable (any SQLConnection) throws -> Void {
        // Read here, on the caller's thread, not in the writer's transaction.
        let catalogLocale = catalog.normalize(request.locale)
        return { connection in
            let existing =
                PushRegistrationRules.needsStoredRow(request) ? try Self.find(connection, regionID: regionID, token: request.token) : nil
            let merged = try PushRegistrationRules.merge(
                existing: existing, request: request, regionID: regionID, catalogLocale: catalogLocale, now: now
            ).get()
            try connection.sendRow(Self.upsert, Self.values(merged))
        }
    }

    /// Refreshes a registration from a side channel (v2 alarm creation):
    /// operating system and `last_seen_at` only; sticky fields untouched.
    func touch(regionID: Int, token: String, operatingSystem: PushPlatform, now: Date) async throws {
        try await database.write(locking: [Self.rowKey(regionID: regionID, token: token)]) { connection in
            try connection.send(
                """
                INSERT INTO push_registrations (\(raw: Self.columns))
                VALUES (\(Int64(regionID)), \(token), \(operatingSystem), NULL, NULL, 0, 0, NULL, \(Self.millis(now)), \(Self.millis(now)))
                ON CONFLICT (region_id, token) DO UPDATE SET
                    operating_system = excluded.operating_system, last_seen_at = excluded.last_seen_at
                """)
        }
    }

    /// The stored registration, if any.
    func find(regionID: Int, token: String) async throws -> PushRegistration? {
        try await database.read { connection in try Self.find(connection, regionID: regionID, token: token) }
    }

    /// Deletes one region's registration; false when there was none.
    func delete(regionID: Int, token: String) async throws -> Bool {
        try await database.write(locking: [Self.rowKey(regionID: regionID, token: token)]) { connection in
            try connection.execute("DELETE FROM push_registrations WHERE region_id = \(Int64(regionID)) AND token = \(token)") > 0
        }
    }

    /// Deletes a token in every region (terminal provider feedback is not
    /// region-scoped); returns how many registrations were removed.
    func deleteEverywhere(token: String) async throws -> Int {
        try await database.write { connection in
            try connection.execute("DELETE FROM push_registrations WHERE token = \(token)")
        }
    }

    /// Deletes registrations whose `last_seen_at` is at or before `cutoff`.
    /// `last_seen_at` has no index (every launch moves it: an index would make
    /// each re-registration touch every index), so the prune walks the table
    /// in id order, `batchSize` rows a transaction, so no single transaction
    /// holds the writer for long.
    func prune(seenAtOrBefore cutoff: Date, batchSize: Int = 5000) async throws -> Int {
        var total = 0
        var after: Int64 = 0
        while true {
            let from = after
            let page = try await database.write { connection -> (removed: Int, last: Int64)? in
                let last = try connection.queryOne(
                    """
                    SELECT MAX(id) AS last FROM (SELECT id FROM push_registrations WHERE id > \(from) ORDER BY id LIMIT \(Int64(batchSize))) AS page
                    """)?.optionalInt("last")
                guard let last else { return nil }
                let removed = try connection.execute(
                    """
                    DELETE FROM push_registrations WHERE id > \(from) AND id <= \(last) AND last_seen_at <= \(Self.millis(cutoff))
                    """)
                return (removed, last)
            }
            guard let page else { return total }
            total += page.removed
            after = page.last
        }
    }

    /// Number of registrations (all regions, or one).
    /// The test devices of a region as staff know them: their descriptions
    /// (at most `limit`, oldest first) and how many there are in all.
    func testDevices(regionID: Int, limit: Int = 50) async throws -> (descriptions: [String], total: Int) {
        try await database.read { connection in
            let descriptions = try connection.query(
                """
                SELECT description FROM push_registrations WHERE region_id = \(Int64(regionID)) AND test_device = 1 ORDER BY id LIMIT \(Int64(limit))
                """
            ).map { try $0.optionalString("description") ?? "(no description)" }
            let total =
                try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations WHERE region_id = \(Int64(regionID)) AND test_device = 1")?.int(
                    "n") ?? 0
            return (descriptions, Int(total))
        }
    }

    func count(regionID: Int? = nil) async throws -> Int {
        try await database.read { connection in try Self.count(connection, regionID: regionID) }
    }

    // MARK: Rows

    static func find(_ connection: any SQLConnection, regionID: Int, token: String) throws -> PushRegistration? {
        try connection.queryOne("SELECT \(raw: columns) FROM push_registrations WHERE region_id = \(Int64(regionID)) AND token = \(token)").map(
            registration)
    }

    static func registration(_ row: Row) throws -> PushRegistration {
        PushRegistration(
            regionID: Int(try row.int("region_id")), token: try row.string("token"),
            operatingSystem: try row.platform("operating_system"), locale: try row.optionalString("locale"),
            rawLocale: try row.optionalString("raw_locale"), apnsSandbox: try row.bool("apns_sandbox"),
            testDevice: try row.bool("test_device"), description: try row.optionalString("description"),
            createdAt: date(try row.optionalInt("created_at")), lastSeenAt: date(try row.optionalInt("last_seen_at")))
    }

    /// A registration's values in `columns`' order.
    static func values(_ registration: PushRegistration) -> [SQLValue] {
        [
            registration.regionID.sqlValue, registration.token.sqlValue, registration.operatingSystem.sqlValue,
            registration.locale?.sqlValue ?? .null, registration.rawLocale?.sqlValue ?? .null, registration.apnsSandbox.sqlValue,
            registration.testDevice.sqlValue, registration.description?.sqlValue ?? .null,
            millis(registration.createdAt).sqlValue, millis(registration.lastSeenAt).sqlValue,
        ]
    }

    static func millis(_ date: Date) -> Int64 { date.epochMillis }
    static func date(_ millis: Int64?) -> Date { Date(epochMillis: millis ?? 0) }
}

// MARK: - For other features
/// What other features ask of the registrations: the audience an alert send
/// pages through, the tokens the relay must bind, a region's registrations
/// for an export. Each takes the caller's connection, so it shares the
/// caller's transaction; the table's SQL stays here.
extension PushRegistrationStore {
    /// `test`: only test devices; otherwise everyone in the region.
    static func audienceCount(_ connection: any SQLConnection, regionID: Int, testOnly: Bool, after cursor: Int64 = 0) throws -> Int {
        try connection.queryOne(
            """
            SELECT COUNT(*) AS n FROM push_registrations
            WHERE region_id = \(regionID) AND (\(testOnly) = 0 OR test_device = 1) AND id > \(cursor)
            """)?.count("n") ?? 0
    }

    /// A page of the audience after `cursor`, by registration id.
    static func audiencePage(
        _ connection: any SQLConnection, regionID: Int, testOnly: Bool, after cursor: Int64,
        limit: Int
    ) throws -> [(id: Int64, registration: PushRegistration)] {
        try connection.query(audiencePageSQL(regionID: regionID, testOnly: testOnly, after: cursor, limit: limit)).map {
            (try $0.int("id"), try registration($0))
        }
    }

    /// The audience page's query, one form per audience so each reads an
    /// index already in id order (`push_registrations_audience` for test
    /// devices, `push_registrations_region_order` for everyone). One query
    /// for both, with the audience as a bound flag, left the planner only
    /// the region's prefix of an index: every page sorted the rest of the
    /// region, and a send to 1,000,000 devices took 160 s instead of 62
    /// (bench/day.sh). Internal so a test can read its plan.
    static func audiencePageSQL(regionID: Int, testOnly: Bool, after cursor: Int64, limit: Int) -> SQL {
        let audience: SQL = testOnly ? "AND test_device = 1" : ""
        return """
            SELECT id, \(raw: columns) FROM push_registrations
            WHERE region_id = \(regionID) \(audience) AND id > \(cursor) ORDER BY id LIMIT \(limit)
            """
    }

    /// The registrations with these ids that still exist, by id.
    static func registrations(_ connection: any SQLConnection, ids: [Int64]) throws -> [(id: Int64, registration: PushRegistration)] {
        guard !ids.isEmpty else { return [] }
        return try connection.query("SELECT id, \(raw: columns) FROM push_registrations WHERE id IN (\(list: ids)) ORDER BY id")
            .map { (try $0.int("id"), try registration($0)) }
    }

    /// A condition true when a registration with the id in `column` still
    /// exists (a send's pending set forgets registrations deleted meanwhile).
    static func exists(idIn column: String) -> SQL {
        "EXISTS (SELECT 1 FROM push_registrations r WHERE r.id = \(raw: column))"
    }

    /// Deletes registrations whose tokens the provider called dead; returns how many.
    static func deleteDead(_ connection: any SQLConnection, _ dead: [(regionID: Int, token: String)]) throws -> Int {
        var deleted = 0
        for (regionID, token) in dead {
            deleted += try connection.execute("DELETE FROM push_registrations WHERE region_id = \(regionID) AND token = \(token)")
        }
        return deleted
    }

    /// Tokens for which `unbound(column)` holds (the relay's condition on
    /// the token column), a page at a time.
    static func tokens(_ connection: any SQLConnection, where unbound: (String) -> SQL, after: String, limit: Int) throws -> [(
        token: String, platform: PushPlatform
    )] {
        try connection.query(
            """
            SELECT DISTINCT token, operating_system FROM push_registrations p WHERE p.token > \(after) AND \(unbound("p.token"))
            ORDER BY token LIMIT \(limit)
            """
        ).map { (try $0.string("token"), PushPlatform(rawValue: try $0.string("operating_system")) ?? .ios) }
    }

    /// Every registration of a region, oldest first (an export).
    static func all(_ connection: any SQLConnection, regionID: Int) throws -> [PushRegistration] {
        try connection.query("SELECT \(raw: columns) FROM push_registrations WHERE region_id = \(regionID) ORDER BY id").map(registration)
    }

    /// Stores a registration unless the region already has its token (an
    /// import); true when it was added.
    static func insertIfAbsent(_ connection: any SQLConnection, _ registration: PushRegistration) throws -> Bool {
        try connection.execute(
            "INSERT INTO push_registrations (\(columns)) VALUES (\(placeholders)) ON CONFLICT (region_id, token) DO NOTHING",
            values(registration)) > 0
    }
}

// MARK: - Figures
/// The figures of the registrations that the console's dashboard and the
/// metrics show, counted in one place.
extension PushRegistrationStore {
    /// Whom a region's alerts reach.
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
                && lhs.testDevices == rhs.testDevices && lhs.locales.map(\.locale) == rhs.locales.map(\.locale)
                && lhs.locales.map(\.count) == rhs.locales.map(\.count)
        }
    }

    static func reach(_ connection: any SQLConnection, regionID: Int) throws -> Reach {
        var reach = Reach()
        for row in try connection.query(
            """
            SELECT operating_system, apns_sandbox, test_device, COUNT(*) AS n FROM push_registrations WHERE region_id = \(regionID)
            GROUP BY operating_system, apns_sandbox, test_device
            """)
        {
            let count = try row.count("n")
            if try row.string("operating_system") == PushPlatform.android.rawValue {
                reach.android += count
            } else {
                reach.ios += count
                if try row.bool("apns_sandbox") { reach.apnsSandbox += count } else { reach.apnsProduction += count }
            }
            if try row.bool("test_device") { reach.testDevices += count }
        }
        reach.locales = try languages(connection, regionID: regionID)
        return reach
    }

    /// Devices per language (the catalog's tags, so at most one group per
    /// catalog language and one without), the largest first.
    static func languages(_ connection: any SQLConnection, regionID: Int, testOnly: Bool = false, limit: Int = 12) throws -> [(
        locale: String?, count: Int
    )] {
        try connection.query(
            """
            SELECT locale, COUNT(*) AS n FROM push_registrations WHERE region_id = \(regionID) AND (\(testOnly) = 0 OR test_device = 1)
            GROUP BY locale ORDER BY n DESC, locale LIMIT \(limit)
            """
        ).map { (locale: try $0.optionalString("locale"), count: try $0.count("n")) }
    }

    /// New registrations per local day since `from`: day number (days
    /// since 1970-01-01 at `utcOffset` seconds) → count.
    static func newPerDay(_ connection: any SQLConnection, regionID: Int, from: EpochMillis, utcOffset: Int64) throws -> [Int64: Int] {
        var counts: [Int64: Int] = [:]
        for row in try connection.query(
            """
            SELECT (created_at / 1000 + \(utcOffset)) / 86400 AS day, COUNT(*) AS n FROM push_registrations
            WHERE region_id = \(regionID) AND created_at >= \(from) GROUP BY 1
            """)
        {
            counts[try row.int("day")] = try row.count("n")
        }
        return counts
    }

    /// Registrations by region, all platforms together (the console's region picker).
    func countsByRegion() async throws -> [Int: Int] {
        try await database.read { connection in
            try Self.countsByRegionAndPlatform(connection).reduce(into: [:]) { counts, row in counts[row.regionID, default: 0] += row.count }
        }
    }

    /// Registrations by region and platform (the metrics' gauge).
    static func countsByRegionAndPlatform(_ connection: any SQLConnection) throws -> [(regionID: Int, platform: String, count: Int)] {
        try connection.query(
            """
            SELECT region_id, operating_system, COUNT(*) AS n FROM push_registrations GROUP BY region_id, operating_system
            ORDER BY region_id, operating_system
            """
        ).map { (try $0.count("region_id"), try $0.string("operating_system"), try $0.count("n")) }
    }

    /// Registrations by platform: every one of the region, and those marked as test devices.
    struct PlatformCounts: Sendable, Equatable {
        var total = 0, ios = 0, android = 0
    }

    /// A region's registrations counted by platform, all and test devices only.
    func platformCounts(regionID: Int) async throws -> (all: PlatformCounts, test: PlatformCounts) {
        var all = PlatformCounts(), test = PlatformCounts()
        for row in try await breakdown(regionID: regionID) {
            let ios = row.platform == "ios" ? row.count : 0, android = row.platform == "android" ? row.count : 0
            all = PlatformCounts(total: all.total + row.count, ios: all.ios + ios, android: all.android + android)
            if row.test { test = PlatformCounts(total: test.total + row.count, ios: test.ios + ios, android: test.android + android) }
        }
        return (all, test)
    }

    /// How many registrations a region has of each platform, locale, APNs
    /// environment and test flag (one row per combination).
    func breakdown(regionID: Int) async throws -> [(platform: String, locale: String?, sandbox: Bool, test: Bool, count: Int)] {
        try await database.read { connection in
            try connection.query(
                """
                SELECT operating_system, locale, apns_sandbox, test_device, COUNT(*) AS n FROM push_registrations WHERE region_id = \(regionID)
                GROUP BY operating_system, locale, apns_sandbox, test_device
                """
            ).map {
                (
                    try $0.string("operating_system"), try $0.optionalString("locale"), try $0.bool("apns_sandbox"), try $0.bool("test_device"),
                    try $0.count("n")
                )
            }
        }
    }

    /// Registrations of one region, or of all.
    static func count(_ connection: any SQLConnection, regionID: Int? = nil) throws -> Int {
        if let regionID {
            return try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations WHERE region_id = \(regionID)")?.count("n") ?? 0
        }
        return try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations")?.count("n") ?? 0
    }
}

extension PushRegistrationStore {
    /// Rows whose token breaks the token rule (what version 25 removes).
    static func tokensBreakingTheRule(_ connection: any SQLConnection) throws -> Int {
        try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations WHERE \(raw: TokenRuleSQL.breaks("token", connection.dialect))")?.count(
            "n") ?? 0
    }
}
