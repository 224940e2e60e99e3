import Database

/// Per-region settings the regions directory does not carry (table
/// `region_settings`): the agency id alerts name and the time zone.
extension AlertStore {
    func regionSettings() async throws -> [Int: RegionSettings] {
        try await database.read { connection in
            var settings: [Int: RegionSettings] = [:]
            for row in try connection.query("SELECT region_id, agency_id, timezone FROM region_settings") {
                let id = Int(try row.int("region_id"))
                settings[id] = RegionSettings(
                    regionID: id, agencyID: try row.optionalString("agency_id"), timezone: try row.optionalString("timezone"))
            }
            return settings
        }
    }

    func setRegionSettings(_ settings: RegionSettings) async throws {
        _ = try await database.write { connection in
            try connection.execute(
                """
                INSERT INTO region_settings (region_id, agency_id, timezone) VALUES (\(Int64(settings.regionID)), \(settings.agencyID), \(settings.timezone))
                ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id, timezone = excluded.timezone
                """)
        }
    }

    /// Gives a region the agency id its imported alerts name, unless it has one.
    static func adoptAgency(_ connection: any SQLConnection, regionID: Int, agencyID: String) throws {
        try connection.execute(
            """
            INSERT INTO region_settings (region_id, agency_id) VALUES (\(regionID), \(agencyID))
            ON CONFLICT (region_id) DO UPDATE SET agency_id = excluded.agency_id WHERE region_settings.agency_id IS NULL
            """)
    }
}
