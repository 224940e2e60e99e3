import Database
import FoundationEssentials

/// Storage of push registrations (table `push_registrations`).
public struct PushRegistrationStore: Sendable {
    let database: any Database

    public init(database: any Database) { self.database = database }

    static let columns = "region_id, token, operating_system, locale, raw_locale, apns_sandbox, test_device, description, created_at, last_seen_at"

    /// The columns prefixed with a table alias, for joins.
    static func columns(qualifiedBy alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingPrefix(" "))" }.joined(separator: ", ")
    }

    /// Applies the upsert rule against the stored row inside one write
    /// transaction and returns what was stored. Throws `ValidationFailure`
    /// when the merged registration is invalid (nothing is written).
    public func register(_ request: PushRegistrationRequest, regionID: Int, catalog: LocaleCatalog, now: Date) async throws -> PushRegistration {
        try await database.write { connection in
            let existing = try Self.find(connection, regionID: regionID, token: request.token)
            let merged = try PushRegistrationRules.merge(existing: existing, request: request, regionID: regionID,
                                                         catalog: catalog, now: now).get()
            // ON CONFLICT keeps the write atomic even where two writers race
            // on a new token (a PostgreSQL backend); the caller also retries.
            let fields = Self.fields(merged)
            try connection.execute("""
                INSERT INTO push_registrations (\(fields.columns))
                VALUES (\(fields.values))
                ON CONFLICT (region_id, token) DO UPDATE SET
                    operating_system = excluded.operating_system, locale = excluded.locale,
                    raw_locale = excluded.raw_locale, apns_sandbox = excluded.apns_sandbox,
                    test_device = excluded.test_device, description = excluded.description,
                    last_seen_at = excluded.last_seen_at
                """)
            return merged
        }
    }

    /// Refreshes a registration from a side channel (v2 alarm creation):
    /// operating system and `last_seen_at` only; sticky fields untouched.
    public func touch(regionID: Int, token: String, operatingSystem: String, now: Date) async throws {
        _ = try await database.write { connection in
            try connection.execute("""
                INSERT INTO push_registrations (\(raw: Self.columns))
                VALUES (\(Int64(regionID)), \(token), \(operatingSystem), NULL, NULL, 0, 0, NULL, \(Self.millis(now)), \(Self.millis(now)))
                ON CONFLICT (region_id, token) DO UPDATE SET
                    operating_system = excluded.operating_system, last_seen_at = excluded.last_seen_at
                """)
        }
    }

    /// The stored registration, if any.
    public func find(regionID: Int, token: String) async throws -> PushRegistration? {
        try await database.read { connection in try Self.find(connection, regionID: regionID, token: token) }
    }

    /// Deletes one region's registration; false when there was none.
    public func delete(regionID: Int, token: String) async throws -> Bool {
        try await database.write { connection in
            try connection.execute("DELETE FROM push_registrations WHERE region_id = \(Int64(regionID)) AND token = \(token)") > 0
        }
    }

    /// Deletes a token in every region (terminal provider feedback is not
    /// region-scoped); returns how many registrations were removed.
    public func deleteEverywhere(token: String) async throws -> Int {
        try await database.write { connection in
            try connection.execute("DELETE FROM push_registrations WHERE token = \(token)")
        }
    }

    /// Deletes registrations whose `last_seen_at` is at or before `cutoff`,
    /// in batches so no single transaction holds the writer for long.
    public func prune(seenAtOrBefore cutoff: Date, batchSize: Int = 1000) async throws -> Int {
        var total = 0
        while true {
            let removed = try await database.write { connection in
                try connection.execute("""
                    DELETE FROM push_registrations WHERE id IN (
                        SELECT id FROM push_registrations WHERE last_seen_at <= \(Self.millis(cutoff)) LIMIT \(Int64(batchSize)))
                    """)
            }
            total += removed
            if removed < batchSize { return total }
        }
    }

    /// Number of registrations (all regions, or one).
    /// The test devices of a region as staff know them: their descriptions
    /// (at most `limit`, oldest first) and how many there are in all.
    public func testDevices(regionID: Int, limit: Int = 50) async throws -> (descriptions: [String], total: Int) {
        try await database.read { connection in
            let descriptions = try connection.query("""
                SELECT description FROM push_registrations WHERE region_id = \(Int64(regionID)) AND test_device = 1 ORDER BY id LIMIT \(Int64(limit))
                """).map { try $0.optionalString("description") ?? "(no description)" }
            let total = try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations WHERE region_id = \(Int64(regionID)) AND test_device = 1")?.int("n") ?? 0
            return (descriptions, Int(total))
        }
    }

    public func count(regionID: Int? = nil) async throws -> Int {
        try await database.read { connection in
            let row = if let regionID {
                try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations WHERE region_id = \(Int64(regionID))")
            } else {
                try connection.queryOne("SELECT COUNT(*) AS n FROM push_registrations")
            }
            return Int(try row?.int("n") ?? 0)
        }
    }

    // MARK: Rows

    static func find(_ connection: any SQLConnection, regionID: Int, token: String) throws -> PushRegistration? {
        try connection.queryOne("SELECT \(raw: columns) FROM push_registrations WHERE region_id = \(Int64(regionID)) AND token = \(token)").map(registration)
    }

    static func registration(_ row: Row) throws -> PushRegistration {
        PushRegistration(
            regionID: Int(try row.int("region_id")), token: try row.string("token"),
            operatingSystem: try row.string("operating_system"), locale: try row.optionalString("locale"),
            rawLocale: try row.optionalString("raw_locale"), apnsSandbox: try row.bool("apns_sandbox"),
            testDevice: try row.bool("test_device"), description: try row.optionalString("description"),
            createdAt: date(try row.optionalInt("created_at")), lastSeenAt: date(try row.optionalInt("last_seen_at")))
    }

    static func fields(_ registration: PushRegistration) -> SQLFields {
        var fields = SQLFields()
        fields.set("region_id", registration.regionID)
        fields.set("token", registration.token)
        fields.set("operating_system", registration.operatingSystem)
        fields.set("locale", registration.locale)
        fields.set("raw_locale", registration.rawLocale)
        fields.set("apns_sandbox", registration.apnsSandbox)
        fields.set("test_device", registration.testDevice)
        fields.set("description", registration.description)
        fields.set("created_at", millis(registration.createdAt))
        fields.set("last_seen_at", millis(registration.lastSeenAt))
        return fields
    }

    static func millis(_ date: Date) -> Int64 { date.epochMillis }
    static func date(_ millis: Int64?) -> Date { Date(epochMillis: millis ?? 0) }
}

extension PushRegistrationStore {
    /// Schema of this feature.
    static let migrations = [
        Migration(version: 1, name: "create push_registrations", sql: """
            CREATE TABLE push_registrations (
                id INTEGER PRIMARY KEY,
                region_id INTEGER NOT NULL,
                token TEXT NOT NULL,
                operating_system TEXT NOT NULL CHECK (operating_system IN ('ios', 'android')),
                locale TEXT,
                raw_locale TEXT,
                apns_sandbox INTEGER NOT NULL DEFAULT 0,
                test_device INTEGER NOT NULL DEFAULT 0,
                description TEXT,
                created_at INTEGER NOT NULL,
                last_seen_at INTEGER NOT NULL,
                UNIQUE (region_id, token)
            );
            CREATE INDEX push_registrations_last_seen ON push_registrations (last_seen_at);
            CREATE INDEX push_registrations_audience ON push_registrations (region_id, test_device, id);
            """),
    ]
}
