/// A value bound to or read from SQL. The same five types exist in SQLite and
/// map onto PostgreSQL (bigint, double precision, text, bytea, NULL).
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public init(_ value: String?) { self = value.map(SQLValue.text) ?? .null }
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    public init(_ value: Int64?) { self = value.map(SQLValue.integer) ?? .null }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
    public init(_ value: Double?) { self = value.map(SQLValue.real) ?? .null }
}

/// One result row. Columns are looked up by name, and a name the statement
/// did not select is an error naming the column and the statement (never a
/// silent NULL, which a misspelt column or alias would otherwise become).
/// `int`, `string`, `double` and `bool` read a required value (NULL is an
/// error too); the `optional…` forms read a nullable column.
public struct Row: Sendable {
    public let columns: [String]
    public let values: [SQLValue]
    /// The statement's text (placeholders, no values), for errors.
    public let statement: String

    public init(columns: [String], values: [SQLValue], statement: String = "") {
        self.columns = columns
        self.values = values
        self.statement = statement
    }

    /// The column's value; throws when the statement selected no such column.
    public func value(_ column: String) throws(DatabaseError) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else {
            throw .unknownColumn(column: column, statement: statement)
        }
        return values[index]
    }

    private func required<T>(_ column: String, _ read: (String) throws(DatabaseError) -> T?) throws(DatabaseError) -> T {
        guard let value = try read(column) else { throw .unexpectedNull(column: column, statement: statement) }
        return value
    }

    public func optionalInt(_ column: String) throws(DatabaseError) -> Int64? {
        switch try value(column) {
        case .integer(let value): return value
        case .real(let value): return Int64(value)
        case .text(let text): return Int64(text)
        default: return nil
        }
    }

    public func optionalString(_ column: String) throws(DatabaseError) -> String? {
        switch try value(column) {
        case .text(let value): return value
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        default: return nil
        }
    }

    public func optionalDouble(_ column: String) throws(DatabaseError) -> Double? {
        switch try value(column) {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    public func optionalBool(_ column: String) throws(DatabaseError) -> Bool? { try optionalInt(column).map { $0 != 0 } }

    public func int(_ column: String) throws(DatabaseError) -> Int64 { try required(column, optionalInt) }
    public func string(_ column: String) throws(DatabaseError) -> String { try required(column, optionalString) }
    public func double(_ column: String) throws(DatabaseError) -> Double { try required(column, optionalDouble) }
    public func bool(_ column: String) throws(DatabaseError) -> Bool { try required(column, optionalBool) }

    /// A required integer as `Int` (ids, counts, region ids).
    public func count(_ column: String) throws(DatabaseError) -> Int { Int(try int(column)) }
}

/// A connection lent to a `read` or `write` closure. These are the engine's
/// entry points, taking text with `$1`, `$2`, … placeholders (both engines
/// read them) and its values; features write `SQL` interpolations instead
/// (`SQL.swift`), which render to exactly this, so text and values cannot drift.
public protocol SQLConnection: AnyObject {
    /// Runs a statement; returns the number of rows changed.
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Int
    /// Runs a statement whose row count the caller does not need. Inside a
    /// PostgreSQL write it is sent without waiting for its answer, which is
    /// read with the next statement's or at `COMMIT`: its failure then
    /// surfaces there and fails the whole write, never silently.
    func send(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError)
    /// Runs a query and returns every row.
    func query(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> [Row]
    /// `send` for one row of an `INSERT`. Inside a PostgreSQL write, rows
    /// of the same `RowInsert` sent one after another (by the writes of one
    /// batch) go out together as one multi-row statement, before any other
    /// statement or the `COMMIT`; a failure fails the whole write, as
    /// `send`'s does.
    func sendRow(_ insert: RowInsert, _ values: [SQLValue]) throws(DatabaseError)
    /// The engine's dialect, for the few statements that differ.
    var dialect: SQLDialect { get }
}

extension SQLConnection {
    /// Runs the statement at once (engines without pipelining).
    public func send(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) {
        _ = try execute(sql, parameters)
    }

    /// The row's one-row statement, sent at once (engines without pipelining).
    public func sendRow(_ insert: RowInsert, _ values: [SQLValue]) throws(DatabaseError) {
        try insert.checkWidth(of: values)
        try send(insert.single, values)
    }

    /// The first row of a query, if any.
    public func queryOne(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Row? {
        try query(sql, parameters).first
    }
}

/// Errors from storage, typed so the HTTP layer can choose a status.
public enum DatabaseError: Error, Equatable, CustomStringConvertible {
    /// A UNIQUE, NOT NULL, CHECK or foreign-key constraint refused the write.
    case constraintViolation(String)
    /// The database stayed locked past the busy timeout.
    case busy(String)
    /// The database was closed.
    case closed
    /// The database file could not be opened.
    case openFailed(path: String, message: String)
    /// A migration failed; nothing of the run was kept.
    case migrationFailed(version: Int, name: String, message: String)
    /// The file has migrations this binary does not know (it is newer).
    case schemaTooNew(applied: Int, known: Int)
    /// Storage cannot be used now (the database file was deleted or
    /// replaced while open, PostgreSQL is unreachable); nothing was written.
    case unavailable(String)
    /// The database location or settings are wrong (a malformed URL, an
    /// unknown `sslmode`): the operator must fix the configuration.
    case invalidConfiguration(String)
    /// Any other engine error.
    case failed(code: Int32, message: String)
    /// A row was read by a column its statement did not select.
    case unknownColumn(column: String, statement: String)
    /// A required column held NULL.
    case unexpectedNull(column: String, statement: String)

    public var description: String {
        switch self {
        case .constraintViolation(let message): return "constraint violation: \(message)"
        case .busy(let message): return "database busy: \(message)"
        case .closed: return "database is closed"
        case .openFailed(let path, let message): return "cannot open database \(path): \(message)"
        case .migrationFailed(let version, let name, let message):
            return "migration \(version) (\(name)) failed, nothing was applied: \(message)"
        case .schemaTooNew(let applied, let known):
            return "database schema version \(applied) is newer than this sidecar knows (\(known)); upgrade the sidecar"
        case .unavailable(let reason): return "database unavailable: \(reason)"
        case .invalidConfiguration(let reason): return reason
        case .failed(let code, let message): return "database error \(code): \(message)"
        case .unknownColumn(let column, let statement): return "no column \(column) in the result of: \(statement)"
        case .unexpectedNull(let column, let statement): return "column \(column) is NULL in the result of: \(statement)"
        }
    }
}

/// One versioned schema change. Versions are applied in ascending order,
/// all pending ones in one transaction.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// Who owns what it changes (the stores named in the migration list).
    public let owners: [String]
    public let statements: [MigrationStatement]

    public init(version: Int, name: String, owners: [String], statements: [MigrationStatement]) {
        self.version = version
        self.name = name
        self.owners = owners
        self.statements = statements
    }
}

/// One statement of a migration as each engine runs it. Most are the same
/// text on both (the types chosen are ones both read alike: BIGINT, DOUBLE
/// PRECISION, TEXT); where the engines differ, the statement says so.
public struct MigrationStatement: Sendable, Equatable {
    public let sqlite: String
    public let postgresql: String

    /// A statement both engines run as written.
    public static func same(_ text: String) -> MigrationStatement { MigrationStatement(sqlite: text, postgresql: text) }

    /// A statement written once per engine.
    public static func engines(sqlite: String, postgresql: String) -> MigrationStatement {
        MigrationStatement(sqlite: sqlite, postgresql: postgresql)
    }

    /// `CREATE TABLE name (columns)`; `withID` puts an auto-assigned `id`
    /// first, which the engines spell differently: SQLite's row id
    /// (`INTEGER PRIMARY KEY`), PostgreSQL's identity column.
    public static func table(_ name: String, withID: Bool = false, _ columns: String) -> MigrationStatement {
        let body = columns.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
        func create(_ id: String) -> String { "CREATE TABLE \(name) (\n" + (withID ? "    id \(id),\n" : "") + body + "\n)" }
        return MigrationStatement(sqlite: create("INTEGER PRIMARY KEY"), postgresql: create("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"))
    }

    /// A statement only SQLite runs (PostgreSQL has nothing to do: its
    /// tables are laid out otherwise).
    public static func sqliteOnly(_ text: String) -> MigrationStatement { MigrationStatement(sqlite: text, postgresql: "") }

    /// A statement only PostgreSQL runs (a storage setting SQLite has no
    /// word for, such as a table's fill factor).
    public static func postgresqlOnly(_ text: String) -> MigrationStatement { MigrationStatement(sqlite: "", postgresql: text) }

    /// The text an engine runs; empty when the statement is not that engine's.
    public func text(for dialect: SQLDialect) -> String { dialect == .sqlite ? sqlite : postgresql }
}

/// The SQL spoken by a backend. Feature SQL is written once, in the subset
/// both understand; what differs lives here.
public enum SQLDialect: Sendable {
    case sqlite, postgresql

    /// Appended to a SELECT that claims rows for this instance: on
    /// PostgreSQL other instances skip rows being claimed instead of waiting
    /// for them; SQLite has one writer, so there is nothing to skip.
    public var skipLocked: String { self == .postgresql ? " FOR UPDATE SKIP LOCKED" : "" }
}

/// The storage interface every feature uses. It is deliberately small — run a
/// closure on a read connection, run a closure in a write transaction,
/// migrate — so that SQLite (`SQLiteDatabase`) and PostgreSQL
/// (`PostgreSQLDatabase`) both implement it and no feature knows which it has.
public protocol Database: Sendable {
    /// Runs `work` in a read transaction (a consistent snapshot).
    func read<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// Runs `work` in a write transaction; returns only after it committed.
    /// A thrown error rolls back everything `work` did. `work` may run more
    /// than once (writes are committed together, and a batch one of them
    /// failed is rolled back and run again), so it does database work only.
    /// `keys` name the rows it locks (`push_registrations/1/TOKEN`): an engine that commits
    /// several writes together on several connections never runs two writes
    /// naming the same key in batches at once, so they queue instead of
    /// holding each other's rows (and deadlocking). Empty: it names none.
    @discardableResult
    func write<T: Sendable>(locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T
    /// `write` for a caller with no task to suspend (a request answered from
    /// the HTTP server's own thread): `completion` runs once, on whichever
    /// thread finished the write, with nil once `work` committed. An engine
    /// without a cheaper way runs `write` in a task.
    func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void)
    /// Applies pending migrations atomically; returns the versions applied.
    @discardableResult
    func migrate(_ migrations: [Migration]) async throws -> [Int]
    /// Finishes queued writes and closes every connection.
    func close() async
    /// What is wrong with storage now (empty when healthy): checked with a
    /// real read and a real write, not a cached answer.
    func healthProblems() async -> [HealthProblem]
    /// The SQL dialect, for the few statements that differ.
    var dialect: SQLDialect { get }
}

/// One failed storage check: `check` names it in words safe to show anyone
/// (`read`, `write`, `disk space`); `detail` says what happened (paths,
/// engine errors) and is for the operator's log only.
public struct HealthProblem: Sendable, Equatable, CustomStringConvertible {
    public let check: String
    public let detail: String
    public init(check: String, detail: String) {
        self.check = check
        self.detail = detail
    }
    public var description: String { detail }
}

extension Database {
    public func submitWrite(
        locking keys: [String], _ work: @escaping @Sendable (any SQLConnection) throws -> Void,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Task {
            do {
                try await write(locking: keys, work)
                completion(nil)
            } catch { completion(error) }
        }
    }

    /// A write that names no row it locks.
    @discardableResult
    public func write<T: Sendable>(_ work: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await write(locking: [], work)
    }

    /// True when the database answers a trivial query.
    func ping() async -> Bool {
        (try? await read { connection in try connection.queryOne("SELECT 1 AS ok", []) != nil }) ?? false
    }

    public func healthProblems() async -> [HealthProblem] {
        await ping() ? [] : [HealthProblem(check: "read", detail: "the database does not answer")]
    }
}
