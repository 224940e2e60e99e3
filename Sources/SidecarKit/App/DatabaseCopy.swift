import Database

/// `sidecar copy-database --from A --to B [--replace]`: moves every row of an
/// install to another database (typically a SQLite file to PostgreSQL, when
/// an agency grows from one machine to several), keeping ids, then checks
/// that every table holds as many rows on both sides.
enum DatabaseCopy {
    /// The tables that hold an install's data, parents before children (so
    /// foreign keys hold while copying), each with the column it is paged by.
    /// Left out: migration bookkeeping, health probes, leases, shared
    /// documents and throttle counters, which each side keeps for itself.
    static let tables: [(name: String, order: String, hasID: Bool)] = [
        ("push_registrations", "id", true),
        ("alarms", "id", true),
        ("live_activities", "id", true),
        ("region_settings", "region_id", false),
        ("alerts", "id", true),
        ("alert_id_sequence", "last_id", false),
        ("alert_translations", "alert_id, language", false),
        ("alert_sends", "id", true),
        ("alert_send_pending", "send_id, registration_id", false),
        ("alert_feed_versions", "region_id", false),
        ("api_keys", "id", true),
        ("studies", "id", true),
        ("surveys", "id", true),
        ("survey_questions", "id", true),
        ("survey_responses", "id", true),
        ("ghost_bus_reports", "id", true),
    ]

    /// Tables of exactly one row that every migrated database has (the
    /// alert id counter): not data that makes a target "not empty", and
    /// replaced by the source's row rather than added to.
    static let singletons: Set<String> = ["alert_id_sequence"]

    static let pageSize = 1000

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Copies and verifies; `report` hears one line per table. Throws when
    /// the target already holds data (unless `replace`, which empties it
    /// first) or when the counts differ afterwards.
    static func run(
        from source: any Database, to target: any Database, replace: Bool,
        report: @Sendable (String) -> Void
    ) async throws -> [(table: String, rows: Int)] {
        try await source.migrate(Migrations.all)
        try await target.migrate(Migrations.all)
        let occupied = try await counts(target).filter { $0.rows > 0 && !singletons.contains($0.table) }
        if !occupied.isEmpty {
            guard replace else {
                let sample = occupied.prefix(3).map { "\($0.table) has \($0.rows)" }.joined(separator: ", ")
                throw Failure(description: "the target database is not empty (\(sample)); pass --replace to empty it first")
            }
            try await target.write { connection in
                for table in tables.reversed() { try connection.execute("DELETE FROM \(raw: table.name)") }
            }
        }
        for table in tables {
            if singletons.contains(table.name) {
                try await target.write { connection in try connection.execute("DELETE FROM \(raw: table.name)") }
            }
            var copied = 0
            var offset = 0
            while true {
                let skip = offset
                let rows = try await source.read { connection in
                    try connection.query(
                        "SELECT * FROM \(raw: table.name) ORDER BY \(raw: table.order) LIMIT \(Int64(pageSize)) OFFSET \(Int64(skip))")
                }
                guard let first = rows.first else { break }
                let columns = first.columns
                let placeholders = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
                let insert = "INSERT INTO \(table.name) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))"
                try await target.write { connection in
                    for row in rows { try connection.execute(insert, row.values) }
                }
                copied += rows.count
                offset += rows.count
                if rows.count < pageSize { break }
            }
            if table.hasID {
                // Ids were copied as they were: new rows continue after them.
                try await target.write { connection in try connection.advanceIdentity(table: table.name) }
            }
            report("\(table.name): \(copied) rows")
        }
        let before = try await counts(source)
        let after = try await counts(target)
        for (source, target) in zip(before, after) where source.rows != target.rows {
            throw Failure(description: "\(source.table) has \(source.rows) rows in the source but \(target.rows) in the target")
        }
        return after
    }

    static func counts(_ database: any Database) async throws -> [(table: String, rows: Int)] {
        try await database.read { connection in
            try tables.map { table in
                (table.name, Int(try connection.queryOne("SELECT COUNT(*) AS n FROM \(raw: table.name)")?.int("n") ?? 0))
            }
        }
    }
}
