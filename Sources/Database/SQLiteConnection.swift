import CSQLite

/// One SQLite connection with a cache of prepared statements. Used by one
/// thread at a time (opened with SQLITE_OPEN_NOMUTEX).
final class SQLiteConnection: SQLConnection {
    var dialect: SQLDialect { .sqlite }
    let handle: OpaquePointer
    /// A prepared statement with what binding and reading it needs, worked
    /// out once: which value each `$n` slot takes, and the column names.
    private struct Prepared {
        let statement: OpaquePointer
        let slotNumbers: [Int]
        let columns: [String]
    }
    private var statements: [String: Prepared] = [:]
    /// The statement run last, found again without hashing its text: the
    /// writer runs one statement over and over (a registration's upsert is
    /// several hundred bytes), and a text passed on from the same constant
    /// compares equal at once.
    private var lastUsed: (sql: String, prepared: Prepared)?

    /// Process-wide settings, made once before the first connection opens
    /// (SQLite refuses them once it is in use): no memory statistics, whose
    /// mutex every allocation of every connection would take.
    private static let processSettings: Void = { _ = sidecar_sqlite_disable_memory_statistics() }()

    init(path: String, readOnly: Bool, synchronous: SQLiteDatabase.Synchronous) throws(DatabaseError) {
        _ = Self.processSettings
        var pointer: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &pointer, flags, nil)
        guard code == SQLITE_OK, let pointer else {
            let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let pointer { sqlite3_close_v2(pointer) }
            throw .openFailed(path: path, message: message)
        }
        handle = pointer
        sqlite3_extended_result_codes(handle, 1)
        do {
            try run("PRAGMA busy_timeout = 5000")
            if !readOnly {
                try run("PRAGMA journal_mode = WAL")
            }
            // synchronous is per connection, so every connection sets it.
            try run("PRAGMA synchronous = \(synchronous.rawValue.uppercased())")
            try run("PRAGMA foreign_keys = ON")
        } catch {
            sqlite3_close_v2(handle)
            // Name the file: "unable to open database file" alone does not
            // say which, and a read-only file or directory is the usual cause.
            throw .openFailed(path: path, message: "\(error)")
        }
    }

    deinit {
        for prepared in statements.values { sqlite3_finalize(prepared.statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements with no parameters (DDL, pragmas).
    func run(_ sql: String) throws(DatabaseError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw Self.error(code: code, message: text)
        }
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Int {
        let statement = try prepared(sql, parameters).statement
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            if code != SQLITE_ROW { throw Self.error(code: code, message: String(cString: sqlite3_errmsg(handle))) }
        }
        return Int(sqlite3_changes(handle))
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> [Row] {
        let prepared = try prepared(sql, parameters)
        let statement = prepared.statement
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        let columns = prepared.columns
        let count = Int32(columns.count)
        var rows: [Row] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw Self.error(code: code, message: String(cString: sqlite3_errmsg(handle))) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if let text = sqlite3_column_text(statement, column) {
                        values.append(.text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)))
                    } else {
                        values.append(.text(""))
                    }
                case SQLITE_BLOB:
                    let length = Int(sqlite3_column_bytes(statement, column))
                    if let bytes = sqlite3_column_blob(statement, column) {
                        values.append(.blob([UInt8](UnsafeRawBufferPointer(start: bytes, count: length))))
                    } else {
                        values.append(.blob([]))
                    }
                default: values.append(.null)
                }
            }
            rows.append(Row(columns: columns, values: values, statement: sql))
        }
        return rows
    }

    /// Prepares (or reuses) a statement and binds `$n` placeholders by number.
    private func prepared(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Prepared {
        let prepared: Prepared
        if let lastUsed, lastUsed.sql == sql {
            prepared = lastUsed.prepared
        } else if let cached = statements[sql] {
            prepared = cached
            lastUsed = (sql, cached)
        } else {
            var pointer: OpaquePointer?
            let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
            guard code == SQLITE_OK, let pointer else {
                throw Self.error(code: code, message: String(cString: sqlite3_errmsg(handle)))
            }
            // `$3` is a named parameter to SQLite; its number picks the value.
            var numbers: [Int] = []
            for slot in stride(from: 1, through: sqlite3_bind_parameter_count(pointer), by: 1) {
                guard let name = sqlite3_bind_parameter_name(pointer, slot), let number = Int(String(cString: name).dropFirst()) else {
                    sqlite3_finalize(pointer)
                    throw .failed(code: SQLITE_RANGE, message: "placeholder \(slot) of \(sql) is not of the form $n")
                }
                numbers.append(number)
            }
            let columns = (0..<sqlite3_column_count(pointer)).map { String(cString: sqlite3_column_name(pointer, $0)) }
            prepared = Prepared(statement: pointer, slotNumbers: numbers, columns: columns)
            statements[sql] = prepared
            lastUsed = (sql, prepared)
        }
        let statement = prepared.statement
        for (offset, number) in prepared.slotNumbers.enumerated() {
            let slot = Int32(offset + 1)
            guard number >= 1, number <= parameters.count else {
                throw .failed(code: SQLITE_RANGE, message: "placeholder $\(number) of \(sql) has no value")
            }
            let code: Int32
            switch parameters[number - 1] {
            case .null: code = sqlite3_bind_null(statement, slot)
            case .integer(let value): code = sqlite3_bind_int64(statement, slot, value)
            case .real(let value): code = sqlite3_bind_double(statement, slot, value)
            case .text(var value):
                code = value.withUTF8 { buffer in
                    guard let base = buffer.baseAddress, buffer.count > 0 else { return sidecar_sqlite_bind_text(statement, slot, "", 0) }
                    return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        sidecar_sqlite_bind_text(statement, slot, $0, Int32(buffer.count))
                    }
                }
            case .blob(let value):
                code = value.withUnsafeBytes { sidecar_sqlite_bind_blob(statement, slot, $0.baseAddress, Int32($0.count)) }
            }
            if code != SQLITE_OK { throw Self.error(code: code, message: String(cString: sqlite3_errmsg(handle))) }
        }
        return prepared
    }

    static func error(code: Int32, message: String) -> DatabaseError {
        switch code & 0xFF {
        case SQLITE_CONSTRAINT: return .constraintViolation(message)
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy(message)
        default: return .failed(code: code, message: message)
        }
    }
}
