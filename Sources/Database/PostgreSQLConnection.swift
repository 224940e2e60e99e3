import CPostgres
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Where PostgreSQL is, from a `postgres://` or `postgresql://` URL (any
/// libpq keyword may follow as a query parameter: `sslmode`, `sslrootcert`,
/// `connect_timeout`, `options`...).
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// What libpq is given: the URL with `connect_timeout` and
    /// `application_name` added when absent. Holds the password: never print it.
    let conninfo: String
    /// `postgres://user@host:port/database`: for messages and logs.
    public let description: String

    static let sslModes: Set<String> = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// True for the URLs this type reads.
    public static func matches(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses and checks a URL with libpq's own parser. Throws
    /// `DatabaseError.invalidConfiguration` for a malformed URL or an
    /// unknown `sslmode` (the message never contains the password).
    public init(url: String) throws(DatabaseError) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &message) else {
            let reason = message.map { String(cString: $0).trimmedLine } ?? "not a PostgreSQL URL"
            if let message { PQfreemem(message) }
            throw .invalidConfiguration("the PostgreSQL URL cannot be read: \(reason)")
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var index = 0
        while let keyword = options[index].keyword {
            if let value = options[index].val { values[String(cString: keyword)] = String(cString: value) }
            index += 1
        }
        if let mode = values["sslmode"], !Self.sslModes.contains(mode) {
            throw .invalidConfiguration("unknown sslmode '\(mode)' (use one of \(Self.sslModes.sorted().joined(separator: ", ")))")
        }
        let host = values["host"] ?? values["hostaddr"] ?? "localhost"
        let port = values["port"] ?? "5432"
        let user = values["user"].map { "\($0)@" } ?? ""
        description = "postgres://\(user)\(host):\(port)/\(values["dbname"] ?? "")"
        var extra: [String] = []
        if values["connect_timeout"] == nil { extra.append("connect_timeout=5") }
        if values["application_name"] == nil { extra.append("application_name=sidecar") }
        // libpq's default (prefer) starts Kerberos on every connection when
        // it is linked with GSSAPI, as Debian's is; Kerberos initialised from
        // several threads has crashed libpq clients (ruby-pg #536, PostgREST
        // #3569), and this server's workers connect from several threads.
        // Off unless asked for: `?gssencmode=prefer` turns it back on.
        if values["gssencmode"] == nil { extra.append("gssencmode=disable") }
        conninfo = extra.isEmpty ? url : url + (url.contains("?") ? "&" : "?") + extra.joined(separator: "&")
    }
}

/// One PostgreSQL connection with a cache of prepared statements, used by
/// one worker thread at a time. Statements take `$n` parameters, sent as
/// text with their types (bigint, double precision, text, bytea) so the
/// same SQL runs on SQLite and here.
final class PostgreSQLConnection: SQLConnection {
    var dialect: SQLDialect { .postgresql }
    private let connection: OpaquePointer
    private var statements: [String: String] = [:]
    private let location: PostgresLocation
    /// Set when the server went away mid-statement; the worker reconnects.
    private(set) var broken = false
    /// How long a statement may wait for the server's answer before the
    /// connection is given up (nil: as long as it takes, for migrations). A
    /// server that stops answering (frozen, a dead host behind a live
    /// network) would otherwise hold every caller until it came back.
    var statementTimeoutSeconds: Double?

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

    /// Runs statements with no parameters (transaction control, DDL);
    /// several may be separated by semicolons.
    func run(_ sql: String) throws(DatabaseError) {
        guard PQsendQuery(connection, sql) == 1 else { throw failure(nil) }
        let result = try awaitResult()
        defer { PQclear(result) }
        try check(result)
    }

