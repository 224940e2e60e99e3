import FoundationEssentials

/// What an installed systemd unit tells the service it starts: the
/// environment (`Environment=`, then `EnvironmentFile=`, which wins), the
/// credentials (`LoadCredential=`), the command line (`ExecStart=`) and who
/// the service runs as and what it may touch. Read from the unit and its
/// drop-ins (`NAME.service.d/*.conf`) in systemd's order, so that `sidecar
/// doctor --as-service` checks what the service really gets, not the shell's.
struct ServiceUnit: Sendable, Equatable {
    /// The files read, unit first.
    var files: [String] = []
    /// `Environment=` assignments in order (a later one wins).
    var environment: [(name: String, value: String)] = []
    /// `EnvironmentFile=`; optional when written with a leading `-`.
    var environmentFiles: [(path: String, optional: Bool)] = []
    /// `LoadCredential=ID:PATH`: systemd (as root) copies PATH to
    /// `$CREDENTIALS_DIRECTORY/ID`, readable by the service alone.
    var credentials: [(id: String, source: String)] = []
    /// `ExecStart=`'s words, the program first.
    var execStart: [String] = []
    var dynamicUser = false
    var user: String?
    /// `StateDirectory=` names, each a directory under /var/lib that systemd
    /// creates and gives to the service.
    var stateDirectories: [String] = []
    var readWritePaths: [String] = []
    /// `ProtectSystem=`: `strict` leaves only the state directory and
    /// `ReadWritePaths=` writable.
    var protectSystem: String?
    /// `ProtectHome=`: `yes` hides /home, /root and /run/user.
    var protectHome: String?
    /// `PrivateTmp=`: the service has a /tmp and /var/tmp of its own.
    var privateTmp = false
    /// `WorkingDirectory=`: where relative paths (`--database x.sqlite3`) land.
    var workingDirectory: String?

    /// Where the shipped unit is installed.
    static let installedPath = "/etc/systemd/system/sidecar.service"

    /// The unit's own name (`sidecar.service`), for `%n`.
    var name: String { files.first.map { String($0.split(separator: "/").last ?? "") } ?? "sidecar.service" }

