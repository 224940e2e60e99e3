import FoundationEssentials

/// What the command line asked for.
enum SidecarCommand: Sendable {
    case serve(SidecarConfiguration)
    case migrate(SidecarConfiguration)
    /// `copy-database`: every row from one database to another.
    case copyDatabase(from: String, to: String, replace: Bool, configuration: SidecarConfiguration)
    /// `backup`: a consistent copy of a live SQLite database.
    case backup(database: String, to: String, replace: Bool)
    /// `doctor`: checks a `serve` configuration and everything it reaches.
    case doctor(SidecarConfiguration, offline: Bool)
    /// `healthcheck`: asks a running server's `/healthz` (container health checks).
    case healthcheck(url: String)
    /// `relay`: the signed push relay (issue 17).
    case relay(SidecarConfiguration)
    /// `relay-key show` (never creates the key) or `relay-key create`.
    case relayKey(path: String, create: Bool)
    /// `probe`: an app's view of a sidecar, endpoint by endpoint.
    case probe(Probe.Options)
    /// An operator command (`region`, `alert`, `apikey`) against the database.
    case admin(AdminInvocation)
    case help(String)
    case version
}

/// An operator command: its name (`alert create`), positional arguments,
/// its own options (dashes turned into underscores) and the shared settings.
struct AdminInvocation: Sendable {
    var command: String
    var positional: [String]
    var options: [String: String]
    var configuration: SidecarConfiguration
}

/// A command line (or environment variable) that cannot be obeyed: printed
/// with a hint, exit status 2.
struct CommandLineError: Error, Equatable, CustomStringConvertible {
    let description: String
    /// The help that explains the mistake: the command's own, once known.
    private(set) var helpCommand = "sidecar --help"
    init(_ description: String) { self.description = description }

    /// The same error, pointing at a command's own help.
    func pointing(at command: String) -> CommandLineError {
        var error = self
        error.helpCommand = "sidecar \(command) --help"
        return error
    }

    static func == (left: CommandLineError, right: CommandLineError) -> Bool { left.description == right.description }
}

/// Parses `sidecar <command> [--flag value | --flag=value]...`. Every flag
/// can also come from `SIDECAR_<FLAG_IN_UPPER_SNAKE>`; the command line wins.
/// The flags are in `ServerFlags.swift` and `PushFlags.swift`, the help in
/// `CommandHelp.swift`, the operator commands in `Admin/Commands`.
enum CommandLineInterface {
    static let version = "0.1.0"

    /// Parses arguments (without the program name) and the environment.
    /// An error points at the help of the command it concerns.
    static func parse(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        guard let first = arguments.first else { return .help(CommandHelp.usage) }
        var command = first
        var rest = Array(arguments.dropFirst())
        switch first {
        case "--help", "-h", "help": return .help(CommandHelp.usage)
        case "--version", "-V", "version": return .version
        case "copy-database", "backup", "healthcheck", "probe":
            do throws(CommandLineError) {
                switch first {
                case "copy-database": return try parseCopy(rest)
                case "backup": return try parseBackup(rest, environment: environment)
                case "healthcheck": return try parseHealthcheck(rest, environment: environment)
                default: return try parseProbe(rest)
                }
            } catch { throw error.pointing(at: first) }
        case "serve", "migrate", "doctor", "relay": break
        case "relay-key":
            guard let action = rest.first, ["show", "create"].contains(action) else {
                if let other = rest.first, !["--help", "-h"].contains(other) {
                    throw CommandLineError("unknown command 'relay-key \(other)'").pointing(at: "relay-key")
                }
                return .help(CommandHelp.relayKeyUsage)
            }
            do throws(CommandLineError) { return try parseRelayKey(action: action, Array(rest.dropFirst()), environment: environment) } catch {
                throw error.pointing(at: "relay-key")
            }
        default:
            if OperatorCommands.named(first) != nil { break }
            guard OperatorCommands.groups.contains(first) else { throw CommandLineError("unknown command '\(first)'") }
            guard let sub = rest.first, !sub.hasPrefix("-") else { return .help(CommandHelp.adminUsage(group: first)) }
            command = "\(first) \(sub)"
            rest.removeFirst()
            guard OperatorCommands.named(command) != nil else { throw CommandLineError("unknown command '\(command)'").pointing(at: first) }
        }
        do throws(CommandLineError) {
            return try parseCommand(command, rest, environment: environment)
        } catch {
            throw error.pointing(at: command)
        }
    }

