import Database

/// `sidecar copy-database --from A --to B [--replace]`: moves every row of an
/// install to another database (typically a SQLite file to PostgreSQL, when
/// an agency grows from one machine to several), keeping ids, then checks
/// that every table holds as many rows on both sides.
///
/// The tables are read off the migration list (`Migrations.tables`), in the
/// order the migrations create them, so a table added later is copied
/// without editing this file and parents always come before their children.
/// Only the tables each database keeps for itself (`keptApart`) are left out.
enum DatabaseCopy {
    /// Tables each database keeps for itself, never copied, and why.
    static let keptApart: [String: String] = [
        "leases": "who is running a job now: the target's instances take their own",
        "rate_limits": "throttle counters of the current minute",
        "shared_documents": "the regions directory as last fetched: the target fetches it again",
    ]

    /// Tables a database fills by itself (the alert id counter every
    /// migrated database has, the console's secrets a server makes at its
    /// first start): they do not make a target "not empty", and the
    /// source's rows replace the target's.
    static let replaced: Set<String> = ["alert_id_sequence", "survey_id_sequences", "console_secrets"]

    /// A copied table: its name and whether it has an auto-assigned `id`
    /// (whose sequence the target advances past the copied ids).
    struct Table: Equatable, Sendable {
        var name: String
        var hasID: Bool
    }

    /// Every table the migration list knows, but those kept apart.
    static var tables: [Table] {
        Migrations.tables(Migrations.sidecar).filter { keptApart[$0.name] == nil }
    }

    static let pageSize = 1000

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The copy stopped between pages because it was asked to (SIGTERM or
    /// SIGINT): every page before was committed, the target is incomplete.
    struct Stopped: Error, CustomStringConvertible {
        let tablesCopied: Int
        let tables: Int
        let table: String
        let rowsOfTable: Int
        var description: String {
            "stopped when asked, after \(tablesCopied) of \(tables) tables (\(table): \(rowsOfTable) rows so far); "
                + "the target is incomplete: run the same command again with --replace"
        }
    }

    /// Copies and verifies; `report` hears one line per table. Throws when
    /// the target already holds data (unless `replace`, which empties it
    /// first) or when any table's counts differ afterwards (naming each).
    static func run(
        from source: any Database, to target: any Database, replace: Bool, stop: StopSignal? = nil,
        report: @Sendable (String) -> Void
    ) async throws -> [(table: String, rows: Int)] {
        try await source.migrate(Migrations.all)
        try await target.migrate(Migrations.all)
        let tables = tables
        let occupied = try await counts(target, tables).filter { $0.rows > 0 && !replaced.contains($0.table) }
        if !occupied.isEmpty {
            guard replace else {
                let sample = occupied.prefix(3).map { "\($0.table) has \($0.rows)" }.joined(separator: ", ")
                throw Failure(description: "the target database is not empty (\(sample)); pass --replace to empty it first")
            }
        }
        if !occupied.isEmpty || tables.contains(where: { replaced.contains($0.name) }) {
            // Children before parents, so foreign keys hold while emptying.
            try await target.write { connection in
                for table in tables.reversed() where !occupied.isEmpty || replaced.contains(table.name) {
                    try connection.execute("DELETE FROM \(raw: table.name)")
                }
            }
        }
        for (index, table) in tables.enumerated() {
            let copied: Int
            do { copied = try await copy(table, from: source, to: target, stop: stop) } catch let partial as PartialCopy {
                throw Stopped(tablesCopied: index, tables: tables.count, table: table.name, rowsOfTable: partial.rows)
            }
            if table.hasID {
                // Ids were copied as they were: new rows continue after them.
                try await target.write { connection in try connection.advanceIdentity(table: table.name) }
            }
            report("\(table.name): \(copied) rows")
        }
        let before = try await counts(source, tables)
        let after = try await counts(target, tables)
        let differing = zip(before, after).filter { $0.rows != $1.rows }
        guard differing.isEmpty else {
            throw Failure(
                description: "counts differ after the copy: "
                    + differing.map { "\($0.table) has \($0.rows) rows in the source but \($1.rows) in the target" }.joined(separator: "; "))
        }
        return after
    }

    /// One table, page by page: by id, or by every column (a stable order
    /// for tables keyed otherwise).
    static func copy(_ table: Table, from source: any Database, to target: any Database, stop: StopSignal? = nil) async throws -> Int {
        if stop?.isStopping == true { throw PartialCopy(rows: 0) }
        guard
            let columns = try await source.read({ connection in
                try connection.queryOne("SELECT * FROM \(raw: table.name) LIMIT 1")?.columns
            })
        else { return 0 }
        let order = table.hasID ? "id" : (1...columns.count).map(String.init).joined(separator: ", ")
        let placeholders = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
        let insert = "INSERT INTO \(table.name) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))"
        var copied = 0
        while true {
            if stop?.isStopping == true { throw PartialCopy(rows: copied) }
            let skip = copied
            let rows = try await source.read { connection in
                try connection.query(
                    "SELECT \(raw: columns.joined(separator: ", ")) FROM \(raw: table.name) ORDER BY \(raw: order) LIMIT \(Int64(pageSize)) OFFSET \(Int64(skip))"
                )
            }
            guard !rows.isEmpty else { break }
            try await target.write { connection in
                for row in rows { try connection.execute(insert, row.values) }
            }
            copied += rows.count
            if rows.count < pageSize { break }
        }
        return copied
    }

    /// A table's copy stopped between pages, with the rows committed.
    struct PartialCopy: Error {
        let rows: Int
    }

    static func counts(_ database: any Database, _ tables: [Table] = tables) async throws -> [(table: String, rows: Int)] {
        try await database.read { connection in
            try tables.map { table in
                (table.name, Int(try connection.queryOne("SELECT COUNT(*) AS n FROM \(raw: table.name)")?.int("n") ?? 0))
            }
        }
    }
}