    /// Waits for the answer to what was just sent: every result is read
    /// (the first failure wins, else the last result is returned). When the
    /// server sends nothing for the statement timeout (a large result that
    /// keeps arriving is fine), the connection is marked broken and the call
    /// fails as unavailable.
    private func awaitResult() throws(DatabaseError) -> OpaquePointer? {
        func waitFor(_ events: Int16) throws(DatabaseError) {
            var descriptor = pollfd(fd: PQsocket(connection), events: events, revents: 0)
            let remaining = statementTimeoutSeconds.map { Int32(($0 * 1000).rounded(.up)) } ?? -1
            let ready = poll(&descriptor, 1, remaining)
            if ready == 0 || (ready < 0 && errno != EINTR) {
                broken = true
                statements = [:]
                throw .unavailable("PostgreSQL at \(location) did not answer within \(Int(statementTimeoutSeconds ?? 0)) s")
            }
        }
        while true {
            let flushed = PQflush(connection)
            if flushed == 0 { break }
            if flushed < 0 { throw failure(nil) }
            try waitFor(Int16(POLLIN | POLLOUT))
            if PQconsumeInput(connection) == 0 { throw failure(nil) }
        }
        var kept: OpaquePointer?
        while true {
            while PQisBusy(connection) == 1 {
                do { try waitFor(Int16(POLLIN)) } catch {
                    PQclear(kept)
                    throw error
                }
                if PQconsumeInput(connection) == 0 {
                    PQclear(kept)
                    throw failure(nil)
                }
            }
            guard let result = PQgetResult(connection) else { break }
            if kept == nil || sidecar_pq_result_kind(kept) >= 0 {
                PQclear(kept)
                kept = result
            } else {
                PQclear(result)
            }
        }
        return kept
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> Int {
        let result = try executePrepared(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
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

    // MARK: Statements

    /// Prepares the statement once per (SQL, parameter types) and runs it.
    private func executePrepared(_ sql: String, _ parameters: [SQLValue]) throws(DatabaseError) -> OpaquePointer? {
        let types = parameters.map(Self.type)
        let key = sql + "\u{0}" + types.map(String.init).joined(separator: ",")
        let name: String
        if let cached = statements[key] {
            name = cached
        } else {
            name = "s\(statements.count)"
            guard types.withUnsafeBufferPointer({ PQsendPrepare(connection, name, sql, Int32(types.count), $0.baseAddress) }) == 1 else {
                throw failure(nil)
            }
            let prepared = try awaitResult()
            defer { PQclear(prepared) }
            try check(prepared)
            statements[key] = name
        }
        let texts: [UnsafeMutablePointer<CChar>?] = parameters.map { Self.text($0).flatMap { strdup($0) } }
        defer { texts.forEach { free($0) } }
        let sent = texts.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
            PQsendQueryPrepared(connection, name, Int32(values.count), values.baseAddress, nil, nil, 0)
        }
        guard sent == 1 else { throw failure(nil) }
        let result = try awaitResult()
        do { try check(result) } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    /// Throws the typed error a failed result stands for.
    private func check(_ result: OpaquePointer?) throws(DatabaseError) {
        guard sidecar_pq_result_kind(result) < 0 else { return }
        throw failure(result)
    }

    /// The typed error a failed result (or a failed send: nil) stands for.
    private func failure(_ result: OpaquePointer?) -> DatabaseError {
        let state = String(cString: sidecar_pq_sqlstate(result))
        var message = String(cString: sidecar_pq_message(result))
        if message.isEmpty { message = String(cString: PQerrorMessage(connection)).trimmedLine }
        if sidecar_pq_connected(connection) == 0 || state.hasPrefix("08") || state.hasPrefix("57P") || result == nil {
            broken = true
            statements = [:]
            return .unavailable("lost the connection to PostgreSQL at \(location): \(message)")
        }
        if state.hasPrefix("23") { return .constraintViolation(message) }
        if state == "40001" || state == "40P01" || state == "55P03" { return .busy(message) }
        return .failed(code: 0, message: "\(state): \(message)")
    }

    // MARK: Values

    static let int8OID: UInt32 = 20
    static let float8OID: UInt32 = 701
    static let textOID: UInt32 = 25
    static let byteaOID: UInt32 = 17

    static func type(_ value: SQLValue) -> UInt32 {
        switch value {
        case .null: return 0  // inferred from where it is used
        case .integer: return int8OID
        case .real: return float8OID
        case .text: return textOID
        case .blob: return byteaOID
        }
    }

    /// A parameter in PostgreSQL's text format (nil for NULL).
    static func text(_ value: SQLValue) -> String? {
        switch value {
        case .null: return nil
        case .integer(let number): return String(number)
        case .real(let number): return "\(number)"
        case .text(let text): return text
        case .blob(let bytes):
            return "\\x" + bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        }
    }

    /// A column value from PostgreSQL's text format, by the column's type.
    static func value(_ text: String, type: UInt32) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: return Int64(text).map(SQLValue.integer) ?? .text(text)
        case 700, 701, 1700: return Double(text).map(SQLValue.real) ?? .text(text)
        case 16: return .integer(text == "t" ? 1 : 0)
        case byteaOID:
            guard text.hasPrefix("\\x") else { return .blob(Array(text.utf8)) }
            var bytes: [UInt8] = []
            var index = text.utf8.index(text.utf8.startIndex, offsetBy: 2)
            let end = text.utf8.endIndex
            while index < end, let next = text.utf8.index(index, offsetBy: 2, limitedBy: end),
                let byte = UInt8(String(text[index..<next]), radix: 16)
            {
                bytes.append(byte)
                index = next
            }
            return .blob(bytes)
        default: return .text(text)
        }
    }
}

extension String {
    /// Without leading and trailing spaces and line breaks (libpq's messages end with a newline).
    var trimmedLine: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
