import Core
import Database
import Push

/// Domain values as storage keeps them: a platform is its name.
extension PushPlatform: SQLBindable {
    public var sqlValue: SQLValue { .text(rawValue) }
}

extension Row {
    /// A platform column: `ios` or `android`, anything else an error
    /// naming the column and the statement.
    func platform(_ column: String) throws -> PushPlatform {
        let name = try string(column)
        guard let platform = PushPlatform(rawValue: name) else {
            throw DatabaseError.failed(code: 0, message: "column \(column) holds '\(name)', not a platform, in the result of: \(statement)")
        }
        return platform
    }
}

/// An instant in milliseconds is stored as its number.
extension EpochMillis: SQLBindable {
    public var sqlValue: SQLValue { .integer(value) }
}

extension Row {
    /// A column of milliseconds since 1970.
    func millis(_ column: String) throws -> EpochMillis { EpochMillis(try int(column)) }

    /// A nullable column of milliseconds since 1970.
    func optionalMillis(_ column: String) throws -> EpochMillis? {
        try optionalInt(column).map { EpochMillis($0) }
    }
}

/// An instant in seconds is stored as its number.
extension EpochSeconds: SQLBindable {
    public var sqlValue: SQLValue { .integer(value) }
}

extension Row {
    /// A column of seconds since 1970.
    func seconds(_ column: String) throws -> EpochSeconds { EpochSeconds(try int(column)) }

    /// A nullable column of seconds since 1970.
    func optionalSeconds(_ column: String) throws -> EpochSeconds? {
        try optionalInt(column).map { EpochSeconds($0) }
    }
}
