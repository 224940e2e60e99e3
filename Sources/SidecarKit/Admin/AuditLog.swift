import Core
import Database

/// Who changed what, and when: every state change made through the console,
/// the admin API or the CLI. Actors are `user:<email>` (console),
/// `apikey:<name>#<id>` (admin API) and `cli:<login>` (operator commands).
struct AuditLog: Sendable {
    let database: any Database
    let logger: Logger?

    init(database: any Database, logger: Logger? = nil) {
        self.database = database
        self.logger = logger
    }

    struct Entry: Sendable, Equatable {
        var id: Int64
        var at: EpochSeconds
        var actor: String
        var action: String
        var regionID: Int?
        var target: String?
        var detail: String?
    }

    /// Longest detail kept (the change's fields, abbreviated).
    static let detailLimit = 500

    /// Records one change. A failure to record is logged, not thrown: the
    /// change itself is already committed.
    func record(actor: String, action: String, regionID: Int?, target: String?, detail: String? = nil, now: EpochSeconds) async {
        let detail = detail.map { $0.count > Self.detailLimit ? String($0.prefix(Self.detailLimit)) + "…" : $0 }
        do {
            _ = try await database.write { connection in
                try connection.execute(
                    """
                    INSERT INTO audit_log (at, actor, action, region_id, target, detail) VALUES (\(now), \(actor), \(action), \(regionID.map { .integer(Int64($0)) } ?? SQLValue.null), \(target.map(SQLValue.text) ?? SQLValue.null), \(detail.map(SQLValue.text) ?? SQLValue.null))
                    """)
            }
        } catch {
            logger?.error("audit entry not written", [("action", action), ("error", "\(error)")])
        }
    }

    /// What the audit page narrows the log to; every part optional.
    struct Filter: Sendable, Equatable {
        /// Part of the actor (`user:ed@`, `cli:`), any case.
        var actor: String?
        /// One action exactly (`alert.send`).
        var action: String?
        var regionID: Int?
        /// Epoch seconds, inclusive.
        var from: EpochSeconds?
        /// Epoch seconds, exclusive.
        var until: EpochSeconds?

        init(actor: String? = nil, action: String? = nil, regionID: Int? = nil, from: EpochSeconds? = nil, until: EpochSeconds? = nil) {
            self.actor = actor
            self.action = action
            self.regionID = regionID
            self.from = from
            self.until = until
        }
    }

    /// The newest entries first, of the given regions (nil: all, including
    /// changes that belong to no region), narrowed by `filter`, before an id
    /// when paging.
    func entries(regions: Set<Int>?, before beforeID: Int64? = nil, limit: Int = 100, filter: Filter = Filter()) async throws -> [Entry] {
        var sql = "SELECT * FROM audit_log WHERE id < $1"
        var parameters: [SQLValue] = [.integer(beforeID ?? Int64.max)]
        if let regions {
            let list = regions.sorted().map(String.init).joined(separator: ",")
            sql += " AND region_id IN (\(list.isEmpty ? "NULL" : list))"
        }
        func add(_ condition: String, _ value: SQLValue) {
            parameters.append(value)
            sql += " AND " + condition.replacingOccurrences(of: "?", with: "$\(parameters.count)")
        }
        if let actor = filter.actor?.presence {
            // LIKE's own characters are matched as themselves.
            let escaped = actor.lowercased().replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_")
            add("LOWER(actor) LIKE ? ESCAPE '\\'", .text("%" + escaped + "%"))
        }
        if let action = filter.action?.presence { add("action = ?", .text(action)) }
        if let region = filter.regionID { add("region_id = ?", .integer(Int64(region))) }
        if let from = filter.from { add("at >= ?", from.sqlValue) }
        if let until = filter.until { add("at < ?", until.sqlValue) }
        parameters.append(.integer(Int64(limit)))
        sql += " ORDER BY id DESC LIMIT $\(parameters.count)"
        let query = sql, values = parameters
        return try await database.read { connection in
            try connection.query(query, values).map { row in
                Entry(
                    id: try row.int("id"), at: try row.seconds("at"), actor: try row.string("actor"), action: try row.string("action"),
                    regionID: try row.optionalInt("region_id").map { Int($0) }, target: try row.optionalString("target"),
                    detail: try row.optionalString("detail"))
            }
        }
    }
}

extension AuditLog {
    /// The actions recorded, for the audit page's choice.
    func actions() async throws -> [String] {
        try await database.read { connection in
            try connection.query("SELECT DISTINCT action FROM audit_log ORDER BY action LIMIT 200").map { try $0.string("action") }
        }
    }

    /// The schema changes of the tables this store owns, by migration
    /// version (the list itself is `Migrations.sidecar`).
    static let schema = Schema(
        "AuditLog",
        [
            14: [
                .table(
                    "audit_log", withID: true,
                    """
                    at BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    region_id BIGINT,
                    target TEXT,
                    detail TEXT
                    """),
                .same("CREATE INDEX audit_log_region ON audit_log (region_id, id)"),
            ]
        ])
}
