import CPostgres
import FoundationEssentials

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

extension String {
    /// Without leading and trailing spaces and line breaks (libpq's messages end with a newline).
    var trimmedLine: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
