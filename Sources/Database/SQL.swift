/// A statement with its values bound where they appear:
///
///     "SELECT token FROM push_registrations WHERE region_id = \(regionID) AND token = \(token)"
///
/// becomes `... WHERE region_id = $1 AND token = $2` with the two values
/// bound, so a statement's text and its values cannot drift apart, and no
/// value is ever spliced into the text. Trusted SQL (a column list, a
/// dialect's clause) goes in with `\(raw: ...)`; a fragment built
/// elsewhere with `\(fragment)`, its values renumbered in place.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    enum Segment: Sendable {
        case text(String)
        case value(SQLValue)
    }

    private(set) var segments: [Segment]

    public init(stringLiteral value: String) { segments = [.text(value)] }

    public init(stringInterpolation: Interpolation) { segments = stringInterpolation.segments }

    init(segments: [Segment]) { self.segments = segments }

    /// The text with `$1`, `$2`, ... in place of the values, and the values.
    public var rendered: (text: String, values: [SQLValue]) {
        var text = ""
        var values: [SQLValue] = []
        for segment in segments {
            switch segment {
            case .text(let piece): text += piece
            case .value(let value):
                values.append(value)
                text += "$\(values.count)"
            }
        }
        return (text, values)
    }

    /// The text as it is sent (placeholders, never values): for errors and logs.
    public var description: String { rendered.text }

    /// Fragments joined with a separator (`, ` for a list of tuples).
    public static func joined(_ fragments: [SQL], separator: String) -> SQL {
        var segments: [Segment] = []
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { segments.append(.text(separator)) }
            segments += fragment.segments
        }
        return SQL(segments: segments)
    }

    public struct Interpolation: StringInterpolationProtocol {
        var segments: [Segment] = []

        public init(literalCapacity: Int, interpolationCount: Int) {}

        public mutating func appendLiteral(_ literal: String) { segments.append(.text(literal)) }

        /// A value, bound as a parameter.
        public mutating func appendInterpolation(_ value: some SQLBindable) { segments.append(.value(value.sqlValue)) }

        /// An optional value: NULL when nil.
        public mutating func appendInterpolation(_ value: (some SQLBindable)?) { segments.append(.value(value?.sqlValue ?? .null)) }

        /// Trusted SQL text (identifiers, clauses): never a value from outside.
        public mutating func appendInterpolation(raw text: String) { segments.append(.text(text)) }

        /// A fragment with its own values.
        public mutating func appendInterpolation(_ fragment: SQL) { segments += fragment.segments }

        /// Values as a comma-separated list of parameters, for `IN (...)`.
        public mutating func appendInterpolation(list values: [some SQLBindable]) {
            for (index, value) in values.enumerated() {
                if index > 0 { segments.append(.text(", ")) }
                segments.append(.value(value.sqlValue))
            }
        }
    }
}

/// A Swift value that binds as one SQL value.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable { public var sqlValue: SQLValue { self } }
extension Int: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .integer(self) } }
extension Int32: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .real(self) } }
extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Substring: SQLBindable { public var sqlValue: SQLValue { .text(String(self)) } }
extension Array: SQLBindable where Element == UInt8 { public var sqlValue: SQLValue { .blob(self) } }

extension SQLConnection {
    /// Runs a statement; returns the number of rows changed.
    @discardableResult
    public func execute(_ sql: SQL) throws(DatabaseError) -> Int {
        let (text, values) = sql.rendered
        return try execute(text, values)
    }

    /// Runs a statement whose row count is not needed (see the protocol's `send`).
    public func send(_ sql: SQL) throws(DatabaseError) {
        let (text, values) = sql.rendered
        try send(text, values)
    }

    /// Runs a query and returns every row.
    public func query(_ sql: SQL) throws(DatabaseError) -> [Row] {
        let (text, values) = sql.rendered
        return try query(text, values)
    }

    /// The first row of a query, if any.
    public func queryOne(_ sql: SQL) throws(DatabaseError) -> Row? {
        try query(sql).first
    }

    /// After rows were written with ids of their own (a copy, an import),
    /// new rows of `table` continue after the largest id: PostgreSQL moves
    /// the identity's sequence; SQLite assigns past the largest id anyway.
    public func advanceIdentity(table: String) throws(DatabaseError) {
        guard dialect == .postgresql else { return }
        _ = try query(
            """
            SELECT setval(pg_get_serial_sequence('\(raw: table)', 'id'), GREATEST(COALESCE(MAX(id), 0), 1), MAX(id) IS NOT NULL) AS value
            FROM \(raw: table)
            """)
    }
}

/// Columns and their values, named once and used as an INSERT's column and
/// value lists or an UPDATE's assignments, so the two never fall out of step.
public struct SQLFields: Sendable {
    public private(set) var pairs: [(column: String, value: SQLValue)] = []

    public init() {}

    /// Sets a column (its name is trusted SQL text, never a value from outside).
    public mutating func set(_ column: String, _ value: some SQLBindable) { pairs.append((column, value.sqlValue)) }

    /// Sets a column to a value or NULL.
    public mutating func set(_ column: String, _ value: (some SQLBindable)?) { pairs.append((column, value?.sqlValue ?? .null)) }

    /// `a, b, c`.
    public var columns: SQL { SQL(segments: [.text(pairs.map(\.column).joined(separator: ", "))]) }

    /// `$1, $2, $3` with the values bound.
    public var values: SQL { SQL.joined(pairs.map { SQL(segments: [.value($0.value)]) }, separator: ", ") }

    /// `a = $1, b = $2`.
    public var assignments: SQL { SQL.joined(pairs.map { SQL(segments: [.text($0.column + " = "), .value($0.value)]) }, separator: ", ") }
}
