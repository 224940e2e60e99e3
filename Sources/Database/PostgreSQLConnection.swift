import CPostgres
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// One PostgreSQL connection with a cache of prepared statements, used by
/// one worker thread at a time. Statements take `$n` parameters, sent as
/// text with their types (bigint, double precision, text, bytea) so the
/// same SQL runs on SQLite and here.
///
/// A write transaction runs in libpq's pipeline mode
/// (`beginTransaction` … `commitTransaction`): `BEGIN`, the statements whose
/// answers nobody waits for (`send`) and `COMMIT` travel with the next
/// statement that needs its answer, so a transaction costs one round trip
/// per statement that is read, plus one. Results still come back in order
/// and each is checked; after a failure PostgreSQL skips the rest of the
/// pipeline, so nothing after a failed statement is applied, and the
/// transaction is rolled back.
final class PostgreSQLConnection: SQLConnection {
    var dialect: SQLDialect { .postgresql }
    // The members below without `private` are also used by the reading of
    // results (PostgreSQLConnectionResults.swift).
    let connection: OpaquePointer
    /// Prepared statement names by SQL and parameter types.
    var statements: [String: String] = [:]
    /// Names are never reused, so a statement whose preparation was skipped
    /// in a failed pipeline can be prepared again under a new name.
    private var statementsPrepared = 0
    let location: PostgresLocation
    /// Set when the server went away mid-statement; the worker reconnects.
    var broken = false
    /// How long a statement may wait for the server's answer before the
    /// connection is given up (nil: as long as it takes, for migrations). A
    /// server that stops answering (frozen, a dead host behind a live
    /// network) would otherwise hold every caller until it came back.
    var statementTimeoutSeconds: Double?
    /// The open pipeline, while a write transaction runs in pipeline mode.
    var pipeline: Pipeline?
    /// Rows of one `RowInsert` sent in the open pipeline and not yet sent
    /// on: they go out as one statement before anything else is sent.
    private var pendingRows: PendingRows?

    private struct PendingRows {
        let insert: RowInsert
        var values: [SQLValue]
        var rows: Int
    }

    /// What was sent in pipeline mode and not read back yet, oldest first.
    struct Pipeline {
        enum Command {
            /// `BEGIN`, `COMMIT`, or a statement sent with `send`: only its success matters.
            case unread
            /// A statement's preparation: cached once it succeeded.
            case prepare(key: String, name: String)
            /// The statement whose result the caller waits for.
            case wanted
            /// The Sync that ends the pipeline.
            case sync
        }
        var commands: [Command] = []
        /// The first failure; PostgreSQL skipped everything after it.
        var failure: DatabaseError?
        var syncSent = false
    }

    /// Statements sent with `send` that may wait unread, at most: beyond it
    /// they are read back, so neither side's buffer fills with the other
    /// blocked writing.
    static let unreadLimit = 64

    init(_ location: PostgresLocation, statementTimeoutSeconds: Double? = nil) throws(DatabaseError) {
        self.location = location
        self.statementTimeoutSeconds = statementTimeoutSeconds
        guard let connection = PQconnectdb(location.conninfo) else {
            throw .unavailable("cannot reach PostgreSQL at \(location): out of memory")
        }
        guard sidecar_pq_connected(connection) != 0 else {
            let reason = String(cString: PQerrorMessage(connection)).trimmedLine
            PQfinish(connection)
            throw .unavailable("cannot reach PostgreSQL at \(location): \(reason)")
        }
        self.connection = connection
        // Notices ("relation already exists, skipping") would go to stderr.
        try run("SET client_min_messages TO warning")
    }

    deinit { PQfinish(connection) }

    var isUsable: Bool { !broken && sidecar_pq_connected(connection) != 0 }

    // MARK: Transactions

    /// Opens a write transaction in pipeline mode; `BEGIN` goes out with the
    /// first statement that is read.
    func beginTransaction() throws(DatabaseError) {
        guard pipeline == nil else { throw .failed(code: 0, message: "a transaction is already open on this connection") }
        guard PQenterPipelineMode(connection) == 1 else { throw failure(nil) }
        pipeline = Pipeline()
        try sendUnread("BEGIN")
    }

