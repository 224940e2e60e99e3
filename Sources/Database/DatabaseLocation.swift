import FoundationEssentials

/// How a database location (`--database`, `SIDECAR_DATABASE`) is shown to
/// people: logs, errors, `doctor`, `--help`. The one place that renders it,
/// so no message can carry a PostgreSQL password: a `postgres://` URL loses
/// its password (`user:secret@`), its query (which may hold `password=`) and
/// anything else libpq reads; any other text with a `password=` keyword
/// (a libpq conninfo string pasted by mistake) has that value hidden.
public enum DatabaseLocation {
    public static func forHumans(_ raw: String) -> String {
        if PostgresLocation.matches(raw) {
            if let location = try? PostgresLocation(url: raw) { return location.description }
            return withoutCredentials(raw)
        }
        return hidingPasswords(raw)
    }

    /// A URL that did not parse: the user info's password and the query cut.
    static func withoutCredentials(_ url: String) -> String {
        let base = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard let scheme = base.firstRange(of: "://") else { return base }
        let rest = base[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return base }
        let user = authority[..<at].split(separator: ":", maxSplits: 1).first ?? ""
        return String(base[..<scheme.upperBound]) + user + String(authority[at...]) + String(rest[authority.endIndex...])
    }

    /// `password=VALUE` (quoted or not, any case) with its value hidden.
    static func hidingPasswords(_ text: String) -> String {
        let characters = Array(text)
        let keyword = Array("password")
        var output = ""
        var index = 0
        while index < characters.count {
            let end = index + keyword.count
            guard end <= characters.count, characters[index..<end].map({ Character($0.lowercased()) }) == keyword else {
                output.append(characters[index])
                index += 1
                continue
            }
            output += String(characters[index..<end])
            var cursor = end
            while cursor < characters.count && characters[cursor] == " " { cursor += 1 }
            guard cursor < characters.count, characters[cursor] == "=" else {
                index = end
                continue
            }
            cursor += 1
            while cursor < characters.count && characters[cursor] == " " { cursor += 1 }
            if cursor < characters.count && characters[cursor] == "'" {
                cursor += 1
                while cursor < characters.count && characters[cursor] != "'" { cursor += 1 }
                cursor = min(cursor + 1, characters.count)
            } else {
                while cursor < characters.count && !" &;".contains(characters[cursor]) { cursor += 1 }
            }
            output += "=[hidden]"
            index = cursor
        }
        return output
    }
}