    /// A path as the service resolves it: relative ones from its working
    /// directory (the root when the unit names none).
    func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        let base = workingDirectory.map { $0 == "~" ? "/root" : $0 } ?? "/"
        return (base.hasSuffix("/") ? base : base + "/") + path
    }

    /// The state directories as paths.
    var statePaths: [String] { stateDirectories.map { "/var/lib/" + $0 } }

    /// Reads the unit at `path` and its drop-ins; an unreadable unit is an
    /// error naming the path.
    static func load(path: String, read: (String) -> String? = ServiceUnit.readText, list: (String) -> [String] = ServiceUnit.listDirectory)
        throws(CommandLineError) -> ServiceUnit
    {
        guard let text = read(path) else {
            throw CommandLineError("--as-service: cannot read the unit \(path) (install it with script/install, or pass --unit PATH)")
        }
        var texts = [(path, text)]
        let dropIns = path + ".d"
        for file in list(dropIns).filter({ $0.hasSuffix(".conf") }).sorted() {
            if let more = read(dropIns + "/" + file) { texts.append((dropIns + "/" + file, more)) }
        }
        return parse(texts)
    }

    /// The unit from its files' texts, in order: a drop-in's setting adds
    /// to a list or replaces a value as systemd's would; an empty
    /// assignment (`Environment=`) clears a list.
    static func parse(_ texts: [(file: String, text: String)]) -> ServiceUnit {
        var unit = ServiceUnit()
        for (file, text) in texts {
            unit.files.append(file)
            var section = ""
            for line in logicalLines(text) {
                if line.hasPrefix("[") && line.hasSuffix("]") {
                    section = String(line.dropFirst().dropLast())
                    continue
                }
                guard section == "Service", let equals = line.firstIndex(of: "=") else { continue }
                let key = String(line[..<equals]).trimmingWhitespace()
                let value = String(line[line.index(after: equals)...]).trimmingWhitespace()
                unit.apply(key: key, value: value)
            }
        }
        return unit
    }

    private mutating func apply(key: String, value: String) {
        switch key {
        case "Environment":
            if value.isEmpty { environment = [] }
            for word in Self.words(value) {
                guard let equals = word.firstIndex(of: "=") else { continue }
                environment.append((String(word[..<equals]), String(word[word.index(after: equals)...])))
            }
        case "EnvironmentFile":
            if value.isEmpty {
                environmentFiles = []
            } else if value.hasPrefix("-") {
                environmentFiles.append((String(value.dropFirst()), true))
            } else {
                environmentFiles.append((value, false))
            }
        case "LoadCredential":
            if value.isEmpty {
                credentials = []
            } else if let colon = value.firstIndex(of: ":") {
                credentials.append((String(value[..<colon]), String(value[value.index(after: colon)...])))
            } else {
                // Without a path, systemd looks in the credential stores.
                credentials.append((value, "/etc/credstore/" + value))
            }
        case "ExecStart":
            var words = Self.words(value)
            if var first = words.first {
                while let prefix = first.first, "-@:+!".contains(prefix) { first.removeFirst() }
                words[0] = first
            }
            execStart = words
        case "DynamicUser": dynamicUser = Self.boolean(value)
        case "User": user = value.presence
        case "StateDirectory":
            if value.isEmpty { stateDirectories = [] }
            stateDirectories += Self.words(value).map { $0.split(separator: ":").first.map(String.init) ?? $0 }
        case "ReadWritePaths":
            if value.isEmpty { readWritePaths = [] }
            readWritePaths += Self.words(value).map { $0.hasPrefix("-") ? String($0.dropFirst()) : $0 }
        case "ProtectSystem": protectSystem = value.presence
        case "ProtectHome": protectHome = value.presence
        case "PrivateTmp": privateTmp = Self.boolean(value)
        case "WorkingDirectory": workingDirectory = value.hasPrefix("-") ? String(value.dropFirst()).presence : value.presence
        default: break
        }
    }

    /// The environment the service starts with: the unit's `Environment=`,
    /// overridden by each `EnvironmentFile=` (systemd reads them as root),
    /// specifiers expanded, `CREDENTIALS_DIRECTORY` set to `credentials`.
    /// A required environment file that is missing stops the service from
    /// starting, so it is an error here too.
    func serviceEnvironment(credentials directory: String, read: (String) -> String? = ServiceUnit.readText) throws(CommandLineError) -> [String:
        String]
    {
        var result: [String: String] = [:]
        for (name, value) in environment { result[name] = expand(value, credentials: directory) }
        for (path, optional) in environmentFiles {
            guard let text = read(expand(path, credentials: directory)) else {
                if optional { continue }
                throw CommandLineError("--as-service: the unit's EnvironmentFile=\(path) is missing, so systemd would not start the service")
            }
            for (name, value) in EnvironmentFile.parse(text) { result[name] = value }
        }
        if !credentials.isEmpty { result["CREDENTIALS_DIRECTORY"] = directory }
        return result
    }

    /// The flags `ExecStart=` passes after `sidecar serve`.
    var serveArguments: [String] {
        guard let serve = execStart.firstIndex(of: "serve") else { return [] }
        return Array(execStart[execStart.index(after: serve)...])
    }

    /// systemd's specifiers that matter here: `%d` (the credentials
    /// directory), `%S` (/var/lib), `%t` (/run), `%n`, `%N` and `%%`.
    func expand(_ text: String, credentials: String) -> String {
        guard text.contains("%") else { return text }
        var result = ""
        var characters = text.makeIterator()
        while let character = characters.next() {
            guard character == "%", let specifier = characters.next() else {
                result.append(character)
                continue
            }
            switch specifier {
            case "d": result += credentials
            case "S": result += "/var/lib"
            case "t": result += "/run"
            case "n": result += name
            case "N": result += name.hasSuffix(".service") ? String(name.dropLast(8)) : name
            case "%": result += "%"
            default: result += "%\(specifier)"
            }
        }
        return result
    }

    // MARK: Unit file syntax

    /// Lines with comments dropped and backslash continuations joined.
    static func logicalLines(_ text: String) -> [String] {
        var lines: [String] = []
        var pending = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw).trimmingWhitespace()
            if pending.isEmpty && (line.hasPrefix("#") || line.hasPrefix(";")) { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            let joined = pending + line
            pending = ""
            if !joined.isEmpty { lines.append(joined) }
        }
        if !pending.isEmpty { lines.append(pending) }
        return lines
    }

    /// Space-separated words, each optionally in double or single quotes
    /// (`Environment="A=1 2" B=3`), with backslash escapes inside quotes.
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if let open = quote {
                if character == "\\" {
                    escaped = true
                } else if character == open {
                    quote = nil
                } else {
                    current.append(character)
                }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    static func boolean(_ value: String) -> Bool { ["yes", "true", "1", "on"].contains(value.lowercased()) }

    static func == (left: ServiceUnit, right: ServiceUnit) -> Bool {
        left.files == right.files && left.environment.map { "\($0.name)=\($0.value)" } == right.environment.map { "\($0.name)=\($0.value)" }
            && left.environmentFiles.map { "\($0.optional)\($0.path)" } == right.environmentFiles.map { "\($0.optional)\($0.path)" }
            && left.credentials.map { "\($0.id):\($0.source)" } == right.credentials.map { "\($0.id):\($0.source)" }
            && left.execStart == right.execStart && left.dynamicUser == right.dynamicUser && left.user == right.user
            && left.stateDirectories == right.stateDirectories && left.readWritePaths == right.readWritePaths
            && left.protectSystem == right.protectSystem && left.protectHome == right.protectHome && left.privateTmp == right.privateTmp
            && left.workingDirectory == right.workingDirectory
    }

    @Sendable static func readText(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    @Sendable static func listDirectory(_ path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }
}

/// An environment file as systemd's `EnvironmentFile=` and `sidecar doctor
/// --env-file` read it: `NAME=VALUE` lines, `#` and `;` comments, values
/// optionally quoted.
enum EnvironmentFile {
    static func parse(_ text: String) -> [(name: String, value: String)] {
        var result: [(String, String)] = []
        for line in ServiceUnit.logicalLines(text) {
            var line = line
            if line.hasPrefix("export ") { line = String(line.dropFirst(7)).trimmingWhitespace() }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[..<equals]).trimmingWhitespace()
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { continue }
            var value = String(line[line.index(after: equals)...]).trimmingWhitespace()
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = ServiceUnit.words(value).joined(separator: " ")
            }
            result.append((name, value))
        }
        return result
    }
}