    /// Sends `COMMIT` and reads every answer still owed. Throws the first
    /// failure of the transaction (the transaction is then rolled back).
    func commitTransaction() throws(DatabaseError) {
        guard pipeline != nil else {
            try run("COMMIT")
            return
        }
        do {
            try sendPendingRows()
            try sendUnread("COMMIT")
            try endPipeline()
        } catch {
            rollbackTransaction()
            throw error
        }
    }

    /// Ends whatever transaction is open, keeping nothing of it; a
    /// connection that cannot do so is marked broken (the worker replaces it).
    func rollbackTransaction() {
        pendingRows = nil
        if pipeline != nil { _ = try? endPipeline() }
        guard !broken, sidecar_pq_in_transaction(connection) != 0 else { return }
        do { try run("ROLLBACK") } catch { broken = true }
    }

    /// Ends the pipeline: a Sync, then every answer owed, then back to
    /// normal mode. Throws the pipeline's first failure.
    private func endPipeline() throws(DatabaseError) {
        guard var open = pipeline else { return }
        defer {
            pipeline = nil
            if !broken && PQexitPipelineMode(connection) != 1 { broken = true }
        }
        if !open.syncSent {
            guard PQpipelineSync(connection) == 1 else { throw markBroken(failure(nil)) }
            open.commands.append(.sync)
            open.syncSent = true
            pipeline = open
        }
        _ = try readPipeline(upToWanted: false)
        if let failure = pipeline?.failure { throw failure }
    }

    // MARK: Statements

