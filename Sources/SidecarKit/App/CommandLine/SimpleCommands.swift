import Core
import Database
import FoundationEssentials

/// The commands with a fixed set of options of their own: `backup`,
/// `healthcheck`, `probe`, `copy-database` and `relay-key`.
extension CommandLineInterface {
    static func parseBackup(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try ArgumentReader.read(arguments, command: "backup", known: ["to": .value, "database": .value, "replace": .toggle])
        if parsed.wantsHelp { return .help(CommandHelp.backupUsage) }
        let database = parsed.value("database")?.presence ?? environment["SIDECAR_DATABASE"]?.presence ?? SidecarConfiguration().database
        guard let target = parsed.value("to")?.presence else { throw CommandLineError("backup needs --to FILE") }
        if PostgresLocation.matches(database) {
            throw CommandLineError("backup copies SQLite files; back up PostgreSQL with pg_dump (see docs/operator-guide.md)")
        }
        guard target != database else { throw CommandLineError("--to names the database itself") }
        return .backup(database: database, to: target, replace: try Flag.switchValue("replace", parsed.value("replace") ?? "false"))
    }

    static func parseHealthcheck(_ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        var configuration = SidecarConfiguration()
        for name in ["port", "host"] {
            guard let flag = flags.first(where: { $0.name == name }), let value = environment[flag.environmentName] else { continue }
            do { try flag.apply(&configuration, value) } catch { throw CommandLineError("\(flag.environmentName): \(error.description)") }
        }
        let parsed = try ArgumentReader.read(arguments, command: "healthcheck", known: ["url": .value, "port": .value, "host": .value])
        if parsed.wantsHelp { return .help(CommandHelp.healthcheckUsage) }
        if let port = parsed.value("port") { configuration.server.port = try Flag.integer(port, flag: "port", range: 1...65535) }
        if let host = parsed.value("host") { configuration.server.host = host }
        if let text = parsed.value("url") { return .healthcheck(url: try Flag.httpURL(text, flag: "url")) }
        let host =
            ["0.0.0.0", "", "*"].contains(configuration.server.host)
            ? "127.0.0.1" : configuration.server.host == "::" ? "::1" : configuration.server.host
        return .healthcheck(url: "http://\(host.contains(":") ? "[\(host)]" : host):\(configuration.server.port)/healthz")
    }

    static func parseProbe(_ arguments: [String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try ArgumentReader.read(
            arguments, command: "probe",
            known: [
                "region": .value, "stop-id": .value, "trip-id": .value, "service-date": .value, "stop-sequence": .value, "vehicle-id": .value,
                "timeout": .value,
            ], positionals: 1)
        if parsed.wantsHelp { return .help(CommandHelp.probeUsage) }
        let example = "e.g. sidecar probe https://sidecar.example.org --region 1"
        guard let text = parsed.positional.first else { throw CommandLineError("probe needs the sidecar's URL, \(example)") }
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let url = URL(string: text), url.host != nil else {
            throw CommandLineError("probe needs an http(s) URL, \(example); got \(text)")
        }
        guard let regionText = parsed.value("region") else { throw CommandLineError("probe needs --region N") }
        var options = Probe.Options(baseURL: url, regionID: try Flag.integer(regionText, flag: "region", range: 0...1_000_000_000))
        options.stopID = parsed.value("stop-id")
        options.tripID = parsed.value("trip-id")
        options.vehicleID = parsed.value("vehicle-id")
        if let date = parsed.value("service-date") {
            options.serviceDate = EpochMillis(Int64(try Flag.integer(date, flag: "service-date", range: 0...Int.max)))
        }
        if let sequence = parsed.value("stop-sequence") {
            options.stopSequence = try Flag.integer(sequence, flag: "stop-sequence", range: 0...100_000)
        }
        if let timeout = parsed.value("timeout") { options.timeout = TimeInterval(try Flag.integer(timeout, flag: "timeout", range: 1...600)) }
        return .probe(options)
    }

    static func parseCopy(_ arguments: [String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try ArgumentReader.read(arguments, command: "copy-database", known: ["from": .value, "to": .value, "replace": .toggle])
        if parsed.wantsHelp { return .help(CommandHelp.copyUsage) }
        guard let from = parsed.value("from")?.presence, let to = parsed.value("to")?.presence else {
            throw CommandLineError("copy-database needs --from and --to")
        }
        guard from != to else { throw CommandLineError("--from and --to name the same database") }
        var configuration = SidecarConfiguration()
        configuration.logLevel = .warning
        return .copyDatabase(
            from: from, to: to, replace: try Flag.switchValue("replace", parsed.value("replace") ?? "false"), configuration: configuration)
    }

    /// `relay-key show` and `relay-key create`, with `--relay-key-file`.
    static func parseRelayKey(action: String, _ arguments: [String], environment: [String: String]) throws(CommandLineError) -> SidecarCommand {
        let parsed = try ArgumentReader.read(arguments, command: "relay-key \(action)", known: ["relay-key-file": .value])
        if parsed.wantsHelp { return .help(CommandHelp.relayKeyUsage) }
        let path = parsed.value("relay-key-file")?.presence ?? environment["SIDECAR_RELAY_KEY_FILE"]?.presence ?? SidecarConfiguration().relayKeyFile
        return .relayKey(path: path, create: action == "create")
    }
}