    /// `serve`, `migrate`, `doctor`, `relay` and every operator command:
    /// serve's flags (from the environment, then the command line), and an
    /// operator command's own options and id.
    static func parseCommand(_ command: String, _ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        let admin = OperatorCommands.named(command)
        // doctor takes exactly serve's flags, so an operator can prefix the
        // command line they run.
        let available = admin.map(CommandHelp.operatorFlags) ?? flags(for: command == "doctor" ? "serve" : command)
        var configuration = baseConfiguration(for: command)
        for (name, path) in credentialSettings(environment: environment) {
            guard let flag = available.first(where: { $0.name == name }), environment[flag.environmentName(for: command)] == nil else { continue }
            do { try flag.apply(&configuration, path) } catch {
                throw CommandLineError("the systemd credential \(path): \(error.description)")
            }
        }
        for flag in available {
            let name = flag.environmentName(for: command)
            if let value = environment[name] {
                do { try flag.apply(&configuration, value) } catch {
                    throw CommandLineError("\(name): \(error.description)")
                }
            }
        }
        var known: [String: ArgumentReader.Kind] = [:]
        for flag in available { known[flag.name] = flag.isSwitch ? .toggle : .value }
        for option in admin?.options ?? [] { known[option.name] = option.value == nil ? .toggle : .value }
        if command == "doctor" { known["offline"] = .toggle }
        let parsed = try ArgumentReader.read(arguments, command: command, known: known, positionals: admin?.id == nil ? 0 : 1)
        if parsed.wantsHelp {
            if command == "doctor" { return .help(CommandHelp.doctorUsage) }
            if let admin { return .help(CommandHelp.operatorUsage(admin)) }
            return .help(CommandHelp.commandUsage(command))
        }
        var options: [String: String] = [:]
        var offline = false
        for (name, value) in parsed.options {
            if let flag = available.first(where: { $0.name == name }) {
                try flag.apply(&configuration, value)
            } else if let option = admin?.option(name) {
                let key = String(name.map { $0 == "-" ? "_" : $0 })
                if let earlier = options[key] {
                    guard option.repeatable else { throw CommandLineError("--\(name) is given twice") }
                    options[key] = earlier + "," + value
                } else {
                    options[key] = value
                }
            } else if name == "offline" {
                offline = try Flag.switchValue(name, value)
            }
        }
        if let admin {
            if let id = admin.id, parsed.positional.isEmpty { throw CommandLineError("'\(command)' needs its \(id), e.g. sidecar \(command) 12") }
            let missing = admin.options.filter { $0.required && options[String($0.name.map { $0 == "-" ? "_" : $0 })]?.isEmpty != false }
            guard missing.isEmpty else {
                throw CommandLineError("'\(command)' needs " + missing.map { "--\($0.name) \($0.value ?? "")" }.joined(separator: " and "))
            }
            return .admin(AdminInvocation(command: command, positional: parsed.positional, options: options, configuration: configuration))
        }
        return try serverCommand(command, configuration: configuration, offline: offline)
    }

    /// What the server's commands refuse before anything starts.
    static func serverCommand(_ command: String, configuration: SidecarConfiguration, offline: Bool) throws(CommandLineError) -> SidecarCommand {
        let serving = command == "serve" || command == "doctor"
        if serving, configuration.clientIPHeader != nil, configuration.trustedProxies == nil {
            throw CommandLineError("--client-ip-header needs --trusted-proxies (only a trusted proxy's header is believed)")
        }
        if serving, configuration.pushTransport == .gorush, configuration.gorushURL == nil {
            throw CommandLineError("--push-transport gorush needs --gorush-url")
        }
        if command == "doctor" { return .doctor(configuration, offline: offline) }
        if command == "relay" { return .relay(configuration) }
        if serving, configuration.pushTransport == .relay, configuration.relayURL == nil {
            throw CommandLineError("--push-transport relay needs --relay-url")
        }
        return command == "serve" ? .serve(configuration) : .migrate(configuration)
    }
}