    /// Runs statements with no parameters (transaction control, DDL);
    /// several may be separated by semicolons. Inside a pipelined
    /// transaction it first reads back what is owed and leaves pipeline mode
    /// (the transaction stays open).
    func run(_ sql: String) throws(DatabaseError) {
        if pipeline != nil {
            try sendPendingRows()
            try endPipeline()
        }
        guard PQsendQuery(connection, sql) == 1 else { throw failure(nil) }
        let result = try awaitResult()
        defer { PQclear(result) }
        try check(result)
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Int {
        let result = try executePrepared(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// In a pipelined transaction the statement is sent without waiting: its
    /// result is read with the next statement's, or at `COMMIT`, and a
    /// failure fails the transaction.
    func send(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) {
        guard pipeline != nil else {
            _ = try execute(sql, parameters)
            return
        }
        try sendPendingRows()
        if let failure = pipeline?.failure { throw failure }
        let name = try prepared(sql, parameters)
        try sendPrepared(name, parameters)
        try sentUnread()
    }

    /// In a pipelined transaction the row waits to be sent with the rows of
    /// the same insert that follow it (the next writes of the batch), as one
    /// multi-row statement whose parameter types come from the columns (so
    /// rows with NULLs in different places share one prepared statement).
    func sendRow(_ insert: RowInsert, _ values: [SQLValue]) throws(DatabaseError) {
        try insert.checkWidth(of: values)
        guard pipeline != nil else { return try send(insert.single, values) }
        if let failure = pipeline?.failure { throw failure }
        if var pending = pendingRows, pending.insert == insert, pending.rows < RowInsert.maxRows {
            pendingRows = nil  // the values are appended in place, not copied
            pending.values.append(contentsOf: values)
            pending.rows += 1
            pendingRows = pending
            return
        }
        try sendPendingRows()
        pendingRows = PendingRows(insert: insert, values: values, rows: 1)
    }

    /// Sends the rows waiting in `pendingRows` as one statement.
    private func sendPendingRows() throws(DatabaseError) {
        guard let pending = pendingRows else { return }
        pendingRows = nil
        let sql = pending.insert.sql(rows: pending.rows)
        // Keyed by the text alone: a typed statement's key always holds a
        // NUL and its types, so the two never meet.
        let name = try prepared(sql, key: sql, types: [])
        try sendPrepared(name, pending.values)
        try sentUnread()
    }

    /// Notes a statement sent whose answer is read later; beyond
    /// `unreadLimit` of them the answers owed are read now.
    private func sentUnread() throws(DatabaseError) {
        pipeline?.commands.append(.unread)
        if pipeline?.commands.count ?? 0 >= Self.unreadLimit {
            guard PQsendFlushRequest(connection) == 1 else { throw markBroken(failure(nil)) }
            _ = try readPipeline(upToWanted: false)
            if let failure = pipeline?.failure { throw failure }
        }
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> [Row] {
        let result = try executePrepared(sql, parameters)
        defer { PQclear(result) }
        let columnCount = PQnfields(result)
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        var rows: [Row] = []
        rows.reserveCapacity(Int(PQntuples(result)))
        for row in 0..<PQntuples(result) {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) != 0 {
                    values.append(.null)
                    continue
                }
                let text = String(cString: PQgetvalue(result, row, column))
                values.append(Self.value(text, type: types[Int(column)]))
            }
            rows.append(Row(columns: columns, values: values, statement: sql))
        }
        return rows
    }

    /// Runs the statement (prepared once per SQL and parameter types) and
    /// returns its successful result.
    private func executePrepared(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> OpaquePointer? {
        try sendPendingRows()
        if let failure = pipeline?.failure { throw failure }
        let name = try prepared(sql, parameters)
        try sendPrepared(name, parameters)
        guard pipeline != nil else {
            let result = try awaitResult()
            do { try check(result) } catch {
                PQclear(result)
                throw error
            }
            return result
        }
        pipeline?.commands.append(.wanted)
        guard PQsendFlushRequest(connection) == 1 else { throw markBroken(failure(nil)) }
        let result = try readPipeline(upToWanted: true)
        if let failure = pipeline?.failure {
            PQclear(result)
            throw failure
        }
        return result
    }

    /// The statement's prepared name. Outside a pipeline a new statement is
    /// prepared and checked at once; inside one, its preparation travels
    /// with the statement and is cached when read back as successful.
    private func prepared(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> String {
        let types = parameters.map(Self.type)
        return try prepared(sql, key: sql + "\u{0}" + types.map(String.init).joined(separator: ","), types: types)
    }

    /// `prepared` under a cache key of the caller's; `types` may name fewer
    /// parameters than the statement has (PostgreSQL infers the rest).
    private func prepared(_ sql: String, key: String, types: [UInt32]) throws(DatabaseError) -> String {
        if let cached = statements[key] { return cached }
        let name = "s\(statementsPrepared)"
        statementsPrepared += 1
        guard types.withUnsafeBufferPointer({ PQsendPrepare(connection, name, sql, Int32(types.count), $0.baseAddress) }) == 1 else {
            throw failure(nil)
        }
        if pipeline != nil {
            pipeline?.commands.append(.prepare(key: key, name: name))
            // Later statements in this pipeline use the name; dropped again
            // if the preparation is not read back as successful.
            statements[key] = name
            return name
        }
        let prepared = try awaitResult()
        defer { PQclear(prepared) }
        try check(prepared)
        statements[key] = name
        return name
    }

    private func sendPrepared(_ name: String, _ parameters: [SQLValue]) throws(DatabaseError) {
        let texts: [UnsafeMutablePointer<CChar>?] = parameters.map { Self.text($0).flatMap { strdup($0) } }
        defer { texts.forEach { free($0) } }
        let sent = texts.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
            PQsendQueryPrepared(connection, name, Int32(values.count), values.baseAddress, nil, nil, 0)
        }
        guard sent == 1 else { throw failure(nil) }
    }

    /// Queues a parameterless statement in the pipeline (extended protocol:
    /// one statement, no semicolons).
    private func sendUnread(_ sql: String) throws(DatabaseError) {
        guard PQsendQueryParams(connection, sql, 0, nil, nil, nil, nil, 0) == 1 else { throw failure(nil) }
        pipeline?.commands.append(.unread)
    }
}
