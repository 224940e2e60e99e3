import Database

/// Per-region settings the regions directory does not carry.
struct RegionSettings: Sendable, Equatable {
    var regionID: Int
    var agencyID: String?
    var timezone: String?
    /// Pushes a minute a send to the region goes out at (0: as fast as the
    /// transport takes them), so a region-wide push does not send every
    /// rider's app to the OneBusAway server in the same minute.
    var pushPacePerMinute = 0
    /// Publishing an alert and sending to everyone wait for a second person.
    var requiresApproval = false
}

/// The owner of `region_settings`: the agency id a region's alerts name and
/// the time zone its pages and times are shown in. Alerts, sources, the
/// console and the CLI read it through here.
struct RegionSettingsStore: Sendable {
    let database: any Database

    /// Every region's settings, by region id (a region never set is absent).
    func all() async throws -> [Int: RegionSettings] {
        try await database.read { connection in
            var settings: [Int: RegionSettings] = [:]
            for row in try connection.query("SELECT region_id, agency_id, timezone, push_pace_per_minute, requires_approval FROM region_settings") {
                let read = try Self.settings(row)
                settings[read.regionID] = read
            }
            return settings
        }
    }

    /// One region's settings (nil: never set), read alone: sends and
    /// publishes ask for their region's, not the whole table.
    func settings(regionID: Int) async throws -> RegionSettings? {
        try await database.read { connection in
            try connection.queryOne(
                "SELECT region_id, agency_id, timezone, push_pace_per_minute, requires_approval FROM region_settings WHERE region_id = \(Int64(regionID))"
            ).map(Self.settings)
        }
    }

    /// The pace a send of this alert goes at (nil: unpaced, or a severe alert).
    func sendPace(for alert: ServiceAlert) async throws -> Int? {
        AlertSendPacing.pace(for: alert, perMinute: try await settings(regionID: alert.regionID)?.pushPacePerMinute ?? 0)
    }

    static func settings(_ row: Row) throws -> RegionSettings {
        RegionSettings(
            regionID: Int(try row.int("region_id")), agencyID: try row.optionalString("agency_id"), timezone: try row.optionalString("timezone"),
            pushPacePerMinute: Int(try row.int("push_pace_per_minute")), requiresApproval: try row.bool("requires_approval"))
    }

    /// Stores one region's settings, replacing what it had.
    func set(_ settings: RegionSettings) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                INSERT INTO region_settings (region_id, agency_id, timezone, push_pace_per_minute, requires_approval)
                VALUES (\(Int64(settings.regionID)), \(settings.agencyID), \(settings.timezone), \(Int64(settings.pushPacePerMinute)), \(settings.requiresApproval))
                ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id, timezone = excluded.timezone,
                    push_pace_per_minute = excluded.push_pace_per_minute, requires_approval = excluded.requires_approval
                """)
        }
    }

    /// Gives a region the agency id its imported alerts name, unless it has one
    /// (inside the import's transaction).
    static func adoptAgency(_ connection: any SQLConnection, regionID: Int, agencyID: String) throws {
        try connection.execute(
            """
            INSERT INTO region_settings (region_id, agency_id) VALUES (\(regionID), \(agencyID))
            ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id WHERE region_settings.agency_id IS NULL
            """)
    }

    /// The schema changes of `region_settings`, by migration version.
    static let schema = Schema(
        "RegionSettingsStore",
        [
            3: [
                .table(
                    "region_settings",
                    """
                    region_id BIGINT PRIMARY KEY,
                    agency_id TEXT,
                    timezone TEXT
                    """)
            ],
            30: [
                .same("ALTER TABLE region_settings ADD COLUMN push_pace_per_minute BIGINT NOT NULL DEFAULT 0")
            ],
            32: [
                .same("ALTER TABLE region_settings ADD COLUMN requires_approval BIGINT NOT NULL DEFAULT 0")
            ],
        ])
}
