import FoundationEssentials

/// A flag of `serve` (and the commands that share its settings): its name,
/// what its value looks like, its help, the configuration's own value shown
/// as its default, the commands that take it, and how it sets the
/// configuration. Every flag is also `SIDECAR_<FLAG_IN_UPPER_SNAKE>`.
struct Flag: Sendable {
    let name: String
    /// `PORT`, `URL`; empty for a switch (`--demo`), which takes no value.
    let valueName: String
    let help: String
    /// The default as the configuration itself holds it (nil: no default).
    let shown: @Sendable (SidecarConfiguration) -> String?
    let commands: Set<String>
    let apply: @Sendable (inout SidecarConfiguration, String) throws(CommandLineError) -> Void

    init(
        name: String, valueName: String, help: String, shown: @escaping @Sendable (SidecarConfiguration) -> String? = { _ in nil },
        commands: Set<String>, apply: @escaping @Sendable (inout SidecarConfiguration, String) throws(CommandLineError) -> Void
    ) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.shown = shown
        self.commands = commands
        self.apply = apply
    }

    var isSwitch: Bool { valueName.isEmpty }
    var environmentName: String { "SIDECAR_" + upperSnake }
    var upperSnake: String { String(name.uppercased().map { $0 == "-" ? "_" : $0 }) }

    /// The relay reads its settings under a prefix of its own, so that a
    /// sidecar's environment file (SIDECAR_DATABASE, SIDECAR_PORT) never
    /// points the relay at the sidecar's database or port.
    func environmentName(for command: String) -> String {
        guard command == "relay", !name.hasPrefix("relay-") else { return environmentName }
        return "SIDECAR_RELAY_" + upperSnake
    }

    // MARK: Reading values

    /// A switch's value: alone it is true; `--switch false` states it.
    static func switchValue(_ flag: String, _ value: String) throws(CommandLineError) -> Bool {
        switch value.lowercased() {
        case "", "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw CommandLineError("--\(flag) takes no value (or true/false), got '\(value)'")
        }
    }

    /// An http(s) URL with a host, for the flags that name an upstream or
    /// the server's own public base.
    static func httpURL(_ text: String, flag: String) throws(CommandLineError) -> String {
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), URL(string: text)?.host != nil else {
            throw CommandLineError("--\(flag) must be an http(s) URL, got \(text)")
        }
        return text
    }

    static func integer(_ text: String, flag: String, range: ClosedRange<Int>) throws(CommandLineError) -> Int {
        guard let value = Int(text.trimmingWhitespace()), range.contains(value) else {
            throw CommandLineError("--\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }
}

extension CommandLineInterface {

    /// Every flag: the groups, and a `--NAME-file PATH` form of each secret
    /// (so it stays out of the process list, where every local user can
    /// read arguments; `SIDECAR_NAME_FILE` works too).
    static let flags: [Flag] =
        (ServerFlags.listenerFlags + ServerFlags.storageFlags + ServerFlags.contentFlags + PushFlags.upstreamsFlags + PushFlags.pushFlags
        + PushFlags.limitsFlags + PushFlags.relayFlags)
        .flatMap { flag in secretFlags.contains(flag.name) ? [flag, fileForm(flag)] : [flag] }

    /// Flags whose value is a secret.
    static let secretFlags: Set<String> = [
        "oba-api-key", "oba-region-api-keys", "stripe-secret-key", "stripe-test-secret-key",
        "pirate-weather-key", "gorush-webhook-secret",
    ]

    /// `--NAME-file PATH`: reads the file (a trailing newline dropped) and
    /// sets `--NAME` from it. The error names the file, never its content.
    static func fileForm(_ flag: Flag) -> Flag {
        Flag(
            name: flag.name + "-file", valueName: "PATH",
            help: "Read --\(flag.name) from this file (preferred: keeps the secret out of the process list)",
            commands: flag.commands
        ) { config, path throws(CommandLineError) in
            guard !path.isEmpty, let data = FileManager.default.contents(atPath: path) else {
                throw CommandLineError("--\(flag.name)-file: cannot read \(path)")
            }
            let secret = String(decoding: data, as: UTF8.self).trimmingWhitespace()
            guard !secret.isEmpty else { throw CommandLineError("--\(flag.name)-file: \(path) is empty") }
            do { try flag.apply(&config, secret) } catch {
                throw CommandLineError("--\(flag.name)-file: the content of \(path) is not a valid --\(flag.name)")
            }
        }
    }

    /// `relay` takes serve's listener, storage, logging and push-credential
    /// flags, and its own.
    static let relaySharedFlags: Set<String> = [
        "host", "port", "database", "database-connections", "sqlite-synchronous", "log-level", "log-format", "threads", "max-body-size",
        "max-header-size", "connection-timeout", "max-connections", "max-connections-per-client", "header-timeout", "min-body-rate",
        "trusted-proxies", "client-ip-header", "shutdown-timeout", "apns-key-file", "apns-key-id", "apns-team-id", "apns-url",
        "apns-sandbox-url", "apns-ca-file", "apns-connections", "apns-topic", "fcm-service-account", "fcm-url",
    ]

    /// The flags a command takes.
    static func flags(for command: String) -> [Flag] {
        flags.filter { $0.commands.contains(command) || (command == "relay" && relaySharedFlags.contains($0.name) && $0.commands.contains("serve")) }
    }

    /// The configuration a command starts from, before its flags: the
    /// relay keeps its own database.
    static func baseConfiguration(for command: String) -> SidecarConfiguration {
        var configuration = SidecarConfiguration()
        if command == "relay" { configuration.database = relayDefaultDatabase }
        return configuration
    }

    /// The relay's database when none is given: never a sidecar's file.
    static let relayDefaultDatabase = "sidecar-relay.sqlite3"
}
